/* session_crash.c — the session's test-only crash hook (LOCKSTEP_CRASH_AT),
 * armed by ls_session_open and a resuming ls_session_reopen.
 *
 * LOCKSTEP_CRASH_AT=PHASE:N makes the process kill itself with SIGKILL (no
 * handler, no cleanup, as a power cut would to the process) at the N-th
 * occurrence (N >= 1, counted in this process) of PHASE:
 *   step        inside trainer_step, after the leaf reduction, before the
 *               optimiser update (engine hook trainer_set_test_hook)
 *   commit      inside a batch commit of step rows, after BEGIN IMMEDIATE and
 *               the inserts, before COMMIT (runlog_set_commit_hook)
 *   checkpoint  inside a checkpoint write, after half of the temporary file,
 *               before the rest, fsync and rename (ckpt_set_test_hook)
 * It exists for tests/test_crash.c and is not a user feature. The variable is
 * read once; an unknown phase or a malformed N is ignored, so the variable
 * can end a process but never change what a run computes or records.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/session_impl.h"
#include "record/checkpoint.h"

enum { CRASH_NONE, CRASH_STEP, CRASH_COMMIT, CRASH_CHECKPOINT };
static int crash_phase = -1;   /* -1: not read yet */
static long long crash_at, crash_seen;

static void crash_parse(void)
{
    if (crash_phase >= 0)
        return;
    crash_phase = CRASH_NONE;
    const char *v = getenv("LOCKSTEP_CRASH_AT");
    if (v == NULL)
        return;
    static const struct { const char *name; int phase; } phases[] = {
        { "step", CRASH_STEP }, { "commit", CRASH_COMMIT }, { "checkpoint", CRASH_CHECKPOINT },
    };
    const char *colon = strchr(v, ':');
    if (colon == NULL || colon[1] < '1' || colon[1] > '9')
        return;
    char *end;
    errno = 0;
    long long n = strtoll(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || n < 1)
        return;
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
        if (strlen(phases[i].name) == (size_t)(colon - v) && strncmp(v, phases[i].name, (size_t)(colon - v)) == 0) {
            crash_phase = phases[i].phase;
            crash_at = n;
        }
    }
}

static void crash_hit(void)
{
    if (++crash_seen == crash_at)
        raise(SIGKILL);
}

static void crash_hook_ctx(void *ctx)
{
    (void)ctx;
    crash_hit();
}

void session_crash_arm(trainer *t, runlog *db)
{
    crash_parse();
    if (crash_phase == CRASH_STEP && t != NULL)
        trainer_set_test_hook(t, crash_hook_ctx, NULL);
    if (crash_phase == CRASH_COMMIT && db != NULL)
        runlog_set_commit_hook(db, crash_hook_ctx, NULL);
    if (crash_phase == CRASH_CHECKPOINT)
        ckpt_set_test_hook(crash_hit);
}
