/* task_fashion_mnist.c — the `fashion-mnist` task: Fashion-MNIST from
 * Debian's dataset-fashion-mnist package (or $LOCKSTEP_DATA_DIR); models
 * mlp (default) and logic. One epoch at batch 128 is 469 steps. */
#include <stdlib.h>

#include "engine/data/dataset.h"

static ls_status fashion_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    (void)cfg;
    const char *dir = getenv("LOCKSTEP_DATA_DIR");
    return dataset_load_fashion(out, dir != NULL && *dir != '\0' ? dir : DATASET_FASHION_DIR, err);
}

static const ls_task_defaults fashion_defaults[] = {
    { "*", "batch=128\n" },
    { "mlp", "lr=0.001\n" },
    { "logic", "lr=0.01\n" },
    { NULL, NULL },
};

const ls_task_desc fashion_mnist_task = {
    .size = sizeof(ls_task_desc),
    .name = "fashion-mnist",
    .summary = "Fashion-MNIST, 60000 training and 10000 test images of 28x28 pixels in 10 classes",
    .models = "mlp logic",
    .default_steps = 469,
    .defaults = fashion_defaults,
    .load = fashion_load,
};
