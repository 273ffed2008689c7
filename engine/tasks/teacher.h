/* teacher.h — the `teacher` task's data: a small synthetic classification
 * set generated from addressed random numbers.
 *
 * Inputs uniform in [0,1) (address RNG_DATA), labels the argmax of a fixed
 * random teacher network dim -> 32 -> n_classes with ReLU (weights at
 * address RNG_TEACHER). Everything comes from the constant seed
 * TEACHER_SEED, so it is the same data for every run. The teacher's output
 * biases are centred (b2[k] -= mean of logit k over the train inputs) so
 * that every class gets a fair share of the samples; teacher.c says how.
 * hash = XXH3_64bits over train x (floats LE), train y, test x, test y
 * (ls_dataset_seal). The task's descriptor is teacher_task (engine/builtins.c).
 */
#ifndef LS_TEACHER_H
#define LS_TEACHER_H

#include "include/lockstep.h"

#define TEACHER_SEED 20261122u
#define TEACHER_DIM 16
#define TEACHER_CLASSES 4
#define TEACHER_TRAIN 2048
#define TEACHER_TEST 512

/* The data set, made anew on each call; free with ls_dataset_destroy. */
ls_status teacher_make(ls_dataset **out, ls_err *err);

#endif
