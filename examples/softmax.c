/* softmax.c — a model and a task added to lockstep from outside, through the
 * installed public header alone, and the proof that they keep the contract:
 * the same config trained at 1, 2, 3 and 8 threads gives the same bits.
 *
 *   model "softmax": softmax regression, logits z = W x + b, cross-entropy
 *                    loss; its own config key `leaf` (samples per leaf).
 *   task  "blobs":   points around `classes` centres in `dim` dimensions,
 *                    generated here from an integer hash; its own keys
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
 *     random numbers (a hash of (seed, index)), never of a thread or a clock;
 *   - every sum has an order fixed in this code: a leaf visits its samples in
 *     slot order, a dot product its features in index order, the softmax its
 *     classes in index order;
 *   - exp and log are this file's own, made of + - * / and bit operations,
 *     because libm's differ between versions and machines in the last bit;
 *   - it is compiled without floating-point contraction (-ffp-contract=off;
 *     -std=c11 implies it for gcc, not for clang) and without fast-math.
 * The engine does the rest: which thread runs which leaf does not matter,
 * since it sums the leaves with its fixed tree.
 */
#include <lockstep.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arithmetic of our own ------------------------------------------------ */

/* splitmix64's finaliser: a bijection of 64-bit integers that scatters. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* The addressed random number `index` of stream `seed`. */
static uint64_t hash2(uint64_t seed, uint64_t index)
{
    return mix64(seed ^ mix64(index + UINT64_C(0x9e3779b97f4a7c15)));
}

/* A uniform float in [0, 1): the top 24 bits, exactly representable. */
static float unit_float(uint64_t h)
{
    return (float)(h >> 40) / 16777216.0f;
}

static double bits_to_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint64_t double_to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* ln 2 as a sum of two doubles: the high part has trailing zero bits so that
 * k · LN2_HI is exact for the k used here. */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define LOG2E 1.44269504088896338700e+00

/* e^x for x <= 0 (a logit minus the largest): x = k ln2 + r with |r| <=
 * ln2/2, e^r by its Taylor series to degree 13 (error below 1e-17), times
 * 2^k built from the exponent bits. Below -700 the result is taken as 0. */
static double own_exp(double x)
{
    if (x < -700.0)
        return 0.0;
    double kf = x * LOG2E;
    int64_t k = (int64_t)(kf < 0 ? kf - 0.5 : kf + 0.5);
    double r = (x - (double)k * LN2_HI) - (double)k * LN2_LO;
    double p = 1.0;
    for (int n = 13; n >= 1; n--)
        p = 1.0 + r * p / (double)n;
    return p * bits_to_double((uint64_t)(k + 1023) << 52);   /* k >= -1010: a normal 2^k */
}

/* ln x for a normal x > 0 (here x >= 1: a sum of exps whose largest is 1):
 * x = 2^e · m with m in [√½, √2), ln m = 2 atanh(s), s = (m−1)/(m+1),
 * |s| < 0.172, by its series to s^23 (error below 1e-18). */
static double own_log(double x)
{
    uint64_t u = double_to_bits(x);
    int64_t e = (int64_t)((u >> 52) & 0x7ff) - 1023;
    double m = bits_to_double((u & UINT64_C(0x000fffffffffffff)) | UINT64_C(0x3ff0000000000000));
    if (m > 1.41421356237309504880) {
        m = m * 0.5;
        e += 1;
    }
    double s = (m - 1.0) / (m + 1.0);
    double s2 = s * s;
    double q = 1.0 / 23.0;
    for (int n = 10; n >= 0; n--)
        q = 1.0 / (double)(2 * n + 1) + s2 * q;
    return (double)e * LN2_HI + ((double)e * LN2_LO + 2.0 * s * q);
}

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
    { .name = "leaf", .type = LS_KEY_INT, .def = "8", .lo = 1, .hi = 1 << 20,
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

/* W uniform in [-0.1, 0.1) from the addressed hash of (seed, index); b = 0. */
static void softmax_init(const void *self, float *params, uint64_t seed)
{
    const softmax *m = self;
    size_t nw = m->classes * m->dim;
    for (size_t i = 0; i < nw; i++)
        params[i] = (unit_float(hash2(seed, i)) - 0.5f) * 0.2f;
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
            s.e[k] = own_exp((double)s.z[k] - (double)zmax);
            sum += s.e[k];
        }
        /* −ln p_y = ln Σ e^(z_k − zmax) − (z_y − zmax) */
        loss += own_log(sum) - ((double)s.z[y] - (double)zmax);
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

/* Centre c of class k: uniform in [-1, 1)^dim. Sample i: class from the
 * hash, features c + noise, noise the sum of two uniforms minus 1 (a
 * triangle on (-1, 1)), so the blobs overlap. Addresses: centres 0..,
 * samples from 2^32 on. */
static void blobs_fill(float *x, uint8_t *y, size_t n, size_t first, size_t classes, size_t dim)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t a = (UINT64_C(1) << 32) + (uint64_t)(first + i) * (dim + 1);
        size_t k = (size_t)(hash2(BLOBS_STREAM, a) % classes);
        y[i] = (uint8_t)k;
        for (size_t j = 0; j < dim; j++) {
            float c = unit_float(hash2(BLOBS_STREAM, (uint64_t)(k * dim + j))) * 2.0f - 1.0f;
            uint64_t h = hash2(BLOBS_STREAM, a + 1 + j);
            float noise = unit_float(h) + unit_float(mix64(h)) - 1.0f;
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

/* Train run `name` at `threads` to STEPS, evaluate it, close it. */
static int train_one(const ls_config *cfg, const char *db, const char *name, int threads, ls_session_state *state)
{
    ls_err err = { "" };
    ls_session_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.threads = threads;
    opts.db = db;
    opts.name = name;
    opts.steps = STEPS;
    ls_session *s;
    ls_status st = ls_session_open(&s, cfg, &opts, &err);
    if (st != LS_OK)
        return fail(name, st, &err);
    ls_session_state_get(s, state);
    while (state->step < state->target) {
        if ((st = ls_session_step(s, NULL, &err)) != LS_OK)
            break;
        ls_session_state_get(s, state);
    }
    ls_metric metrics[LS_MAX_METRICS];
    size_t n_metrics = 0;
    if (st == LS_OK)
        st = ls_session_evaluate(s, metrics, &n_metrics, &err);
    ls_session_state_get(s, state);
    if (st != LS_OK) {
        int rc = fail(name, st, &err);
        ls_err ignored = { "" };
        ls_session_close(s, st, &ignored);
        return rc;
    }
    if ((st = ls_session_close(s, LS_OK, &err)) != LS_OK)
        return fail(name, st, &err);

    double acc = -1.0;
    for (size_t i = 0; i < n_metrics; i++)
        if (strcmp(metrics[i].name, "test_acc") == 0)
            acc = metrics[i].value;
    /* The session's config hash, not ls_config_hash(cfg): the session's
     * config also holds the data's identity (data_hash), known once loaded. */
    printf("threads %d  run %" PRId64 "  config %016" PRIx64 "  loss %.17g  trajectory %016" PRIx64
           "  test_acc %.4f\n",
           threads, state->run_id, state->config_hash, state->loss, state->traj_hash, acc);
    return 0;
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

    ls_session_state state[N_RUNS];
    char names[N_RUNS][32];
    for (size_t i = 0; i < N_RUNS; i++) {
        snprintf(names[i], sizeof names[i], "example-t%d", THREADS[i]);
        int rc = train_one(cfg, db, names[i], THREADS[i], &state[i]);
        if (rc != 0) {
            ls_config_destroy(cfg);
            return rc;
        }
    }
    ls_config_destroy(cfg);

    int differ = 0;
    for (size_t i = 1; i < N_RUNS; i++) {
        ls_verdict v;
        if ((st = ls_verify(db, names[0], names[i], &v, &err)) != LS_OK)
            return fail("verify", st, &err);
        int same_traj = state[i].traj_hash == state[0].traj_hash;
        if (v.equal && v.same_config && same_traj && v.steps == STEPS + 1)
            printf("verify %s %s: bit-identical over steps 0..%" PRId64 "\n", names[0], names[i], v.steps - 1);
        else {
            printf("verify %s %s: DIFFER (equal %d over %" PRId64 " steps, first difference at step %" PRId64
                   ", same config %d, trajectories %016" PRIx64 " / %016" PRIx64 ")\n",
                   names[0], names[i], v.equal, v.steps, v.first_diff, v.same_config, state[0].traj_hash,
                   state[i].traj_hash);
            differ = 1;
        }
    }
    return differ;
}
