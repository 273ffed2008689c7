/* test_session.c — the session (include/lockstep.h) driven in-process: a run
 * trained straight through at 1, 2, 3 and 8 threads, the same run
 * interrupted and resumed (with and without checkpoints) at another thread
 * count, and restored to its last step, all compared by bits (trajectory and
 * parameter hashes, memcmp of θ) with the uninterrupted run at 1 thread; a
 * record edited by hand must make resume and restore fail at that step.
 * Also: the registry (built-ins present, bad registrations refused) and the
 * config (canonical text of a built-in, accessors).
 *
 * Checkpoints that cannot be trusted by their path: two databases sharing
 * one checkpoint directory, both checkpointing and pruning; a copied
 * database resuming (it loads its original's checkpoints and deletes none);
 * the newest checkpoint deleted, truncated, replaced by another database's
 * file, replaced by garbage, with parameters that do not hash as recorded,
 * or rewritten as a version-1 file. Each time resume (and restore) falls
 * back to an older checkpoint or to step 0, says so in the note, finishes
 * on the uninterrupted trajectory, and every checkpoint file of every other
 * database or run is still there, byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <xxhash.h>

#include "include/lockstep.h"


static const int THREADS[] = { 1, 2, 3, 8 };
#define N_THREADS (sizeof THREADS / sizeof THREADS[0])
#define STEPS 24

static char dir[64];
static char db[128];

static void fail_err(const char *what, ls_status st, const ls_err *err)
{
    fail_msg("%s: %s (%s)", what, ls_strerror(st), err->msg);
}

static ls_config *teacher_config(void)
{
    ls_config *cfg;
    ls_err err;
    ls_status st = ls_config_create(&cfg, "teacher", NULL, &err);
    if (st != LS_OK)
        fail_err("ls_config_create", st, &err);
    /* A leaf that does not divide the batch: a partial last leaf. */
    assert_int_equal(ls_config_set(cfg, "batch", "37", &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "leaf", "16", &err), LS_OK);
    return cfg;
}

/* Train `steps` steps at `threads`, recorded as `name` (NULL: unrecorded);
 * returns the final state and copies θ into params (n_params floats). */
static void train(const ls_config *cfg, int threads, const char *name, int64_t steps, int64_t ckpt_every,
                  ls_session_state *out, float **params, size_t *n)
{
    ls_session_opts o = { .size = sizeof(ls_session_opts),
                          .threads = threads, .db = name ? db : NULL, .name = name, .steps = steps,
                          .checkpoint_every = ckpt_every };
    ls_session *s;
    ls_err err;
    ls_status st = ls_session_open(&s, cfg, &o, &err);
    if (st != LS_OK)
        fail_err("ls_session_open", st, &err);
    for (int64_t i = 0; i < steps; i++) {
        double loss;
        if ((st = ls_session_step(s, &loss, &err)) != LS_OK)
            fail_err("ls_session_step", st, &err);
    }
    ls_session_state_get(s, out);
    if (params != NULL) {
        const float *p = ls_session_params(s, n);
        *params = malloc(*n * sizeof(float));
        memcpy(*params, p, *n * sizeof(float));
    }
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/lockstep-session-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(db, sizeof db, "%s/runs.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The reference: one thread, uninterrupted. */
static ls_session_state ref;
static float *ref_params;
static size_t ref_n;

/* ls_session_state's parts of a step's time: each measured, none
 * negative, together within train_seconds; the CA's phases and prepare
 * measured too. */
static void test_step_parts(void **state)
{
    (void)state;
    const char *tasks[] = { "teacher", "gol" };
    for (size_t k = 0; k < 2; k++)
        for (int threads = 1; threads <= 3; threads += 2) {
            ls_err err;
            ls_config *cfg;
            assert_int_equal(ls_config_create(&cfg, tasks[k], NULL, &err), LS_OK);
            ls_session *s;
            const ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = threads };
            assert_int_equal(ls_session_open(&s, cfg, &o, &err), LS_OK);
            for (int i = 0; i < 20; i++)
                assert_int_equal(ls_session_step(s, NULL, &err), LS_OK);
            ls_session_state st;
            ls_session_state_get(s, &st);
            const double parts[5] = { st.prepare_seconds, st.phase_seconds, st.leaf_seconds, st.finish_seconds,
                                      st.update_seconds };
            double sum = 0;
            for (int i = 0; i < 5; i++) {
                assert_true(parts[i] >= 0);
                sum += parts[i];
            }
            if (!(sum <= st.train_seconds * (1 + 1e-9)))
                fail_msg("%s: the parts sum to %g s, more than the %g s of the steps", tasks[k], sum, st.train_seconds);
            assert_true(st.leaf_seconds > 0 && st.update_seconds > 0);
            if (k == 1)   /* the CA's work is in its phases and its prepare (the coefficients) */
                assert_true(st.phase_seconds > 0 && st.prepare_seconds > 0);
            assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
            ls_config_destroy(cfg);
        }
}

static void test_threads_equal(void **state)
{
    (void)state;
    ls_config *cfg = teacher_config();
    train(cfg, 1, "ref", STEPS, 0, &ref, &ref_params, &ref_n);
    assert_int_equal(ref.step, STEPS);
    for (size_t i = 1; i < N_THREADS; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", THREADS[i]);
        ls_session_state st;
        float *p;
        size_t n;
        train(cfg, THREADS[i], name, STEPS, 0, &st, &p, &n);
        assert_int_equal(n, ref_n);
        assert_memory_equal(p, ref_params, n * sizeof(float));
        assert_true(st.traj_hash == ref.traj_hash);
        assert_true(st.param_hash == ref.param_hash);
        if (THREADS[i] >= 2)
            assert_true(st.busy_workers >= 2);   /* the parallel path really ran */
        ls_verdict v;
        ls_err err;
        assert_int_equal(ls_verify(db, "ref", name, &v, &err), LS_OK);
        assert_true(v.equal);
        assert_int_equal(v.steps, STEPS + 1);
        free(p);
    }
    /* A different seed is a different run, and verify says where. */
    assert_int_equal(ls_config_set(cfg, "seed", "2", NULL), LS_OK);
    ls_session_state other;
    train(cfg, 2, "seed2", 3, 0, &other, NULL, NULL);
    assert_true(other.traj_hash != ref.traj_hash);
    ls_verdict v;
    ls_err err;
    assert_int_equal(ls_verify(db, "ref", "seed2", &v, &err), LS_OK);
    assert_false(v.equal);
    assert_int_equal(v.first_diff, 0);
    ls_config_destroy(cfg);
}

/* Interrupt at step k (close as interrupted), resume at each thread count. */
static void resume_case(int64_t ckpt_every, int first_threads, int resume_threads, int64_t stop_at)
{
    ls_config *cfg = teacher_config();
    char name[64];
    snprintf(name, sizeof name, "int-c%lld-t%d-r%d-s%lld", (long long)ckpt_every, first_threads, resume_threads,
             (long long)stop_at);
    ls_session_opts o = { .size = sizeof(ls_session_opts),
                          .threads = first_threads, .db = db, .name = name, .steps = STEPS,
                          .checkpoint_every = ckpt_every };
    ls_session *s;
    ls_err err;
    ls_status st = ls_session_open(&s, cfg, &o, &err);
    if (st != LS_OK)
        fail_err("open", st, &err);
    for (int64_t i = 0; i < stop_at; i++)
        assert_int_equal(ls_session_step(s, NULL, &err), LS_OK);
    assert_int_equal(ls_session_close(s, LS_EINTR, &err), LS_OK);

    ls_session_opts r = { .size = sizeof(ls_session_opts), .threads = resume_threads };
    if ((st = ls_session_reopen(&s, db, name, LS_REOPEN_RESUME, &r, &err)) != LS_OK)
        fail_err("reopen", st, &err);
    ls_session_state mid;
    ls_session_state_get(s, &mid);
    if (ckpt_every > 0)
        assert_int_equal(mid.resumed_from, stop_at / ckpt_every * ckpt_every);
    else
        assert_int_equal(mid.resumed_from, 0);
    if ((st = ls_session_train(s, 0, 0, NULL, NULL, NULL, &err)) != LS_OK)
        fail_err("train", st, &err);
    ls_session_state end;
    ls_session_state_get(s, &end);
    assert_int_equal(end.replayed, stop_at - mid.resumed_from);
    size_t n;
    const float *p = ls_session_params(s, &n);
    assert_int_equal(n, ref_n);
    assert_memory_equal(p, ref_params, n * sizeof(float));
    assert_true(end.traj_hash == ref.traj_hash);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    ls_verdict v;
    assert_int_equal(ls_verify(db, "ref", name, &v, &err), LS_OK);
    assert_true(v.equal);
    assert_int_equal(v.steps, STEPS + 1);

    /* Restore: the session holds the run's last parameters, proved. */
    ls_session_opts ro = { .size = sizeof(ls_session_opts), .threads = first_threads };
    if ((st = ls_session_reopen(&s, db, name, LS_REOPEN_RESTORE, &ro, &err)) != LS_OK)
        fail_err("restore", st, &err);
    ls_session_state_get(s, &end);
    assert_int_equal(end.step, STEPS);
    p = ls_session_params(s, &n);
    assert_memory_equal(p, ref_params, n * sizeof(float));
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);

    /* Resuming a done run does nothing. */
    assert_int_equal(ls_session_reopen(&s, db, name, LS_REOPEN_RESUME, &r, &err), LS_OK);
    ls_session_state_get(s, &end);
    assert_true(end.done_already);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    ls_config_destroy(cfg);
}

static void test_resume_without_checkpoints(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_THREADS; i++)
        resume_case(0, THREADS[(i + 1) % N_THREADS], THREADS[i], 7);
}

static void test_resume_from_checkpoints(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_THREADS; i++)
        resume_case(5, THREADS[i], THREADS[N_THREADS - 1 - i], 13);
}

/* Step rows edited by hand (step 9, and the last step, which the run's final
 * checkpoint would otherwise vouch for): the checkpoint no longer matches
 * its row, restore falls back to step 0 and stops at the first edited step
 * with LS_EMISMATCH; verify names it too. */
static void test_restore_finds_an_edited_row(void **state)
{
    (void)state;
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(h,
                          "UPDATE steps SET param_hash = param_hash + 1 WHERE step IN (9, 24) AND run = "
                          "(SELECT id FROM runs WHERE name = 't2')",
                          NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("sqlite: %s", msg ? msg : "?");
    assert_int_equal(sqlite3_changes(h), 2);
    sqlite3_close(h);
    ls_session *s;
    ls_err err;
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 3 };
    assert_int_equal(ls_session_reopen(&s, db, "t2", LS_REOPEN_RESTORE, &o, &err), LS_EMISMATCH);
    assert_non_null(strstr(err.msg, "step 9"));
    assert_null(s);
    ls_verdict v;
    assert_int_equal(ls_verify(db, "ref", "t2", &v, &err), LS_OK);
    assert_false(v.equal);
    assert_int_equal(v.first_diff, 9);
}

static void test_bad_input(void **state)
{
    (void)state;
    ls_session *s;
    ls_err err;
    assert_int_equal(ls_session_reopen(&s, "/nonexistent/x.db", "1", LS_REOPEN_RESUME, NULL, &err), LS_ENOTFOUND);
    assert_int_equal(ls_session_reopen(&s, db, "no-such-run", LS_REOPEN_RESUME, NULL, &err), LS_ENOTFOUND);
    ls_config *cfg;
    assert_int_equal(ls_config_create(&cfg, "no-such-task", NULL, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "no-such-task"));
    assert_int_equal(ls_config_create(&cfg, "gol", "mlp", &err), LS_EINVAL);
    cfg = teacher_config();
    assert_int_equal(ls_config_set(cfg, "batch", "0", &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "batch"));
    assert_int_equal(ls_config_set(cfg, "grid", "4", &err), LS_EINVAL);   /* a key of logic-ca */
    assert_non_null(strstr(err.msg, "logic-ca"));
    /* A name already used is refused before anything is recorded. */
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 1, .db = db, .name = "ref", .steps = 3 };
    assert_int_equal(ls_session_open(&s, cfg, &o, &err), LS_EEXIST);
    ls_config_destroy(cfg);
}

static void test_config_text_and_accessors(void **state)
{
    (void)state;
    ls_config *cfg;
    ls_err err;
    assert_int_equal(ls_config_create(&cfg, "teacher", "mlp", &err), LS_OK);
    char text[4096];
    size_t n = ls_config_text(cfg, text, sizeof text);
    /* Written out by hand from the format's rules (keys sorted, %a floats):
     * the text every teacher golden file was made with. */
    const char *want = "batch=32\nbeta1=0x1.ccccccp-1\nbeta2=0x1.ff7ceep-1\nclip=0x0p+0\ndata_hash=0\n"
                       "eps=0x1.5798eep-27\nformat=2\nhidden=32\nlr=0x1.47ae14p-7\nmodel=mlp\n"
                       "optimizer=adamw\nreduce=tree\nseed=1\ntask=teacher\nweight_decay=0x0p+0\n";
    assert_string_equal(text, want);
    assert_int_equal(n, strlen(want));
    assert_int_equal(ls_config_int(cfg, "leaf"), 16);   /* a key, but not in the text: no bit depends on it */
    assert_int_equal(ls_config_u64(cfg, "seed"), 1);
    assert_string_equal(ls_config_str(cfg, "optimizer"), "adamw");
    const size_t *hidden;
    assert_int_equal(ls_config_list(cfg, "hidden", &hidden), 1);
    assert_int_equal(hidden[0], 32);
    /* momentum applies only to SGD: absent from the text until chosen. */
    assert_null(strstr(text, "momentum"));
    assert_int_equal(ls_config_set(cfg, "optimizer", "sgd", &err), LS_OK);
    ls_config_text(cfg, text, sizeof text);
    assert_non_null(strstr(text, "momentum=0x1.ccccccp-1\n"));
    assert_null(strstr(text, "beta1"));
    ls_config *back;
    assert_int_equal(ls_config_parse(&back, text, &err), LS_OK);
    assert_true(ls_config_hash(back) == ls_config_hash(cfg));
    ls_config_destroy(back);
    ls_config_destroy(cfg);
}

/* Models whose create is another's with finish_mean changed (test_registry). */
static ls_status logic_mean_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                                   ls_err *err)
{
    ls_status st = ls_model_find("logic")->create(self, info, cfg, data, err);
    info->hints.finish_mean = 1;   /* but logic's finish expands 4 sums per gate to 16 */
    return st;
}

static ls_status mlp_unfolded_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                                     ls_err *err)
{
    ls_status st = ls_model_find("mlp")->create(self, info, cfg, data, err);
    info->hints.finish_mean = 0;   /* finish runs as a pass of its own */
    return st;
}

static ls_status logic_unspanned_create(void **self, ls_model_info *info, const ls_config *cfg,
                                       const ls_dataset *data, ls_err *err)
{
    ls_status st = ls_model_find("logic")->create(self, info, cfg, data, err);
    info->hints.finish_span = 0;   /* the tree's last pass as a pass of its own */
    return st;
}

static ls_status ca_unspanned_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                                     ls_err *err)
{
    ls_status st = ls_model_find("logic-ca")->create(self, info, cfg, data, err);
    info->hints.finish_span = 0;
    return st;
}

static ls_status ca_barriers_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                                    ls_err *err)
{
    ls_status st = ls_model_find("logic-ca")->create(self, info, cfg, data, err);
    info->hints.phase_group = 0;   /* a barrier after every phase */
    return st;
}

static ls_status ca_ungrouped_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                                     ls_err *err)
{
    ls_status st = ls_model_find("logic-ca")->create(self, info, cfg, data, err);
    info->hints.phase_group = info->units + 1;   /* does not divide the units */
    return st;
}

static ls_status ca_overreach_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                                     ls_err *err)
{
    ls_status st = ls_model_find("logic-ca")->create(self, info, cfg, data, err);
    info->hints.phase_reach = info->hints.phase_group;   /* farther than the group */
    return st;
}

static ls_status logic_overspan_create(void **self, ls_model_info *info, const ls_config *cfg,
                                      const ls_dataset *data, ls_err *err)
{
    ls_status st = ls_model_find("logic")->create(self, info, cfg, data, err);
    info->hints.finish_span = 5;   /* its leaves hold 4 floats per finish unit */
    return st;
}

/* Sessions of models a and b on `task` (batch, then the "key=value" lines
 * of `settings` when not NULL) give the same loss and parameter bits at
 * every one of 5 steps, at each of the n thread counts. */
static void same_training_at(const char *a, const char *b, const char *task, const char *batch,
                             const char *settings, const int *thread_counts, size_t n_counts)
{
    ls_err err;
    for (size_t ti = 0; ti < n_counts; ti++) {
        const int threads = thread_counts[ti];
        ls_session *ss[2];
        const ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = threads };
        /* b gets a's settings (the task's defaults for a, which it may not
         * have for b): a's text with the model renamed. */
        ls_config *cfg;
        assert_int_equal(ls_config_create(&cfg, task, a, &err), LS_OK);
        assert_int_equal(ls_config_set(cfg, "batch", batch, &err), LS_OK);
        for (const char *line = settings; line != NULL && *line != '\0';) {
            const char *eq = strchr(line, '='), *end = strchr(line, '\n');
            char key[32], value[64];
            assert_non_null(eq);
            assert_non_null(end);
            snprintf(key, sizeof key, "%.*s", (int)(eq - line), line);
            snprintf(value, sizeof value, "%.*s", (int)(end - eq - 1), eq + 1);
            if (ls_config_set(cfg, key, value, &err) != LS_OK)
                fail_msg("%s=%s: %s", key, value, err.msg);
            line = end + 1;
        }
        char text[4096], renamed[4096], from[64];
        assert_true(ls_config_text(cfg, text, sizeof text) < sizeof text);
        snprintf(from, sizeof from, "model=%s\n", a);
        const char *at = strstr(text, from);
        assert_non_null(at);
        snprintf(renamed, sizeof renamed, "%.*smodel=%s\n%s", (int)(at - text), text, b, at + strlen(from));
        assert_int_equal(ls_session_open(&ss[0], cfg, &o, &err), LS_OK);
        ls_config_destroy(cfg);
        if (ls_config_parse(&cfg, renamed, &err) != LS_OK)
            fail_msg("%s: %s", renamed, err.msg);
        assert_int_equal(ls_session_open(&ss[1], cfg, &o, &err), LS_OK);
        ls_config_destroy(cfg);
        for (int step = 1; step <= 5; step++) {
            double loss[2];
            size_t n[2];
            for (int i = 0; i < 2; i++)
                assert_int_equal(ls_session_step(ss[i], &loss[i], &err), LS_OK);
            const float *p0 = ls_session_params(ss[0], &n[0]), *p1 = ls_session_params(ss[1], &n[1]);
            assert_int_equal(n[0], n[1]);
            assert_memory_equal(&loss[0], &loss[1], sizeof loss[0]);
            if (memcmp(p0, p1, n[0] * sizeof(float)) != 0)
                fail_msg("%s and %s on %s, batch %s, %s%d threads, step %d: the parameters differ", a, b, task, batch,
                         settings != NULL ? settings : "", threads, step);
        }
        for (int i = 0; i < 2; i++)
            assert_int_equal(ls_session_close(ss[i], LS_OK, &err), LS_OK);
    }
}

/* The same at 1, 2 and 3 threads, with hidden when not NULL. */
static void same_training(const char *a, const char *b, const char *task, const char *batch, const char *hidden)
{
    static const int threads[] = { 1, 2, 3 };
    char settings[64];
    if (hidden != NULL)
        snprintf(settings, sizeof settings, "hidden=%s\n", hidden);
    same_training_at(a, b, task, batch, hidden != NULL ? settings : NULL, threads, 3);
}

/* *d = the built-in model `base` renamed, training teacher too (the caller
 * edits it, then registers it). */
static void variant_of(ls_model_desc *d, const char *base, const char *name)
{
    *d = *ls_model_find(base);
    d->name = name;
    d->tasks = "teacher";
}

/* A teacher session of `model` is refused at open, its message naming `needle`. */
static void open_refused(const char *model, const char *needle)
{
    ls_err err;
    ls_config *cfg;
    assert_int_equal(ls_config_create(&cfg, "teacher", model, &err), LS_OK);
    ls_session *s = NULL;
    const ls_session_opts opts = { .size = sizeof(ls_session_opts), .threads = 1 };
    assert_int_equal(ls_session_open(&s, cfg, &opts, &err), LS_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.msg, needle));
    ls_config_destroy(cfg);
}

static void test_registry(void **state)
{
    (void)state;
    const char *models[] = { "mlp", "logic", "logic-ca" };
    const char *tasks[] = { "fashion-mnist", "teacher", "gol", "checkerboard" };
    for (size_t i = 0; i < 3; i++)
        assert_non_null(ls_model_find(models[i]));
    for (size_t i = 0; i < 4; i++)
        assert_non_null(ls_task_find(tasks[i]));
    ls_err err;
    /* Taken names, bad names, bad key tables: refused, naming the problem. */
    assert_int_equal(ls_register_model(ls_model_find("mlp"), &err), LS_EEXIST);
    ls_model_desc bad = *ls_model_find("mlp");
    bad.name = "Bad Name";
    assert_int_equal(ls_register_model(&bad, &err), LS_EINVAL);
    static const ls_key dup[] = {
        { "width", LS_KEY_INT, "3", 1, 9, NULL, NULL, "a width", 0 },
        { "width", LS_KEY_INT, "3", 1, 9, NULL, NULL, "a width", 0 },
    };
    bad.name = "dup";
    bad.keys = dup;
    bad.n_keys = 2;
    assert_int_equal(ls_register_model(&bad, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "width"));
    static const ls_key engine_key[] = { { "lr", LS_KEY_FLOAT, "1", 0, 9, NULL, NULL, "lr again", 0 } };
    bad.keys = engine_key;
    bad.n_keys = 1;
    assert_int_equal(ls_register_model(&bad, &err), LS_EINVAL);
    static const ls_key bad_default[] = { { "w", LS_KEY_INT, "99", 1, 9, NULL, NULL, "w", 0 } };
    bad.keys = bad_default;
    assert_int_equal(ls_register_model(&bad, &err), LS_EINVAL);
    assert_null(ls_model_find("dup"));
    /* A model that declares prepare parts but has no prepare_part: refused
     * when the session creates it, naming the model. */
    static ls_model_desc noprep;
    variant_of(&noprep, "logic", "logic-noprep");
    noprep.prepare_part = NULL;
    assert_int_equal(ls_register_model(&noprep, &err), LS_OK);
    open_refused("logic-noprep", "prepare_part");
    /* ... and one with a prepare_part that declares no parts (it would never run). */
    static ls_model_desc noparts;
    variant_of(&noparts, "linear", "linear-noparts");   /* declares no prepare parts */
    assert_null(noparts.prepare_part);
    noparts.prepare_part = ls_model_find("logic")->prepare_part;
    assert_int_equal(ls_register_model(&noparts, &err), LS_OK);
    open_refused("linear-noparts", "no prepare parts");
    /* finish_mean on a model whose finish is not the mean: refused. */
    static ls_model_desc badmean;
    variant_of(&badmean, "logic", "logic-mean");
    badmean.create = logic_mean_create;
    assert_int_equal(ls_register_model(&badmean, &err), LS_OK);
    open_refused("logic-mean", "finish_mean");
    /* The MLP's mean folded into the update (finish_mean) and as a finish
     * pass of its own: the same parameter bits every step, at 1, 2 and 3
     * threads, at a power-of-two batch (a multiply by 1/B) and another. */
    static ls_model_desc unfolded;
    variant_of(&unfolded, "mlp", "mlp-unfolded");
    unfolded.create = mlp_unfolded_create;
    assert_int_equal(ls_register_model(&unfolded, &err), LS_OK);
    const char *batches[] = { "32", "21" };
    for (size_t k = 0; k < 2; k++)
        same_training("mlp", "mlp-unfolded", "teacher", batches[k], "32");
    /* The tree's last pass combined by the finish threads, coordinates as
     * each reads them (finish_span), and as a pass of its own. */
    static ls_model_desc unspanned, ca_unspanned;
    variant_of(&unspanned, "logic", "logic-unspanned");
    unspanned.create = logic_unspanned_create;
    assert_int_equal(ls_register_model(&unspanned, &err), LS_OK);
    same_training("logic", "logic-unspanned", "teacher", "21", NULL);
    variant_of(&ca_unspanned, "logic-ca", "ca-unspanned");
    ca_unspanned.tasks = "gol";
    ca_unspanned.create = ca_unspanned_create;
    if (ls_register_model(&ca_unspanned, &err) != LS_OK)
        fail_msg("%s", err.msg);
    same_training("logic-ca", "ca-unspanned", "gol", "20", NULL);
    /* A finish_span past the leaves: refused. */
    static ls_model_desc overspan;
    variant_of(&overspan, "logic", "logic-overspan");
    overspan.create = logic_overspan_create;
    assert_int_equal(ls_register_model(&overspan, &err), LS_OK);
    open_refused("logic-overspan", "finish_span");
    /* The CA's phases as waves (phase_group: a part waits only for its
     * neighbouring parts) and with a barrier after each: the same bits at 1
     * to 8 threads (more than the 7 parts of the asynchronous task), with
     * borders and periodic, and for gol's independent groups of samples. */
    static ls_model_desc barriers, ungrouped;
    variant_of(&barriers, "logic-ca", "ca-barriers");
    barriers.tasks = "gol checkerboard";
    barriers.create = ca_barriers_create;
    if (ls_register_model(&barriers, &err) != LS_OK)
        fail_msg("%s", err.msg);
    static const int wave_threads[] = { 1, 2, 3, 8 };
    same_training_at("logic-ca", "ca-barriers", "checkerboard", "2", "ca_steps=6\n", wave_threads, 4);
    same_training_at("logic-ca", "ca-barriers", "checkerboard", "3", "ca_steps=5\nperiodic=1\nparts=5\n",
                     wave_threads, 4);
    same_training_at("logic-ca", "ca-barriers", "checkerboard", "1", "async=1\nca_steps=12\n", wave_threads, 4);
    same_training_at("logic-ca", "ca-barriers", "gol", "20", NULL, wave_threads, 4);
    /* The leaves summed where the model holds them, inside the finish
     * (leaf_held), and copied into the tree's buffers: the same bits, at a
     * batch whose tree is not one power of two (37 leaves) too. */
    static ls_model_desc unheld;
    variant_of(&unheld, "logic-ca", "ca-unheld");
    unheld.tasks = "gol checkerboard";
    unheld.leaf_held = NULL;
    if (ls_register_model(&unheld, &err) != LS_OK)
        fail_msg("%s", err.msg);
    same_training_at("logic-ca", "ca-unheld", "gol", "20", NULL, wave_threads, 4);
    same_training_at("logic-ca", "ca-unheld", "gol", "37", NULL, wave_threads, 4);
    same_training_at("logic-ca", "ca-unheld", "checkerboard", "3", "ca_steps=4\n", wave_threads, 4);
    /* A phase_group that does not divide the units, a reach past the
     * group: refused, naming the field. */
    static ls_model_desc overreach;
    variant_of(&ungrouped, "logic-ca", "ca-ungrouped");
    ungrouped.tasks = "checkerboard";
    ungrouped.create = ca_ungrouped_create;
    assert_int_equal(ls_register_model(&ungrouped, &err), LS_OK);
    variant_of(&overreach, "logic-ca", "ca-overreach");
    overreach.tasks = "checkerboard";
    overreach.create = ca_overreach_create;
    assert_int_equal(ls_register_model(&overreach, &err), LS_OK);
    const char *refused[][2] = { { "ca-ungrouped", "phase_group" }, { "ca-overreach", "phase_reach" } };
    for (size_t k = 0; k < 2; k++) {
        ls_config *cfg;
        assert_int_equal(ls_config_create(&cfg, "checkerboard", refused[k][0], &err), LS_OK);
        ls_session *s = NULL;
        const ls_session_opts opts = { .size = sizeof(ls_session_opts), .threads = 1 };
        assert_int_equal(ls_session_open(&s, cfg, &opts, &err), LS_EINVAL);
        assert_null(s);
        assert_non_null(strstr(err.msg, refused[k][1]));
        ls_config_destroy(cfg);
    }
    assert_string_equal(ls_version(), LS_VERSION_STRING);
}


/* ---- checkpoints that cannot be trusted by their path ------------------------------ */

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    assert_non_null(b);
    size_t k;
    while ((k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap);
            assert_non_null(b);
        }
    }
    fclose(f);
    *len = n;
    return b;
}

static void spit(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void copy_file(const char *from, const char *to)
{
    size_t n;
    unsigned char *b = slurp(from, &n);
    if (b == NULL)
        fail_msg("%s: cannot read", from);
    spit(to, b, n);
    free(b);
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *h;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg ? msg : "?");
    sqlite3_close(h);
}

/* Up to max rows of the first text column of sql (?1 = p when not NULL). */
static size_t sql_texts(const char *path, const char *sql, const char *p, char out[][512], size_t max)
{
    sqlite3 *h;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    if (p != NULL)
        sqlite3_bind_text(st, 1, p, -1, SQLITE_TRANSIENT);
    size_t n = 0;
    while (n < max && sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(out[n++], 512, "%s", t ? (const char *)t : "");
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

static void db_identity(const char *path, char *out)
{
    char rows[1][512];
    assert_int_equal(sql_texts(path, "SELECT id FROM identity", NULL, rows, 1), 1);
    assert_int_equal(strlen(rows[0]), 32);
    memcpy(out, rows[0], 33);   /* 32 hex digits and the terminator */
}

/* Every checkpoint file seen so far, with its bytes: each must survive. */
#define MAX_KEPT 64
static struct {
    char path[512];
    unsigned char *bytes;
    size_t len;
} kept[MAX_KEPT];
static size_t n_kept;

static void keep_file(const char *path)
{
    for (size_t i = 0; i < n_kept; i++)
        if (strcmp(kept[i].path, path) == 0)
            return;
    assert_true(n_kept < MAX_KEPT);
    snprintf(kept[n_kept].path, sizeof kept[n_kept].path, "%s", path);
    kept[n_kept].bytes = slurp(path, &kept[n_kept].len);
    if (kept[n_kept].bytes == NULL)
        fail_msg("%s: registered, but no such file", path);
    n_kept++;
}

/* The registered checkpoints of every run of database path join the kept set. */
static void keep_registered(const char *path)
{
    char rows[32][512];
    size_t n = sql_texts(path, "SELECT path FROM checkpoints ORDER BY run, step", NULL, rows, 32);
    for (size_t i = 0; i < n; i++)
        keep_file(rows[i]);
}

static void expect_kept(const char *why)
{
    for (size_t i = 0; i < n_kept; i++) {
        size_t len;
        unsigned char *b = slurp(kept[i].path, &len);
        if (b == NULL)
            fail_msg("%s: %s was deleted", why, kept[i].path);
        if (len != kept[i].len || memcmp(b, kept[i].bytes, len) != 0)
            fail_msg("%s: %s was changed", why, kept[i].path);
        free(b);
    }
}

static void forget_kept(void)
{
    for (size_t i = 0; i < n_kept; i++)
        free(kept[i].bytes);
    n_kept = 0;
}

/* Opens a new run and stops it (as interrupted) after `stop_at` steps. */
static void start_run(const char *dbpath, const char *ckdir, const char *name, int64_t every, int64_t stop_at)
{
    ls_config *cfg = teacher_config();
    ls_session_opts o = { .size = sizeof(ls_session_opts),
                          .threads = 2, .db = dbpath, .name = name, .steps = STEPS, .checkpoint_every = every,
                          .checkpoint_dir = ckdir };
    ls_session *s;
    ls_err err;
    ls_status st = ls_session_open(&s, cfg, &o, &err);
    if (st != LS_OK)
        fail_err("open", st, &err);
    for (int64_t i = 0; i < stop_at; i++)
        if ((st = ls_session_step(s, NULL, &err)) != LS_OK)
            fail_err("step", st, &err);
    assert_int_equal(ls_session_close(s, stop_at < STEPS ? LS_EINTR : LS_OK, &err), LS_OK);
    ls_config_destroy(cfg);
}

/* Restores (checking the note), then resumes run `name` to the end: it
 * must start from `from`, say `note_has` (NULL: say nothing), and end on
 * the reference trajectory, verified from the record. */
static void finish_run(const char *dbpath, const char *name, int64_t from, const char *note_has, const char *note_has2)
{
    ls_session *s;
    ls_err err;
    ls_status st;
    ls_session_state mid, end;
    for (int how = LS_REOPEN_RESTORE; how >= LS_REOPEN_RESUME; how--) {
        ls_session_opts r = { .size = sizeof(ls_session_opts), .threads = 3 };
        if ((st = ls_session_reopen(&s, dbpath, name, how, &r, &err)) != LS_OK)
            fail_err(how == LS_REOPEN_RESUME ? "resume" : "restore", st, &err);
        ls_session_state_get(s, &mid);
        const char *note = mid.checkpoint_note;
        if (how == LS_REOPEN_RESTORE) {
            assert_int_equal(mid.resumed_from, from);
            ls_session_close(s, LS_OK, &err);
            continue;
        }
        assert_int_equal(mid.resumed_from, from);
        if (note_has == NULL) {
            assert_string_equal(note, "");
        } else {
            if (strstr(note, note_has) == NULL || (note_has2 != NULL && strstr(note, note_has2) == NULL))
                fail_msg("note '%s' does not say '%s' and '%s'", note, note_has, note_has2 ? note_has2 : "");
            if (strstr(note, "unusable") == NULL)
                fail_msg("note '%s' does not say a checkpoint was unusable", note);
            printf("note: %s\n", note);
            char want[64];
            if (from == 0)
                snprintf(want, sizeof want, "resumed from step 0");
            else
                snprintf(want, sizeof want, "(step %lld)", (long long)from);
            if (strstr(note, want) == NULL)
                fail_msg("note '%s' does not say '%s'", note, want);
        }
        if ((st = ls_session_train(s, 0, 0, NULL, NULL, NULL, &err)) != LS_OK)
            fail_err("train", st, &err);
        ls_session_state_get(s, &end);
        assert_true(end.traj_hash == ref.traj_hash);
        size_t n;
        const float *p = ls_session_params(s, &n);
        assert_int_equal(n, ref_n);
        assert_memory_equal(p, ref_params, n * sizeof(float));
        assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    }
    /* The record proves it against the reference run (another database:
     * compared by the trajectory of the last row). */
    char rows[1][512];
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT printf('%%016x', traj_hash) FROM steps WHERE run = (SELECT id FROM runs WHERE "
             "name = ?1) AND step = %d", STEPS);
    assert_int_equal(sql_texts(dbpath, sql, name, rows, 1), 1);
    char want[32];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)ref.traj_hash);
    assert_string_equal(rows[0], want);
}

/* Two databases, one checkpoint directory: both checkpoint every 4 steps
 * and prune; each keeps its own two files, and neither touches the other's. */
static void test_shared_checkpoint_dir(void **state)
{
    (void)state;
    char a[192], b[192], ck[192];
    snprintf(a, sizeof a, "%s/shared-a.db", dir);
    snprintf(b, sizeof b, "%s/shared-b.db", dir);
    snprintf(ck, sizeof ck, "%s/shared-ck", dir);
    /* Same run ids (1 in both), same config, same steps: the old names collided. */
    start_run(a, ck, "x", 4, 13);
    keep_registered(a);
    start_run(b, ck, "x", 4, STEPS);
    keep_registered(b);
    expect_kept("b after a");
    char rows[8][512];
    assert_int_equal(sql_texts(a, "SELECT path FROM checkpoints", NULL, rows, 8), 2);
    assert_int_equal(sql_texts(b, "SELECT path FROM checkpoints", NULL, rows, 8), 2);
    char ida[33], idb[33];
    db_identity(a, ida);
    db_identity(b, idb);
    assert_true(strcmp(ida, idb) != 0);
    /* Each database's files carry its identity in their names. */
    assert_int_equal(sql_texts(b, "SELECT path FROM checkpoints WHERE instr(path, ?1) = 0", NULL, rows, 8), 0);
    char like[64];
    snprintf(like, sizeof like, "%.16s-run-1-step-", ida);
    assert_int_equal(sql_texts(a, "SELECT path FROM checkpoints WHERE instr(path, ?1) > 0", like, rows, 8), 2);
    /* a resumes (from its own step 12), checkpoints and prunes beside b's files. */
    forget_kept();
    keep_registered(b);
    finish_run(a, "x", 12, NULL, NULL);
    expect_kept("a resumed beside b");
    keep_registered(a);
    /* b's run again from its last checkpoint, beyond: prunes again. */
    ls_session *s;
    ls_err err;
    ls_session_opts r = { .size = sizeof(ls_session_opts), .threads = 1, .steps = STEPS + 8 };
    assert_int_equal(ls_session_reopen(&s, b, "x", LS_REOPEN_RESUME, &r, &err), LS_OK);
    assert_int_equal(ls_session_train(s, 0, 0, NULL, NULL, NULL, &err), LS_OK);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    assert_int_equal(sql_texts(a, "SELECT path FROM checkpoints", NULL, rows, 8), 2);
    for (size_t i = 0; i < 2; i++)
        assert_true(file_exists(rows[i]));
    forget_kept();
    keep_registered(a);
    expect_kept("b pruned again");
    forget_kept();
}

/* A copied database gets its own identity on first open; resuming in the
 * copy loads the original's checkpoints and deletes none of them. */
static void test_copied_database(void **state)
{
    (void)state;
    char orig[192], copy[192];
    snprintf(orig, sizeof orig, "%s/orig.db", dir);
    snprintf(copy, sizeof copy, "%s/copy.db", dir);
    start_run(orig, NULL, "c", 4, 13);
    char id0[33];
    db_identity(orig, id0);
    keep_registered(orig);
    assert_int_equal(n_kept, 2);
    copy_file(orig, copy);
    /* The copy resumes from the original's checkpoint at step 12 (its
     * ancestor's), writes its own into the same directory, prunes. */
    finish_run(copy, "c", 12, NULL, NULL);
    expect_kept("the copy resumed");
    char idc[33], rows[8][512];
    db_identity(copy, idc);
    assert_true(strcmp(idc, id0) != 0);
    assert_int_equal(sql_texts(copy, "SELECT ancestors FROM identity", NULL, rows, 1), 1);
    assert_string_equal(rows[0], id0);
    db_identity(orig, idc);
    assert_string_equal(idc, id0);   /* the original keeps its identity */
    /* The original resumes too, from its own files, and ends the same. */
    finish_run(orig, "c", 12, NULL, NULL);
    forget_kept();
}

enum { DMG_DELETE, DMG_TRUNCATE, DMG_FOREIGN, DMG_GARBAGE, DMG_PARAMS, DMG_V1, DMG_BOTH, DMG_OTHER_RUN };

/* The same run in another database (made once): its checkpoint at step 16
 * is a sound file of the same config and step, of another database. */
static char foreign_db[192];

static void damage(const char *dbpath, const char *name, int how, char *newest, char *older)
{
    char rows[4][512];
    assert_int_equal(sql_texts(dbpath, "SELECT path FROM checkpoints WHERE run = (SELECT id FROM runs WHERE name = "
                               "?1) ORDER BY step", name, rows, 4), 2);
    snprintf(older, 512, "%s", rows[0]);
    snprintf(newest, 512, "%s", rows[1]);
    size_t len;
    unsigned char *b = slurp(newest, &len);
    assert_non_null(b);
    char sql[1024];
    switch (how) {
    case DMG_DELETE:
        assert_int_equal(unlink(newest), 0);
        break;
    case DMG_TRUNCATE:
        spit(newest, b, len / 2);
        break;
    case DMG_FOREIGN: {
        char f[1][512];
        assert_int_equal(sql_texts(foreign_db, "SELECT path FROM checkpoints WHERE step = 16", NULL, f, 1), 1);
        copy_file(f[0], newest);
        break;
    }
    case DMG_GARBAGE:
        spit(newest, "this is not a checkpoint\n", 25);
        break;
    case DMG_PARAMS: {
        /* A parameter changed, checksum and registration made good: only the
         * record's parameter hash at step 16 can tell. */
        b[72 + 4 * 3 + 3] ^= 0x40;
        uint64_t h = XXH3_64bits(b, len - 8);
        for (int i = 0; i < 8; i++)
            b[len - 8 + i] = (unsigned char)(h >> (8 * i));
        spit(newest, b, len);
        snprintf(sql, sizeof sql, "UPDATE checkpoints SET state_hash = %lld WHERE path = '%s'", (long long)h, newest);
        sql_exec(dbpath, sql);
        break;
    }
    case DMG_V1: {
        /* The same state as a version-1 file (as an older lockstep wrote it),
         * registered with its state hash: it loads, and is never deleted. */
        unsigned char *v1 = malloc(len - 24);
        assert_non_null(v1);
        memcpy(v1, b, 48);
        v1[8] = 1;
        v1[12] = 48;
        memcpy(v1 + 48, b + 72, len - 72 - 8);
        uint64_t h = XXH3_64bits(v1, len - 24 - 8);
        for (int i = 0; i < 8; i++)
            v1[len - 24 - 8 + i] = (unsigned char)(h >> (8 * i));
        spit(newest, v1, len - 24);
        free(v1);
        snprintf(sql, sizeof sql, "UPDATE checkpoints SET state_hash = %lld WHERE path = '%s'", (long long)h, newest);
        sql_exec(dbpath, sql);
        break;
    }
    case DMG_BOTH:
        spit(newest, "garbage", 7);
        assert_int_equal(unlink(older), 0);
        break;
    case DMG_OTHER_RUN: {
        /* Run "ref-ck" of this database at step 16: same config, another run. */
        char f[1][512];
        assert_int_equal(sql_texts(dbpath, "SELECT path FROM checkpoints WHERE step = 16 AND run = (SELECT id FROM "
                                   "runs WHERE name = 'ref-ck')", NULL, f, 1), 1);
        copy_file(f[0], newest);
        break;
    }
    }
    free(b);
}

static void test_unusable_newest_checkpoint(void **state)
{
    (void)state;
    snprintf(foreign_db, sizeof foreign_db, "%s/foreign.db", dir);
    char dbpath[192];
    snprintf(dbpath, sizeof dbpath, "%s/damaged.db", dir);
    start_run(foreign_db, NULL, "f", 8, 17);
    start_run(dbpath, NULL, "ref-ck", 8, 17);   /* another run of this database, same config */
    static const struct {
        const char *label;
        int how;
        int64_t from;
        const char *says, *says2;
    } rows[] = {
        { "deleted", DMG_DELETE, 8, "no such checkpoint file", NULL },
        { "truncated", DMG_TRUNCATE, 8, "truncated", NULL },
        { "another database's", DMG_FOREIGN, 8, "written for another database", NULL },
        { "garbage", DMG_GARBAGE, 8, "bad magic", NULL },
        { "parameters not as recorded", DMG_PARAMS, 8, "the record has", "at step 16" },
        { "version 1, registered", DMG_V1, 16, NULL, NULL },
        { "both unusable", DMG_BOTH, 0, "bad magic", "no such checkpoint file" },
        { "another run's", DMG_OTHER_RUN, 8, "written for run", NULL },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char name[64], newest[512], older[512];
        snprintf(name, sizeof name, "dmg-%zu", i);
        start_run(dbpath, NULL, name, 8, 19);   /* checkpoints 8 and 16, rows to 19 */
        damage(dbpath, name, rows[i].how, newest, older);
        /* Every file now there must survive, but the damaged run's own
         * version-2 files (which it may prune): the other database's, the
         * other runs', the version-1 file and the foreign copy. */
        keep_registered(foreign_db);
        char others[32][512];
        size_t n = sql_texts(dbpath, "SELECT path FROM checkpoints WHERE run <> (SELECT id FROM runs WHERE name = ?1)",
                             name, others, 32);
        for (size_t k = 0; k < n; k++)
            keep_file(others[k]);
        if (rows[i].how == DMG_FOREIGN || rows[i].how == DMG_GARBAGE || rows[i].how == DMG_V1 ||
            rows[i].how == DMG_OTHER_RUN)
            keep_file(newest);
        finish_run(dbpath, name, rows[i].from, rows[i].says, rows[i].says2);
        char why[96];
        snprintf(why, sizeof why, "newest checkpoint %s", rows[i].label);
        expect_kept(why);
        forget_kept();
        ls_verdict v;
        ls_err err;
        assert_int_equal(ls_verify(dbpath, "ref-ck", name, &v, &err), LS_OK);
        assert_int_equal(v.steps, 18);   /* ref-ck stopped at 17 */
        assert_true(v.equal);
    }
}

/* The record of an evaluation schedule, of every process that worked on a
 * run, and of a final checkpoint: a run interrupted at step 25 and resumed
 * (without saying --eval-every again) evaluates at the same steps with the
 * same figures as an uninterrupted one; the two processes are listed with
 * their thread counts and steps; restoring the finished run replays nothing. */
static int collect_evals(void *ctx, int n, char **v, char **names)
{
    (void)names;
    char *buf = ctx;
    if (n == 3)
        snprintf(buf + strlen(buf), 4096 - strlen(buf), "%s %s %s\n", v[0], v[1], v[2]);
    return 0;
}

static void evals_of(const char *name, char *buf)
{
    sqlite3 *h;
    char sql[256];
    buf[0] = '\0';
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    snprintf(sql, sizeof sql,
             "SELECT e.step, e.name, printf('%%.17g', e.value) FROM evals e JOIN runs r ON r.id = e.run"
             " WHERE r.name = '%s' ORDER BY e.step, e.name", name);
    assert_int_equal(sqlite3_exec(h, sql, collect_evals, buf, NULL), SQLITE_OK);
    sqlite3_close(h);
}

static volatile int stop_flag;

/* Progress callback: Ctrl-C, as it were, once step 25 is done. */
static void stop_at_25(void *ctx, const ls_session_state *st, int replay)
{
    (void)ctx;
    (void)replay;
    if (st->step == 25)
        stop_flag = 1;
}

static void test_schedule_processes_final_checkpoint(void **state)
{
    (void)state;
    ls_config *cfg = teacher_config();
    ls_err err;
    ls_session *s;
    ls_session_opts full = { .size = sizeof(ls_session_opts),
                             .threads = 1, .db = db, .name = "sched-full", .steps = 40, .eval_every = 10 };
    assert_int_equal(ls_session_open(&s, cfg, &full, &err), LS_OK);
    assert_int_equal(ls_session_train(s, 0, 0, NULL, NULL, NULL, &err), LS_OK);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);

    ls_session_opts cut = { .size = sizeof(ls_session_opts),
                            .threads = 2, .db = db, .name = "sched-cut", .steps = 40, .eval_every = 10,
                            .checkpoint_every = 10, .progress = stop_at_25 };
    assert_int_equal(ls_session_open(&s, cfg, &cut, &err), LS_OK);
    assert_int_equal(ls_session_train(s, 0, 0, &stop_flag, NULL, NULL, &err), LS_EINTR);
    assert_int_equal(ls_session_close(s, LS_EINTR, &err), LS_OK);
    ls_session_opts again = { .size = sizeof(ls_session_opts), .threads = 3 };   /* no eval_every: the run's own */
    assert_int_equal(ls_session_reopen(&s, db, "sched-cut", LS_REOPEN_RESUME, &again, &err), LS_OK);
    assert_int_equal(ls_session_train(s, 0, 0, NULL, NULL, NULL, &err), LS_OK);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);

    char a[4096], b[4096];
    evals_of("sched-full", a);
    evals_of("sched-cut", b);
    assert_non_null(strstr(a, "30 test_acc"));
    assert_string_equal(a, b);   /* same steps, same bits */

    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT p.threads, p.first_step, p.last_step FROM run_processes p JOIN runs r"
                                           " ON r.id = p.run WHERE r.name = 'sched-cut' ORDER BY p.rowid", -1, &st,
                                        NULL), SQLITE_OK);
    const int want[2][3] = { { 2, 0, 25 }, { 3, 20, 40 } };
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        for (int c = 0; c < 3; c++)
            assert_int_equal(sqlite3_column_int(st, c), want[i][c]);
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(h);

    /* Both runs ended with a checkpoint of step 40: restoring replays nothing. */
    const char *names[] = { "sched-full", "sched-cut" };
    for (int i = 0; i < 2; i++) {
        ls_session_opts ro = { .size = sizeof(ls_session_opts), .threads = 2 };
        assert_int_equal(ls_session_reopen(&s, db, names[i], LS_REOPEN_RESTORE, &ro, &err), LS_OK);
        ls_session_state ss;
        ls_session_state_get(s, &ss);
        assert_int_equal(ss.resumed_from, 40);
        assert_int_equal(ss.replayed, 0);
        ls_session_close(s, LS_OK, &err);
    }
    ls_config_destroy(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_text_and_accessors),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_threads_equal),
        cmocka_unit_test(test_step_parts),
        cmocka_unit_test(test_resume_without_checkpoints),
        cmocka_unit_test(test_resume_from_checkpoints),
        cmocka_unit_test(test_restore_finds_an_edited_row),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_shared_checkpoint_dir),
        cmocka_unit_test(test_copied_database),
        cmocka_unit_test(test_unusable_newest_checkpoint),
        cmocka_unit_test(test_schedule_processes_final_checkpoint),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    free(ref_params);
    return failed ? 1 : 0;
}
