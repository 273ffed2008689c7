/* task_teacher.c — the `teacher` task: a small synthetic classification set
 * labelled by a fixed random network (dataset.h, dataset_make_teacher);
 * models mlp (default) and logic. Small enough for tests and golden files. */
#include "engine/data/dataset.h"

static ls_status teacher_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    (void)cfg;
    return dataset_make_teacher(out, err);
}

static const ls_task_defaults teacher_defaults[] = {
    { "*", "batch=32\nleaf=4\nlr=0.01\n" },
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
