/* audit.c — the full audit of a recorded run, its segments replayed on the
 * threads it is given (audit.h says why the verdict is the sequential one).
 *
 * How the segments share the threads. Segments side by side, one thread
 * each, need no synchronisation at all, so T of them on T threads go T
 * times as fast; one segment's steps on T threads go as fast as training at
 * T threads, which is less (the top of the tree, the optimiser, the
 * barriers). So segments replay side by side, except that side by side can
 * end no sooner than the longest of them: with S steps over the side-by-side
 * segments, the phase takes at least max(L, S/T), L the longest's steps. When
 * L > S/T that one segment alone sets the time while the other threads
 * idle, so it replays on all T threads instead (its steps on its session's
 * pool, like training's), and the rule is applied again to the rest
 * (audit_threads). Hence: fewer segments than threads, every one replays on
 * all the threads (L >= S/n > S/T); many segments of about equal length, all
 * side by side; a run that kept its newest two checkpoints (0..1900 and
 * 1900..2000 of 2,000 steps) on 2 threads replays both on both threads; the
 * same run with many more short segments replays its long one on all the
 * threads, then the short ones side by side.
 *
 * The segments on all threads replay first, one after another in step
 * order, then the others on a pool of T workers: never more threads at work
 * than T. A segment that starts at or after a finding already made (or
 * after a segment that stopped on an error) is not replayed: whatever it
 * would find comes later, and the earliest finding is the verdict.
 */
#include "engine/core/audit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/runlog.h"
#include "reduce/pool.h"
#include "engine/core/session.h"
#include "engine/core/train.h"

/* One segment: steps from+1..to, and what its replay found. */
typedef struct {
    int64_t from, to;
    int threads;
    ls_status st;               /* LS_OK; LS_EMISMATCH: a finding at bad_step; else an error */
    int64_t bad_step;           /* -1: a finding no step's (only a replay from step 0 makes one) */
    uint64_t traj_hash, param_hash;
    int64_t checkpoints;
    ls_err err;
} audit_segment;

typedef struct {
    const char *db;
    int64_t run_id;
    audit_segment *seg;
    ls_session *first;          /* segment 0's session, opened by the caller: it holds the data */
    const ls_dataset *data;
    const volatile int *stop;
    const runlog_ckpt *ck;
    size_t n_ck;
    const size_t *side;         /* the segments replayed side by side, in step order */
    int64_t cutoff;             /* segments starting at or after this step are not replayed */
} audit_job;

/* Replays one segment into its own slot: a worker writes nothing else. */
static void audit_segment_run(void *ctx, size_t part, int worker)
{
    (void)worker;
    audit_job *j = ctx;
    audit_segment *g = &j->seg[part];
    if (g->from >= j->cutoff)
        return;   /* what it would find comes after a finding already made */
    ls_session *s = part == 0 ? j->first : NULL;
    if (s == NULL) {
        ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = g->threads, .data = j->data };
        g->st = session_reopen_segment(&s, j->db, j->run_id, g->from, g->to, &o, &g->err);
        if (g->st != LS_OK) {
            g->bad_step = g->from;
            return;
        }
    }
    ls_session_state ss;
    ls_session_state_get(s, &ss);
    while (g->st == LS_OK && ss.step < g->to) {
        if (j->stop != NULL && __atomic_load_n(j->stop, __ATOMIC_RELAXED)) {
            g->st = ls_fail(&g->err, LS_EINTR, "interrupted after step %lld", (long long)ss.step);
            break;
        }
        const int64_t next = ss.step + 1;
        g->st = ls_session_step(s, NULL, &g->err);
        if (g->st == LS_EDIVERGED) {
            /* The record holds a finite loss at every step it has. */
            char why[sizeof g->err.msg];
            memcpy(why, g->err.msg, sizeof why);
            why[400] = '\0';   /* room for the rest of the line */
            g->st = ls_fail(&g->err, LS_EMISMATCH, "%s; the record has a finite loss", why);   /* "step N: ..." */
        }
        if (g->st == LS_EMISMATCH)
            g->bad_step = next;
        else
            ls_session_state_get(s, &ss);
    }
    if (g->st == LS_OK) {
        g->traj_hash = ss.traj_hash;
        g->param_hash = ss.param_hash;
        for (size_t i = 0; i < j->n_ck; i++)
            g->checkpoints += j->ck[i].step > g->from && j->ck[i].step <= g->to;
    }
    if (part != 0)
        ls_session_close(s, LS_OK, NULL);
}

/* Part p of the side-by-side phase is segment side[p]. */
static void audit_side_run(void *ctx, size_t part, int worker)
{
    const audit_job *j = ctx;
    audit_segment_run(ctx, j->side[part], worker);
}

void audit_threads(const int64_t *len, size_t n, int threads, int *out)
{
    int64_t side = 0;   /* the steps of the segments still side by side */
    for (size_t i = 0; i < n; i++) {
        out[i] = 1;
        side += len[i];
    }
    if (threads <= 1)
        return;
    /* Each pass takes more than 1/threads of the steps left side by side,
     * so there are few passes (about threads · ln(steps) at most). */
    for (;;) {
        size_t longest = n;
        for (size_t i = 0; i < n; i++)
            if (out[i] == 1 && (longest == n || len[i] > len[longest]))
                longest = i;
        if (longest == n || len[longest] * threads <= side)
            return;
        out[longest] = threads;
        side -= len[longest];
    }
}

ls_status audit_replay(const char *db, int64_t run_id, int threads, const volatile int *stop, audit_report *out,
                       ls_err *err)
{
    memset(out, 0, sizeof *out);
    out->steps = -1;
    out->first_bad = -1;
    if (threads <= 0)
        threads = pool_online_cpus();
    if (threads > POOL_MAX_THREADS)
        return ls_fail(err, LS_EINVAL, "--threads: %d is out of range (1..%d)", threads, POOL_MAX_THREADS);
    out->threads = threads;
    runlog *r;
    ls_status st = runlog_open(&r, db, err);
    if (st != LS_OK)
        return st;
    runlog_run run;
    memset(&run, 0, sizeof run);
    runlog_ckpt *ck = NULL;
    size_t n_ck = 0;
    if ((st = runlog_get_run(r, run_id, &run, err)) == LS_OK)
        st = runlog_checkpoints(r, run_id, &ck, &n_ck, err);
    const int64_t last = run.n_steps;
    runlog_run_free(&run);
    runlog_close(r);
    if (st == LS_OK && last < 0)
        st = ls_fail(err, LS_EINVAL, "run %lld has no recorded steps: nothing to audit", (long long)run_id);
    if (st != LS_OK) {
        runlog_checkpoints_free(ck, n_ck);
        return st;
    }
    /* Segment boundaries: 0, every checkpointed step strictly inside, the last step. */
    size_t n_seg = 1;
    for (size_t i = 0; i < n_ck; i++)
        n_seg += ck[i].step > 0 && ck[i].step < last && (i == 0 || ck[i].step != ck[i - 1].step);
    audit_segment *seg = calloc(n_seg, sizeof *seg);
    if (seg == NULL) {
        runlog_checkpoints_free(ck, n_ck);
        return ls_fail(err, LS_ENOMEM, "audit: out of memory");
    }
    int64_t at = 0;
    size_t k = 0;
    for (size_t i = 0; i < n_ck; i++) {
        if (ck[i].step > 0 && ck[i].step < last && (i == 0 || ck[i].step != ck[i - 1].step)) {
            seg[k].from = at;
            seg[k++].to = ck[i].step;
            at = ck[i].step;
        }
    }
    seg[k].from = at;
    seg[k].to = last;
    /* calloc: gcc 12 for s390x (make check-cross) cannot see that the loop
     * below fills it and warns maybe-uninitialized. */
    int64_t *len = calloc(n_seg, sizeof *len);
    int *thr = malloc(n_seg * sizeof *thr);
    size_t *side = malloc(n_seg * sizeof *side);
    if (len == NULL || thr == NULL || side == NULL) {
        free(len);
        free(thr);
        free(side);
        free(seg);
        runlog_checkpoints_free(ck, n_ck);
        return ls_fail(err, LS_ENOMEM, "audit: out of memory");
    }
    for (size_t p = 0; p < n_seg; p++)
        len[p] = seg[p].to - seg[p].from;
    audit_threads(len, n_seg, threads, thr);
    size_t n_side = 0;
    for (size_t p = 0; p < n_seg; p++) {
        seg[p].bad_step = -1;
        seg[p].threads = thr[p];
        if (thr[p] == 1)
            side[n_side++] = p;
    }
    free(len);
    free(thr);

    /* Segment 0 first, here: it checks what every segment shares (the
     * config, the data, step 0) once, and its data serve the others. */
    audit_job job = { db, run_id, seg, NULL, NULL, stop, ck, n_ck, side, INT64_MAX };
    ls_session_opts o0 = { .size = sizeof(ls_session_opts), .threads = seg[0].threads };
    st = session_reopen_segment(&job.first, db, run_id, 0, seg[0].to, &o0, &seg[0].err);
    if (st == LS_EMISMATCH) {
        /* data_hash's message names the files now at the run's sources
         * (session_reopen.c, reopen_prepare). */
        snprintf(out->detail, sizeof out->detail, "%s", seg[0].err.msg);
        out->first_bad = strncmp(seg[0].err.msg, "step 0:", 7) == 0 ? 0 : -1;
        free(side);
        free(seg);
        runlog_checkpoints_free(ck, n_ck);
        return LS_OK;
    }
    if (st != LS_OK) {
        *err = seg[0].err;
        free(side);
        free(seg);
        runlog_checkpoints_free(ck, n_ck);
        return st;
    }
    trainer *t0 = session_trainer(job.first);
    job.data = t0 != NULL ? trainer_data(t0) : NULL;
    for (size_t q = 0; q < n_seg; q++) {
        if (seg[q].threads == 1)
            continue;
        audit_segment_run(&job, q, 0);
        if (seg[q].st != LS_OK && job.cutoff == INT64_MAX)
            job.cutoff = seg[q].st == LS_EMISMATCH ? seg[q].bad_step : seg[q].to;
    }
    if (n_side > 0) {
        pool *p;
        if ((st = pool_create(&p, (size_t)threads < n_side ? threads : (int)n_side, err)) == LS_OK) {
            pool_parallel_for(p, n_side, audit_side_run, &job);
            pool_destroy(p);
        }
    }
    free(side);
    ls_session_close(job.first, LS_OK, NULL);
    runlog_checkpoints_free(ck, n_ck);
    if (st != LS_OK) {
        free(seg);
        return st;
    }

    /* The earliest finding; an error counts only when no finding comes
     * at or before the segment it stopped. */
    const audit_segment *bad = NULL, *failed = NULL;
    for (size_t q = 0; q < n_seg; q++) {
        if (seg[q].st == LS_EMISMATCH && (bad == NULL || seg[q].bad_step < bad->bad_step))
            bad = &seg[q];
        if (seg[q].st != LS_OK && seg[q].st != LS_EMISMATCH && failed == NULL)
            failed = &seg[q];
    }
    if (failed != NULL && (bad == NULL || bad->bad_step > failed->from)) {
        *err = failed->err;
        st = failed->st;
        free(seg);
        return st;
    }
    out->segments = (int64_t)n_seg;
    out->threads = threads;
    if (bad != NULL) {
        out->first_bad = bad->bad_step;
        out->steps = bad->bad_step - 1;
        snprintf(out->detail, sizeof out->detail, "%s", bad->err.msg);
    } else {
        out->proved = 1;
        out->steps = last;
        out->traj_hash = seg[n_seg - 1].traj_hash;
        out->param_hash = seg[n_seg - 1].param_hash;
        for (size_t q = 0; q < n_seg; q++)
            out->checkpoints += seg[q].checkpoints;
        snprintf(out->detail, sizeof out->detail, "steps 0..%lld re-executed at %d thread%s (%lld segment%s), "
                 "%lld checkpoint file%s", (long long)last, threads, threads == 1 ? "" : "s", (long long)n_seg,
                 n_seg == 1 ? "" : "s", (long long)out->checkpoints, out->checkpoints == 1 ? "" : "s");
    }
    free(seg);
    return LS_OK;
}
