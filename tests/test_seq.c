/* test_seq.c — declared networks (engine/models/seq/): the declared MLP
 * against the hand-written one, and one trajectory for seq and cnn
 * whatever the threads and the leaf size.
 *
 *   - `--model seq --layers dense:256,relu,dense:256,relu,dense:10` and
 *     `--model mlp --hidden 256,256` on Fashion-MNIST, same seed: every
 *     step's parameter hash and loss equal (memcmp), at threads 1, 2, 3, 8
 *     and leaf 16 and 64 (mlp sums a leaf of 64 as its subtree of atoms,
 *     seq's leaves are always one atom: the two cut the work differently
 *     and must still agree);
 *   - cnn (its defaults) and a seq using every layer kind the text offers
 *     (conv, both pools, layernorm, gelu, relu, dense) at a batch of 37
 *     (a short last atom): every step's trajectory hash equal at threads
 *     1, 2, 3, 8 and leaf 16 and 64;
 *   - the text form: a few declarations parsed (the gpt's unrolled: its
 *     repeats and residual branches), bad ones refused naming the token
 *     and its position, bad shapes (embed not first, a residual branch
 *     that changes the shape) refused naming the layer (the CLI's rows are
 *     in test_badinput.c);
 *   - dropout: P parsed to strtof's bits and bad P refused; two
 *     declarations with dropout (a flat one, one after image layers and in
 *     a residual branch) give every step's parameter hash, loss and
 *     trajectory hash equal at threads 1, 2, 3, 8 and leaf 16 and 64, and
 *     a trajectory other than the same declaration's without dropout and
 *     than another seed's; on the network itself, evaluation (seq_logits,
 *     seq_loss) is the declaration without dropout's to the bit, and a
 *     training leaf's bits repeat at one address and change with the
 *     seed, the step and the sample position alone.
 * Needs the Fashion-MNIST data (Debian's dataset-fashion-mnist, make deps).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/train.h"
#include "engine/models/seq/seq.h"
#include "engine/num/rng.h"
#include "include/lockstep.h"

static const int THREADS[] = { 1, 2, 3, 8 };
#define N_THREADS (sizeof THREADS / sizeof THREADS[0])
static const char *const LEAVES[] = { "16", "64" };
#define MAX_STEPS 8

typedef struct {
    uint64_t param[MAX_STEPS + 1], traj[MAX_STEPS + 1];
    double loss[MAX_STEPS + 1];
} run_t;

/* Shared by the cases: loaded once. */
static ls_dataset *g_fashion;

static ls_config *config(const char *model, const char *const *kv, const char *leaf)
{
    ls_config *cfg = NULL;
    ls_err err = { "" };
    if (ls_config_create(&cfg, "fashion-mnist", model, &err) != LS_OK)
        fail_msg("%s: %s", model, err.msg);
    for (size_t i = 0; kv[i] != NULL; i += 2)
        if (ls_config_set(cfg, kv[i], kv[i + 1], &err) != LS_OK)
            fail_msg("%s --%s %s: %s", model, kv[i], kv[i + 1], err.msg);
    if (ls_config_set(cfg, "leaf", leaf, &err) != LS_OK)
        fail_msg("%s --leaf %s: %s", model, leaf, err.msg);
    return cfg;
}

static void run(const ls_config *cfg, int threads, int steps, run_t *r)
{
    ls_session_opts o = { .size = sizeof(ls_session_opts) };
    o.threads = threads;
    o.steps = steps;
    o.data = g_fashion;
    ls_session *s = NULL;
    ls_err err = { "" };
    if (ls_session_open(&s, cfg, &o, &err) != LS_OK)
        fail_msg("open: %s", err.msg);
    ls_session_state st;
    memset(r, 0, sizeof *r);
    for (int i = 0; i <= steps; i++) {
        if (i > 0 && ls_session_step(s, NULL, &err) != LS_OK)
            fail_msg("step %d: %s", i, err.msg);
        ls_session_state_get(s, &st);
        r->param[i] = st.param_hash;
        r->traj[i] = st.traj_hash;
        r->loss[i] = st.loss;
    }
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
}

static int group_setup(void **state)
{
    (void)state;
    ls_config *cfg = NULL;
    ls_err err = { "" };
    if (ls_config_create(&cfg, "fashion-mnist", "mlp", &err) != LS_OK ||
        trainer_load_data(cfg, &g_fashion, &err) != LS_OK) {
        fprintf(stderr, "test_seq: Fashion-MNIST: %s (make deps installs dataset-fashion-mnist)\n", err.msg);
        ls_config_destroy(cfg);
        return -1;
    }
    ls_config_destroy(cfg);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ls_dataset_destroy(g_fashion);
    return 0;
}

static void test_declared_mlp(void **state)
{
    (void)state;
    static const char *const SEQ[] = { "layers", "dense:256,relu,dense:256,relu,dense:10", "batch", "64", NULL };
    static const char *const MLP[] = { "hidden", "256,256", "batch", "64", NULL };
    const int steps = 6;
    run_t ref, got;
    int have = 0;
    for (size_t li = 0; li < 2; li++)
        for (size_t k = 0; k < N_THREADS; k++)
            for (int m = 0; m < 2; m++) {
                ls_config *cfg = config(m ? "seq" : "mlp", m ? SEQ : MLP, LEAVES[li]);
                run(cfg, THREADS[k], steps, &got);
                ls_config_destroy(cfg);
                if (!have) {
                    ref = got;
                    have = 1;
                    continue;
                }
                for (int i = 0; i <= steps; i++)
                    if (memcmp(&got.param[i], &ref.param[i], sizeof ref.param[i]) != 0 ||
                        memcmp(&got.loss[i], &ref.loss[i], sizeof ref.loss[i]) != 0)
                        fail_msg("%s at leaf %s, %d threads: step %d has parameters %016llx loss %.17g, mlp at "
                                 "leaf 16, 1 thread %016llx %.17g",
                                 m ? "seq" : "mlp", LEAVES[li], THREADS[k], i, (unsigned long long)got.param[i],
                                 got.loss[i], (unsigned long long)ref.param[i], ref.loss[i]);
            }
    printf("declared MLP = mlp: %d steps, every parameter hash and loss, threads 1,2,3,8, leaf 16 and 64\n", steps);
}

/* One trajectory at threads 1, 2, 3, 8 and leaf 16, 64. */
static void one_trajectory(const char *model, const char *const *kv, int steps)
{
    run_t ref, got;
    int have = 0;
    for (size_t li = 0; li < 2; li++)
        for (size_t k = 0; k < N_THREADS; k++) {
            ls_config *cfg = config(model, kv, LEAVES[li]);
            run(cfg, THREADS[k], steps, &got);
            ls_config_destroy(cfg);
            if (!have) {
                ref = got;
                have = 1;
                continue;
            }
            if (memcmp(got.traj, ref.traj, sizeof ref.traj[0] * (size_t)(steps + 1)) != 0)
                fail_msg("%s at leaf %s, %d threads: the trajectory differs from leaf 16, 1 thread", model,
                         LEAVES[li], THREADS[k]);
        }
    /* It trains: the parameters moved. */
    assert_true(ref.param[steps] != ref.param[0]);
    printf("%s: %d steps, one trajectory at threads 1,2,3,8, leaf 16 and 64: %016llx\n", model, steps,
           (unsigned long long)ref.traj[steps]);
}

static void test_cnn(void **state)
{
    (void)state;
    static const char *const KV[] = { "batch", "37", NULL };
    one_trajectory("cnn", KV, 2);
}

static void test_seq_every_layer(void **state)
{
    (void)state;
    static const char *const KV[] = {
        "image", "28,28,1", "layers",
        "conv3x3:4,relu,maxpool2,conv5x5:6,gelu,avgpool2,layernorm,dense:16,relu,dense:10",
        "batch", "37", "lr", "0.01", NULL,
    };
    one_trajectory("seq", KV, 4);
}

static void test_parse(void **state)
{
    (void)state;
    seq_decl d;
    ls_err err = { "" };
    assert_int_equal(seq_parse("conv3x3:32,relu,maxpool2,conv3x3:64,relu,maxpool2,dense:128,relu,dense:10", &d, &err),
                     LS_OK);
    assert_int_equal(d.n, 9);
    assert_int_equal(d.layer[0].kind, NN_CONV2D);
    assert_int_equal(d.layer[0].k, 3);
    assert_int_equal(d.layer[0].units, 32);
    assert_int_equal(d.layer[2].kind, NN_MAXPOOL);
    assert_int_equal(d.layer[2].k, 2);
    assert_int_equal(d.layer[8].kind, NN_DENSE);
    assert_int_equal(d.layer[8].units, 10);
    static const struct {
        const char *text, *want;
    } BAD[] = {
        { "", "empty" },
        { "dense:10,", "token 2 ''" },
        { "relu,dense:0", "token 2 'dense:0'" },
        { "dense:010", "token 1 'dense:010'" },
        { "dense:65537", "token 1" },
        { "conv2x2:4,dense:10", "token 1 'conv2x2:4'" },
        { "conv3x5:4", "token 1" },
        { "relu,Relu", "token 2 'Relu'" },
        { "dense:10 ", "character 9 is byte 0x20" },
        { "dense:8,\nrelu,dense:3", "character 9 is byte 0x0a" },
        { "res(dense:3],dense:3", "']' where ')' closes the open 'res('" },
        { "maxpool,dense:3", "token 1 'maxpool'" },
        { "dense:-1", "token 1" },
        { "res(dense:4", "')' missing" },
        { "dense:4)", "closes nothing" },
        { "res(relu,res(relu)),dense:3", "token 2 'res('" },
        { "0x[relu],dense:3", "repeat count" },
        { "2x[relu,dense:3", "']' missing" },
        { "embed:0,dense:3", "token 1 'embed:0'" },
        { "embed:8,attn:0", "token 2 'attn:0'" },
        { "res(),dense:3", "token 1 ''" },
        { "dense:4,dropout:1,dense:3", "token 2 'dropout:1'" },
        { "dropout:0,dense:3", "token 1 'dropout:0'" },
        { "dropout:0.0,dense:3", "token 1 'dropout:0.0'" },
        { "dropout:0.000000,dense:3", "token 1 'dropout:0.000000'" },
        { "dropout:1.5,dense:3", "token 1 'dropout:1.5'" },
        { "dropout:.5,dense:3", "token 1 'dropout:.5'" },
        { "dropout:0.1234567,dense:3", "token 1 'dropout:0.1234567'" },
        { "dropout:abc,dense:3", "token 1 'dropout:abc'" },
        { "dropout:,dense:3", "token 1 'dropout:'" },
        { "dropout:0.,dense:3", "token 1 'dropout:0.'" },
        { "dropout:0.5e0,dense:3", "token 1 'dropout:0.5e0'" },
        { "dropout:-0.5,dense:3", "token 1 'dropout:-0.5'" },
        { "dropout,dense:3", "token 1 'dropout'" },
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        err.msg[0] = '\0';
        assert_int_equal(seq_parse(BAD[i].text, &d, &err), LS_EINVAL);
        if (strstr(err.msg, BAD[i].want) == NULL)
            fail_msg("'%s': message '%s' does not say '%s'", BAD[i].text, err.msg, BAD[i].want);
    }
    /* The gpt's declaration unrolled: repeats written out, each res(...) its
     * branch then an add that names the branch's first layer. */
    assert_int_equal(seq_parse("embed:64,posembed,2x[res(layernorm,attn:4),res(layernorm,dense:256,gelu,dense:64)],"
                               "layernorm,dense:256",
                               &d, &err),
                     LS_OK);
    assert_int_equal(d.n, 20);
    static const nn_kind KINDS[20] = { NN_EMBED,     NN_POSEMBED,  NN_LAYERNORM, NN_ATTN,  NN_ADD,
                                       NN_LAYERNORM, NN_DENSE,     NN_GELU,      NN_DENSE, NN_ADD,
                                       NN_LAYERNORM, NN_ATTN,      NN_ADD,       NN_LAYERNORM, NN_DENSE,
                                       NN_GELU,      NN_DENSE,     NN_ADD,       NN_LAYERNORM, NN_DENSE };
    for (size_t i = 0; i < 20; i++)
        assert_int_equal(d.layer[i].kind, KINDS[i]);
    assert_int_equal(d.skip[4], 2);
    assert_int_equal(d.skip[9], 5);
    assert_int_equal(d.skip[12], 10);
    assert_int_equal(d.skip[17], 13);
    assert_int_equal(d.layer[3].heads, 4);
    assert_int_equal(d.layer[0].units, 64);
    /* Dropout: P's binary32 value is strtof's of the written digits; it
     * takes a position number like relu (no tensors). */
    assert_int_equal(seq_parse("dense:8,dropout:0.1,res(dropout:0.999999,dense:8),dropout:0.000001,dense:3", &d, &err),
                     LS_OK);
    assert_int_equal(d.n, 7);
    static const nn_kind DKINDS[7] = { NN_DENSE, NN_DROPOUT, NN_DROPOUT, NN_DENSE, NN_ADD, NN_DROPOUT, NN_DENSE };
    static const char *const PTEXT[3] = { "0.1", "0.999999", "0.000001" };
    static const size_t PAT[3] = { 1, 2, 5 };
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(d.layer[i].kind, DKINDS[i]);
    for (size_t i = 0; i < 3; i++) {
        const float want = strtof(PTEXT[i], NULL);
        if (memcmp(&d.layer[PAT[i]].p, &want, sizeof want) != 0)
            fail_msg("dropout:%s parsed as %.9g, strtof gives %.9g", PTEXT[i], (double)d.layer[PAT[i]].p,
                     (double)want);
    }
    assert_int_equal(d.pos[5], 5);
    /* Shapes: embed only first; a branch must give back its input's shape. */
    static const struct {
        const char *text, *want;
    } BAD_SHAPE[] = {
        { "dense:8,embed:4,dense:3", "token 2 (embed)" },
        { "dense:8,res(dense:4),dense:3", "token 2 (res)" },
        { "embed:8,attn:3,dense:3", "token 2 (attn)" },
    };
    const size_t in[3] = { 1, 1, 6 };
    for (size_t i = 0; i < sizeof BAD_SHAPE / sizeof BAD_SHAPE[0]; i++) {
        seq *net = NULL;
        err.msg[0] = '\0';
        assert_int_equal(seq_parse(BAD_SHAPE[i].text, &d, &err), LS_OK);
        assert_int_equal(seq_create(&net, &d, in, 3, 16, &err), LS_EINVAL);
        assert_null(net);
        if (strstr(err.msg, BAD_SHAPE[i].want) == NULL)
            fail_msg("'%s': message '%s' does not say '%s'", BAD_SHAPE[i].text, err.msg, BAD_SHAPE[i].want);
    }
}

/* Every step's parameter hash, loss and trajectory hash equal at threads
 * 1, 2, 3, 8 and leaf 16 and 64; the leaf 16, 1 thread run in *ref. */
static void same_runs(const char *model, const char *const *kv, int steps, run_t *ref)
{
    run_t got;
    int have = 0;
    for (size_t li = 0; li < 2; li++)
        for (size_t k = 0; k < N_THREADS; k++) {
            ls_config *cfg = config(model, kv, LEAVES[li]);
            run(cfg, THREADS[k], steps, have ? &got : ref);
            ls_config_destroy(cfg);
            if (!have) {
                have = 1;
                continue;
            }
            for (int i = 0; i <= steps; i++)
                if (memcmp(&got.param[i], &ref->param[i], sizeof got.param[i]) != 0 ||
                    memcmp(&got.loss[i], &ref->loss[i], sizeof got.loss[i]) != 0 ||
                    memcmp(&got.traj[i], &ref->traj[i], sizeof got.traj[i]) != 0)
                    fail_msg("%s at leaf %s, %d threads: step %d has parameters %016llx loss %.17g, leaf 16 at 1 "
                             "thread %016llx %.17g",
                             kv[1], LEAVES[li], THREADS[k], i, (unsigned long long)got.param[i], got.loss[i],
                             (unsigned long long)ref->param[i], ref->loss[i]);
        }
}

/* A declaration with dropout against itself at every thread count and
 * leaf, then against the same text without its dropout tokens (the same
 * tensors at the same offsets: θ_0 equal, every trained step different)
 * and against another seed. kv: "layers", text, then the rest; kv_plain
 * the same with the plain text. */
static void dropout_runs(const char *const *kv, const char *const *kv_plain, const char *const *kv_seed, int steps)
{
    run_t drop, plain, seed2;
    same_runs("seq", kv, steps, &drop);
    ls_config *cfg = config("seq", kv_plain, "16");
    run(cfg, 1, steps, &plain);
    ls_config_destroy(cfg);
    cfg = config("seq", kv_seed, "16");
    run(cfg, 1, steps, &seed2);
    ls_config_destroy(cfg);
    /* θ_0 is the same vector: dropout has no tensors and shifts no offset. */
    assert_true(drop.param[0] == plain.param[0]);
    for (int i = 1; i <= steps; i++) {
        if (memcmp(&drop.loss[i], &plain.loss[i], sizeof drop.loss[i]) == 0 || drop.param[i] == plain.param[i])
            fail_msg("%s: step %d's loss %.17g or parameters %016llx are those without dropout: it was not applied",
                     kv[1], i, drop.loss[i], (unsigned long long)drop.param[i]);
        if (memcmp(&drop.loss[i], &seed2.loss[i], sizeof drop.loss[i]) == 0 || drop.param[i] == seed2.param[i])
            fail_msg("%s: step %d equals the run at seed 2", kv[1], i);
    }
    printf("%s: %d steps, one trajectory at threads 1,2,3,8, leaf 16 and 64 (%016llx); without dropout and at "
           "seed 2 another\n",
           kv[1], steps, (unsigned long long)drop.traj[steps]);
}

static void test_dropout_flat(void **state)
{
    (void)state;
    static const char *const KV[] = { "layers", "dense:64,relu,dropout:0.25,dense:10", "batch", "37", NULL };
    static const char *const PLAIN[] = { "layers", "dense:64,relu,dense:10", "batch", "37", NULL };
    static const char *const SEED[] = { "layers", "dense:64,relu,dropout:0.25,dense:10", "batch", "37", "seed", "2",
                                        NULL };
    dropout_runs(KV, PLAIN, SEED, 4);
}

static void test_dropout_image_res(void **state)
{
    (void)state;
#define DROP_IMG "conv3x3:4,relu,dropout:0.5,maxpool2,dense:16,res(dense:16,relu,dropout:0.1),dense:10"
    static const char *const KV[] = { "layers", DROP_IMG, "image", "28,28,1", "batch", "37", "lr", "0.01", NULL };
    static const char *const PLAIN[] = { "layers", "conv3x3:4,relu,maxpool2,dense:16,res(dense:16,relu),dense:10",
                                         "image", "28,28,1", "batch", "37", "lr", "0.01", NULL };
    static const char *const SEED[] = { "layers", DROP_IMG, "image", "28,28,1", "batch", "37", "lr", "0.01",
                                        "seed", "2", NULL };
#undef DROP_IMG
    dropout_runs(KV, PLAIN, SEED, 3);
}

/* The network alone: evaluation is the identity (the declaration without
 * dropout, the same parameter vector, to the bit), and a training leaf's
 * masks follow their address (seed, step, first sample) and nothing else. */
static void test_dropout_leaf(void **state)
{
    (void)state;
    const size_t in[3] = { 1, 1, 12 }, classes = 5, n = 16;
    seq_decl d;
    seq *drop = NULL, *plain = NULL;
    ls_err err = { "" };
    assert_int_equal(seq_parse("dense:32,relu,dropout:0.25,res(dropout:0.5,dense:32,relu),dense:5", &d, &err), LS_OK);
    assert_int_equal(seq_create(&drop, &d, in, classes, n, &err), LS_OK);
    assert_int_equal(seq_parse("dense:32,relu,res(dense:32,relu),dense:5", &d, &err), LS_OK);
    assert_int_equal(seq_create(&plain, &d, in, classes, n, &err), LS_OK);
    const size_t np = seq_n_params(drop);
    assert_int_equal(seq_n_params(plain), np);
    float *w = malloc(np * sizeof(float)), *w2 = malloc(np * sizeof(float));
    float *x = malloc(n * 12 * sizeof(float)), *za = malloc(n * classes * sizeof(float)),
          *zb = malloc(n * classes * sizeof(float));
    float *g[6];
    for (int k = 0; k < 6; k++)
        g[k] = malloc(np * sizeof(float));
    int32_t lab[16];
    const size_t sb = seq_scratch_bytes(drop) > seq_scratch_bytes(plain) ? seq_scratch_bytes(drop)
                                                                           : seq_scratch_bytes(plain);
    void *scratch = aligned_alloc(64, (sb + 63) / 64 * 64);
    seq_init(drop, w, 5);
    seq_init(plain, w2, 5);
    assert_memory_equal(w, w2, np * sizeof(float));
    for (size_t i = 0; i < n * 12; i++)
        x[i] = 2.0f * rng_uniformf(3, RNG_TEST, 0, i, 0) - 1.0f;
    for (size_t i = 0; i < n; i++)
        lab[i] = (int32_t)(i % classes);
    /* Evaluation: the same logits and loss as without dropout. */
    seq_logits(drop, w, x, n, za, scratch);
    seq_logits(plain, w, x, n, zb, scratch);
    assert_memory_equal(za, zb, n * classes * sizeof(float));
    const double ea = seq_loss(drop, w, x, lab, n, scratch), eb = seq_loss(plain, w, x, lab, n, scratch);
    assert_memory_equal(&ea, &eb, sizeof ea);
    /* Training: one address, one result; each part of it changes the masks. */
    double loss[6];
    loss[0] = seq_leaf(drop, w, x, lab, n, 1, 3, 100, g[0], scratch);
    loss[1] = seq_leaf(drop, w, x, lab, n, 1, 3, 100, g[1], scratch);
    assert_memory_equal(&loss[0], &loss[1], sizeof loss[0]);
    assert_memory_equal(g[0], g[1], np * sizeof(float));
    loss[2] = seq_leaf(drop, w, x, lab, n, 2, 3, 100, g[2], scratch);
    loss[3] = seq_leaf(drop, w, x, lab, n, 1, 4, 100, g[3], scratch);
    loss[4] = seq_leaf(drop, w, x, lab, n, 1, 3, 101, g[4], scratch);
    loss[5] = seq_leaf(plain, w, x, lab, n, 1, 3, 100, g[5], scratch);
    static const char *const WHAT[6] = { "", "", "seed 2", "step 4", "first sample 101", "no dropout" };
    for (int k = 2; k < 6; k++)
        if (memcmp(&loss[k], &loss[0], sizeof loss[0]) == 0 || memcmp(g[k], g[0], np * sizeof(float)) == 0)
            fail_msg("a training leaf at %s has the loss or gradient of seed 1, step 3, first sample 100", WHAT[k]);
    /* Without dropout the training leaf's loss is the evaluated one (seq.h). */
    assert_memory_equal(&loss[5], &eb, sizeof eb);
    free(scratch);
    for (int k = 0; k < 6; k++)
        free(g[k]);
    free(zb);
    free(za);
    free(x);
    free(w2);
    free(w);
    seq_destroy(plain);
    seq_destroy(drop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_declared_mlp),
        cmocka_unit_test(test_cnn),
        cmocka_unit_test(test_seq_every_layer),
        cmocka_unit_test(test_dropout_leaf),
        cmocka_unit_test(test_dropout_flat),
        cmocka_unit_test(test_dropout_image_res),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown) ? 1 : 0;
}
