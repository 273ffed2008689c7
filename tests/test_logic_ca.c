/* test_logic_ca.c — the logic cellular automaton (engine/models/logic_ca/logic_ca.c):
 * gradients of whole rollouts against central differences of a plain
 * double-precision reference written here (sync and async, periodic and zero
 * borders, several part counts, both tasks); the bit contract of a step's
 * phases and leaves (work units run in order, reversed, on a real pool at
 * 1, 2, 3 and 8 threads, with dirty scratch, SIMD on or off: identical
 * leaves and losses; LS_LEAF_ADD = buf + the leaf, bit for bit); lanes mode
 * (samples side by side) against one unit per sample: every leaf and loss
 * on every schedule and path, and whole gol trainings (batch 1, 5, 20, 37,
 * 1 to 3 CA steps, async, both borders) at 1, 2, 3 and 8 threads; the
 * wiring's structure; the hard circuit against the reference and against a
 * hand-built Game of Life circuit (and a deliberately wrong one); the gol
 * data set and the checkerboard task's targets and start states. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "engine/core/config.h"
#include "engine/models/logic/logic.h"
#include "engine/models/logic_ca/logic_ca.h"
#include "engine/tasks/ca_data.h"
#include "engine/core/train.h"
#include "record/hash.h"
#include "reduce/pool.h"
#include "engine/num/rng.h"

/* ---- the test's own random stream (independent of engine/rng) ---- */

static uint64_t rng_state = 7;

static uint32_t next_u32(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32);
}

static float unit(void) { return (float)(next_u32() >> 8) / 16777216.0f; }

/* ---- configs ---- */

static void set_key(ls_config *cfg, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_key(ls_config *cfg, const char *key, const char *fmt, ...)
{
    char v[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    ls_err err = { { 0 } };
    ls_status st = config_set(cfg, key, v, 0, &err);
    if (st != LS_OK)
        fail_msg("config_set %s=%s: %s", key, v, err.msg);
}

static size_t key_int(const ls_config *cfg, const char *key) { return (size_t)ls_config_int(cfg, key); }

static ls_config small_cfg(const char *task, size_t C, size_t K, const char *perception, const char *layers,
                           size_t grid, size_t steps, int periodic, int async, size_t parts, size_t batch)
{
    ls_config cfg;
    ls_err err = { { 0 } };
    assert_int_equal(config_defaults(&cfg, task, "logic-ca", &err), LS_OK);
    /* async first: turning it on applies the task's variant defaults, which
     * the keys below then override */
    set_key(&cfg, "async", "%d", async);
    set_key(&cfg, "channels", "%zu", C);
    set_key(&cfg, "kernels", "%zu", K);
    set_key(&cfg, "perception", "%s", perception);
    set_key(&cfg, "layers", "%s", layers);
    set_key(&cfg, "grid", "%zu", grid);
    set_key(&cfg, "ca_steps", "%zu", steps);
    set_key(&cfg, "periodic", "%d", periodic);
    if (async)   /* a key only while async: setting it otherwise is refused */
        set_key(&cfg, "fire_rate", "0.6");
    set_key(&cfg, "parts", "%zu", parts);
    cfg.batch = batch;
    cfg.seed = 11;
    assert_int_equal(key_int(&cfg, "channels"), C);
    assert_int_equal(key_int(&cfg, "grid"), grid);
    assert_int_equal(key_int(&cfg, "ca_steps"), steps);
    assert_int_equal(key_int(&cfg, "parts"), parts);
    assert_int_equal(key_int(&cfg, "async"), async);
    assert_true(ls_config_float(&cfg, "fire_rate") == (async ? 0.6f : 0.0f));   /* a key only while async */
    return cfg;
}

/* Units of a phase (logic_ca.h): B·R, or in lanes mode (parts = 1, at
 * most LOGIC_CA_LANES_MAX virtual lanes) ceil(B/16) groups, at least 2
 * when B >= 2. */
static size_t expected_units(const ls_config *cfg, int lanes)
{
    const size_t B = cfg->batch, R = key_int(cfg, "parts"), C = key_int(cfg, "channels"), G = key_int(cfg, "grid");
    if (!lanes)
        return B * R;
    assert_int_equal(R, 1);
    assert_true(C * G * G <= LOGIC_CA_LANES_MAX);
    const size_t groups = (B + 15) / 16;
    return groups < 2 && B >= 2 ? 2 : groups;
}

static ls_model *make_model(const ls_config *cfg)
{
    ls_model *m = NULL;
    ls_err err = { { 0 } };
    ls_status st = model_create(&m, cfg, NULL, &err);
    if (st != LS_OK)
        fprintf(stderr, "model_create: %s\n", err.msg);
    assert_int_equal(st, LS_OK);
    /* the step plan logic_ca.h describes */
    const size_t R = key_int(cfg, "parts"), T = key_int(cfg, "ca_steps");
    assert_string_equal(m->name, "logic-ca");
    assert_ptr_equal(m->desc, &logic_ca_model);
    assert_int_equal(m->info.phases, 2 * T - 1);
    assert_int_equal(m->info.units, expected_units(cfg, m->info.units != cfg->batch * R));
    assert_int_equal(m->info.leaves, cfg->batch * R);
    assert_int_equal(m->info.leaf_len, m->info.n_params / 16 * 4);
    return m;
}

/* ---- running a step's phases and leaves, as an engine would ---- */

/* threads == 0: one scratch area, the units of each phase in order (reversed
 * when rev); threads > 0: a pool, each worker its own scratch. Scratch is
 * filled with `fill` bytes, so results that depended on stale scratch would
 * differ. */
typedef struct {
    unsigned char *scratch;   /* [workers][stride] */
    size_t stride;
    int reversed;
    pool *p;
} sched;

static void make_sched(sched *e, const ls_model *m, int threads, int rev, int fill)
{
    memset(e, 0, sizeof *e);
    e->stride = (m->info.scratch_bytes + 63) / 64 * 64;
    int workers = threads > 0 ? threads : 1;
    e->scratch = aligned_alloc(64, e->stride * (size_t)workers + 64);
    assert_non_null(e->scratch);
    memset(e->scratch, fill, e->stride * (size_t)workers);
    e->reversed = rev;
    if (threads > 0)
        assert_int_equal(pool_create(&e->p, threads, NULL), LS_OK);
}

static void free_sched(sched *e)
{
    pool_destroy(e->p);
    free(e->scratch);
}

typedef struct {
    const sched *e;
    ls_model *m;
    const float *params;
    const ls_batch *b;
    size_t phase;
    float *leaves;
    double *losses;
} step_job;

static void unit_job(void *arg, size_t unit, int worker)
{
    const step_job *j = arg;
    j->m->desc->phase(j->m->self, j->params, j->b, j->phase, unit, j->e->scratch + (size_t)worker * j->e->stride);
}

static void leaf_job(void *arg, size_t leaf, int worker)
{
    const step_job *j = arg;
    j->losses[leaf] = j->m->desc->leaf(j->m->self, j->params, j->b, leaf, j->leaves + leaf * j->m->info.leaf_len,
                                       LS_LEAF_WRITE, j->e->scratch + (size_t)worker * j->e->stride);
}

/* One step's gradient work: prepare, the 2T − 1 phases of the model's units
 * (as the engine runs them: all of them; units whose samples are beyond
 * b->batch do nothing), then every leaf of the b->batch samples written
 * into leaves [B·R][leaf_len] and its loss into losses [B·R]. */
static void grad_run(ls_model *m, size_t parts, const float *params, const ls_batch *b, const sched *e,
                     float *leaves, double *losses)
{
    ls_err err = { { 0 } };
    ls_status st = model_prepare(m, params, b, NULL, &err);
    if (st != LS_OK)
        fprintf(stderr, "prepare: %s\n", err.msg);
    assert_int_equal(st, LS_OK);
    const size_t n = b->batch * parts, units = m->info.units;
    assert_true(n <= m->info.leaves);
    step_job j = { e, m, params, b, 0, leaves, losses };
    for (size_t ph = 0; ph < m->info.phases; ph++) {
        j.phase = ph;
        if (e->p != NULL)
            pool_parallel_for(e->p, units, unit_job, &j);
        else
            for (size_t i = 0; i < units; i++)
                unit_job(&j, e->reversed ? units - 1 - i : i, 0);
    }
    if (e->p != NULL)
        pool_parallel_for(e->p, n, leaf_job, &j);
    else
        for (size_t i = 0; i < n; i++)
            leaf_job(&j, e->reversed ? n - 1 - i : i, 0);
}

/* ---- the reference: a plain double-precision rollout ---- */

/* The relaxations of docs/models.md's table, written out. */
static double relax(int op, double a, double b)
{
    switch (op) {
    case 0: return 0.0;
    case 1: return a * b;
    case 2: return a - a * b;
    case 3: return a;
    case 4: return b - a * b;
    case 5: return b;
    case 6: return a + b - 2 * a * b;
    case 7: return a + b - a * b;
    case 8: return 1 - (a + b - a * b);
    case 9: return 1 - (a + b - 2 * a * b);
    case 10: return 1 - b;
    case 11: return 1 - b + a * b;
    case 12: return 1 - a;
    case 13: return 1 - a + a * b;
    case 14: return 1 - a * b;
    default: return 1.0;
    }
}

typedef struct {
    const logic_ca_hard *h;   /* wiring (and ops when hard) */
    const double *p;          /* softmax of the logits [gates][16], or NULL: hard ops */
    size_t G;
    int periodic;
} ref_net;

static void ref_softmax(double *p, const double *z, size_t gates)
{
    for (size_t g = 0; g < gates; g++) {
        const double *zg = z + g * 16;
        double mx = zg[0], s = 0;
        for (int i = 1; i < 16; i++)
            mx = zg[i] > mx ? zg[i] : mx;
        for (int i = 0; i < 16; i++)
            s += exp(zg[i] - mx);
        for (int i = 0; i < 16; i++)
            p[g * 16 + i] = exp(zg[i] - mx) / s;
    }
}

static double ref_gate(const ref_net *r, size_t gate, double a, double b)
{
    if (r->p == NULL)
        return relax(r->h->ops[gate], a, b);
    double y = 0;
    for (int i = 0; i < 16; i++)
        y += r->p[gate * 16 + i] * relax(i, a, b);
    return y;
}

static void ref_layer(const ref_net *r, size_t l, const double *in, double *out)
{
    const logic_layer *L = &r->h->layer[l];
    for (size_t g = 0; g < L->out; g++)
        out[g] = ref_gate(r, r->h->gate_off[l] + g, in[L->a[g]], in[L->b[g]]);
}

/* One CA step: st, next [C][G²]; mask [G²] (1 = fires) or NULL. */
static void ref_step(const ref_net *r, const double *st, double *next, const uint8_t *mask)
{
    const logic_ca_hard *h = r->h;
    const size_t C = h->channels, K = h->kernels, np = h->n_perception, S = h->width[np - 1];
    const size_t G = r->G, N = G * G;
    double bufa[4096], bufb[4096], uin[4096];
    for (size_t n = 0; n < N; n++) {
        const long y = (long)(n / G), x = (long)(n % G);
        for (size_t c = 0; c < C; c++) {
            for (int p = 0; p < 9; p++) {
                long ny = y + p / 3 - 1, nx = x + p % 3 - 1;
                double v = 0;
                if (r->periodic)
                    v = st[c * N + (size_t)((ny + (long)G) % (long)G) * G + (size_t)((nx + (long)G) % (long)G)];
                else if (ny >= 0 && nx >= 0 && ny < (long)G && nx < (long)G)
                    v = st[c * N + (size_t)ny * G + (size_t)nx];
                bufa[p] = v;
            }
            double *in = bufa, *out = bufb;
            for (size_t l = 0; l < np; l++) {
                ref_layer(r, l, in, out);
                double *t = in;
                in = out;
                out = t;
            }
            for (size_t k = 0; k < K; k++)
                for (size_t s = 0; s < S; s++)
                    uin[C + c * S * K + s * K + k] = in[k * S + s];
        }
        for (size_t c = 0; c < C; c++)
            uin[c] = st[c * N + n];
        double *in = uin, *out = bufa;
        for (size_t l = np; l < h->n_layers; l++) {
            ref_layer(r, l, in, out);
            in = out;
            out = out == bufa ? bufb : bufa;
        }
        for (size_t c = 0; c < C; c++)
            next[c * N + n] = mask == NULL || mask[n] ? in[c] : st[c * N + n];
    }
}

static int test_checker(size_t x, size_t y) { return (int)((x / 2 + y / 2) % 2); }

/* GoL on a 3×3 torus: every cell's neighbours are the 8 other cells, so with
 * p live cells a live cell sees p − 1 and a dead one p. B3/S23 then gives:
 * p = 3 → all 9 alive; p = 4 → unchanged; otherwise all dead. */
static void torus3_next(uint8_t next[9], const uint8_t b[9])
{
    int p = 0;
    for (int j = 0; j < 9; j++)
        p += b[j];
    for (int j = 0; j < 9; j++)
        next[j] = (uint8_t)(p == 3 ? 1 : p == 4 ? b[j] : 0);
}

/* The summed loss of the batch under logits z (double), by the reference. */
static double ref_loss(const ls_config *cfg, const logic_ca_hard *h, const double *z, const ls_batch *b)
{
    const size_t C = key_int(cfg, "channels"), G = key_int(cfg, "grid"), N = G * G, T = key_int(cfg, "ca_steps");
    const int async = (int)ls_config_int(cfg, "async");
    const float fire_rate = ls_config_float(cfg, "fire_rate");
    double *p = malloc(h->gates * 16 * sizeof *p);
    ref_softmax(p, z, h->gates);
    ref_net r = { h, p, G, (int)ls_config_int(cfg, "periodic") };
    double *st = malloc(C * N * sizeof *st), *nx = malloc(C * N * sizeof *nx);
    uint8_t *mask = malloc(N);
    double total = 0;
    for (size_t s = 0; s < b->batch; s++) {
        double tgt[64];
        assert_true(N <= 64);
        if (strcmp(cfg->task, "gol") == 0) {
            const uint8_t *board = b->data->train.x8 + (size_t)b->ids[s] * 9;
            uint8_t a[9], nb[9];
            memcpy(a, board, 9);
            for (size_t u = 0; u < T; u++) {
                torus3_next(nb, a);
                memcpy(a, nb, 9);
            }
            memset(st, 0, C * N * sizeof *st);
            for (size_t n = 0; n < 9; n++) {
                st[n] = board[n];
                tgt[n] = a[n];
            }
        } else {
            /* The start-state address, from logic_ca.h. */
            for (size_t c = 0; c < C; c++)
                for (size_t n = 0; n < N; n++)
                    st[c * N + n] =
                        rng_uniformf(b->seed, RNG_CA_START, (uint64_t)b->step, s, n * C + c) < 0.5f ? 1.0 : 0.0;
            for (size_t n = 0; n < N; n++)
                tgt[n] = test_checker(n % G, n / G);
        }
        for (size_t u = 0; u < T; u++) {
            for (size_t n = 0; n < N; n++)
                mask[n] = !async || rng_uniformf(b->seed, RNG_CA_MASK, (uint64_t)b->step, s, u * N + n) < fire_rate;
            ref_step(&r, st, nx, mask);
            memcpy(st, nx, C * N * sizeof *st);
        }
        for (size_t n = 0; n < N; n++)
            total += (st[n] - tgt[n]) * (st[n] - tgt[n]);
    }
    free(st);
    free(nx);
    free(mask);
    free(p);
    return total;
}

/* ---- gradients against central differences ---- */

static void check_gradient(const ls_config *cfg, const ls_dataset *data, const uint32_t *ids)
{
    ls_model *m = make_model(cfg);
    const size_t R = key_int(cfg, "parts");
    const size_t np = m->info.n_params, gates = np / 16;
    float *params = malloc(np * sizeof *params), *grad = malloc(np * sizeof *grad);
    double *z = malloc(np * sizeof *z);
    /* Soft logits in [-2, 2]; in about 3/4 of the gates one pass-through op
     * (A, B, NOT B, NOT A) raised by 6, so that gradients survive several CA
     * steps and cross part borders with weight: with all gates soft (or
     * sharpened to XOR, whose slope vanishes at 1/2) the gradient through
     * the state of earlier steps is ~1e-5 of the total, too faint for a
     * tolerance to see a wrong neighbour index. */
    for (size_t i = 0; i < np; i++)
        params[i] = 4.0f * unit() - 2.0f;
    static const uint32_t pass[4] = { 3, 5, 10, 12 };
    for (size_t g = 0; g < gates; g++)
        if (next_u32() % 4 != 0)
            params[g * 16 + pass[next_u32() % 4]] += 6.0f;
    for (size_t i = 0; i < np; i++)
        z[i] = params[i];
    logic_ca_hard *h;
    assert_int_equal(logic_ca_hard_create(&h, m, params, NULL), LS_OK);
    ls_batch b = { .data = data, .ids = ids, .batch = cfg->batch, .step = 5, .seed = cfg->seed };
    const size_t nl = b.batch * R;
    float *leaves = malloc(nl * m->info.leaf_len * sizeof *leaves);
    double *losses = malloc(nl * sizeof *losses);
    sched e;
    make_sched(&e, m, 0, 0, 0);
    grad_run(m, R, params, &b, &e, leaves, losses);
    free_sched(&e);
    /* Sum the leaves (any order does for a tolerance check), then finish. */
    float *sum = calloc(m->info.leaf_len, sizeof *sum);
    double loss = 0;
    for (size_t i = 0; i < nl; i++) {
        loss += losses[i];
        for (size_t k = 0; k < m->info.leaf_len; k++)
            sum[k] += leaves[i * m->info.leaf_len + k];
    }
    m->desc->finish(m->self, sum, b.batch, grad, 0, gates);

    const double ref = ref_loss(cfg, h, z, &b);
    assert_true(fabs(loss - ref) <= 1e-5 * (1.0 + fabs(ref)));
    /* Central differences of the double reference, step 1e-4 (truncation
     * ~1e-8 relative). The model runs in binary32 through a rollout of
     * several steps: per element |g − fd| <= 2e-4·|fd| + 1e-4·max|fd|, and
     * over the vector ‖g − fd‖ <= 1e-4·‖fd‖. Measured on these cases: at
     * most ~3% of the element tolerance and ‖g − fd‖/‖fd‖ <= 6e-6; dropping
     * the neighbours' gradients, reading them from the mirrored position,
     * dropping the async pass-through or flattening the perception in
     * (c, k, s) order each fails. */
    const double hstep = 1e-4;
    double *fd = malloc(np * sizeof *fd), maxfd = 0;
    for (size_t i = 0; i < np; i++) {
        const double z0 = z[i];
        z[i] = z0 + hstep;
        const double lp = ref_loss(cfg, h, z, &b);
        z[i] = z0 - hstep;
        const double lm = ref_loss(cfg, h, z, &b);
        z[i] = z0;
        fd[i] = (lp - lm) / (2 * hstep);
        maxfd = fabs(fd[i]) > maxfd ? fabs(fd[i]) : maxfd;
    }
    assert_true(maxfd > 1e-3);   /* the check has something to check */
    double num = 0, den = 0;
    for (size_t i = 0; i < np; i++) {
        const double tol = 2e-4 * fabs(fd[i]) + 1e-4 * maxfd;
        const double d = fabs((double)grad[i] - fd[i]);
        if (d > tol)
            fprintf(stderr, "param %zu (gate %zu op %zu): model %.9g, differences %.9g\n", i, i / 16, i % 16,
                    (double)grad[i], fd[i]);
        assert_true(d <= tol);
        num += d * d;
        den += fd[i] * fd[i];
    }
    assert_true(sqrt(num) <= 1e-4 * sqrt(den));
    logic_ca_hard_destroy(h);
    free(fd);
    free(sum);
    free(leaves);
    free(losses);
    free(z);
    free(params);
    free(grad);
    model_destroy(m);
}

static void test_gradient_checkerboard(void **state)
{
    (void)state;
    static const struct { int periodic, async; size_t parts; } cases[] = {
        { 1, 0, 1 }, { 0, 0, 2 }, { 1, 1, 3 }, { 0, 1, 4 }, { 0, 0, 3 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ls_config cfg = small_cfg("checkerboard", 2, 2, "8,4,2", "8,4,2", 4, 3, cases[i].periodic,
                                  cases[i].async, cases[i].parts, 2);
        check_gradient(&cfg, NULL, NULL);
    }
}

static void test_gradient_gol(void **state)
{
    (void)state;
    ls_config cfg = small_cfg("gol", 1, 4, "8,4,2,1", "8,4,2,1", 3, 1, 1, 0, 1, 3);
    ls_dataset *d;
    assert_int_equal(logic_ca_make_data(&cfg, &d, NULL), LS_OK);
    const uint32_t ids[3] = { 0x38, 0x1ff - 0x10, 0x0b3 };   /* p = 3, 8, 5 */
    check_gradient(&cfg, d, ids);
    set_key(&cfg, "ca_steps", "2");
    set_key(&cfg, "parts", "3");
    check_gradient(&cfg, d, ids);
    dataset_destroy(d);
}

/* ---- the bit contract of the phases and leaves ---- */


/* The model's init, then moved away from its symmetry by uniform noise. */
static float *perturbed_params(const ls_model *m, uint64_t seed)
{
    float *params = malloc(m->info.n_params * sizeof *params);
    assert_non_null(params);
    m->desc->init(m->self, params, seed);
    for (size_t i = 0; i < m->info.n_params; i++)
        params[i] += 2.0f * unit() - 1.0f;
    return params;
}

/* The leaves and losses of the plain in-order schedule (the reference the
 * other schedules are compared with); the loss must be finite and positive. */
static void reference_leaves(ls_model *m, size_t R, const float *params, const ls_batch *b, float *ref,
                             double *rl, size_t nl)
{
    sched e;
    make_sched(&e, m, 0, 0, 0);
    grad_run(m, R, params, b, &e, ref, rl);
    free_sched(&e);
    double total = 0;
    for (size_t i = 0; i < nl; i++)
        total += rl[i];
    assert_true(isfinite(total) && total > 0);
}

static void check_schedules(const ls_config *cfg, const ls_dataset *data, const uint32_t *ids, int64_t step)
{
    ls_model *m = make_model(cfg);
    const size_t R = key_int(cfg, "parts");
    float *params = perturbed_params(m, cfg->seed);
    ls_batch b = { .data = data, .ids = ids, .batch = cfg->batch, .step = step, .seed = cfg->seed };
    const size_t nl = b.batch * R, lb = nl * m->info.leaf_len * sizeof(float);
    float *ref = malloc(lb), *got = malloc(lb);
    double *rl = malloc(nl * sizeof *rl), *gl = malloc(nl * sizeof *gl);
    sched e;
    reference_leaves(m, R, params, &b, ref, rl, nl);

    /* reversed order, dirty scratch */
    make_sched(&e, m, 0, 1, 0xff);
    memset(got, 0x55, lb);
    grad_run(m, R, params, &b, &e, got, gl);
    free_sched(&e);
    assert_memory_equal(ref, got, lb);
    assert_memory_equal(rl, gl, nl * sizeof *rl);

    const int threads[] = { 1, 2, 3, 8 };
    for (size_t t = 0; t < 4; t++) {
        make_sched(&e, m, threads[t], 0, 0x7f);
        memset(got, 0xaa, lb);
        grad_run(m, R, params, &b, &e, got, gl);
        /* twice on the same pool: the model's per-batch arrays are reused */
        grad_run(m, R, params, &b, &e, got, gl);
        free_sched(&e);
        assert_memory_equal(ref, got, lb);
        assert_memory_equal(rl, gl, nl * sizeof *rl);
    }

    /* the scalar twins of logic.c give the same bits */
    int prev = logic_set_simd(0);
    make_sched(&e, m, 2, 0, 0x11);
    grad_run(m, R, params, &b, &e, got, gl);
    free_sched(&e);
    logic_set_simd(prev);
    assert_memory_equal(ref, got, lb);
    assert_memory_equal(rl, gl, nl * sizeof *rl);

    /* LS_LEAF_ADD: buf = buf + the leaf, element by element, same loss */
    const size_t len = m->info.leaf_len;
    float *acc = malloc(len * sizeof *acc), *want = malloc(len * sizeof *want);
    make_sched(&e, m, 0, 0, 0x5a);
    for (size_t i = 0; i < nl; i += nl > 3 ? nl / 3 : 1) {
        for (size_t k = 0; k < len; k++) {
            acc[k] = 4.0f * unit() - 2.0f;
            want[k] = acc[k] + ref[i * len + k];
        }
        const double l = m->desc->leaf(m->self, params, &b, i, acc, LS_LEAF_ADD, e.scratch);
        assert_memory_equal(acc, want, len * sizeof *acc);
        assert_memory_equal(&l, &rl[i], sizeof l);
    }
    free_sched(&e);
    free(acc);
    free(want);

    free(ref);
    free(got);
    free(rl);
    free(gl);
    free(params);
    model_destroy(m);
}

static void test_schedules_checkerboard(void **state)
{
    (void)state;
    static const struct { int periodic, async; size_t parts; } cases[] = {
        { 0, 0, 4 }, { 1, 1, 3 }, { 1, 0, 8 }, { 0, 1, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ls_config cfg = small_cfg("checkerboard", 3, 4, "8,4,2", "16,8,4,3", 8, 6, cases[i].periodic,
                                  cases[i].async, cases[i].parts, 3);
        check_schedules(&cfg, NULL, NULL, 3);
    }
}

static void test_schedules_defaults(void **state)
{
    (void)state;
    ls_config cfg;
    ls_err err = { { 0 } };
    /* the notebook's checkerboard (sync), one step of it */
    assert_int_equal(config_defaults(&cfg, "checkerboard", NULL, &err), LS_OK);
    set_key(&cfg, "ca_steps", "4");   /* shorter rollout, same shapes */
    check_schedules(&cfg, NULL, NULL, 2);
    /* the notebook's Game of Life */
    assert_int_equal(config_defaults(&cfg, "gol", NULL, &err), LS_OK);
    ls_dataset *d;
    assert_int_equal(logic_ca_make_data(&cfg, &d, &err), LS_OK);
    uint32_t ids[20];
    for (size_t i = 0; i < 20; i++)
        ids[i] = (uint32_t)(i * 37 % 512);
    check_schedules(&cfg, d, ids, 9);
    dataset_destroy(d);
}

/* A batch smaller than the configured one gives the leaves of its samples:
 * the same bits as the first samples of the full batch. */
static void test_partial_batch(void **state)
{
    (void)state;
    ls_config cfg = small_cfg("checkerboard", 2, 2, "8,4,2", "8,4,2", 6, 4, 0, 1, 3, 3);
    set_key(&cfg, "residual", "0");   /* Gaussian logits */
    ls_model *m = make_model(&cfg);
    const size_t R = key_int(&cfg, "parts");
    float *params = malloc(m->info.n_params * sizeof *params);
    m->desc->init(m->self, params, 3);
    ls_batch b = { .batch = 3, .step = 4, .seed = cfg.seed };
    const size_t nl = 3 * R;
    float *full = malloc(nl * m->info.leaf_len * sizeof(float)), *part = malloc(nl * m->info.leaf_len * sizeof(float));
    double fl[9], pl[9];
    sched e;
    make_sched(&e, m, 2, 0, 0);
    grad_run(m, R, params, &b, &e, full, fl);
    b.batch = 2;
    grad_run(m, R, params, &b, &e, part, pl);
    assert_memory_equal(full, part, 2 * R * m->info.leaf_len * sizeof(float));
    assert_memory_equal(fl, pl, 2 * R * sizeof(double));
    /* more than the configured batch is refused (by prepare, which builds
     * the batch's start states) */
    b.batch = 4;
    ls_err err = { { 0 } };
    assert_int_equal(model_prepare(m, params, &b, NULL, &err), LS_EINVAL);
    assert_true(err.msg[0] != 0);
    /* and afterwards a good batch gives the same bits again */
    b.batch = 2;
    memset(part, 0x33, nl * m->info.leaf_len * sizeof(float));
    grad_run(m, R, params, &b, &e, part, pl);
    assert_memory_equal(full, part, 2 * R * m->info.leaf_len * sizeof(float));
    assert_memory_equal(fl, pl, 2 * R * sizeof(double));
    free_sched(&e);
    free(full);
    free(part);
    free(params);
    model_destroy(m);
}

/* ---- lanes mode: the same bits as one unit per (sample, part) ---- */

/* The schedules a step is compared on: in order, reversed with dirty
 * scratch, 1, 2, 3 and 8 threads, the scalar twins and at most AVX2
 * (simd: logic_set_simd's setting). */
static const struct { int threads, rev, fill, simd; } SCHEDULES[] = {
    { 0, 0, 0, 1 }, { 0, 1, 0xff, 1 }, { 1, 0, 0x7f, 1 }, { 2, 0, 0xaa, 1 }, { 3, 0, 0x55, 1 },
    { 8, 0, 0xff, 1 }, { 2, 0, 0x11, 0 }, { 3, 1, 0x11, 2 },
};

/* The leaves and losses of one step with lanes mode forced on, on every
 * schedule (in order, reversed with dirty scratch, 1, 2, 3 and 8 threads,
 * scalar twins, at most AVX2), against lanes mode off. */
static void check_lanes(const ls_config *cfg, const ls_dataset *data, const uint32_t *ids, int64_t step)
{
    const int prev = logic_ca_set_lanes(LOGIC_CA_LANES_NEVER);
    ls_model *off = make_model(cfg);
    logic_ca_set_lanes(LOGIC_CA_LANES_ALWAYS);
    ls_model *on = make_model(cfg);
    logic_ca_set_lanes(prev);
    const size_t R = key_int(cfg, "parts"), B = cfg->batch;
    assert_int_equal(off->info.units, B * R);
    assert_int_equal(on->info.units, expected_units(cfg, 1));
    assert_int_equal(on->info.scratch_bytes >= off->info.scratch_bytes, 1);
    float *params = perturbed_params(off, cfg->seed);
    ls_batch b = { .data = data, .ids = ids, .batch = B, .step = step, .seed = cfg->seed };
    const size_t nl = B * R, lb = nl * off->info.leaf_len * sizeof(float);
    float *ref = malloc(lb), *got = malloc(lb);
    double *rl = malloc(nl * sizeof *rl), *gl = malloc(nl * sizeof *gl);
    sched e;
    reference_leaves(off, R, params, &b, ref, rl, nl);

    for (size_t k = 0; k < sizeof SCHEDULES / sizeof SCHEDULES[0]; k++) {
        const int sp = logic_set_simd(SCHEDULES[k].simd);
        make_sched(&e, on, SCHEDULES[k].threads, SCHEDULES[k].rev, SCHEDULES[k].fill);
        memset(got, 0x5a, lb);
        grad_run(on, R, params, &b, &e, got, gl);
        grad_run(on, R, params, &b, &e, got, gl);   /* the per-batch arrays reused */
        free_sched(&e);
        logic_set_simd(sp);
        if (memcmp(ref, got, lb) != 0 || memcmp(rl, gl, nl * sizeof *rl) != 0)
            fail_msg("lanes: batch %zu, ca_steps %zu, async %d, periodic %d: run %zu differs", B,
                     key_int(cfg, "ca_steps"), (int)key_int(cfg, "async"), (int)key_int(cfg, "periodic"), k);
    }
    /* a batch smaller than the configured one: its samples' bits */
    if (B > 1) {
        b.batch = B - B / 3;
        make_sched(&e, on, 2, 0, 0x33);
        memset(got, 0x5a, lb);
        grad_run(on, R, params, &b, &e, got, gl);
        free_sched(&e);
        assert_memory_equal(ref, got, b.batch * R * on->info.leaf_len * sizeof(float));
        assert_memory_equal(rl, gl, b.batch * R * sizeof *rl);
    }
    free(ref);
    free(got);
    free(rl);
    free(gl);
    free(params);
    model_destroy(off);
    model_destroy(on);
}

/* The Game of Life configs: the notebook's (batch 20, one CA step,
 * periodic), longer rollouts, async, other batches, zero borders. */
typedef struct { size_t batch, ca_steps; int async, periodic; } gol_case;
static const gol_case GOL_CASES[] = {
    { 20, 1, 0, 1 }, { 20, 2, 0, 1 }, { 20, 3, 0, 0 }, { 20, 2, 1, 1 }, { 37, 1, 0, 1 },
    { 5, 2, 1, 0 },  { 1, 1, 0, 1 },  { 1, 3, 1, 0 },  { 37, 3, 1, 0 }, { 20, 1, 0, 0 },
};

static ls_config gol_cfg(const gol_case *c)
{
    ls_config cfg;
    assert_int_equal(config_defaults(&cfg, "gol", NULL, NULL), LS_OK);
    if (c->async) {
        set_key(&cfg, "async", "1");
        set_key(&cfg, "fire_rate", "0.6");
    }
    set_key(&cfg, "ca_steps", "%zu", c->ca_steps);
    set_key(&cfg, "periodic", "%d", c->periodic);
    set_key(&cfg, "batch", "%zu", c->batch);
    return cfg;
}

static void test_lanes_leaves(void **state)
{
    (void)state;
    ls_dataset *d;
    ls_config cfg = gol_cfg(&GOL_CASES[0]);
    assert_int_equal(logic_ca_make_data(&cfg, &d, NULL), LS_OK);
    uint32_t ids[40];
    for (size_t i = 0; i < 40; i++)
        ids[i] = (uint32_t)((i * 37 + 11) % 512);
    for (size_t i = 0; i < sizeof GOL_CASES / sizeof GOL_CASES[0]; i++) {
        cfg = gol_cfg(&GOL_CASES[i]);
        check_lanes(&cfg, d, ids, 7);
    }
    /* two channels (lanes (c, cell)), a smaller network */
    cfg = small_cfg("gol", 2, 4, "8,4,2", "16,8,4,2", 3, 2, 1, 1, 1, 13);
    check_lanes(&cfg, d, ids, 3);
    dataset_destroy(d);
    /* checkerboard with one part: 32 virtual lanes in the perception (more
     * than 16: accumulators of two terms), 64 with one channel on 8×8 */
    cfg = small_cfg("checkerboard", 2, 3, "8,4,2", "16,8,4,2", 4, 3, 0, 1, 1, 18);
    check_lanes(&cfg, NULL, NULL, 2);
    cfg = small_cfg("checkerboard", 1, 2, "8,4", "16,8,4,2,1", 8, 2, 1, 0, 1, 9);
    check_lanes(&cfg, NULL, NULL, 5);
}

/* Whole trainings: the loss bits and parameter hash of every step, lanes
 * mode on (forced and chosen) and off, at 1, 2, 3 and 8 threads. */
static void traj_run(ls_config cfg, int threads, int steps, const ls_dataset *data, uint64_t *out)
{
    trainer *t;
    ls_err err = { { 0 } };
    ls_status st = trainer_create(&t, &cfg, threads, data, &err);
    if (st != LS_OK)
        fail_msg("trainer_create: %s", err.msg);
    char text[CONFIG_TEXT_MAX];
    config_text(&cfg, text, sizeof text);
    uint64_t ph = hash_params(trainer_params(t), trainer_n_params(t));
    uint64_t traj = hash_traj0(text, ph);
    for (int s = 0; s < steps; s++) {
        double loss;
        st = trainer_step(t, &loss, &err);
        if (st != LS_OK)
            fail_msg("trainer_step: %s", err.msg);
        ph = hash_params(trainer_params(t), trainer_n_params(t));
        traj = hash_traj_next(traj, ph, loss);
        out[2 * s] = ph;
        out[2 * s + 1] = traj;
    }
    trainer_destroy(t);
}

static void test_lanes_training(void **state)
{
    (void)state;
    enum { STEPS = 4 };
    static const int threads[] = { 1, 2, 3, 8 };
    static const int modes[] = { LOGIC_CA_LANES_ALWAYS, LOGIC_CA_LANES_AUTO };
    for (size_t i = 0; i < sizeof GOL_CASES / sizeof GOL_CASES[0]; i++) {
        ls_config cfg = gol_cfg(&GOL_CASES[i]);
        ls_dataset *d;
        assert_int_equal(logic_ca_make_data(&cfg, &d, NULL), LS_OK);
        uint64_t ref[2 * STEPS], got[2 * STEPS];
        const int prev = logic_ca_set_lanes(LOGIC_CA_LANES_NEVER);
        traj_run(cfg, 1, STEPS, d, ref);
        for (size_t m = 0; m < 2; m++) {
            logic_ca_set_lanes(modes[m]);
            for (size_t k = 0; k < 4; k++) {
                traj_run(cfg, threads[k], STEPS, d, got);
                if (memcmp(ref, got, sizeof ref) != 0)
                    fail_msg("gol case %zu, lanes mode %d, %d threads: trajectory %016llx, without lanes %016llx", i,
                             modes[m], threads[k], (unsigned long long)got[2 * STEPS - 1],
                             (unsigned long long)ref[2 * STEPS - 1]);
            }
        }
        logic_ca_set_lanes(prev);
        dataset_destroy(d);
    }
}

/* The default gol config takes lanes mode by itself (two groups of 10);
 * a batch of 5 (groups of 2 and 3) does not, unless forced. */
static void test_lanes_choice(void **state)
{
    (void)state;
    const int prev = logic_ca_set_lanes(LOGIC_CA_LANES_AUTO);
    gol_case c = GOL_CASES[0];
    ls_config cfg = gol_cfg(&c);
    ls_model *m = make_model(&cfg);
    assert_int_equal(m->info.units, 2);
    model_destroy(m);
    c.batch = 5;
    cfg = gol_cfg(&c);
    m = make_model(&cfg);
    assert_int_equal(m->info.units, 5);
    model_destroy(m);
    logic_ca_set_lanes(LOGIC_CA_LANES_ALWAYS);
    m = make_model(&cfg);
    assert_int_equal(m->info.units, 2);
    model_destroy(m);
    /* never with several parts */
    cfg = small_cfg("checkerboard", 1, 2, "8,4", "16,8,4,2,1", 4, 2, 1, 0, 2, 20);
    m = make_model(&cfg);
    assert_int_equal(m->info.units, 40);
    model_destroy(m);
    assert_int_equal(logic_ca_set_lanes(prev), LOGIC_CA_LANES_ALWAYS);
}

/* ---- silent units: skipped, the same bits as computed in full ---- */

/* One step with silent units skipped against the same step computing them
 * in full (logic_ca_set_silent(0)); both models are made in the current
 * lanes setting. Phase by phase, the state gradients passed on and the
 * silent units met; then the leaves and losses on every schedule (in
 * order, reversed with dirty scratch, 1, 2, 3 and 8 threads, scalar twins,
 * at most AVX2) and of a smaller batch, each run meeting as many silent
 * units as the full one. Returns that number for the whole batch. */
static size_t check_silent(const ls_config *cfg, const ls_dataset *data, const uint32_t *ids, int64_t step)
{
    const int prev = logic_ca_set_silent(0);
    ls_model *full = make_model(cfg);
    logic_ca_set_silent(1);
    ls_model *skip = make_model(cfg);
    logic_ca_set_silent(prev);
    const size_t R = key_int(cfg, "parts"), B = cfg->batch, C = key_int(cfg, "channels"), G = key_int(cfg, "grid");
    const size_t N = G * G, T = key_int(cfg, "ca_steps");
    float *params = malloc(full->info.n_params * sizeof *params);
    assert_non_null(params);
    full->desc->init(full->self, params, cfg->seed);
    ls_batch b = { .data = data, .ids = ids, .batch = B, .step = step, .seed = cfg->seed };
    const size_t nl = B * R, lb = nl * full->info.leaf_len * sizeof(float);
    float *ref = malloc(lb), *got = malloc(lb);
    double *rl = malloc(nl * sizeof *rl), *gl = malloc(nl * sizeof *gl);

    /* Phase by phase, in order, from the models' creation on: the state
     * gradients each phase passes on are the same bits (a silent unit's
     * are +0), and so is the number of silent units. Before each phase,
     * in both models alike:
     * - the +0 entries of down (each unit's gradient through its own cells,
     *   which its next phase reads and overwrites) become 2^-70, below the
     *   floor: silent units stay silent, but an entry left unwritten differs;
     * - the dpatch buffer the phase writes (which it does not read) is
     *   filled with NaN, for the same reason. */
    sched ef, es;
    make_sched(&ef, full, 0, 0, 0x3c);
    make_sched(&es, skip, 0, 0, 0x3c);
    ls_err err = { { 0 } };
    assert_int_equal(model_prepare(full, params, &b, NULL, &err), LS_OK);
    assert_int_equal(model_prepare(skip, params, &b, NULL, &err), LS_OK);
    float *gf, *gs;
    const size_t ng = logic_ca_state_grads(full->self, &gf);
    assert_int_equal(logic_ca_state_grads(skip->self, &gs), ng);
    const size_t plane = B * C * N, down0 = 2 * 9 * plane;
    assert_int_equal(ng, 2 * 9 * plane + 2 * plane);
    for (size_t ph = 0; ph < full->info.phases; ph++) {
        for (size_t i = down0; i < down0 + plane; i++)
            if (gf[i] == 0.0f && !signbit(gf[i]))
                gf[i] = gs[i] = 0x1p-70f;
        if (ph + 1 >= T) {   /* the loss step and the backward: CA step t writes dpatch buffer t & 1 */
            const size_t t = ph + 1 == T ? T - 1 : 2 * T - 2 - ph;
            for (size_t i = 0; i < 9 * plane; i++)
                gf[(t & 1) * 9 * plane + i] = gs[(t & 1) * 9 * plane + i] = NAN;
        }
        step_job jf = { &ef, full, params, &b, ph, NULL, NULL }, js = { &es, skip, params, &b, ph, NULL, NULL };
        size_t c0 = logic_ca_silent_units();
        for (size_t u = 0; u < full->info.units; u++)
            unit_job(&jf, u, 0);
        const size_t cf = logic_ca_silent_units() - c0;
        c0 = logic_ca_silent_units();
        for (size_t u = 0; u < full->info.units; u++)
            unit_job(&js, u, 0);
        const size_t cs = logic_ca_silent_units() - c0;
        if (memcmp(gf, gs, ng * sizeof(float)) != 0 || cf != cs)
            fail_msg("silent units (%s, async %d, units %zu): phase %zu passes on other state gradients than the "
                     "full backward, or meets other silent units (%zu, %zu in full)",
                     cfg->task, (int)key_int(cfg, "async"), full->info.units, ph, cs, cf);
    }
    free_sched(&ef);
    free_sched(&es);

    const size_t start = logic_ca_silent_units();
    reference_leaves(full, R, params, &b, ref, rl, nl);
    const size_t found = logic_ca_silent_units() - start;
    sched e;
    for (size_t k = 0; k < sizeof SCHEDULES / sizeof SCHEDULES[0]; k++) {
        const int sp = logic_set_simd(SCHEDULES[k].simd);
        make_sched(&e, skip, SCHEDULES[k].threads, SCHEDULES[k].rev, SCHEDULES[k].fill);
        memset(got, 0x5a, lb);
        const size_t before = logic_ca_silent_units();
        grad_run(skip, R, params, &b, &e, got, gl);
        const size_t skipped = logic_ca_silent_units() - before;
        grad_run(skip, R, params, &b, &e, got, gl);   /* the per-batch arrays reused */
        free_sched(&e);
        logic_set_simd(sp);
        if (memcmp(ref, got, lb) != 0 || memcmp(rl, gl, nl * sizeof *rl) != 0 || skipped != found)
            fail_msg("silent units (%s, batch %zu, ca_steps %zu, async %d): run %zu differs from the full backward "
                     "(%zu silent units, %zu in full)",
                     cfg->task, B, key_int(cfg, "ca_steps"), (int)key_int(cfg, "async"), k, skipped, found);
    }

    /* a smaller batch: its samples' leaves, from both models */
    if (B > 1) {
        b.batch = B - 1 - B / 3;
        const size_t pl = b.batch * R * full->info.leaf_len * sizeof(float);
        make_sched(&e, full, 2, 0, 0x33);
        size_t c0 = logic_ca_silent_units();
        grad_run(full, R, params, &b, &e, ref, rl);
        const size_t cf = logic_ca_silent_units() - c0;
        free_sched(&e);
        make_sched(&e, skip, 2, 0, 0x44);
        c0 = logic_ca_silent_units();
        grad_run(skip, R, params, &b, &e, got, gl);
        const size_t cs = logic_ca_silent_units() - c0;
        free_sched(&e);
        if (memcmp(ref, got, pl) != 0 || memcmp(rl, gl, b.batch * R * sizeof *rl) != 0 || cf != cs)
            fail_msg("silent units (%s, batch %zu of %zu): the leaves differ from the full backward (%zu silent "
                     "units, %zu in full)", cfg->task, b.batch, B, cs, cf);
    }
    free(ref);
    free(got);
    free(rl);
    free(gl);
    free(params);
    model_destroy(full);
    model_destroy(skip);
    return found;
}

/* The silence check against its definition (logic_ca.h): a unit is silent
 * exactly when every entry of its dY is below LOGIC_GRAD_FLOOR in
 * magnitude. A model runs a step up to its first backward phase; then that
 * phase runs again and again for a single unit, each time on state
 * gradients that are +0 everywhere but one entry of down, which the
 * phase's gather passes on unchanged as that cell's dY: every channel, the
 * unit's first and last cell, and the first and last sample of each unit,
 * with values on both sides of the floor. (A sync task: every cell fires.) */
static void check_silence_probe(const ls_config *cfg)
{
    ls_model *m = make_model(cfg);
    const size_t B = cfg->batch, R = key_int(cfg, "parts"), C = key_int(cfg, "channels"), G = key_int(cfg, "grid");
    const size_t N = G * G, T = key_int(cfg, "ca_steps"), units = m->info.units, plane = B * C * N;
    assert_int_equal(key_int(cfg, "async"), 0);
    float *params = malloc(m->info.n_params * sizeof *params);
    assert_non_null(params);
    m->desc->init(m->self, params, cfg->seed);
    ls_batch b = { .data = NULL, .ids = NULL, .batch = B, .step = 0, .seed = cfg->seed };
    sched e;
    make_sched(&e, m, 0, 0, 0);
    ls_err err = { { 0 } };
    assert_int_equal(model_prepare(m, params, &b, NULL, &err), LS_OK);
    step_job j = { &e, m, params, &b, 0, NULL, NULL };
    for (j.phase = 0; j.phase < T; j.phase++)   /* forward, then the loss step */
        for (size_t u = 0; u < units; u++)
            unit_job(&j, u, 0);
    float *g;
    assert_int_equal(logic_ca_state_grads(m->self, &g), 20 * plane);
    static const float vals[] = { 0.0f, -0.0f, 0x1p-64f, -0x1p-64f, 0x1.fffffep-65f, -0x1.fffffep-65f, 0x1p-149f,
                                  1.0f, INFINITY, NAN };
    static const int live[] = { 0, 0, 1, 1, 0, 0, 0, 1, 1, 1 };
    size_t probes = 0;
    for (size_t u = 0; u < units; u++) {
        /* the unit's samples and cells (logic_ca.c, unit_view) */
        const size_t lanes = units != B * R;
        const size_t s0 = lanes ? u * B / units : u / R, s1 = lanes ? (u + 1) * B / units - 1 : s0;
        const size_t r = lanes ? 0 : u % R, n0 = r * G / R * G, n1 = (r + 1) * G / R * G - 1;
        for (size_t c = 0; c < C; c++)
            for (size_t k = 0; k < 4; k++) {
                const size_t s = k & 1 ? s1 : s0, n = k & 2 ? n1 : n0;
                for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
                    /* the phase of CA step T − 2 reads dpatch buffer (T − 1) & 1, down and dstate */
                    memset(g + ((T - 1) & 1) * 9 * plane, 0, 9 * plane * sizeof(float));
                    memset(g + 18 * plane, 0, 2 * plane * sizeof(float));
                    g[18 * plane + (s * C + c) * N + n] = vals[v];
                    j.phase = T;
                    const size_t before = logic_ca_silent_units();
                    unit_job(&j, u, 0);
                    if (logic_ca_silent_units() - before != (size_t)!live[v])
                        fail_msg("silence check (%zu units): unit %zu, sample %zu, channel %zu, cell %zu, dY %a: "
                                 "%s, want %s", units, u, s, c, n, (double)vals[v],
                                 live[v] ? "silent" : "live", live[v] ? "live" : "silent");
                    probes++;
                }
            }
    }
    assert_true(probes > 0);
    free_sched(&e);
    free(params);
    model_destroy(m);
}

/* Early in training, the rollout's first CA steps see no gradient: the
 * notebook's checkerboard (sync and async) meets silent units there and
 * skips them, with the same bits as computing them: one step's state
 * gradients and leaves (also in lanes mode), and whole trainings (loss and
 * parameter bits of every step at 1, 2, 3 and 8 threads). */
static void test_silent_units(void **state)
{
    (void)state;
    ls_config cfg, acfg;
    ls_err err = { { 0 } };
    assert_int_equal(config_defaults(&cfg, "checkerboard", NULL, &err), LS_OK);
    assert_int_equal(config_defaults(&acfg, "checkerboard", NULL, &err), LS_OK);
    set_key(&acfg, "async", "1");   /* the variant's settings: 14x14, 50 CA steps, 7 parts */
    const size_t sync_units = check_silent(&cfg, NULL, NULL, 0);
    const size_t async_units = check_silent(&acfg, NULL, NULL, 0);
    print_message("silent units in one step: checkerboard %zu of %zu, async %zu of %zu\n", sync_units,
                  key_int(&cfg, "parts") * cfg.batch * (key_int(&cfg, "ca_steps") - 1), async_units,
                  key_int(&acfg, "parts") * acfg.batch * (key_int(&acfg, "ca_steps") - 1));
    assert_true(sync_units > 0);
    assert_true(async_units > 0);
    /* lanes mode (a unit is a group of up to 16 samples), sync and async,
     * with partial groups (37 samples: groups of 12, 12 and 13), Gaussian
     * logits and a long rollout */
    const int lanes = logic_ca_set_lanes(LOGIC_CA_LANES_ALWAYS);
    for (int async = 0; async <= 1; async++) {
        ls_config lcfg = small_cfg("checkerboard", 1, 2, "8,4", "16,8,4,2,1", 8, 30, 0, async, 1, 37);
        set_key(&lcfg, "residual", "0");
        const size_t n = check_silent(&lcfg, NULL, NULL, 3);
        print_message("lanes mode, async %d: %zu silent units in one step\n", async, n);
        assert_true(n > 0);
    }
    ls_config pcfg = small_cfg("checkerboard", 1, 2, "8,4", "16,8,4,2,1", 8, 4, 0, 0, 1, 37);
    check_silence_probe(&pcfg);   /* lanes mode: groups of 12, 12 and 13 samples */
    logic_ca_set_lanes(lanes);
    check_silence_probe(&cfg);    /* the notebook's checkerboard: 16 units of 8 channels */

    enum { STEPS = 3 };
    static const int threads[] = { 1, 2, 3, 8 };
    const ls_config *cases[] = { &cfg, &acfg };
    for (size_t i = 0; i < 2; i++) {
        uint64_t ref[2 * STEPS], got[2 * STEPS];
        const int prev = logic_ca_set_silent(0);
        size_t before = logic_ca_silent_units();
        traj_run(*cases[i], 1, STEPS, NULL, ref);
        const size_t found = logic_ca_silent_units() - before;
        assert_true(found > 0);
        logic_ca_set_silent(1);
        for (size_t k = 0; k < 4; k++) {
            before = logic_ca_silent_units();
            traj_run(*cases[i], threads[k], STEPS, NULL, got);
            assert_int_equal(logic_ca_silent_units() - before, found);
            if (memcmp(ref, got, sizeof ref) != 0)
                fail_msg("%s (async %d), %d threads: trajectory %016llx with silent units skipped, %016llx without",
                         cases[i]->task, (int)key_int(cases[i], "async"), threads[k],
                         (unsigned long long)got[2 * STEPS - 1], (unsigned long long)ref[2 * STEPS - 1]);
        }
        logic_ca_set_silent(prev);
    }
}

/* ---- shape, wiring, init ---- */

static void test_shape_and_wiring(void **state)
{
    (void)state;
    ls_config cfg;
    ls_err err = { { 0 } };
    assert_int_equal(config_defaults(&cfg, "checkerboard", NULL, &err), LS_OK);
    ls_model *m = make_model(&cfg);
    /* docs/models.md: 224 perception + 2816 update gates */
    assert_int_equal(m->info.n_params, 3040 * 16);
    assert_int_equal(m->info.leaf_len, 3040 * 4);
    assert_int_equal(m->info.finish_units, 3040);
    /* 2 samples x 8 parts, 2·20 − 1 phases; no test split to evaluate */
    assert_int_equal(m->info.leaves, 16);
    assert_int_equal(m->info.units, 16);
    assert_int_equal(m->info.phases, 39);
    assert_int_equal(m->info.mean_loss, 0);
    assert_int_equal(m->info.eval_chunk, 0);
    assert_true(m->info.scratch_bytes > 0);
    assert_non_null(m->desc->phase);
    assert_non_null(m->desc->leaf);
    assert_non_null(m->desc->metrics);
    assert_null(m->desc->eval);
    assert_string_equal(m->name, "logic-ca");
    float *params = malloc(m->info.n_params * sizeof *params);
    m->desc->init(m->self, params, cfg.seed);
    for (size_t i = 0; i < m->info.n_params; i++)
        assert_true(params[i] == (i % 16 == 3 ? 10.0f : 0.0f));
    logic_ca_hard *h;
    assert_int_equal(logic_ca_hard_create(&h, m, params, NULL), LS_OK);
    assert_int_equal(h->gates, 3040);
    assert_int_equal(h->n_perception, 3);
    assert_int_equal(h->n_update, 16);
    for (size_t g = 0; g < h->gates; g++)
        assert_int_equal(h->ops[g], 3);
    const size_t K = 16;
    /* kernel layer 1: (neighbour, centre), one permutation of the 8
     * neighbours shared by every kernel */
    unsigned seen = 0;
    for (size_t k = 0; k < K; k++)
        for (size_t g = 0; g < 8; g++) {
            assert_int_equal(h->layer[0].b[k * 8 + g], 4);
            assert_int_equal(h->layer[0].a[k * 8 + g], h->layer[0].a[g]);
            if (k == 0)
                seen |= 1u << h->layer[0].a[g];
        }
    assert_int_equal(seen, 0x1ef);   /* positions 0..8 but 4 */
    /* later kernel layers: kernel k reads its own block, same pattern */
    for (size_t l = 1; l < 3; l++) {
        const size_t w = h->width[l], win = h->width[l - 1];
        for (size_t k = 0; k < K; k++)
            for (size_t g = 0; g < w; g++) {
                assert_int_equal(h->layer[l].a[k * w + g], h->layer[l].a[g] + k * win);
                assert_int_equal(h->layer[l].b[k * w + g], h->layer[l].b[g] + k * win);
                assert_true(h->layer[l].a[g] < win && h->layer[l].b[g] < win);
            }
    }
    /* update layers: unique wiring, no repeated pair, every input used */
    for (size_t l = 3; l < h->n_layers; l++) {
        const logic_layer *L = &h->layer[l];
        assert_int_equal(L->in, l == 3 ? 8 + 8 * 2 * 16 : h->width[l - 1]);
        unsigned char *used = calloc(L->in, 1);
        for (size_t g = 0; g < L->out; g++) {
            assert_true(L->a[g] < L->in && L->b[g] < L->in && L->a[g] != L->b[g]);
            used[L->a[g]] = used[L->b[g]] = 1;
            for (size_t q = 0; q < g; q++) {
                const int same = L->a[q] == L->a[g] && L->b[q] == L->b[g];
                const int swapped = L->a[q] == L->b[g] && L->b[q] == L->a[g];
                assert_false(same || swapped);
            }
        }
        for (size_t i = 0; i < L->in; i++)
            assert_true(used[i]);
        free(used);
    }
    logic_ca_hard_destroy(h);

    /* a different seed gives a different wiring */
    ls_config c2 = cfg;
    c2.seed = cfg.seed + 1;
    ls_model *m2 = make_model(&c2);
    logic_ca_hard *h2;
    assert_int_equal(logic_ca_hard_create(&h, m, params, NULL), LS_OK);
    assert_int_equal(logic_ca_hard_create(&h2, m2, params, NULL), LS_OK);
    assert_true(memcmp(h->a, h2->a, h->gates * sizeof *h->a) != 0);
    logic_ca_hard_destroy(h);
    logic_ca_hard_destroy(h2);
    model_destroy(m2);

    /* residual 0: Gaussian logits at their address */
    set_key(&cfg, "residual", "0");
    ls_model *m3 = make_model(&cfg);
    m3->desc->init(m3->self, params, 99);
    for (size_t i = 0; i < m3->info.n_params; i += 997)
        assert_true(params[i] == rng_normalf(99, RNG_INIT, 0, i, 0));
    model_destroy(m3);
    free(params);
    model_destroy(m);
}

/* model_create refuses cfg with LS_EINVAL naming `what` (NULL: any message);
 * check != 0: the model's check, run by config_validate, refuses it too. */
static void refused(const ls_config *cfg, const char *what, int check)
{
    ls_model *m = (ls_model *)1;
    ls_err err = { { 0 } };
    assert_int_equal(model_create(&m, cfg, NULL, &err), LS_EINVAL);
    assert_null(m);
    assert_true(err.msg[0] != 0);
    if (what != NULL && strstr(err.msg, what) == NULL)
        fail_msg("model_create: '%s' does not name %s", err.msg, what);
    if (check) {
        ls_err e2 = { { 0 } };
        assert_int_equal(config_validate(cfg, &e2), LS_EINVAL);
        assert_string_equal(e2.msg, err.msg);
    }
}

static void test_bad_configs(void **state)
{
    (void)state;
    ls_config cfg = small_cfg("checkerboard", 2, 2, "4,2", "8,4,2", 4, 3, 0, 0, 1, 2);
    refused(&cfg, "perception", 1);   /* kernel layer 1 must be 8 */
    cfg = small_cfg("checkerboard", 2, 2, "8,4,2", "4,2", 4, 3, 0, 0, 1, 2);   /* 10 -> 4: unique can't */
    refused(&cfg, "layers", 0);
    cfg = small_cfg("checkerboard", 2, 2, "8,4,2", "8,4,3", 4, 3, 0, 0, 1, 2);   /* last != channels */
    refused(&cfg, NULL, 1);
    cfg = small_cfg("checkerboard", 2, 2, "8,4,2", "8,4,2", 4, 3, 0, 0, 5, 2);   /* 5 parts, 4 rows */
    refused(&cfg, "parts", 1);
    cfg = small_cfg("gol", 1, 4, "8,4,2,1", "8,4,2,1", 4, 1, 1, 0, 1, 2);   /* gol is 3x3 */
    refused(&cfg, "grid", 1);
    /* and the good one of these shapes is taken */
    cfg = small_cfg("checkerboard", 2, 2, "8,4,2", "8,4,2", 4, 3, 0, 0, 4, 2);
    ls_err err = { { 0 } };
    assert_int_equal(config_validate(&cfg, &err), LS_OK);
    model_destroy(make_model(&cfg));
}

/* ---- tasks ---- */

static void test_gol_data(void **state)
{
    (void)state;
    ls_config cfg;
    assert_int_equal(config_defaults(&cfg, "gol", NULL, NULL), LS_OK);
    ls_dataset *d;
    assert_int_equal(logic_ca_make_data(&cfg, &d, NULL), LS_OK);
    assert_string_equal(d->name, "gol");
    assert_int_equal(d->train.n, 512);
    assert_int_equal(d->test.n, 512);
    assert_int_equal(d->train.dim, 9);
    assert_int_equal(d->n_classes, 0);
    assert_true(d->hash == XXH3_64bits(d->train.x8, 512 * 9));
    assert_memory_equal(d->train.x8, d->test.x8, 512 * 9);
    /* 512 distinct boards of bits: every 9-bit pattern exactly once */
    unsigned char seen[512] = { 0 };
    for (size_t b = 0; b < 512; b++) {
        unsigned v = 0;
        for (size_t j = 0; j < 9; j++) {
            assert_true(d->train.x8[b * 9 + j] <= 1);
            v |= (unsigned)d->train.x8[b * 9 + j] << j;
        }
        assert_int_equal(seen[v], 0);
        seen[v] = 1;
    }
    /* targets: the module's life step on the torus equals the closed form
     * derived above, on every board */
    for (size_t b = 0; b < 512; b++) {
        uint8_t next[9], want[9];
        logic_ca_life_step(next, d->train.x8 + b * 9, 3, 3, 1);
        torus3_next(want, d->train.x8 + b * 9);
        assert_memory_equal(next, want, 9);
    }
    /* hand-checked boards (row-major 3×3) */
    const uint8_t blinker[9] = { 0, 0, 0, 1, 1, 1, 0, 0, 0 }, all[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    const uint8_t square[9] = { 1, 1, 0, 1, 1, 0, 0, 0, 0 }, none[9] = { 0 };
    uint8_t next[9];
    logic_ca_life_step(next, blinker, 3, 3, 1);
    assert_memory_equal(next, all, 9);      /* on the torus every dead cell has 3 neighbours */
    logic_ca_life_step(next, blinker, 3, 3, 0);
    const uint8_t vert[9] = { 0, 1, 0, 0, 1, 0, 0, 1, 0 };
    assert_memory_equal(next, vert, 9);     /* zero borders: the blinker turns */
    logic_ca_life_step(next, square, 3, 3, 1);
    assert_memory_equal(next, square, 9);   /* block: 4 live cells stay */
    logic_ca_life_step(next, all, 3, 3, 1);
    assert_memory_equal(next, none, 9);     /* overcrowded */
    dataset_destroy(d);

    assert_int_equal(config_defaults(&cfg, "checkerboard", NULL, NULL), LS_OK);
    d = (ls_dataset *)1;
    assert_int_equal(logic_ca_make_data(&cfg, &d, NULL), LS_OK);
    assert_null(d);
}

static void test_checkerboard_task(void **state)
{
    (void)state;
    /* ((x/2)+(y/2)) % 2: 2×2 squares, hand-checked */
    assert_int_equal(logic_ca_checkerboard_target(0, 0), 0);
    assert_int_equal(logic_ca_checkerboard_target(1, 1), 0);
    assert_int_equal(logic_ca_checkerboard_target(2, 0), 1);
    assert_int_equal(logic_ca_checkerboard_target(3, 1), 1);
    assert_int_equal(logic_ca_checkerboard_target(0, 3), 1);
    assert_int_equal(logic_ca_checkerboard_target(2, 2), 0);
    assert_int_equal(logic_ca_checkerboard_target(5, 3), 1);
    assert_int_equal(logic_ca_checkerboard_target(15, 15), 0);
    assert_int_equal(logic_ca_checkerboard_target(14, 1), 1);
    /* start states: a pure function of the address */
    float a[8 * 256], b[8 * 256];
    logic_ca_start_state(a, 8, 256, 23, 7, 1);
    logic_ca_start_state(b, 8, 256, 23, 7, 1);
    assert_memory_equal(a, b, sizeof a);
    size_t ones = 0;
    for (size_t c = 0; c < 8; c++)
        for (size_t n = 0; n < 256; n++) {
            const float want = rng_uniformf(23, RNG_CA_START, 7, 1, n * 8 + c) < 0.5f ? 1.0f : 0.0f;
            assert_true(a[c * 256 + n] == want);
            ones += a[c * 256 + n] == 1.0f;
        }
    assert_true(ones > 900 && ones < 1148);
    logic_ca_start_state(b, 8, 256, 23, 8, 1);   /* fresh each step */
    assert_true(memcmp(a, b, sizeof a) != 0);
    logic_ca_start_state(b, 8, 256, 23, 7, 0);   /* and each sample */
    assert_true(memcmp(a, b, sizeof a) != 0);
}

/* ---- the hard circuit ---- */

/* The hard rollout equals the reference with hard gates (random ops), on
 * both borders, with and without masks. */
static void test_hard_matches_reference(void **state)
{
    (void)state;
    for (int periodic = 0; periodic <= 1; periodic++)
        for (int masked = 0; masked <= 1; masked++) {
            ls_config cfg = small_cfg("checkerboard", 3, 3, "8,4,2", "12,6,3", 8, 3, periodic, 0, 2, 1);
            ls_model *m = make_model(&cfg);
            float *params = malloc(m->info.n_params * sizeof *params);
            for (size_t i = 0; i < m->info.n_params; i++)
                params[i] = unit();
            logic_ca_hard *h;
            assert_int_equal(logic_ca_hard_create(&h, m, params, NULL), LS_OK);
            /* ops are the argmax */
            for (size_t g = 0; g < h->gates; g++) {
                size_t best = 0;
                for (size_t j = 1; j < 16; j++)
                    if (params[g * 16 + j] > params[g * 16 + best])
                        best = j;
                assert_int_equal(h->ops[g], best);
            }
            /* a 7×7 grid: the reference works on square grids (the
             * non-square path is checked by the Life test) */
            const size_t C = 3, G = 7, NN = G * G, T = 6;
            uint8_t *frames = malloc((T + 1) * C * NN), *masks = malloc(T * NN);
            for (size_t i = 0; i < C * NN; i++)
                frames[i] = (uint8_t)(next_u32() & 1);
            for (size_t i = 0; i < T * NN; i++)
                masks[i] = (uint8_t)(next_u32() % 3 != 0);
            assert_int_equal(logic_ca_hard_rollout(h, frames, G, G, T, periodic, masked ? masks : NULL, NULL),
                             LS_OK);
            double st[3 * 49], nx[3 * 49];
            for (size_t i = 0; i < C * NN; i++)
                st[i] = frames[i];
            ref_net r = { h, NULL, G, periodic };
            for (size_t u = 0; u < T; u++) {
                ref_step(&r, st, nx, masked ? masks + u * NN : NULL);
                memcpy(st, nx, sizeof st);
                for (size_t i = 0; i < C * NN; i++)
                    assert_int_equal(frames[(u + 1) * C * NN + i], (uint8_t)st[i]);
            }
            /* one step equals the rollout's first step */
            uint8_t *one = malloc(C * NN);
            assert_int_equal(logic_ca_hard_step(h, one, frames, G, G, periodic, masked ? masks : NULL, NULL),
                             LS_OK);
            assert_memory_equal(one, frames + C * NN, C * NN);
            free(one);
            free(frames);
            free(masks);
            logic_ca_hard_destroy(h);
            free(params);
            model_destroy(m);
        }
}

/* Batcher-style 8-input sorting network (Knuth, TAOCP 5.3.4: 19 comparators,
 * depth 6); checked below by the 0-1 principle on all 256 inputs. */
static const int SORT8[6][4][2] = {
    { { 0, 2 }, { 1, 3 }, { 4, 6 }, { 5, 7 } },
    { { 0, 4 }, { 1, 5 }, { 2, 6 }, { 3, 7 } },
    { { 0, 1 }, { 2, 3 }, { 4, 5 }, { 6, 7 } },
    { { 2, 4 }, { 3, 5 }, { -1, -1 }, { -1, -1 } },
    { { 1, 4 }, { 3, 6 }, { -1, -1 }, { -1, -1 } },
    { { 1, 2 }, { 3, 4 }, { 5, 6 }, { -1, -1 } },
};

/* A GoL circuit in the model's own structure: C = 1, K = 1, one kernel layer
 * of 8 gates passing the neighbour (op A), so the update network sees
 * [alive, 8 neighbours]; six layers sort the neighbours (OR = max to the
 * lower wire, AND = min to the higher, alive passed through) so wire w holds
 * [n >= w + 1]; then x = [n>=2] AND NOT [n>=4], y = [n>=3] OR alive,
 * next = x AND y. wrong != 0 builds B3/S3 instead (y = [n>=3]). */
static void build_life(logic_ca_hard *h, int wrong)
{
    for (size_t g = 0; g < 8; g++)
        h->ops[g] = 3;
    for (size_t d = 0; d < 6; d++) {
        const size_t l = 1 + d, off = h->gate_off[l];
        uint32_t *a = h->a + off, *b = h->b + off;
        uint8_t *ops = h->ops + off;
        for (size_t w = 0; w < 9; w++) {
            a[w] = b[w] = (uint32_t)w;
            ops[w] = 3;
        }
        for (size_t q = 0; q < 4; q++) {
            const int i = SORT8[d][q][0], j = SORT8[d][q][1];
            if (i < 0)
                continue;
            a[1 + i] = b[1 + j] = (uint32_t)(1 + i);
            b[1 + i] = a[1 + j] = (uint32_t)(1 + j);
            ops[1 + i] = 7;   /* OR */
            ops[1 + j] = 1;   /* AND */
        }
    }
    size_t off = h->gate_off[7];
    memset(h->ops + off, 0, 5);
    for (size_t g = 0; g < 5; g++)
        h->a[off + g] = h->b[off + g] = 0;
    h->a[off] = 1 + 1, h->b[off] = 1 + 3, h->ops[off] = 2;            /* [n>=2] AND NOT [n>=4] */
    h->a[off + 1] = 1 + 2, h->b[off + 1] = 0, h->ops[off + 1] = wrong ? 3 : 7;   /* [n>=3] OR alive */
    off = h->gate_off[8];
    memset(h->ops + off, 0, 3);
    for (size_t g = 0; g < 3; g++)
        h->a[off + g] = h->b[off + g] = 0;
    h->a[off] = 0, h->b[off] = 1, h->ops[off] = 1;
    off = h->gate_off[9];
    h->a[off] = h->b[off] = 0, h->ops[off] = 3;
    h->a[off + 1] = h->b[off + 1] = 0, h->ops[off + 1] = 0;
    off = h->gate_off[10];
    h->a[off] = h->b[off] = 0, h->ops[off] = 3;
}

/* A plain life step written here (zero or wrapped borders). */
static void test_life(uint8_t *next, const uint8_t *cur, size_t W, size_t H, int periodic)
{
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < W; x++) {
            int n = 0;
            for (long dy = -1; dy <= 1; dy++)
                for (long dx = -1; dx <= 1; dx++) {
                    long yy = (long)y + dy, xx = (long)x + dx;
                    if (dy == 0 && dx == 0)
                        continue;
                    if (periodic) {
                        yy = (yy + (long)H) % (long)H;
                        xx = (xx + (long)W) % (long)W;
                    }
                    if (yy >= 0 && xx >= 0 && yy < (long)H && xx < (long)W)
                        n += cur[(size_t)yy * W + (size_t)xx];
                }
            next[y * W + x] = (uint8_t)(n == 3 || (n == 2 && cur[y * W + x]));
        }
}

static void test_hand_built_life(void **state)
{
    (void)state;
    /* the sorting network sorts (0-1 principle) */
    for (unsigned v = 0; v < 256; v++) {
        int w[8];
        for (int i = 0; i < 8; i++)
            w[i] = (v >> i) & 1;
        for (int d = 0; d < 6; d++)
            for (int q = 0; q < 4; q++) {
                const int i = SORT8[d][q][0], j = SORT8[d][q][1];
                if (i < 0)
                    continue;
                const int hi = w[i] | w[j], lo = w[i] & w[j];
                w[i] = hi;
                w[j] = lo;
            }
        for (int i = 0; i + 1 < 8; i++)
            assert_true(w[i] >= w[i + 1]);
    }
    ls_config cfg = small_cfg("gol", 1, 1, "8", "9x6,5,3,2,1", 3, 1, 1, 0, 1, 20);
    ls_model *m = make_model(&cfg);
    float *params = calloc(m->info.n_params, sizeof *params);
    logic_ca_hard *h;
    assert_int_equal(logic_ca_hard_create(&h, m, params, NULL), LS_OK);
    assert_int_equal(h->layer[1].in, 9);
    build_life(h, 0);
    ls_metric met[LS_MAX_METRICS];
    size_t n = 0;
    assert_int_equal(logic_ca_hard_metrics(h, &cfg, met, &n, NULL), LS_OK);
    assert_int_equal(n, 1);
    assert_string_equal(met[0].name, "hard_acc");
    assert_true(met[0].value == 1.0);

    /* and it runs Life on a bigger grid, both borders, 12 steps */
    for (int periodic = 0; periodic <= 1; periodic++) {
        const size_t W = 16, H = 11, T = 12;
        uint8_t *frames = malloc((T + 1) * W * H), cur[16 * 11], nx[16 * 11];
        for (size_t i = 0; i < W * H; i++)
            cur[i] = frames[i] = (uint8_t)(next_u32() % 3 == 0);
        assert_int_equal(logic_ca_hard_rollout(h, frames, W, H, T, periodic, NULL, NULL), LS_OK);
        for (size_t u = 0; u < T; u++) {
            test_life(nx, cur, W, H, periodic);
            memcpy(cur, nx, sizeof cur);
            assert_memory_equal(frames + (u + 1) * W * H, cur, W * H);
        }
        free(frames);
    }

    /* B3/S3 instead: on the 3×3 torus it differs exactly on the 84 boards
     * with 3 live cells (their live cells die), so 428/512 stay right. */
    build_life(h, 1);
    assert_int_equal(logic_ca_hard_metrics(h, &cfg, met, &n, NULL), LS_OK);
    assert_true(met[0].value == 428.0 / 512.0);
    /* a circuit that reads outside its input is refused */
    h->a[h->gate_off[2]] = 9;
    assert_int_equal(logic_ca_hard_metrics(h, &cfg, met, &n, NULL), LS_EINVAL);
    logic_ca_hard_destroy(h);
    free(params);
    model_destroy(m);
}

static void test_metrics(void **state)
{
    (void)state;
    for (int async = 0; async <= 1; async++) {
        ls_config cfg = small_cfg("checkerboard", 2, 2, "8,4,2", "8,4,2", 8, 5, 0, async, 2, 2);
        ls_model *m = make_model(&cfg);
        float *params = calloc(m->info.n_params, sizeof *params);
        /* every gate FALSE (logit 0 highest): channel 0 becomes 0 wherever
         * a cell fired at least once and keeps its start value elsewhere
         * (sync: every cell fires), computed here from the evaluation
         * addresses of logic_ca.h: grids 0..15 on 8×8 for 5 steps, grid 16
         * on 64×64 for 80 steps. Sync: half of the 2×2 squares' cells. */
        for (size_t g = 0; g < m->info.n_params / 16; g++)
            params[g * 16] = 1.0f;
        ls_metric met[LS_MAX_METRICS];
        size_t n = 0;
        assert_int_equal(m->desc->metrics(m->self, params, NULL, met, &n, NULL), LS_OK);
        assert_int_equal(n, 2);
        assert_string_equal(met[0].name, "hard_acc");
        assert_string_equal(met[1].name, "hard_acc_64");
        double want[2];
        for (int big = 0; big <= 1; big++) {
            const size_t grids = big ? 1 : 16, G = big ? 64 : 8, T = big ? 80 : 5, first = big ? 16 : 0;
            size_t right = 0;
            for (size_t i = first; i < first + grids; i++)
                for (size_t c = 0; c < G * G; c++) {
                    int fired = !async;
                    for (size_t u = 0; u < T && !fired; u++)
                        fired = rng_uniformf(LOGIC_CA_EVAL_SEED, RNG_EVAL, i, 1 + u, c) < 0.6f;
                    const int start = rng_uniformf(LOGIC_CA_EVAL_SEED, RNG_EVAL, i, 0, c * 2) < 0.5f;
                    right += (fired ? 0 : start) == test_checker(c % G, c / G);
                }
            want[big] = (double)right / (double)(grids * G * G);
        }
        if (!async)
            assert_true(want[0] == 0.5 && want[1] == 0.5);
        else
            assert_true(want[0] != 0.5);
        assert_true(met[0].value == want[0]);
        assert_true(met[1].value == want[1]);
        /* random ops: deterministic figures */
        for (size_t i = 0; i < m->info.n_params; i++)
            params[i] = unit();
        ls_metric again[LS_MAX_METRICS];
        assert_int_equal(m->desc->metrics(m->self, params, NULL, met, &n, NULL), LS_OK);
        assert_int_equal(m->desc->metrics(m->self, params, NULL, again, &n, NULL), LS_OK);
        assert_true(met[0].value == again[0].value && met[1].value == again[1].value);
        free(params);
        model_destroy(m);
    }
}

/* With near one-hot logits the soft rollout is the hard one: the model's loss
 * equals the number of wrong channel-0 cells of the hard circuit run from the
 * same start state with the same masks. */
static void test_soft_equals_hard_when_sharp(void **state)
{
    (void)state;
    for (int async = 0; async <= 1; async++) {
        ls_config cfg = small_cfg("checkerboard", 2, 2, "8,4,2", "8,4,2", 6, 4, async, async, 3, 2);
        ls_model *m = make_model(&cfg);
        const size_t R = key_int(&cfg, "parts");
        float *params = calloc(m->info.n_params, sizeof *params);
        for (size_t g = 0; g < m->info.n_params / 16; g++)
            params[g * 16 + next_u32() % 16] = 40.0f;
        ls_batch b = { .batch = 2, .step = 17, .seed = cfg.seed };
        const size_t nl = 2 * R;
        float *leaves = malloc(nl * m->info.leaf_len * sizeof(float));
        double losses[6];
        sched e;
        make_sched(&e, m, 2, 0, 0);
        grad_run(m, R, params, &b, &e, leaves, losses);
        free_sched(&e);
        logic_ca_hard *h;
        assert_int_equal(logic_ca_hard_create(&h, m, params, NULL), LS_OK);
        const size_t C = 2, G = 6, N = 36, T = 4;
        for (size_t s = 0; s < 2; s++) {
            uint8_t frames[5 * 2 * 36], masks[4 * 36];
            float st[2 * 36];
            logic_ca_start_state(st, C, N, cfg.seed, 17, s);
            for (size_t i = 0; i < C * N; i++)
                frames[i] = (uint8_t)(st[i] != 0.0f);
            for (size_t u = 0; u < T; u++)
                for (size_t n = 0; n < N; n++)
                    masks[u * N + n] = !async || rng_uniformf(cfg.seed, RNG_CA_MASK, 17, s, u * N + n) < 0.6f;
            assert_int_equal(logic_ca_hard_rollout(h, frames, G, G, T, (int)ls_config_int(&cfg, "periodic"), masks,
                                                   NULL), LS_OK);
            size_t wrong = 0;
            for (size_t n = 0; n < N; n++)
                wrong += frames[T * C * N + n] != test_checker(n % G, n / G);
            double loss = 0;
            for (size_t r = 0; r < R; r++)
                loss += losses[s * R + r];
            assert_true(fabs(loss - (double)wrong) < 1e-3);
        }
        logic_ca_hard_destroy(h);
        free(leaves);
        free(params);
        model_destroy(m);
    }
}

/* Timing (printed, not checked; the machine may be busy): one
 * checkerboard-sync training step's phases and leaves at the notebook's size, on 1
 * and 2 threads, and a Game of Life one. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_timing(void **state)
{
    (void)state;
    const char *tasks[2] = { "checkerboard", "gol" };
    for (int k = 0; k < 2; k++) {
        ls_config cfg;
        assert_int_equal(config_defaults(&cfg, tasks[k], NULL, NULL), LS_OK);
        ls_model *m = make_model(&cfg);
        const size_t R = key_int(&cfg, "parts");
        ls_dataset *d = NULL;
        assert_int_equal(logic_ca_make_data(&cfg, &d, NULL), LS_OK);
        float *params = malloc(m->info.n_params * sizeof *params);
        m->desc->init(m->self, params, cfg.seed);
        uint32_t ids[20];
        for (size_t i = 0; i < 20; i++)
            ids[i] = (uint32_t)(i * 37 % 512);
        const size_t nl = cfg.batch * R;
        float *leaves = malloc(nl * m->info.leaf_len * sizeof(float));
        double *losses = malloc(nl * sizeof *losses);
        for (int threads = 1; threads <= 2; threads++) {
            sched e;
            make_sched(&e, m, threads, 0, 0);
            ls_batch b = { .data = d, .ids = d ? ids : NULL, .batch = cfg.batch, .step = 1, .seed = cfg.seed };
            const int reps = k == 0 ? 3 : 100;
            grad_run(m, R, params, &b, &e, leaves, losses);
            const double t0 = now();
            for (int i = 0; i < reps; i++)
                grad_run(m, R, params, &b, &e, leaves, losses);
            const double t1 = now();
            printf("    %s: %.3f ms per step's phases and leaves at %d thread(s) (%s)\n", tasks[k], 1e3 * (t1 - t0) / reps,
                   threads, logic_simd_name());
            free_sched(&e);
        }
        free(leaves);
        free(losses);
        free(params);
        dataset_destroy(d);
        model_destroy(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient_checkerboard),
        cmocka_unit_test(test_gradient_gol),
        cmocka_unit_test(test_schedules_checkerboard),
        cmocka_unit_test(test_schedules_defaults),
        cmocka_unit_test(test_partial_batch),
        cmocka_unit_test(test_lanes_leaves),
        cmocka_unit_test(test_lanes_training),
        cmocka_unit_test(test_lanes_choice),
        cmocka_unit_test(test_silent_units),
        cmocka_unit_test(test_shape_and_wiring),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_gol_data),
        cmocka_unit_test(test_checkerboard_task),
        cmocka_unit_test(test_hard_matches_reference),
        cmocka_unit_test(test_hand_built_life),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_soft_equals_hard_when_sharp),
        cmocka_unit_test(test_timing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
