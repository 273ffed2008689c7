/* test_session.c — the session (include/lockstep.h) driven in-process: a run
 * trained straight through at 1, 2, 3 and 8 threads, the same run
 * interrupted and resumed (with and without checkpoints) at another thread
 * count, and restored to its last step, all compared by bits (trajectory and
 * parameter hashes, memcmp of θ) with the uninterrupted run at 1 thread; a
 * record edited by hand must make resume and restore fail at that step.
 * Also: the registry (built-ins present, bad registrations refused) and the
 * config (canonical text of a built-in, accessors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "../include/lockstep.h"

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
    assert_int_equal(ls_config_set(cfg, "leaf", "5", &err), LS_OK);
    return cfg;
}

/* Train `steps` steps at `threads`, recorded as `name` (NULL: unrecorded);
 * returns the final state and copies θ into params (n_params floats). */
static void train(const ls_config *cfg, int threads, const char *name, int64_t steps, int64_t ckpt_every,
                  ls_session_state *out, float **params, size_t *n)
{
    ls_session_opts o = { .threads = threads, .db = name ? db : NULL, .name = name, .steps = steps,
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
    ls_session_opts o = { .threads = first_threads, .db = db, .name = name, .steps = STEPS,
                          .checkpoint_every = ckpt_every };
    ls_session *s;
    ls_err err;
    ls_status st = ls_session_open(&s, cfg, &o, &err);
    if (st != LS_OK)
        fail_err("open", st, &err);
    for (int64_t i = 0; i < stop_at; i++)
        assert_int_equal(ls_session_step(s, NULL, &err), LS_OK);
    assert_int_equal(ls_session_close(s, LS_EINTR, &err), LS_OK);

    ls_session_opts r = { .threads = resume_threads };
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
    ls_session_opts ro = { .threads = first_threads };
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

/* A step row edited by hand: restore stops at that step with LS_EMISMATCH. */
static void test_restore_finds_an_edited_row(void **state)
{
    (void)state;
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(h,
                          "UPDATE steps SET param_hash = param_hash + 1 WHERE step = 9 AND run = "
                          "(SELECT id FROM runs WHERE name = 't2')",
                          NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("sqlite: %s", msg ? msg : "?");
    assert_int_equal(sqlite3_changes(h), 1);
    sqlite3_close(h);
    ls_session *s;
    ls_err err;
    ls_session_opts o = { .threads = 3 };
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
    ls_session_opts o = { .threads = 1, .db = db, .name = "ref", .steps = 3 };
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
                       "eps=0x1.5798eep-27\nformat=1\nhidden=32\nleaf=4\nlr=0x1.47ae14p-7\nmodel=mlp\n"
                       "optimizer=adamw\nreduce=tree\nseed=1\ntask=teacher\nweight_decay=0x0p+0\n";
    assert_string_equal(text, want);
    assert_int_equal(n, strlen(want));
    assert_int_equal(ls_config_int(cfg, "leaf"), 4);
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
    assert_string_equal(ls_version(), LS_VERSION_STRING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_text_and_accessors),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_threads_equal),
        cmocka_unit_test(test_resume_without_checkpoints),
        cmocka_unit_test(test_resume_from_checkpoints),
        cmocka_unit_test(test_restore_finds_an_edited_row),
        cmocka_unit_test(test_bad_input),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    free(ref_params);
    return failed ? 1 : 0;
}
