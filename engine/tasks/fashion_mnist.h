/* fashion_mnist.h — the `fashion-mnist` task's data: Fashion-MNIST, 60000
 * training and 10000 test images of 28x28 pixels in 10 classes, from its
 * four IDX .gz files (read by engine/data/idx.h).
 *
 * The files are train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
 * t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz, in Debian's
 * dataset-fashion-mnist package directory by default, or in
 * $LOCKSTEP_DATA_DIR for the task. hash = XXH3_64bits of the four files'
 * XXH3_64bits values (8 bytes LE each, in the order above) over the .gz
 * bytes (idx_load_set). The task's descriptor is fashion_mnist_task
 * (engine/builtins.c).
 */
#ifndef LS_FASHION_MNIST_H
#define LS_FASHION_MNIST_H

#include "include/lockstep.h"

/* The default directory of Debian's dataset-fashion-mnist package. */
#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* Loads the four files from dir (NULL: FASHION_MNIST_DIR). Checks magic
 * numbers, 28x28 images, counts, labels < 10 and exact lengths; errors name
 * the file and what is wrong (LS_EIO, LS_EFORMAT). */
ls_status fashion_mnist_load(ls_dataset **out, const char *dir, ls_err *err);

#endif
