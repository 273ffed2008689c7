/* task_checkerboard.c — the `checkerboard` task: grow a checkerboard on a
 * 16x16 grid in 20 CA steps from random start states (ca_data.h), model
 * logic-ca; --async is the notebook's asynchronous variant (14x14, 50 steps,
 * batch 1, cells fire with probability fire_rate).
 *
 * What it gives the model (logic_ca_task, through model_hooks): a sample
 * starts from the random state of its step and slot (logic_ca_start_state;
 * no data set), its target is the pattern on channel 0; the figures are
 * hard_acc, the share of channel-0 cells the hard circuit gets right after
 * ca_steps steps from LOGIC_CA_EVAL_GRIDS evaluation start states, and
 * hard_acc_64, the same on one LOGIC_CA_BIG_GRID grid after
 * LOGIC_CA_BIG_STEPS steps (does the pattern grow beyond the trained
 * size?). Evaluation start state of grid i: channel c of cell n = 1 when
 * rng_uniformf(LOGIC_CA_EVAL_SEED, RNG_EVAL, i, 0, n·C + c) < 0.5.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/models/logic_ca/logic_ca.h"
#include "engine/num/rng.h"
#include "engine/tasks/ca_data.h"

static ls_status checkerboard_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    (void)cfg;
    (void)err;
    *out = NULL;   /* none: start states are generated */
    return LS_OK;
}

static ls_status checkerboard_sample(const void *ctx, const logic_ca_settings *s, const ls_batch *b, size_t slot,
                                     float *st, float *tg, ls_err *err)
{
    (void)ctx;
    (void)err;
    const size_t C = s->channels, G = s->grid, N = G * G;
    logic_ca_start_state(st, C, N, b->seed, b->step, slot);
    for (size_t n = 0; n < N; n++)
        tg[n] = (float)logic_ca_checkerboard_target(n % G, n / G);
    return LS_OK;
}

static void eval_start(uint8_t *state, size_t grid0, size_t count, size_t C, size_t cells)
{
    for (size_t g = 0; g < count; g++)
        for (size_t c = 0; c < C; c++)
            for (size_t n = 0; n < cells; n++)
                state[(g * C + c) * cells + n] =
                    rng_uniformf(LOGIC_CA_EVAL_SEED, RNG_EVAL, grid0 + g, 0, n * C + c) < 0.5f;
}

static ls_status checkerboard_metrics(const logic_ca_hard *h, const logic_ca_settings *s, ls_metric *out,
                                      size_t *n_out, ls_err *err)
{
    *n_out = 0;
    const size_t C = h->channels, count = LOGIC_CA_EVAL_GRIDS, side = s->grid, cells = side * side;
    const size_t bs = LOGIC_CA_BIG_GRID, big = bs * bs;
    const size_t lanes = count * cells > big ? count * cells : big;
    uint8_t *a = malloc(lanes * C);
    if (a == NULL)
        return ls_fail(err, LS_ENOMEM, "logic-ca metrics: out of memory");
    eval_start(a, 0, count, C, cells);
    ls_status st = logic_ca_hard_eval(h, s, a, 0, count, side, s->ca_steps, err);
    if (st == LS_OK) {
        size_t right = 0;
        for (size_t g = 0; g < count; g++)
            for (size_t n = 0; n < cells; n++)
                right += a[g * C * cells + n] == logic_ca_checkerboard_target(n % side, n / side);
        snprintf(out[0].name, sizeof out[0].name, "%s", "hard_acc");
        out[0].value = (double)right / (double)(count * cells);

        eval_start(a, LOGIC_CA_EVAL_GRIDS, 1, C, big);
        st = logic_ca_hard_eval(h, s, a, LOGIC_CA_EVAL_GRIDS, 1, bs, LOGIC_CA_BIG_STEPS, err);
    }
    if (st == LS_OK) {
        size_t right = 0;
        for (size_t n = 0; n < big; n++)
            right += a[n] == logic_ca_checkerboard_target(n % bs, n / bs);
        snprintf(out[1].name, sizeof out[1].name, "%s", "hard_acc_64");
        out[1].value = (double)right / (double)big;
        *n_out = 2;
    }
    free(a);
    return st;
}

static const logic_ca_task checkerboard_ca = {
    .sample = checkerboard_sample,
    .metrics = checkerboard_metrics,
};

static const void *checkerboard_hooks(const char *model)
{
    return strcmp(model, logic_ca_model.name) == 0 ? &checkerboard_ca : NULL;
}

static const ls_task_defaults checkerboard_defaults[] = {
    { "logic-ca", "seed=23\nlr=0.05\nbeta2=0.99\nweight_decay=0.01\nclip=100\n"
                  "channels=8\nperception=8,4,2\nlayers=256x10,128,64,32,16,8,8\nca_steps=20\ngrid=16\n"
                  "periodic=0\nbatch=2\nparts=8\n" },
    { NULL, NULL },
};

const ls_task_desc checkerboard_task = {
    .size = sizeof(ls_task_desc),
    .name = "checkerboard",
    .summary = "grow a checkerboard on a 16x16 grid in 20 steps (--async: 14x14, 50 steps, random firing)",
    .models = "logic-ca",
    .default_steps = 1000,   /* past the notebook's 500: the plateau can last a few hundred steps */
    .defaults = checkerboard_defaults,
    .switch_key = "async",
    .switch_settings = "grid=14\nca_steps=50\nbatch=1\nparts=7\nlayers=256x14,128,64,32,16,8,8\n",
    .load = checkerboard_load,
    .model_hooks = checkerboard_hooks,
};
