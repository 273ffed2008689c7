/* test_train.c — the contract on whole training runs: the trajectory hash of
 * a config depends on neither the thread count nor the leaf size (atoms:
 * include/lockstep.h), for batches that are and are not multiples of the
 * atom, for mlp, linear, logic and gnn; and the unordered foil
 * does depend on it (so these checks can fail); and the golden files of
 * golden/: their canonical config texts parse and print back byte for byte,
 * and the engine reproduces every step's bits. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>

#include "engine/core/train.h"
#include "engine/tasks/teacher.h"
#include "record/golden.h"
#include "record/hash.h"

static const int THREADS[] = { 1, 2, 3, 4, 7, 8, 16 };
static const size_t BATCHES[] = { 1, 5, 16, 20, 64, 100 };
/* LS_ATOM, 2, 4 atoms, and more than any batch: the whole batch one leaf. */
static const size_t LEAVES[] = { LS_ATOM, 2 * LS_ATOM, 4 * LS_ATOM, 1024 };
#define N_THREADS (sizeof THREADS / sizeof THREADS[0])

typedef struct {
    uint64_t traj;
    uint64_t param_hash;
    int busy;            /* workers that computed leaves, units or update pieces in some step */
    ls_status st;
} outcome;

static outcome run(ls_config cfg, int threads, int steps, const ls_dataset *data)
{
    outcome o = { 0, 0, 0, LS_OK };
    trainer *t;
    ls_err err;
    o.st = trainer_create(&t, &cfg, threads, data, &err);
    if (o.st != LS_OK) {
        fprintf(stderr, "trainer_create: %s\n", err.msg);
        return o;
    }
    char text[CONFIG_TEXT_MAX];
    config_text(&cfg, text, sizeof text);
    uint64_t ph = hash_params(trainer_params(t), trainer_n_params(t));
    uint64_t traj = hash_traj0(text, ph);
    /* A step of few parts (gol: two units, its leaves summed in the finish)
     * may go to one thread when the others are descheduled, so the workers
     * are counted over the run. */
    int worked[POOL_MAX_THREADS] = { 0 };
    for (int s = 0; s < steps && o.st == LS_OK; s++) {
        double loss;
        o.st = trainer_step(t, &loss, &err);
        if (o.st != LS_OK)
            break;
        for (int w = 0; w < threads; w++)
            worked[w] |= trainer_worker_leaves(t)[w] > 0;
        ph = hash_params(trainer_params(t), trainer_n_params(t));
        if (trainer_param_hash(t) != ph)   /* the update's hash parts, joined */
            fail_msg("threads %d step %d: trainer_param_hash %016llx, hash_params %016llx", threads, s + 1,
                     (unsigned long long)trainer_param_hash(t), (unsigned long long)ph);
        traj = hash_traj_next(traj, ph, loss);
    }
    for (int w = 0; w < threads; w++)
        o.busy += worked[w];
    o.traj = traj;
    o.param_hash = ph;
    trainer_destroy(t);
    return o;
}

/* Every (leaf, threads) run of a batch against one reference: leaf LS_ATOM
 * at one thread. extra: "key=value" pairs for the model (NULL: none). */
static void matrix(const char *task, const char *model, const ls_dataset *data, const char *const *extra,
                   int steps, size_t n_batches)
{
    int checked = 0;
    for (size_t bi = 0; bi < n_batches; bi++) {
        uint64_t ref = 0;
        for (size_t li = 0; li < sizeof LEAVES / sizeof LEAVES[0]; li++) {
            ls_config cfg;
            assert_int_equal(config_defaults(&cfg, task, model, NULL), LS_OK);
            char b[32], l[32];
            snprintf(b, sizeof b, "%zu", BATCHES[bi]);
            snprintf(l, sizeof l, "%zu", LEAVES[li]);
            assert_int_equal(config_set(&cfg, "batch", b, 0, NULL), LS_OK);
            assert_int_equal(config_set(&cfg, "leaf", l, 0, NULL), LS_OK);
            for (size_t e = 0; extra != NULL && extra[e] != NULL; e += 2)
                assert_int_equal(config_set(&cfg, extra[e], extra[e + 1], 0, NULL), LS_OK);
            size_t n_leaves = (BATCHES[bi] + LEAVES[li] - 1) / LEAVES[li];
            for (size_t ti = 0; ti < N_THREADS; ti++) {
                if (li > 0 && THREADS[ti] != 1 && THREADS[ti] != 2 && THREADS[ti] != 3 && THREADS[ti] != 8)
                    continue;   /* every count at LS_ATOM; 1, 2, 3, 8 at the others */
                outcome o = run(cfg, THREADS[ti], steps, data);
                assert_int_equal(o.st, LS_OK);
                if (li == 0 && ti == 0) {
                    ref = o.traj;
                    continue;
                }
                if (o.traj != ref)
                    fail_msg("%s %s batch %zu leaf %zu threads %d: trajectory %016llx != leaf %d threads 1 %016llx",
                             task, model, BATCHES[bi], LEAVES[li], THREADS[ti], (unsigned long long)o.traj,
                             LS_ATOM, (unsigned long long)ref);
                /* A pool that quietly ran everything on one thread must fail here. */
                if (n_leaves >= 2 && THREADS[ti] >= 2 && o.busy < 2)
                    fail_msg("%s %s batch %zu leaf %zu threads %d: only %d worker computed leaves", task, model,
                             BATCHES[bi], LEAVES[li], THREADS[ti], o.busy);
                checked++;
            }
        }
    }
    printf("%s %s: %d (batch, leaf, threads) runs equal to leaf %d at one thread, bit for bit\n", task, model,
           checked, LS_ATOM);
}

static const char *const HIDDEN32[] = { "hidden", "32", NULL };
static const char *const HIDDEN24[] = { "hidden", "24", NULL };

static void test_teacher_matrix(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    matrix("teacher", "mlp", d, HIDDEN32, 4, 6);
    matrix("teacher", "linear", d, NULL, 3, 6);
    dataset_destroy(d);
}

static ls_dataset *fashion;

static void test_fashion_matrix(void **state)
{
    (void)state;
    matrix("fashion-mnist", "mlp", fashion, HIDDEN24, 2, 6);
}

/* The logic gate network: same contract, three shapes (unique wiring,
 * residual gates). */
static void test_logic_threads(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    static const char *const shapes[][7] = { { "layers", "64x3", NULL },
                                             { "layers", "48,32,16", "wiring", "unique", NULL },
                                             { "layers", "64x2", "residual", "5", NULL } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        matrix("teacher", "logic", d, shapes[i], 3, i == 0 ? 6 : 3);
    dataset_destroy(d);
}

/* The graph network on its three tasks (graphs, and nodes of one graph). */
static void test_gnn_matrix(void **state)
{
    (void)state;
    matrix("karate", "gnn", NULL, NULL, 3, 4);
    matrix("graph-edit", "gnn", NULL, NULL, 2, 3);
}

/* The logic cellular automaton: parts run in phases on the pool, leaves are
 * (sample, part) pairs; thread counts must not show in the bits. */
static void test_ca_threads(void **state)
{
    (void)state;
    const char *cases[][4] = {
        /* task, extra key, value, steps */
        { "gol", "batch", "20", "6" },
        { "checkerboard", "ca_steps", "6", "3" },
        { "checkerboard", "async", "1", "2" },
    };
    int checked = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ls_config cfg;
        assert_int_equal(config_defaults(&cfg, cases[i][0], NULL, NULL), LS_OK);
        assert_int_equal(config_set(&cfg, cases[i][1], cases[i][2], 0, NULL), LS_OK);
        if (strcmp(cases[i][1], "async") == 0)
            assert_int_equal(config_set(&cfg, "ca_steps", "8", 0, NULL), LS_OK);
        int steps = atoi(cases[i][3]);
        outcome ref = run(cfg, 1, steps, NULL);
        assert_int_equal(ref.st, LS_OK);
        int threads[] = { 2, 3, 8 }, most = 0;
        for (size_t ti = 0; ti < 3; ti++) {
            outcome o = run(cfg, threads[ti], steps, NULL);
            assert_int_equal(o.st, LS_OK);
            if (o.traj != ref.traj)
                fail_msg("%s %s=%s: threads %d differ from threads 1", cases[i][0], cases[i][1], cases[i][2],
                         threads[ti]);
            most = o.busy > most ? o.busy : most;
            checked++;
        }
        /* Several workers ran parts (a pool that ran all on one thread
         * fails). gol's step is two units, and a busy machine may leave
         * one thread all of them for a run (seen once in a make test on a
         * loaded host), so over the three runs and, if need be, up to
         * five more at 2 threads: a pool that never uses a second worker
         * still fails every one. */
        for (int again = 0; most < 2 && again < 5; again++) {
            outcome o = run(cfg, 2, steps, NULL);
            assert_int_equal(o.st, LS_OK);
            most = o.busy > most ? o.busy : most;
        }
        if (most < 2)
            fail_msg("%s: one worker ran every part at 2, 3 and 8 threads", cases[i][0]);
    }
    printf("logic-ca: %d (task, threads) runs equal to one thread, bit for bit\n", checked);
}

/* The foil differs across thread counts: proof that equality above is news. */
static void test_unordered_differs(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    ls_config cfg;
    assert_int_equal(config_defaults(&cfg, "teacher", NULL, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "batch", "64", 0, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "leaf", "16", 0, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "reduce", "unordered", 0, NULL), LS_OK);
    outcome first = run(cfg, 1, 3, d);
    int differ = 0;
    for (size_t ti = 1; ti < N_THREADS; ti++)
        differ += run(cfg, THREADS[ti], 3, d).traj != first.traj;
    printf("unordered: %d of %zu thread counts differ from one thread\n", differ, N_THREADS - 1);
    assert_true(differ > 0);
    /* And the tree at the same config does not. */
    assert_int_equal(config_set(&cfg, "reduce", "tree", 0, NULL), LS_OK);
    outcome tree1 = run(cfg, 1, 3, d);
    for (size_t ti = 1; ti < N_THREADS; ti++)
        assert_true(run(cfg, THREADS[ti], 3, d).traj == tree1.traj);
    dataset_destroy(d);
    /* The foil runs for the logic CA too (leaves after phases), with work on
     * several workers. */
    ls_config ca;
    assert_int_equal(config_defaults(&ca, "gol", NULL, NULL), LS_OK);
    assert_int_equal(config_set(&ca, "reduce", "unordered", 0, NULL), LS_OK);
    for (int threads = 1; threads <= 3; threads += 2) {
        outcome o = run(ca, threads, 3, NULL);
        assert_int_equal(o.st, LS_OK);
        assert_int_equal(o.busy, threads);
    }
}

/* Every config key that can change θ changes the trajectory. */
static void test_config_changes_trajectory(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    ls_config base;
    assert_int_equal(config_defaults(&base, "teacher", NULL, NULL), LS_OK);
    uint64_t ref = run(base, 2, 3, d).traj;
    const char *changes[][2] = { { "seed", "2" }, { "lr", "0.02" }, { "batch", "16" },
                                 { "hidden", "16" }, { "beta1", "0.8" }, { "optimizer", "sgd" } };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        ls_config c = base;
        assert_int_equal(config_set(&c, changes[i][0], changes[i][1], 0, NULL), LS_OK);
        if (run(c, 2, 3, d).traj == ref)
            fail_msg("changing %s to %s left the trajectory unchanged", changes[i][0], changes[i][1]);
    }
    dataset_destroy(d);
}

/* Both optimisers, the clip and weight decay, at several thread counts. */
static void test_optimisers(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    const char *opts[][2] = { { "optimizer", "sgd" }, { "clip", "0.01" }, { "weight_decay", "0.1" } };
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        ls_config c;
        assert_int_equal(config_defaults(&c, "teacher", NULL, NULL), LS_OK);
        assert_int_equal(config_set(&c, opts[i][0], opts[i][1], 0, NULL), LS_OK);
        uint64_t ref = run(c, 1, 5, d).traj;
        assert_true(run(c, 3, 5, d).traj == ref);
        assert_true(run(c, 8, 5, d).traj == ref);
    }
    dataset_destroy(d);
}

static void test_divergence(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    ls_config c;
    assert_int_equal(config_defaults(&c, "teacher", NULL, NULL), LS_OK);
    assert_int_equal(config_set(&c, "optimizer", "sgd", 0, NULL), LS_OK);
    /* L2 decay with lr·wd = 1e12 multiplies θ by -1e12 each step: inf, then NaN. */
    assert_int_equal(config_set(&c, "lr", "1000000", 0, NULL), LS_OK);
    assert_int_equal(config_set(&c, "weight_decay", "1000000", 0, NULL), LS_OK);
    trainer *t;
    ls_err err;
    assert_int_equal(trainer_create(&t, &c, 2, d, &err), LS_OK);
    ls_status st = LS_OK;
    int s;
    for (s = 0; s < 200 && st == LS_OK; s++) {
        double loss;
        st = trainer_step(t, &loss, &err);
    }
    assert_int_equal(st, LS_EDIVERGED);
    assert_non_null(strstr(err.msg, "diverged"));
    printf("divergence: stopped at step %d: %s\n", s, err.msg);
    trainer_destroy(t);
    dataset_destroy(d);
}

/* The last float of the optimiser's state (AdamW's last v) becomes a NaN
 * with a payload, so the update writes a non-canonical NaN into θ. */
static void poison_state(void *ctx)
{
    size_t bytes;
    unsigned char *st = trainer_optim_state(ctx, &bytes);
    const uint32_t nan = 0x7fc00123u;
    memcpy(st + bytes - sizeof nan, &nan, sizeof nan);
}

/* trainer_param_hash joins the hash parts the update's workers wrote; it
 * must equal hash_params after trainer_params_mut (the parts are stale) and
 * after a step that wrote a NaN into θ and so diverged (the parts are of θ
 * that was not kept, or hold the NaN), at thread counts below, at and above
 * the cores. */
static void test_param_hash_parts(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    const int threads[] = { 1, 2, 3, 8 };
    for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
        ls_config c;
        assert_int_equal(config_defaults(&c, "teacher", NULL, NULL), LS_OK);
        assert_int_equal(config_set(&c, "hidden", "64", 0, NULL), LS_OK);
        assert_int_equal(config_set(&c, "optimizer", "adamw", 0, NULL), LS_OK);
        trainer *t;
        ls_err err;
        assert_int_equal(trainer_create(&t, &c, threads[ti], d, &err), LS_OK);
        const size_t n = trainer_n_params(t);
        assert_true(n * sizeof(float) > 4 * HASH_PART_FLOATS);   /* several blocks: several pieces */
        double loss;
        assert_int_equal(trainer_step(t, &loss, &err), LS_OK);
        assert_true(trainer_param_hash(t) == hash_params(trainer_params(t), n));
        /* Written through trainer_params_mut: hashed afresh. */
        float *p = trainer_params_mut(t);
        p[0] = -p[0];
        p[n / 2] = p[n / 2] + 1.0f;
        assert_true(trainer_param_hash(t) == hash_params(trainer_params(t), n));
        assert_int_equal(trainer_step(t, &loss, &err), LS_OK);
        assert_true(trainer_param_hash(t) == hash_params(trainer_params(t), n));
        /* A NaN written into θ by the update ends the step as diverged
         * (the loss was finite), naming the last parameter; the hash is of
         * whatever θ now holds: with one thread the update wrote it in
         * place (the raw NaN is there), with more θ is the step before's. */
        const uint64_t before = trainer_param_hash(t);
        trainer_set_test_hook(t, poison_state, t);
        assert_int_equal(trainer_step(t, &loss, &err), LS_EDIVERGED);
        char want[96];
        snprintf(want, sizeof want, "step 3: parameter %zu is NaN", n - 1);
        if (strstr(err.msg, want) == NULL)
            fail_msg("%d threads: want '%s' in: %s", threads[ti], want, err.msg);
        assert_int_equal(trainer_steps_done(t), 2);
        size_t raw_nans = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, trainer_params(t) + i, sizeof u);
            raw_nans += (u & 0x7fffffffu) > 0x7f800000u && u != 0x7fc00000u;
        }
        assert_true(raw_nans == (trainer_plan(t)->param_bufs == 1 ? 1u : 0u));
        assert_true(trainer_param_hash(t) == hash_params(trainer_params(t), n));
        if (raw_nans == 0)
            assert_true(trainer_param_hash(t) == before);
        trainer_destroy(t);
    }
    dataset_destroy(d);
}

static void test_bad_config(void **state)
{
    (void)state;
    ls_config c;
    ls_err err;
    assert_int_equal(config_defaults(&c, "nosuch", NULL, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "nosuch"));
    assert_int_equal(config_defaults(&c, "teacher", "nosuch", &err), LS_EINVAL);
    assert_int_equal(config_defaults(&c, "teacher", NULL, &err), LS_OK);
    assert_int_equal(config_set(&c, "batch", "0", 1, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "--batch"));
    assert_int_equal(config_set(&c, "lr", "nan", 1, &err), LS_EINVAL);
    assert_int_equal(config_set(&c, "lr", "1e", 1, &err), LS_EINVAL);
    assert_int_equal(config_set(&c, "hidden", "3,,4", 1, &err), LS_EINVAL);
    assert_int_equal(config_set(&c, "nokey", "1", 1, &err), LS_EINVAL);
    trainer *t;
    assert_int_equal(trainer_create(&t, &c, 0, NULL, &err), LS_EINVAL);
    /* A key set but not used by the run is refused, whatever the order of
     * the settings, rather than dropped from the config. */
    ls_config u;
    assert_int_equal(config_defaults(&u, "teacher", NULL, &err), LS_OK);
    assert_int_equal(config_validate(&u, &err), LS_OK);   /* defaults are not choices */
    assert_int_equal(config_set(&u, "beta1", "0.5", 1, &err), LS_OK);
    assert_int_equal(config_set(&u, "optimizer", "sgd", 1, &err), LS_OK);
    assert_int_equal(config_validate(&u, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "beta1"));
    assert_int_equal(config_set(&u, "optimizer", "adamw", 1, &err), LS_OK);
    assert_int_equal(config_validate(&u, &err), LS_OK);
    assert_int_equal(config_defaults(&u, "checkerboard", NULL, &err), LS_OK);
    assert_int_equal(config_set(&u, "fire_rate", "0.5", 1, &err), LS_OK);
    assert_int_equal(config_validate(&u, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "fire_rate"));
    assert_int_equal(config_set(&u, "async", "1", 1, &err), LS_OK);
    assert_int_equal(config_validate(&u, &err), LS_OK);
    /* A key of another model names its owner. */
    assert_int_equal(config_defaults(&u, "teacher", "logic", &err), LS_OK);
    assert_int_equal(config_set(&u, "hidden", "8", 1, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "model mlp"));
    /* The canonical text parses back to the same text. */
    char a[CONFIG_TEXT_MAX], b[CONFIG_TEXT_MAX];
    config_text(&c, a, sizeof a);
    ls_config c2;
    assert_int_equal(config_parse_text(&c2, a, "test", &err), LS_OK);
    config_text(&c2, b, sizeof b);
    assert_string_equal(a, b);
}

/* Every golden file: the canonical text is unchanged for its config (the
 * text printed back from the parsed config equals the file's byte for byte,
 * as does the text after a defaults + config_set rebuild from its keys), and
 * every step gives the recorded loss bits, parameter and trajectory hashes
 * at 1 and 3 threads (the data read where the file's sources say). */
static void test_golden_files(void **state)
{
    (void)state;
    const char *root = getenv("LOCKSTEP_ROOT");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/golden", root != NULL ? root : ".");
    DIR *dh = opendir(dir);
    if (dh == NULL)
        fail_msg("cannot open %s (set LOCKSTEP_ROOT to the repository)", dir);
    int files = 0;
    size_t steps_checked = 0;
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        const size_t nl = strlen(de->d_name);
        if (nl < 8 || strcmp(de->d_name + nl - 7, ".golden") != 0)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        golden_file g;
        ls_err err = { { 0 } };
        if (golden_read(path, &g, &err) != LS_OK)
            fail_msg("%s", err.msg);
        ls_config cfg;
        if (config_parse_text(&cfg, g.config_text, path, &err) != LS_OK)
            fail_msg("%s: %s", path, err.msg);
        char text[CONFIG_TEXT_MAX];
        config_text(&cfg, text, sizeof text);
        if (strcmp(text, g.config_text) != 0)
            fail_msg("%s: the canonical text changed:\n--- file\n%s--- now\n%s", path, g.config_text, text);
        /* the same config built as the command line does: defaults, then every key */
        ls_config built;
        assert_int_equal(config_defaults(&built, cfg.task, cfg.model, &err), LS_OK);
        char *lines = strdup(g.config_text);
        for (char *line = strtok(lines, "\n"); line != NULL; line = strtok(NULL, "\n")) {
            char *eq = strchr(line, '=');
            assert_non_null(eq);
            *eq = '\0';
            if (strcmp(line, "task") == 0 || strcmp(line, "model") == 0)
                continue;
            if (config_set(&built, line, eq + 1, 0, &err) != LS_OK)
                fail_msg("%s: %s", path, err.msg);
        }
        free(lines);
        char text2[CONFIG_TEXT_MAX];
        config_text(&built, text2, sizeof text2);
        assert_string_equal(text2, g.config_text);

        /* The sources section: where the data are (the text task's --file). */
        char *src = strdup(g.source_text);
        for (char *line = strtok(src, "\n"); line != NULL; line = strtok(NULL, "\n")) {
            char *eq = strchr(line, '=');
            assert_non_null(eq);
            *eq = '\0';
            if (config_set(&cfg, line, eq + 1, 0, &err) != LS_OK)
                fail_msg("%s: source %s: %s", path, line, err.msg);
        }
        free(src);
        ls_dataset *data = NULL;
        if (trainer_load_data(&cfg, &data, &err) != LS_OK)
            fail_msg("%s: %s", path, err.msg);
        const int threads[] = { 1, 3 };
        for (size_t ti = 0; ti < 2; ti++) {
            ls_config c = cfg;
            trainer *t;
            if (trainer_create(&t, &c, threads[ti], data, &err) != LS_OK)
                fail_msg("%s: %s", path, err.msg);
            uint64_t ph = hash_params(trainer_params(t), trainer_n_params(t));
            uint64_t traj = hash_traj0(g.config_text, ph);
            if (ph != g.steps[0].param_hash || traj != g.steps[0].traj_hash)
                fail_msg("%s: step 0 at %d threads: param_hash %016llx traj %016llx, the file has %016llx %016llx", path,
                         threads[ti], (unsigned long long)ph, (unsigned long long)traj,
                         (unsigned long long)g.steps[0].param_hash, (unsigned long long)g.steps[0].traj_hash);
            for (size_t s = 1; s < g.n_steps; s++) {
                double loss;
                if (trainer_step(t, &loss, &err) != LS_OK)
                    fail_msg("%s: step %zu: %s", path, s, err.msg);
                ph = hash_params(trainer_params(t), trainer_n_params(t));
                traj = hash_traj_next(traj, ph, loss);
                const ls_step *w = &g.steps[s];
                if (hash_loss_bits(loss) != w->loss_bits || ph != w->param_hash || traj != w->traj_hash)
                    fail_msg("%s: step %zu at %d threads: loss bits %016llx param_hash %016llx traj %016llx, the "
                             "file has %016llx %016llx %016llx",
                             path, s, threads[ti], (unsigned long long)hash_loss_bits(loss), (unsigned long long)ph,
                             (unsigned long long)traj, (unsigned long long)w->loss_bits,
                             (unsigned long long)w->param_hash, (unsigned long long)w->traj_hash);
                steps_checked++;
            }
            trainer_destroy(t);
        }
        dataset_destroy(data);
        golden_free(&g);
        files++;
    }
    closedir(dh);
    assert_true(files >= 8);
    printf("golden: %d files: canonical texts unchanged, every step identical at 1 and 3 threads (%zu steps)\n",
           files, steps_checked);
}

int main(void)
{
    ls_err err;
    ls_config fc;
    /* the task's own loader: $LOCKSTEP_DATA_DIR or the Debian package's files */
    if (config_defaults(&fc, "fashion-mnist", NULL, &err) != LS_OK || trainer_load_data(&fc, &fashion, &err) != LS_OK ||
        fashion == NULL) {
        fprintf(stderr, "test_train: %s\n", err.msg);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_teacher_matrix),
        cmocka_unit_test(test_fashion_matrix),
        cmocka_unit_test(test_logic_threads),
        cmocka_unit_test(test_gnn_matrix),
        cmocka_unit_test(test_ca_threads),
        cmocka_unit_test(test_unordered_differs),
        cmocka_unit_test(test_config_changes_trajectory),
        cmocka_unit_test(test_optimisers),
        cmocka_unit_test(test_divergence),
        cmocka_unit_test(test_param_hash_parts),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_golden_files),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    dataset_destroy(fashion);
    return failed ? 1 : 0;
}
