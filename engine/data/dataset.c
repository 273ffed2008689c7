/* dataset.c — classification data sets: what every data set shares.
 *
 * A data set lives in one allocation (`mem`) the splits point into; a task's
 * loader makes it (ls_dataset_create, or a reader of its own such as
 * engine/data/idx.h), fills it and seals it, which fixes its identity. This
 * file knows no data set by name: which files or generator a task uses is
 * the task's (engine/tasks/). The gather turns a batch's rows into floats
 * with one rounded division each, so it has the same bits on every build
 * and host.
 */
#include "engine/data/dataset.h"
#include "base/simd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Hash n 4-byte words (floats or int32 labels) as little-endian bytes
 * whatever the host's byte order. */
static void hash_words_le(XXH3_state_t *hs, const void *v, size_t n)
{
    uint8_t chunk[4 * 256];
    size_t done = 0;
    while (done < n) {
        size_t m = n - done < 256 ? n - done : 256;
        for (size_t i = 0; i < m; i++) {
            uint32_t b;
            memcpy(&b, (const char *)v + 4 * (done + i), 4);
            chunk[4 * i + 0] = (uint8_t)b;
            chunk[4 * i + 1] = (uint8_t)(b >> 8);
            chunk[4 * i + 2] = (uint8_t)(b >> 16);
            chunk[4 * i + 3] = (uint8_t)(b >> 24);
        }
        XXH3_64bits_update(hs, chunk, 4 * m);
        done += m;
    }
}

/* ---------- data sets made by a task's loader (the public API) ---------- */

ls_status ls_dataset_create(ls_dataset **out, const char *name, size_t n_classes, size_t dim, size_t n_train,
                            size_t n_test, ls_err *err)
{
    *out = NULL;
    if (name == NULL || dim == 0 || n_train == 0 || n_classes == 0 || n_classes > INT32_MAX)
        return ls_fail(err, LS_EINVAL,
                       "data set %s: needs a name, dim >= 1, train samples >= 1 and 1..2147483647 classes",
                       name ? name : "(null)");
    const size_t label = n_classes > DATASET_BYTE_CLASSES ? sizeof(int32_t) : 1;
    if (dim > SIZE_MAX / sizeof(float) / (n_train + n_test) - label)
        return ls_fail(err, LS_EINVAL, "data set %s: %zu x %zu features overflow", name, n_train + n_test, dim);
    ls_dataset *d = calloc(1, sizeof *d);
    /* The labels after the features: int32 labels stay 4-byte aligned. */
    uint8_t *mem = d != NULL ? calloc((n_train + n_test) * (dim * sizeof(float) + label), 1) : NULL;
    if (mem == NULL) {
        free(d);
        return ls_fail(err, LS_ENOMEM, "data set %s: out of memory", name);
    }
    float *xtr = (float *)(void *)mem;
    float *xte = xtr + n_train * dim;
    uint8_t *ytr = label == 1 ? (uint8_t *)(xte + n_test * dim) : NULL;
    int32_t *ltr = label == 1 ? NULL : (int32_t *)(void *)(xte + n_test * dim);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->n_classes = n_classes;
    d->train = (ls_split){.n = n_train, .dim = dim, .x8 = NULL, .xf = xtr, .y = ytr};
    d->test = (ls_split){.n = n_test, .dim = dim, .x8 = NULL, .xf = xte, .y = ytr ? ytr + n_train : NULL};
    d->train_labels = ltr;
    d->test_labels = ltr ? ltr + n_train : NULL;
    d->mem = mem;
    *out = d;
    return LS_OK;
}

float *ls_dataset_x(ls_dataset *d, int test)
{
    /* The splits point into d->mem, which this data set owns and may write. */
    return (float *)(uintptr_t)(test ? d->test.xf : d->train.xf);
}

uint8_t *ls_dataset_y(ls_dataset *d, int test)
{
    return (uint8_t *)(uintptr_t)(test ? d->test.y : d->train.y);
}

int32_t *ls_dataset_labels(ls_dataset *d, int test)
{
    if (d->train.y != NULL)
        return NULL;
    return (int32_t *)(uintptr_t)(test ? d->test_labels : d->train_labels);
}

int32_t ls_dataset_label(const ls_dataset *d, int test, size_t i)
{
    return dataset_label(d, test ? &d->test : &d->train, i);
}

ls_status ls_dataset_seal(ls_dataset *d, ls_err *err)
{
    /* A label out of range would surface as a NaN loss at step 1; name it here. */
    for (int test = 0; test < 2; test++) {
        const ls_split *sp = test ? &d->test : &d->train;
        for (size_t i = 0; i < sp->n; i++) {
            const int32_t v = dataset_label(d, sp, i);
            if (v < 0 || (size_t)v >= d->n_classes)
                return ls_fail(err, LS_EINVAL, "data set %s: %s label %zu is %ld, not in 0 .. %zu", d->name,
                               test ? "test" : "train", i, (long)v, d->n_classes - 1);
        }
        /* A NaN or infinite feature would train a NaN model that the loss
         * need not show (a ReLU maps NaN to 0): every task's data pass here. */
        const size_t n = sp->xf != NULL ? sp->n * sp->dim : 0;
        for (size_t k = 0; k < n; k++)
            if (!isfinite(sp->xf[k]))
                return ls_fail(err, LS_EINVAL, "data set %s: %s sample %zu feature %zu is %s; features must be finite",
                               d->name, test ? "test" : "train", k / sp->dim, k % sp->dim,
                               isnan(sp->xf[k]) ? "NaN" : sp->xf[k] > 0 ? "infinite" : "-infinite");
    }
    XXH3_state_t *hs = XXH3_createState();
    if (hs == NULL)
        return ls_fail(err, LS_ENOMEM, "data set %s: out of memory", d->name);
    /* Byte labels hash as the bytes they are (the identity of every data set
     * of 1.1); int32 labels as 4 bytes LE each (docs/formats.md). */
    XXH3_64bits_reset(hs);
    for (int test = 0; test < 2; test++) {
        const ls_split *sp = test ? &d->test : &d->train;
        hash_words_le(hs, sp->xf, sp->n * sp->dim);
        if (d->train.y != NULL)
            XXH3_64bits_update(hs, sp->y, sp->n);
        else
            hash_words_le(hs, test ? d->test_labels : d->train_labels, sp->n);
    }
    d->hash = XXH3_64bits_digest(hs);
    XXH3_freeState(hs);
    return LS_OK;
}

void ls_dataset_destroy(ls_dataset *d)
{
    dataset_destroy(d);
}

void ls_dataset_gather(const ls_split *s, const uint32_t *ids, size_t count, float *x, uint8_t *y)
{
    dataset_gather(NULL, s, ids, count, x, NULL);
    if (y != NULL && s->y != NULL)
        for (size_t i = 0; i < count; i++)
            y[i] = s->y[ids[i]];
}

void ls_dataset_gather_labels(const ls_dataset *d, int test, const uint32_t *ids, size_t count, float *x,
                              int32_t *y)
{
    dataset_gather(d, test ? &d->test : &d->train, ids, count, x, y);
}

void dataset_destroy(ls_dataset *d)
{
    if (d == NULL)
        return;
    free(d->mem);
    free(d);
}

/* dst[k] = src[k] / 255, one rounded division per element (so every vector
 * width gives the same bits, base/simd.h). */
LS_SIMD_CLONES
static void bytes_to_unit(float *restrict dst, const uint8_t *restrict src, size_t n)
{
    #pragma omp simd
    for (size_t k = 0; k < n; k++)
        dst[k] = (float)src[k] / 255.0f;
}

void dataset_gather(const ls_dataset *d, const ls_split *s, const uint32_t *ids, size_t count, float *x,
                    int32_t *y)
{
    const size_t dim = s->dim;
    for (size_t i = 0; i < count; i++) {
        size_t id = ids[i];
        float *dst = x + i * dim;
        if (s->x8 != NULL) {
            /* The rows are drawn at random from the whole split (47 MB for
             * Fashion-MNIST), so each one comes from memory: ask for the next
             * row while this one is converted. */
            if (i + 1 < count) {
                const uint8_t *next = s->x8 + (size_t)ids[i + 1] * dim;
                for (size_t off = 0; off < dim; off += 64)
                    __builtin_prefetch(next + off);
                __builtin_prefetch(next + dim - 1);   /* rows are not line-aligned */
            }
            bytes_to_unit(dst, s->x8 + id * dim, dim);
        } else {
            memcpy(dst, s->xf + id * dim, dim * sizeof(float));
        }
        if (y != NULL)
            y[i] = dataset_label(d, s, id);
    }
}
