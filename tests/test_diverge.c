/* test_diverge.c — a run whose parameters stop being finite while its loss
 * stays finite ends `diverged`, the same at every thread count; data with a
 * NaN or infinite feature are refused when they are sealed.
 *
 * The run: the teacher task's data with one NaN feature in one training
 * sample, trained through the session API with a record. The MLP's ReLU
 * maps the NaN pre-activations to 0, so the loss of the step that samples it
 * is finite, but the first layer's gradient (delta · x) is NaN, and so is θ
 * after the update. The step must end the run as LS_EDIVERGED naming the
 * step and the first NaN parameter, at 1, 2, 3 and 8 threads alike; the
 * record holds the steps before it, every loss finite, status 'diverged'.
 * Before the update flagged non-finite θ, this run ended 'done' with NaN
 * parameters (and an audit would have "proved" it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "engine/tasks/teacher.h"
#include "include/lockstep.h"

static const int THREADS[] = { 1, 2, 3, 8 };
#define N_THREADS (sizeof THREADS / sizeof THREADS[0])
#define STEPS 60
#define NAN_SAMPLE 5   /* a training sample whose first feature is made NaN */

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/lockstep-diverge-XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int64_t db_int(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* One recorded run of the poisoned data at `threads`: its error message and
 * the step it reached; the record is checked here. */
static void run_poisoned(const ls_dataset *d, int threads, char *msg, size_t cap, int64_t *reached)
{
    ls_err err;
    ls_config *cfg;
    assert_int_equal(ls_config_create(&cfg, "teacher", "mlp", &err), LS_OK);
    char db[128], name[32];
    snprintf(db, sizeof db, "%s/t%d.db", dir, threads);
    snprintf(name, sizeof name, "nan-t%d", threads);
    const ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = threads, .db = db, .name = name,
                                .steps = STEPS, .data = d, .no_final_checkpoint = 1 };
    ls_session *s = NULL;
    ls_status st = ls_session_open(&s, cfg, &o, &err);
    if (st != LS_OK)
        fail_msg("ls_session_open: %s", err.msg);
    st = ls_session_train(s, 0, 0, NULL, NULL, NULL, &err);
    if (st != LS_EDIVERGED)
        fail_msg("%d threads: the run ended %s (%s), want diverged: NaN parameters went unnoticed", threads,
                 ls_strerror(st), err.msg);
    snprintf(msg, cap, "%s", err.msg);
    ls_session_state ss;
    ls_session_state_get(s, &ss);
    *reached = ss.step;
    assert_true(isfinite(ss.loss) || ss.step == 0);
    ls_err e2;
    assert_int_equal(ls_session_close(s, LS_EDIVERGED, &e2), LS_OK);
    ls_config_destroy(cfg);

    /* The record: diverged, the steps before the one that diverged, every loss finite. */
    sqlite3 *h = NULL;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT status FROM runs WHERE id = 1", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "diverged");
    sqlite3_finalize(q);
    sqlite3_close(h);
    assert_int_equal(db_int(db, "SELECT max(step) FROM steps WHERE run = 1"), *reached);
    assert_int_equal(db_int(db, "SELECT count(*) FROM steps WHERE run = 1 AND step > 0 AND "
                                "(loss IS NULL OR loss <> loss OR abs(loss) > 1e308)"), 0);
}

static void test_nan_params_finite_loss(void **state)
{
    (void)state;
    ls_dataset *d;
    ls_err err;
    assert_int_equal(teacher_make(&d, &err), LS_OK);
    /* Written after the seal (which would refuse it): the data a loader
     * that checks nothing would hand over. */
    ls_dataset_x(d, 0)[(size_t)NAN_SAMPLE * d->train.dim] = NAN;
    char ref[512] = "", msg[512];
    int64_t ref_step = -1;
    for (size_t i = 0; i < N_THREADS; i++) {
        int64_t reached;
        run_poisoned(d, THREADS[i], msg, sizeof msg, &reached);
        printf("%d threads: stopped after step %lld: %s\n", THREADS[i], (long long)reached, msg);
        if (i == 0) {
            snprintf(ref, sizeof ref, "%s", msg);
            ref_step = reached;
            char want[64];
            snprintf(want, sizeof want, "step %lld: parameter ", (long long)reached + 1);
            if (strstr(msg, want) == NULL || strstr(msg, "is NaN") == NULL || strstr(msg, "was finite") == NULL)
                fail_msg("the message does not name step %lld and a NaN parameter with a finite loss: %s",
                         (long long)reached + 1, msg);
            assert_true(reached >= 1 && reached < STEPS);
        } else {
            assert_int_equal(reached, ref_step);
            assert_string_equal(msg, ref);   /* the same step, parameter and loss */
        }
    }
    ls_dataset_destroy(d);
}

/* A data set with a NaN or infinite feature is refused when sealed, naming
 * the data set, the split, the sample and the feature. */
static void test_seal_refuses_nonfinite(void **state)
{
    (void)state;
    const float bad[] = { NAN, INFINITY, -INFINITY };
    const char *const said[] = { "is NaN", "is infinite", "is -infinite" };
    for (int test = 0; test < 2; test++)
        for (size_t k = 0; k < 3; k++) {
            ls_dataset *d;
            ls_err err;
            assert_int_equal(ls_dataset_create(&d, "rows", 2, 3, 4, 2, &err), LS_OK);
            ls_dataset_x(d, test)[1 * 3 + 2] = bad[k];
            assert_int_equal(ls_dataset_seal(d, &err), LS_EINVAL);
            char want[96];
            snprintf(want, sizeof want, "data set rows: %s sample 1 feature 2 %s", test ? "test" : "train", said[k]);
            if (strstr(err.msg, want) == NULL)
                fail_msg("want '%s' in: %s", want, err.msg);
            ls_dataset_destroy(d);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nan_params_finite_loss),
        cmocka_unit_test(test_seal_refuses_nonfinite),
    };
    return cmocka_run_group_tests(tests, setup, teardown) != 0;
}
