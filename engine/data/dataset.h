/* dataset.h — classification data sets: the helpers every data set shares.
 *
 * A data set is two splits of n samples of dim features with labels below
 * n_classes. Features are stored as bytes (pixels) or floats; dataset_gather
 * turns either into floats in [0,1] for a list of sample ids. Labels are
 * stored as bytes (the split's y) up to 256 classes and as int32 (the data
 * set's train_labels, test_labels) beyond; models read them as int32
 * whichever the form (dataset_label, dataset_gather). The data set's identity
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

/* Int32 labels need a data set of over 256 classes: none of the uint8
 * form fits, and a byte-labelled data set keeps the identity it has always
 * had (docs/formats.md). */
#define DATASET_BYTE_CLASSES 256

/* The label of sample i of split s, s being &d->train or &d->test. */
static inline int32_t dataset_label(const ls_dataset *d, const ls_split *s, size_t i)
{
    if (s->y != NULL)
        return s->y[i];
    return (s == &d->test ? d->test_labels : d->train_labels)[i];
}

/* x[i][.] = features of sample ids[i] of split s as floats in [0,1]; y[i]
 * its label (y may be NULL; else s is &d->train or &d->test, and d may be
 * NULL only when the labels are bytes). */
void dataset_gather(const ls_dataset *d, const ls_split *s, const uint32_t *ids, size_t count, float *x,
                    int32_t *y);

#endif
