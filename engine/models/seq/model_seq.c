/* model_seq.c — the `seq` and `cnn` models: a declared network (seq.h)
 * behind a model descriptor. Keys: layers (the declaration's text), image
 * (H,W,C of a sample, or 0 for a flat one), leaf.
 *
 * A leaf is one atom (leaf_atoms = 0: the engine creates the model with
 * leaf = LS_ATOM, so --leaf changes nothing): it gathers its samples into
 * the front of the worker's scratch and runs the network's forward and
 * derived backward on them; the engine's tree adds the atoms. The task
 * trains on the batch mean: finish divides the tree sum by B, once, as
 * mlp's does (and with the same finish_mean promise, so a declared MLP has
 * the hand-written one's bits).
 *
 * `cnn` is a declaration with its own defaults and nothing else: the
 * layers below and 28 x 28 x 1 images (Fashion-MNIST's). `gpt` is one too:
 * a byte-level decoder (a token network, seq.h) of two pre-norm blocks of
 * attention and MLP with an untied head, the text task's default model,
 * which sets its context, batch, learning rate and schedule
 * (engine/tasks/text.c).
 *
 * The engine's test loss calls leaf with step 0 (engine/core/train.c): the
 * leaf then computes the loss alone (seq_loss: the same bits as a training
 * leaf's for a network without dropout; dropout passes its input through
 * there, as in eval and scores) and writes zeros for the gradient it does
 * not need, a third of the work.
 */
#include <stdlib.h>
#include <string.h>

#include "base/simd.h"
#include "engine/core/model.h"
#include "engine/data/dataset.h"
#include "engine/models/seq/seq.h"

#define SEQ_EVAL_CHUNK 1024

typedef struct {
    seq *net;
    size_t dim, classes, max_n;
    size_t x_bytes, lab_bytes, z_bytes;   /* gather areas at the front of the scratch */
    ls_tensor tensors[2 * SEQ_MAX_LAYERS];
    unsigned char no_decay[2 * SEQ_MAX_LAYERS];
} seq_model_t;

static size_t round64(size_t n)
{
    return (n + 63) / 64 * 64;
}

static void sm_init(const void *self, float *params, uint64_t seed)
{
    const seq_model_t *a = self;
    seq_init(a->net, params, seed);
}

static void *net_scratch(const seq_model_t *a, void *scratch)
{
    return (char *)scratch + a->x_bytes + a->lab_bytes + a->z_bytes;
}

static double sm_leaf(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
                      void *scratch)
{
    (void)mode;   /* leaf_adds = 0: only ever asked to write */
    const seq_model_t *a = self;
    const size_t first = leaf * a->max_n;
    const size_t count = b->batch - first < a->max_n ? b->batch - first : a->max_n;
    float *x = scratch;
    int32_t *lab = (int32_t *)(void *)((char *)scratch + a->x_bytes);
    dataset_gather(b->data, &b->data->train, b->ids + first, count, x, lab);
    if (b->step == 0) {
        /* The engine's test loss (step 0): it reads the loss alone, so the
         * backward pass is skipped; the buffer still gets a defined value. */
        memset(buf, 0, seq_n_params(a->net) * sizeof(float));
        return seq_loss(a->net, params, x, lab, count, net_scratch(a, scratch));
    }
    /* Dropout's masks: the leaf's first sample is slot `first` of step t,
     * stream position q = (t-1)·B + first (lockstep.h, ls_batch), whatever
     * the leaf size, the threads or the ranks. */
    const uint64_t q0 = (uint64_t)(b->step - 1) * (uint64_t)b->batch + (uint64_t)first;
    return seq_leaf(a->net, params, x, lab, count, b->seed, (uint64_t)b->step, q0, buf, net_scratch(a, scratch));
}

static size_t sm_eval(const void *self, const float *params, const ls_dataset *data, size_t first, size_t count,
                      void *scratch)
{
    const seq_model_t *a = self;
    float *x = scratch;
    float *z = (float *)(void *)((char *)scratch + a->x_bytes + a->lab_bytes);
    const ls_split *s = &data->test;
    uint32_t ids[256];
    size_t correct = 0;
    for (size_t done = 0; done < count;) {
        size_t n = count - done < a->max_n ? count - done : a->max_n;
        if (n > 256)
            n = 256;
        for (size_t i = 0; i < n; i++)
            ids[i] = (uint32_t)(first + done + i);
        dataset_gather(data, s, ids, n, x, NULL);
        seq_logits(a->net, params, x, n, z, net_scratch(a, scratch));
        for (size_t i = 0; i < n; i++) {
            const float *zi = z + i * a->classes;
            size_t best = 0;
            for (size_t c = 1; c < a->classes; c++)
                if (zi[c] > zi[best])   /* strict: the lowest index wins a tie */
                    best = c;
            correct += best == (size_t)dataset_label(data, s, first + done + i);
        }
        done += n;
    }
    return correct;
}

static void sm_scores(const void *self, const float *params, const float *x, size_t count, float *out,
                      void *scratch)
{
    const seq_model_t *a = self;
    for (size_t done = 0; done < count;) {
        const size_t n = count - done < a->max_n ? count - done : a->max_n;
        seq_logits(a->net, params, x + done * a->dim, n, out + done * a->classes, net_scratch(a, scratch));
        done += n;
    }
}

static void sm_destroy(void *self)
{
    seq_model_t *a = self;
    if (a == NULL)
        return;
    seq_destroy(a->net);
    free(a);
}

static ls_status sm_check(const ls_config *cfg, ls_err *err)
{
    seq_decl *d = malloc(sizeof *d);
    if (d == NULL)
        return ls_fail(err, LS_ENOMEM, "layers: out of memory");
    ls_status st = seq_parse(ls_config_str(cfg, "layers"), d, err);
    free(d);
    if (st != LS_OK)
        return st;
    const size_t *image;
    const size_t n = ls_config_list(cfg, "image", &image);
    if (!(n == 1 && image[0] == 0) && !(n == 3 && image[0] > 0 && image[1] > 0 && image[2] > 0))
        return ls_fail(err, LS_EINVAL, "image: give H,W,C (three sizes of at least 1) or 0 for flat samples");
    return LS_OK;
}

/* A token network (embed first) reads each feature as a token id: a byte v
 * given as v/255 (seq_token_id), below the vocabulary (the task's classes).
 * Any other feature would be the embedding's NaN row and the first step's
 * loss NaN; it is named here instead, with its split, sample and feature. */
static ls_status check_token_split(const ls_split *sp, const char *split, size_t vocab, ls_err *err)
{
    if (sp->x8 != NULL) {
        if (vocab >= 256)
            return LS_OK;   /* every byte is a token */
        for (size_t k = 0; k < sp->n * sp->dim; k++)
            if (sp->x8[k] >= vocab)
                return ls_fail(err, LS_EINVAL, "layers: embed reads each feature as a token id below the "
                               "vocabulary of %zu (the task's classes): %s sample %zu feature %zu is byte %u", vocab,
                               split, k / sp->dim, k % sp->dim, (unsigned)sp->x8[k]);
        return LS_OK;
    }
    for (size_t k = 0; sp->xf != NULL && k < sp->n * sp->dim; k++) {
        const float f = sp->xf[k];
        const int32_t id = seq_token_id(f);
        if (id < 0 || (size_t)id >= vocab || (float)id / 255.0f != f)
            return ls_fail(err, LS_EINVAL, "layers: embed reads each feature as a token id v given as v/255, v below "
                           "the vocabulary of %zu (the task's classes): %s sample %zu feature %zu is %.9g", vocab,
                           split, k / sp->dim, k % sp->dim, (double)f);
    }
    return LS_OK;
}

static ls_status sm_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                           ls_err *err)
{
    *self = NULL;
    if (data == NULL)
        return ls_fail(err, LS_EINVAL, "model %s needs a data set (task %s has none)", cfg->model, cfg->task);
    ls_status st = sm_check(cfg, err);
    if (st != LS_OK)
        return st;
    const size_t *image;
    const size_t n_image = ls_config_list(cfg, "image", &image);
    size_t in[3] = { 1, 1, data->train.dim };
    if (n_image == 3) {
        if (image[0] * image[1] * image[2] != data->train.dim)
            return ls_fail(err, LS_EINVAL, "image: %zu x %zu x %zu is not the data's %zu features per sample",
                           image[0], image[1], image[2], data->train.dim);
        in[0] = image[0];
        in[1] = image[1];
        in[2] = image[2];
    }
    const size_t max_n = model_leaf_size((size_t)ls_config_int(cfg, "leaf"), cfg->batch);
    seq_decl *d = malloc(sizeof *d);
    seq_model_t *a = calloc(1, sizeof *a);
    if (d == NULL || a == NULL) {
        free(d);
        free(a);
        return ls_fail(err, LS_ENOMEM, "model: out of memory");
    }
    st = seq_parse(ls_config_str(cfg, "layers"), d, err);
    /* A convolution or a pool over a flat sample would see one 1 x 1 pixel
     * of dim channels: it trains, as a dense layer whose other taps never
     * get a gradient, which no one means. The image's shape is the user's
     * to give. */
    for (size_t i = 0; st == LS_OK && n_image != 3 && i < d->n; i++)
        if (d->layer[i].kind == NN_CONV2D || d->layer[i].kind == NN_MAXPOOL || d->layer[i].kind == NN_AVGPOOL)
            st = ls_fail(err, LS_EINVAL, "layers: token %zu (%s) needs an image: give image H,W,C (--image), "
                         "H x W x C = the data's %zu features", d->pos[i],
                         d->layer[i].kind == NN_CONV2D ? "conv" : d->layer[i].kind == NN_MAXPOOL ? "maxpool" : "avgpool",
                         data->train.dim);
    if (st == LS_OK)
        st = seq_create(&a->net, d, in, data->n_classes, max_n, err);
    free(d);
    if (st == LS_OK && seq_tokens(a->net)) {
        st = check_token_split(&data->train, "train", data->n_classes, err);
        if (st == LS_OK)
            st = check_token_split(&data->test, "test", data->n_classes, err);
        if (st != LS_OK)
            seq_destroy(a->net);
    }
    if (st != LS_OK) {
        free(a);
        return st;
    }
    a->dim = data->train.dim;
    a->classes = data->n_classes;
    a->max_n = max_n;
    a->x_bytes = round64(max_n * a->dim * sizeof(float));
    a->lab_bytes = round64(max_n * sizeof(int32_t));
    a->z_bytes = round64(max_n * a->classes * sizeof(float));
    const size_t nt = seq_n_tensors(a->net);
    for (size_t t = 0; t < nt; t++) {
        ls_tensor *x = &a->tensors[t];
        size_t shape[2];
        int no_decay;
        seq_tensor(a->net, t, &x->name, &x->offset, &x->ndim, shape, &no_decay);
        x->shape[0] = shape[0];
        x->shape[1] = shape[1];
        a->no_decay[t] = (unsigned char)no_decay;
    }
    const size_t np = seq_n_params(a->net);
    *info = (ls_model_info){
        .n_params = np,
        .leaf_len = np,
        .leaves = (cfg->batch + max_n - 1) / max_n,
        .finish_units = np,
        .hints.finish_mean = 1,
        .scratch_bytes = a->x_bytes + a->lab_bytes + a->z_bytes + seq_scratch_bytes(a->net),
        .eval_chunk = SEQ_EVAL_CHUNK,
        .mean_loss = 1,
        .flops_per_sample = seq_flops_per_sample(a->net),
        .tensors = a->tensors,
        .n_tensors = nt,
        .no_decay = a->no_decay,
        .inputs = a->dim,
        .outputs = a->classes,
    };
    *self = a;
    return LS_OK;
}

#define SEQ_KEYS(LAYERS, IMAGE)                                                                                  \
    { "layers", LS_KEY_TEXT, LAYERS, 0, 0, NULL, NULL,                                                            \
      "the layers, e.g. dense:256,relu,dense:10 or conv3x3:32,relu,maxpool2,dense:10 (docs/models.md)", 0 },     \
    { "image", LS_KEY_LIST, IMAGE, 0, 65536, NULL, NULL, "a sample's H,W,C for image layers; 0: flat", 0 },         \
    { "leaf", LS_KEY_INT, "16", LS_ATOM, 1 << 20, NULL, NULL,                                                      \
      "samples per leaf (a leaf is always one atom of 16: accepted for scripts, changes nothing)", 0 }

static const ls_key seq_keys[] = { SEQ_KEYS("dense:256,relu,dense:256,relu,dense:10", "0") };

/* The CNN's declaration: two convolution blocks and a dense head. */
#define CNN_LAYERS "conv3x3:32,relu,maxpool2,conv3x3:64,relu,maxpool2,dense:128,relu,dense:10"
static const ls_key cnn_keys[] = { SEQ_KEYS(CNN_LAYERS, "28,28,1") };

/* The GPT's declaration: token and position embeddings of width 64, two
 * pre-norm blocks (attention of 4 heads, an MLP of 256), a last norm and
 * an untied head over the 256 bytes. */
#define GPT_LAYERS \
    "embed:64,posembed,2x[res(layernorm,attn:4),res(layernorm,dense:256,gelu,dense:64)],layernorm,dense:256"
static const ls_key gpt_keys[] = { SEQ_KEYS(GPT_LAYERS, "0") };

/* seq, cnn and gpt are one model with three sets of defaults: the same
 * functions, their own name, summary, tasks and keys. */
#define SEQ_DESC(NAME, SUMMARY, TASKS, KEYS)                                                                     \
    {                                                                                                          \
        .size = sizeof(ls_model_desc), .name = NAME, .summary = SUMMARY, .tasks = TASKS, .keys = KEYS,         \
        .n_keys = sizeof KEYS / sizeof KEYS[0], .create = sm_create, .destroy = sm_destroy, .check = sm_check, \
        .init = sm_init, .leaf = sm_leaf, .leaf_atoms = 0, .finish = model_finish_mean, .eval = sm_eval,       \
        .scores = sm_scores,                                                                                   \
    }

const ls_model_desc seq_model =
    SEQ_DESC("seq", "a network declared as text (--layers dense:256,relu,dense:10), backward derived",
             "fashion-mnist teacher arrays text", seq_keys);

/* cnn's and gpt's tasks name them (engine/tasks/fashion_mnist.c, text.c). */
const ls_model_desc cnn_model =
    SEQ_DESC("cnn", "two convolution blocks and a dense head for 28x28 images (a declared network, as seq)", NULL,
             cnn_keys);

const ls_model_desc gpt_model =
    SEQ_DESC("gpt", "a byte-level decoder: embeddings, two pre-norm blocks of attention and MLP (declared, as seq)",
             NULL, gpt_keys);
