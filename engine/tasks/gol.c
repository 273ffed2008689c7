/* task_gol.c — the `gol` task: learn one Game of Life step from the 512
 * 3x3 boards (ca_data.h), model logic-ca with the notebook's settings
 * (docs/models.md): AdamW(0.9, 0.99, wd 1e-2) after an element-wise
 * clip at 100, lr 0.05, seed 23, logit of gate A at 10.
 *
 * What it gives the model (logic_ca_task, through model_hooks): a sample
 * is the board its data set's id names, on channel 0 (the other channels
 * 0), its target that board after ca_steps life steps on the run's
 * borders, from a table of all 512 made once per model instance (no life
 * steps on the step's one thread); grid 3 is required; the figure is
 * hard_acc, the share of the 512 boards whose every cell the hard circuit
 * gets right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/models/logic_ca/logic_ca.h"
#include "engine/tasks/ca_data.h"

static ls_status gol_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    (void)cfg;
    return logic_ca_gol_data(out, err);
}

static ls_status gol_check(const logic_ca_settings *s, ls_err *err)
{
    if (s->grid != 3)
        return ls_fail(err, LS_EINVAL, "grid: the gol task uses 3x3 boards (grid=3), not %zu", s->grid);
    return LS_OK;
}

/* [512][9]: the board after ca_steps life steps, by the board's bits. */
static ls_status gol_create(void **ctx, const logic_ca_settings *s, ls_err *err)
{
    *ctx = NULL;
    uint8_t *want = malloc(LOGIC_CA_GOL_BOARDS * 9);
    if (want == NULL)
        return ls_fail(err, LS_ENOMEM, "gol: out of memory for the targets");
    for (size_t bits = 0; bits < LOGIC_CA_GOL_BOARDS; bits++) {
        uint8_t board[9];
        for (size_t j = 0; j < 9; j++)
            board[j] = (uint8_t)(bits >> j & 1);
        logic_ca_life_target(want + bits * 9, board, s->ca_steps, s->periodic != 0);
    }
    *ctx = want;
    return LS_OK;
}

static void gol_destroy(void *ctx)
{
    free(ctx);
}

static ls_status gol_sample(const void *ctx, const logic_ca_settings *s, const ls_batch *b, size_t slot, float *st,
                            float *tg, ls_err *err)
{
    const size_t C = s->channels, N = s->grid * s->grid;
    if (b->data == NULL || b->ids == NULL || b->data->train.x8 == NULL || b->data->train.dim != 9 ||
        b->ids[slot] >= b->data->train.n)
        return ls_fail(err, LS_EINVAL, "logic-ca: gol needs its data set of 3x3 boards");
    const uint8_t *board = b->data->train.x8 + (size_t)b->ids[slot] * 9;
    size_t bits = 0;
    for (size_t n = 0; n < 9; n++)
        bits |= (size_t)(board[n] != 0) << n;
    const uint8_t *want = (const uint8_t *)ctx + bits * 9;
    memset(st, 0, C * N * sizeof(float));
    for (size_t n = 0; n < 9; n++) {
        st[n] = board[n] ? 1.0f : 0.0f;
        tg[n] = (float)want[n];
    }
    return LS_OK;
}

/* hard_acc: the boards whose every cell is right after ca_steps hard steps. */
static ls_status gol_metrics(const logic_ca_hard *h, const logic_ca_settings *s, ls_metric *out, size_t *n_out,
                             ls_err *err)
{
    *n_out = 0;
    const size_t count = LOGIC_CA_GOL_BOARDS, side = 3, cells = side * side, C = h->channels;
    uint8_t *a = calloc(count * C * cells, 1);
    if (a == NULL)
        return ls_fail(err, LS_ENOMEM, "logic-ca metrics: out of memory");
    for (size_t g = 0; g < count; g++)
        for (size_t j = 0; j < 9; j++)
            a[g * C * cells + j] = (uint8_t)((g >> j) & 1);
    ls_status st = logic_ca_hard_eval(h, s, a, 0, count, side, s->ca_steps, err);
    if (st == LS_OK) {
        size_t right = 0;
        for (size_t g = 0; g < count; g++) {
            uint8_t board[9], want[9];
            for (size_t j = 0; j < 9; j++)
                board[j] = (uint8_t)((g >> j) & 1);
            logic_ca_life_target(want, board, s->ca_steps, s->periodic);
            right += memcmp(want, a + g * C * cells, 9) == 0;
        }
        snprintf(out[0].name, sizeof out[0].name, "%s", "hard_acc");
        out[0].value = (double)right / (double)count;
        *n_out = 1;
    }
    free(a);
    return st;
}

static const logic_ca_task gol_ca = {
    .check = gol_check,
    .create = gol_create,
    .destroy = gol_destroy,
    .sample = gol_sample,
    .metrics = gol_metrics,
};

static const void *gol_hooks(const char *model)
{
    return strcmp(model, logic_ca_model.name) == 0 ? &gol_ca : NULL;
}

static const ls_task_defaults gol_defaults[] = {
    { "logic-ca", "seed=23\nlr=0.05\nbeta2=0.99\nweight_decay=0.01\nclip=100\n"
                  "channels=1\nperception=8,4,2,1\nlayers=128x17,64,32,16,8,4,2,1\nca_steps=1\ngrid=3\n"
                  "periodic=1\nbatch=20\nparts=1\n" },
    { NULL, NULL },
};

const ls_task_desc gol_task = {
    .size = sizeof(ls_task_desc),
    .name = "gol",
    .summary = "Game of Life from the 512 3x3 boards",
    .models = "logic-ca",
    .default_steps = 3000,   /* the notebook's */
    .defaults = gol_defaults,
    .load = gol_load,
    .model_hooks = gol_hooks,
};
