/* dataset.h — classification data sets: the helpers every data set shares.
 *
 * A data set is two splits of n samples of dim features with uint8 labels.
 * Features are stored as bytes (pixels) or floats; dataset_gather turns either
 * into floats in [0,1] for a list of sample ids. The data set's identity
 * (XXH3 over its files, or over its bytes) is part of a run's config.
 * Which data a task has is the task's business (engine/tasks/): the readers
 * here (engine/data/idx.h, engine/data/npy.h) take file names from it.
 */
#ifndef LS_DATASET_H
#define LS_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

/* ls_split and ls_dataset are public (include/lockstep.h). */

void dataset_destroy(ls_dataset *d);  /* accepts NULL */

/* x[i][.] = features of sample ids[i] as floats in [0,1]; y[i] its label
 * (y may be NULL). */
void dataset_gather(const ls_split *s, const uint32_t *ids, size_t count, float *x, uint8_t *y);

#endif
