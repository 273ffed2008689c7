/* fashion_mnist.c — the `fashion-mnist` task: Fashion-MNIST from Debian's
 * dataset-fashion-mnist package (or $LOCKSTEP_DATA_DIR); models mlp
 * (default) and logic. One epoch at batch 128 is 469 steps.
 *
 * What is Fashion-MNIST's lives here (its file names, its name, 28x28
 * pixels, 10 classes); reading and checking IDX files is engine/data/idx.c.
 */
#include "engine/tasks/fashion_mnist.h"

#include <stdlib.h>

#include "engine/data/idx.h"

/* The four files, in the order the reader (and the hash) uses. */
static const idx_set fashion_set = {
    .name = "fashion-mnist",
    .files = {
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    },
    .rows = 28,
    .cols = 28,
    .n_classes = 10,
};

ls_status fashion_mnist_load(ls_dataset **out, const char *dir, ls_err *err)
{
    return idx_load_set(out, dir != NULL ? dir : FASHION_MNIST_DIR, &fashion_set, err);
}

static ls_status fashion_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    (void)cfg;
    const char *dir = getenv("LOCKSTEP_DATA_DIR");
    return fashion_mnist_load(out, dir != NULL && *dir != '\0' ? dir : FASHION_MNIST_DIR, err);
}

static const ls_task_defaults fashion_defaults[] = {
    { "*", "batch=128\n" },
    { "mlp", "lr=0.001\n" },
    { "logic", "lr=0.01\n" },
    /* Measured (docs/models.md, "What training reaches"): five epochs are
     * 4690 steps of 64, its default run; the cosine reaches 0 there. */
    { "cnn", "batch=64\nlr=0.0015\nlr_schedule=cosine\ndecay_steps=4690\nsteps=4690\n" },
    { NULL, NULL },
};

const ls_task_desc fashion_mnist_task = {
    .size = sizeof(ls_task_desc),
    .name = "fashion-mnist",
    .summary = "Fashion-MNIST, 60000 training and 10000 test images of 28x28 pixels in 10 classes",
    .models = "mlp logic cnn",
    .default_steps = 469,
    .defaults = fashion_defaults,
    .load = fashion_load,
};
