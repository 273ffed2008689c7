/* softmax.c — a model and a task added to lockstep from outside, through the
 * installed public header alone, and the proof that they keep the contract:
 * the same config trained at 1, 2, 3 and 8 threads gives the same bits.
 *
 *   model "softmax": softmax regression, logits z = W x + b, cross-entropy
 *                    loss; its own config key `leaf` (samples per leaf).
 *   task  "blobs":   points around `classes` centres in `dim` dimensions,
 *                    generated here from addressed random numbers; its own keys
 *                    `classes` and `dim`.
 *
 * Build against an installed lockstep (examples/README.md):
 *     cc -std=c11 -ffp-contract=off -O2 softmax.c $(pkg-config --cflags --libs lockstep) -o softmax
 * Run:
 *     ./softmax runs.db        (a database without runs named example-t*)
 * It prints one line per run and one per verification, and exits 0 when
 * every run is bit-identical to the 1-thread run, 1 when one is not (or
 * training diverged), 2 on any other error.
 *
 * What keeps the contract here, and must in any model:
 *   - every result is a function of the parameters, the batch and addressed
 *     random numbers (ls_rng_*: a hash of (seed, purpose, index)), never of
 *     a thread or a clock;
 *   - every sum has an order fixed in this code: a leaf visits its samples in
 *     slot order, a dot product its features in index order, the softmax its
 *     classes in index order;
 *   - exp and log are the library's (ls_exp, ls_log), made of + - * / and
 *     bit operations, because libm's differ between versions and machines
 *     in the last bit;
 *   - it is compiled without floating-point contraction (-ffp-contract=off;
 *     -std=c11 implies it for gcc, not for clang) and without fast-math.
 * The engine does the rest: which thread runs which leaf does not matter,
 * since it sums the leaves with its fixed tree; ls_equiv trains the runs and
 * compares them.
 */
#include <lockstep.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the model: softmax regression ---------------------------------------- */

/* θ: W [classes][dim] row-major, then b [classes]. A leaf buffer has θ's
 * shape: the leaf's summed gradient. */
typedef struct {
    size_t classes, dim;
    size_t leaf;        /* samples per leaf */
    size_t n_params;
} softmax;

/* Per-worker scratch, one block: e [classes] doubles, then floats own
 * [n_params] (a leaf's own sum in LS_LEAF_ADD mode), x [dim], z [classes]. */
typedef struct {
    double *e;
    float *own, *x, *z;
} softmax_scratch;

static softmax_scratch scratch_of(const softmax *m, void *scratch)
{
    softmax_scratch s;
    s.e = scratch;
    s.own = (float *)(s.e + m->classes);
    s.x = s.own + m->n_params;
    s.z = s.x + m->dim;
    return s;
}

static const ls_key SOFTMAX_KEYS[] = {
    { .name = "leaf", .type = LS_KEY_INT, .def = "16", .lo = 1, .hi = 1 << 20,
      .help = "samples per leaf (the unit of gradient work)" },
};

static ls_status softmax_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                                ls_err *err)
{
    if (data == NULL || data->train.n == 0)
        return ls_fail(err, LS_EINVAL, "softmax: needs a task with training data");
    int64_t leaf = ls_config_int(cfg, "leaf");
    int64_t batch = ls_config_int(cfg, "batch");
    if (leaf < 1 || batch < 1)
        return ls_fail(err, LS_EINVAL, "softmax: leaf %" PRId64 " and batch %" PRId64 " must be at least 1", leaf,
                       batch);
    softmax *m = malloc(sizeof *m);
    if (m == NULL)
        return ls_fail(err, LS_ENOMEM, "softmax: out of memory");
    m->classes = data->n_classes;
    m->dim = data->train.dim;
    m->leaf = (size_t)leaf;
    m->n_params = m->classes * m->dim + m->classes;

    size_t bytes = m->classes * sizeof(double) + (m->n_params + m->dim + m->classes) * sizeof(float);
    memset(info, 0, sizeof *info);
    info->n_params = m->n_params;
    info->leaf_len = m->n_params;
    info->leaves = ((size_t)batch + m->leaf - 1) / m->leaf;
    info->phases = 0;
    info->units = 0;
    info->finish_units = m->n_params;
    info->scratch_bytes = (bytes + 63) / 64 * 64;
    info->eval_chunk = 256;
    info->mean_loss = 1;   /* the engine divides the summed loss by the batch; finish the gradient */
    *self = m;
    return LS_OK;
}

static void softmax_destroy(void *self)
{
    free(self);
}

/* W uniform in [-0.1, 0.1) from the addressed numbers of tensor 0, element
 * i, as the built-in models draw theirs; b = 0. */
static void softmax_init(const void *self, float *params, uint64_t seed)
{
    const softmax *m = self;
    size_t nw = m->classes * m->dim;
    for (size_t i = 0; i < nw; i++)
        params[i] = (ls_rng_uniformf(seed, LS_RNG_INIT, 0, i, 0) - 0.5f) * 0.2f;
    for (size_t i = nw; i < m->n_params; i++)
        params[i] = 0.0f;
}

/* z = W x + b, each dot product over the features in index order. */
static void logits(const softmax *m, const float *params, const float *x, float *z)
{
    const float *b = params + m->classes * m->dim;
    for (size_t k = 0; k < m->classes; k++) {
        const float *w = params + k * m->dim;
        float acc = 0.0f;
        for (size_t j = 0; j < m->dim; j++)
            acc += w[j] * x[j];
        z[k] = acc + b[k];
    }
}

/* Leaf `leaf`: samples [leaf·L, min((leaf+1)·L, B)) in slot order. Their
 * gradient, summed sample after sample, goes into buf (WRITE), or is summed
 * on its own first and then added element by element (ADD), as the tree's
 * node would be. Returns the leaf's summed cross-entropy, in binary64. */
static double softmax_leaf(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf,
                           int mode, void *scratch)
{
    const softmax *m = self;
    softmax_scratch s = scratch_of(m, scratch);
    float *g = mode == LS_LEAF_ADD ? s.own : buf;
    memset(g, 0, m->n_params * sizeof *g);
    float *gb = g + m->classes * m->dim;

    size_t first = leaf * m->leaf;
    size_t end = first + m->leaf < b->batch ? first + m->leaf : b->batch;
    double loss = 0.0;
    for (size_t slot = first; slot < end; slot++) {
        uint8_t y;
        ls_dataset_gather(&b->data->train, &b->ids[slot], 1, s.x, &y);
        logits(m, params, s.x, s.z);
        float zmax = s.z[0];
        for (size_t k = 1; k < m->classes; k++)
            zmax = s.z[k] > zmax ? s.z[k] : zmax;
        double sum = 0.0;
        for (size_t k = 0; k < m->classes; k++) {
            s.e[k] = ls_exp((double)s.z[k] - (double)zmax);
            sum += s.e[k];
        }
        /* −ln p_y = ln Σ e^(z_k − zmax) − (z_y − zmax) */
        loss += ls_log(sum) - ((double)s.z[y] - (double)zmax);
        for (size_t k = 0; k < m->classes; k++) {
            float dz = (float)(s.e[k] / sum - (k == y ? 1.0 : 0.0));
            float *gw = g + k * m->dim;
            for (size_t j = 0; j < m->dim; j++)
                gw[j] += dz * s.x[j];
            gb[k] += dz;
        }
    }
    if (mode == LS_LEAF_ADD)
        for (size_t i = 0; i < m->n_params; i++)
            buf[i] = buf[i] + s.own[i];
    return loss;
}

/* The gradient of the batch mean: each element of the tree's sum over B. */
static void softmax_finish(const void *self, const float *sum, size_t batch, float *grad, size_t lo, size_t hi)
{
    (void)self;
    float fb = (float)batch;
    for (size_t i = lo; i < hi; i++)
        grad[i] = sum[i] / fb;
}

/* Correct predictions (argmax of z, the lowest class on a tie) on test
 * samples [first, first + count). */
static size_t softmax_eval(const void *self, const float *params, const ls_dataset *data, size_t first, size_t count,
                           void *scratch)
{
    const softmax *m = self;
    softmax_scratch s = scratch_of(m, scratch);
    size_t correct = 0;
    for (size_t i = first; i < first + count; i++) {
        uint32_t id = (uint32_t)i;
        uint8_t y;
        ls_dataset_gather(&data->test, &id, 1, s.x, &y);
        logits(m, params, s.x, s.z);
        size_t best = 0;
        for (size_t k = 1; k < m->classes; k++)
            if (s.z[k] > s.z[best])
                best = k;
        correct += best == y;
    }
    return correct;
}

static const ls_model_desc SOFTMAX = {
    .size = sizeof(ls_model_desc),
    .name = "softmax",
    .summary = "softmax regression (example: examples/softmax.c)",
    .keys = SOFTMAX_KEYS,
    .n_keys = sizeof SOFTMAX_KEYS / sizeof SOFTMAX_KEYS[0],
    .create = softmax_create,
    .destroy = softmax_destroy,
    .init = softmax_init,
    .prepare = NULL,
    .phase = NULL,
    .leaf = softmax_leaf,
    .finish = softmax_finish,
    .eval = softmax_eval,
    .metrics = NULL,
};

/* ---- the task: blobs ------------------------------------------------------- */

#define BLOBS_TRAIN 2048
#define BLOBS_TEST 512
/* The data's own stream: fixed, so the data (and its hash) do not change
 * with the run's seed. */
#define BLOBS_STREAM UINT64_C(0x626c6f6273)

static const ls_key BLOBS_KEYS[] = {
    { .name = "classes", .type = LS_KEY_INT, .def = "4", .lo = 2, .hi = 16, .help = "number of blobs (classes)" },
    { .name = "dim", .type = LS_KEY_INT, .def = "8", .lo = 1, .hi = 64, .help = "features per sample" },
};

/* Centre c of class k: uniform in [-1, 1)^dim. Sample i: its class drawn
 * below `classes`, features c + noise, noise the sum of two uniforms minus 1
 * (a triangle on (-1, 1)), so the blobs overlap. Addresses (purpose
 * LS_RNG_DATA, then a, b, c): centres (0, k, j), classes (1, i, 0), noise
 * (2, i, j) and (3, i, j). */
static void blobs_fill(float *x, uint8_t *y, size_t n, size_t first, size_t classes, size_t dim)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t id = (uint64_t)(first + i);
        size_t k = (size_t)ls_rng_below(BLOBS_STREAM, LS_RNG_DATA, 1, id, 0, classes);
        y[i] = (uint8_t)k;
        for (size_t j = 0; j < dim; j++) {
            float c = ls_rng_uniformf(BLOBS_STREAM, LS_RNG_DATA, 0, k, j) * 2.0f - 1.0f;
            float noise = ls_rng_uniformf(BLOBS_STREAM, LS_RNG_DATA, 2, id, j) +
                          ls_rng_uniformf(BLOBS_STREAM, LS_RNG_DATA, 3, id, j) - 1.0f;
            x[i * dim + j] = c + noise;
        }
    }
}

static ls_status blobs_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    size_t classes = (size_t)ls_config_int(cfg, "classes");
    size_t dim = (size_t)ls_config_int(cfg, "dim");
    ls_dataset *d;
    ls_status st = ls_dataset_create(&d, "blobs", classes, dim, BLOBS_TRAIN, BLOBS_TEST, err);
    if (st != LS_OK)
        return st;
    blobs_fill(ls_dataset_x(d, 0), ls_dataset_y(d, 0), BLOBS_TRAIN, 0, classes, dim);
    blobs_fill(ls_dataset_x(d, 1), ls_dataset_y(d, 1), BLOBS_TEST, BLOBS_TRAIN, classes, dim);
    if ((st = ls_dataset_seal(d, err)) != LS_OK) {
        ls_dataset_destroy(d);
        return st;
    }
    *out = d;
    return LS_OK;
}

/* Canonical values: lr 0.1 as the binary32 it is, in C's %a form. A batch
 * of 40 is five leaves of 8: the engine's tree is not a full one. */
static const ls_task_defaults BLOBS_DEFAULTS[] = {
    { "softmax", "batch=40\nlr=0x1.99999ap-4\n" },
    { NULL, NULL },
};

static const ls_task_desc BLOBS = {
    .size = sizeof(ls_task_desc),
    .name = "blobs",
    .summary = "points around random centres (example: examples/softmax.c)",
    .models = "softmax",
    .default_steps = 50,
    .keys = BLOBS_KEYS,
    .n_keys = sizeof BLOBS_KEYS / sizeof BLOBS_KEYS[0],
    .defaults = BLOBS_DEFAULTS,
    .switch_key = NULL,
    .switch_settings = NULL,
    .load = blobs_load,
};

/* ---- the program ------------------------------------------------------------ */

#define STEPS 50
static const int THREADS[] = { 1, 2, 3, 8 };
#define N_RUNS (sizeof THREADS / sizeof THREADS[0])

/* 2 after printing what failed; 1 for a diverged run, as lockstep(1) does. */
static int fail(const char *what, ls_status st, const ls_err *err)
{
    fprintf(stderr, "softmax: %s: %s\n", what, err->msg[0] ? err->msg : ls_strerror(st));
    return st == LS_EDIVERGED ? 1 : 2;
}

/* ls_equiv calls this as each run ends: its line. The session's config hash,
 * not ls_config_hash(cfg): the session's config also holds the data's
 * identity (data_hash), known once loaded. */
static void print_run(void *ctx, const ls_equiv_run *r)
{
    (void)ctx;
    if (r->status != LS_OK)
        return;
    double acc = -1.0;
    for (size_t i = 0; i < r->n_metrics; i++)
        if (strcmp(r->metrics[i].name, "test_acc") == 0)
            acc = r->metrics[i].value;
    printf("threads %d  run %" PRId64 "  config %016" PRIx64 "  loss %.17g  trajectory %016" PRIx64
           "  test_acc %.4f\n",
           r->threads, r->run_id, r->config_hash, r->loss, r->traj_hash, acc);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fputs("usage: softmax DB\n"
              "Registers the softmax model and the blobs task, trains one config at 1, 2, 3 and 8\n"
              "threads into DB (runs example-t1, ...), and verifies them bit for bit.\n"
              "exit status: 0 identical, 1 a run differs or diverged, 2 error\n",
              argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr);
        return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    const char *db = argv[1];
    if (strcmp(ls_version(), LS_VERSION_STRING) != 0)
        fprintf(stderr, "softmax: note: built with lockstep.h %s, running liblockstep %s\n", LS_VERSION_STRING,
                ls_version());

    ls_err err = { "" };
    ls_status st;
    if ((st = ls_register_model(&SOFTMAX, &err)) != LS_OK)
        return fail("register softmax", st, &err);
    if ((st = ls_register_task(&BLOBS, &err)) != LS_OK)
        return fail("register blobs", st, &err);
    ls_config *cfg;
    if ((st = ls_config_create(&cfg, "blobs", NULL, &err)) != LS_OK)
        return fail("config", st, &err);
    printf("task blobs, model softmax, %" PRId64 " steps, lockstep %s\n", (int64_t)STEPS, ls_version());

    /* Runs example-t1, -t2, -t3, -t8, recorded in db, each verified against
     * the first from the record. */
    ls_equiv_opts eo = {
        .size = sizeof(ls_equiv_opts),
        .threads = THREADS,
        .n_threads = N_RUNS,
        .session = { .size = sizeof(ls_session_opts), .db = db, .name = "example", .steps = STEPS },
        .on_run = print_run,
    };
    static ls_equiv_result res;   /* static: a few kB, kept off the stack */
    st = ls_equiv(cfg, &eo, &res, &err);
    ls_config_destroy(cfg);
    if (st != LS_OK)
        return fail("equiv", st, &err);

    for (size_t i = 1; i < res.n_runs; i++) {
        const ls_equiv_run *r = &res.runs[i];
        const ls_verdict *v = &r->verdict;
        if (r->same)
            printf("verify example-t%d example-t%d: bit-identical over steps 0..%" PRId64 "\n", THREADS[0],
                   r->threads, v->steps - 1);
        else
            printf("verify example-t%d example-t%d: DIFFER (equal %d over %" PRId64 " steps, first difference at "
                   "step %" PRId64 ", same config %d, trajectories %016" PRIx64 " / %016" PRIx64 ")\n",
                   THREADS[0], r->threads, v->equal, v->steps, v->first_diff, v->same_config, res.runs[0].traj_hash,
                   r->traj_hash);
    }
    return res.equal ? 0 : 1;
}
