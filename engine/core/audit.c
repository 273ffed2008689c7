/* audit.c — the full audit of a recorded run, its segments replayed
 * concurrently (audit.h says why the verdict is the sequential one). */
#include "engine/core/audit.h"

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
} audit_job;

/* Replays one segment into its own slot: a worker writes nothing else. */
static void audit_segment_run(void *ctx, size_t part, int worker)
{
    (void)worker;
    audit_job *j = ctx;
    audit_segment *g = &j->seg[part];
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
        if (j->stop != NULL && *j->stop) {
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
    /* Where the data are, to name the files when they are not the run's. */
    char sources[768] = "";
    for (const char *q = run.source_text; q != NULL && *q;) {
        const size_t l = strcspn(q, "\n"), at = strlen(sources);
        snprintf(sources + at, sizeof sources - at, "%s%.*s", at ? ", " : "", (int)l, q);
        q += l + (q[l] == '\n');
    }
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
    const int workers = (size_t)threads < n_seg ? threads : (int)n_seg;
    for (size_t p = 0; p < n_seg; p++) {
        seg[p].bad_step = -1;
        seg[p].threads = (size_t)workers < n_seg ? 1 : threads / workers + ((int)p < threads % workers);
    }

    /* Segment 0 first, here: it checks what every segment shares (the
     * config, the data, step 0) once, and its data serve the others. */
    audit_job job = { db, run_id, seg, NULL, NULL, stop, ck, n_ck };
    ls_session_opts o0 = { .size = sizeof(ls_session_opts), .threads = seg[0].threads };
    st = session_reopen_segment(&job.first, db, run_id, 0, seg[0].to, &o0, &seg[0].err);
    if (st == LS_EMISMATCH) {
        if (strncmp(seg[0].err.msg, "data_hash:", 10) == 0 && sources[0])
            snprintf(out->detail, sizeof out->detail, "%.400s: the files now at %.500s are not the run's data",
                     seg[0].err.msg, sources);
        else
            snprintf(out->detail, sizeof out->detail, "%s", seg[0].err.msg);
        out->first_bad = strncmp(seg[0].err.msg, "step 0:", 7) == 0 ? 0 : -1;
        free(seg);
        runlog_checkpoints_free(ck, n_ck);
        return LS_OK;
    }
    if (st != LS_OK) {
        *err = seg[0].err;
        free(seg);
        runlog_checkpoints_free(ck, n_ck);
        return st;
    }
    trainer *t0 = session_trainer(job.first);
    job.data = t0 != NULL ? trainer_data(t0) : NULL;
    pool *p;
    if ((st = pool_create(&p, workers, err)) == LS_OK) {
        pool_parallel_for(p, n_seg, audit_segment_run, &job);
        pool_destroy(p);
    }
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
