/* teacher.c — the `teacher` task: a small synthetic classification set
 * labelled by a fixed random network (teacher.h), and its descriptor;
 * models mlp (default) and logic. Small enough for tests and golden files.
 *
 * The set is built from addressed random numbers (engine/num/rng.h) with a
 * fixed arithmetic order, so it has the same bits on every build and host.
 */
#include "engine/tasks/teacher.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine/data/dataset.h"
#include "engine/num/rng.h"

#define T_DIM TEACHER_DIM
#define T_HID 32
#define T_CLS TEACHER_CLASSES

typedef struct {
    float w1[T_DIM][T_HID];  /* tensor 0 */
    float b1[T_HID];         /* tensor 1 */
    float w2[T_HID][T_CLS];  /* tensor 2 */
    float b2[T_CLS];         /* tensor 3 */
} teacher_net;

static float teacher_weight(uint64_t tensor, uint64_t elem)
{
    /* u has 24 bits, so 2u - 1 is exact: uniform in [-1, 1). */
    float u = rng_uniformf(TEACHER_SEED, RNG_TEACHER, tensor, elem, 0);
    return 2.0f * u - 1.0f;
}

static void teacher_init(teacher_net *t)
{
    for (size_t i = 0; i < T_DIM; i++)
        for (size_t j = 0; j < T_HID; j++)
            t->w1[i][j] = teacher_weight(0, i * T_HID + j);
    for (size_t j = 0; j < T_HID; j++)
        t->b1[j] = teacher_weight(1, j);
    for (size_t j = 0; j < T_HID; j++)
        for (size_t k = 0; k < T_CLS; k++)
            t->w2[j][k] = teacher_weight(2, j * T_CLS + k);
    for (size_t k = 0; k < T_CLS; k++)
        t->b2[k] = teacher_weight(3, k);
}

/* Logits in float, every sum in index order starting from 0.0f, the bias
 * added last; each product is rounded before the add (no FMA: the build pins
 * -ffp-contract=off and each step is its own statement). */
static void teacher_logits(const teacher_net *t, const float *x, float logits[T_CLS])
{
    float h[T_HID];
    for (size_t j = 0; j < T_HID; j++) {
        float acc = 0.0f;
        for (size_t i = 0; i < T_DIM; i++) {
            float prod = x[i] * t->w1[i][j];
            acc = acc + prod;
        }
        acc = acc + t->b1[j];
        h[j] = acc > 0.0f ? acc : 0.0f;
    }
    for (size_t k = 0; k < T_CLS; k++) {
        float acc = 0.0f;
        for (size_t j = 0; j < T_HID; j++) {
            float prod = h[j] * t->w2[j][k];
            acc = acc + prod;
        }
        logits[k] = acc + t->b2[k];
    }
}

static uint8_t argmax_lowest(const float *v, size_t n)
{
    size_t best = 0;
    for (size_t k = 1; k < n; k++)
        if (v[k] > v[best])
            best = k;
    return (uint8_t)best;
}

static void fill_inputs(float *x, size_t n, uint64_t split)
{
    for (size_t s = 0; s < n; s++)
        for (size_t i = 0; i < T_DIM; i++)
            x[s * T_DIM + i] = rng_uniformf(TEACHER_SEED, RNG_DATA, split, s, i);
}

/* Labels are argmax of the teacher's logits. A raw random teacher favours
 * whichever classes have the largest mean logit (the inputs are all
 * positive), so the output biases are first centred: b2[k] -= the mean over
 * the train inputs of logit k, each mean a binary64 sum over samples in index
 * order, divided by n, rounded to float once. This is always applied (not only
 * when a split looks unbalanced) so the data set has one definition. */
ls_status teacher_make(ls_dataset **out, ls_err *err)
{
    *out = NULL;
    const size_t ntr = TEACHER_TRAIN, nte = TEACHER_TEST;
    ls_dataset *d = calloc(1, sizeof *d);
    size_t bytes = (ntr + nte) * T_DIM * sizeof(float) + ntr + nte;
    uint8_t *mem = d != NULL ? malloc(bytes) : NULL;
    if (mem == NULL) {
        free(d);
        return ls_fail(err, LS_ENOMEM, "teacher data set: out of memory");
    }
    float *xtr = (float *)(void *)mem;
    float *xte = xtr + ntr * T_DIM;
    uint8_t *ytr = (uint8_t *)(xte + nte * T_DIM);
    uint8_t *yte = ytr + ntr;

    teacher_net t;
    teacher_init(&t);
    fill_inputs(xtr, ntr, 0);
    fill_inputs(xte, nte, 1);

    double sum[T_CLS] = {0};
    float logits[T_CLS];
    for (size_t s = 0; s < ntr; s++) {
        teacher_logits(&t, xtr + s * T_DIM, logits);
        for (size_t k = 0; k < T_CLS; k++)
            sum[k] = sum[k] + (double)logits[k];
    }
    for (size_t k = 0; k < T_CLS; k++)
        t.b2[k] = t.b2[k] - (float)(sum[k] / (double)ntr);

    for (size_t s = 0; s < ntr; s++) {
        teacher_logits(&t, xtr + s * T_DIM, logits);
        ytr[s] = argmax_lowest(logits, T_CLS);
    }
    for (size_t s = 0; s < nte; s++) {
        teacher_logits(&t, xte + s * T_DIM, logits);
        yte[s] = argmax_lowest(logits, T_CLS);
    }

    snprintf(d->name, sizeof d->name, "%s", "teacher");
    d->n_classes = T_CLS;
    d->train = (ls_split){.n = ntr, .dim = T_DIM, .x8 = NULL, .xf = xtr, .y = ytr};
    d->test = (ls_split){.n = nte, .dim = T_DIM, .x8 = NULL, .xf = xte, .y = yte};
    d->mem = mem;
    ls_status st = ls_dataset_seal(d, err);
    if (st != LS_OK) {
        dataset_destroy(d);
        return st;
    }
    *out = d;
    return LS_OK;
}

static ls_status teacher_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    (void)cfg;
    return teacher_make(out, err);
}

static const ls_task_defaults teacher_defaults[] = {
    { "*", "batch=32\nleaf=16\nlr=0.01\n" },
    { "mlp", "hidden=32\n" },
    { "logic", "layers=256x4\n" },
    { NULL, NULL },
};

const ls_task_desc teacher_task = {
    .size = sizeof(ls_task_desc),
    .name = "teacher",
    .summary = "a small synthetic task (16 inputs, 4 classes, labels from a fixed random network)",
    .models = "mlp logic",
    .default_steps = 200,
    .defaults = teacher_defaults,
    .load = teacher_load,
};
