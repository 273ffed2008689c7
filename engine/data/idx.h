/* idx.h — data sets stored as gzip'ed IDX files (the MNIST family's format).
 *
 * An IDX file is a big-endian header — magic 0x000008NN (unsigned bytes, NN
 * dimensions), then NN uint32 sizes — followed by exactly the bytes the sizes
 * say. A data set of this kind is four such files in one directory: train
 * images, train labels, test images, test labels. The caller (a task) names
 * the files, the data set and what its images must be; this reader knows no
 * data set of its own.
 *
 * Loading is strict because the data set's identity is part of a run's
 * config: every header field is checked, the data must end exactly where the
 * header says, and every error names the file and what is wrong.
 */
#ifndef LS_IDX_H
#define LS_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

/* What a caller says about its four files. */
typedef struct {
    const char *name;          /* the data set's name (ls_dataset.name) */
    const char *files[4];      /* in dir: train images, train labels, test images, test labels */
    uint32_t rows, cols;       /* every image is rows x cols bytes */
    size_t n_classes;          /* every label is below this (at most 256) */
} idx_set;

/* Loads set->files from dir. Checks magic numbers (0x00000803 images,
 * 0x00000801 labels), image size (rows x cols), counts (images == labels,
 * at least one image), labels < n_classes and that each file ends where its
 * header says; files are read and checked in the order above, so the first
 * bad one in that order is the one reported. Features are kept as bytes
 * (dataset_gather reads them as v/255). hash = XXH3_64bits of the four
 * files' XXH3_64bits values (8 bytes LE each, in the order above) over the
 * .gz bytes. Errors name the file and what is wrong (LS_EIO, LS_EFORMAT). */
ls_status idx_load_set(ls_dataset **out, const char *dir, const idx_set *set, ls_err *err);

/* The threads the calling thread's idx_load_set calls may use (default 1;
 * the trainer sets its --threads around a task's load): with more than
 * one, the test split's files are inflated on a second thread while the
 * train split's are on the caller's, and that thread then faults in the
 * data set's pages ahead of the train images' inflate. The data, their
 * hash and which error is reported are the same. Returns the previous
 * setting. */
int idx_load_threads(int threads);

/* Lower level, exposed for tests and fuzzing: parse one IDX file (already
 * decompressed) of the given magic (0x00000803 images, 0x00000801 labels).
 * On success *dims holds the dimension sizes (up to 3) and *data points into buf. */
ls_status idx_parse(const uint8_t *buf, size_t len, uint32_t magic, uint32_t dims[3],
                    const uint8_t **data, size_t *data_len, const char *what, ls_err *err);
/* Read (mapped where possible) and gunzip a whole file into a malloc'ed
 * buffer; *gz_hash = XXH3 of the raw file bytes. */
ls_status idx_read_gz(const char *path, uint8_t **buf, size_t *len, uint64_t *gz_hash, ls_err *err);

#endif
