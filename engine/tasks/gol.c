/* task_gol.c — the `gol` task: learn one Game of Life step from the 512
 * 3x3 boards (logic_ca.h), model logic-ca with the notebook's settings
 * (docs/models.md): AdamW(0.9, 0.99, wd 1e-2) after an element-wise
 * clip at 100, lr 0.05, seed 23, logit of gate A at 10. */
#include "engine/models/logic_ca/logic_ca.h"

static ls_status gol_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    return logic_ca_make_data(cfg, out, err);
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
};
