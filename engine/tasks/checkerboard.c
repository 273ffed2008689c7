/* task_checkerboard.c — the `checkerboard` task: grow a checkerboard on a
 * 16x16 grid in 20 CA steps from random start states (logic_ca.h), model
 * logic-ca; --async is the notebook's asynchronous variant (14x14, 50 steps,
 * batch 1, cells fire with probability fire_rate). */
#include "engine/models/logic_ca/logic_ca.h"

static ls_status checkerboard_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    return logic_ca_make_data(cfg, out, err);   /* none: start states are generated */
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
};
