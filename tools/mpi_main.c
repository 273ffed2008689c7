/* mpi_main.c — build/lockstep-mpi (`make mpi`): one run trained by R MPI
 * processes ("ranks"), bit-identical to `lockstep train --threads 1`.
 *
 *     mpirun -np R build/lockstep-mpi train [train flags] [--threads N per rank]
 *     mpirun -np R build/lockstep-mpi resume RUN [--db FILE] [--threads N] [--steps N]
 *
 * Every rank holds the whole θ and the optimiser state and runs the same
 * steps. Each step's leaves are shared out by tree_rank_pieces (aligned
 * blocks, contiguous per rank; reduce/tree.h) and each rank sums its
 * pieces with its own threads (trainer_set_ranks, engine/core/train.h). The
 * pieces' sums are combined here by a deterministic reduce-scatter: the
 * leaf buffer is cut into R chunks (64-byte units), rank q owns chunk q and
 * receives every rank's pieces restricted to it (point-to-point, raw
 * bytes), adds them along the canonical tree (tree_combine_blocks: the
 * additions the one-process tree makes above the pieces, in its order),
 * and an all-gather sends each owned chunk to every rank. Every rank also
 * receives every piece's loss and sums them along the tree itself. No MPI
 * reduction ever touches a float: MPI_Allreduce may reorder a sum, and its
 * bits could change with R or with the algorithm Open MPI picks.
 *
 * Rank 0 alone opens the database: it opens (or reopens, to resume) the
 * session, records the ranks and hosts as run settings, and sends the
 * others the config text, the step to start from, the target and the
 * state bytes (θ and the optimiser's). The others build a trainer from
 * that and never touch the record. Checkpoints and evaluations are rank
 * 0's. A run recorded by R ranks resumes with any rank count, plain
 * `lockstep resume` included: the record does not know R.
 *
 * A lost rank: every wait polls (MPI_Test*, errors returned, not fatal)
 * and gives up on a signal (mpirun sends SIGTERM when a rank dies), on an
 * MPI error, or after LOCKSTEP_MPI_TIMEOUT seconds without completion
 * (default 60). Rank 0 then closes the session as interrupted (resumable)
 * and every rank leaves through MPI_Abort, exit status 130.
 */
#include <mpi.h>

#include "tools/tools.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/core/session.h"
#include "engine/core/train.h"

enum { TAG_RS = 2, TAG_AG = 4 };

/* One rank's side of the combine: buffers planned once, for every step. */
typedef struct {
    int rank, ranks;
    double timeout;             /* seconds a wait may last */
    size_t len;                 /* floats in the leaf buffer */
    size_t *lo;                 /* [ranks + 1] chunk q is [lo[q], lo[q + 1]) */
    unsigned char *send;        /* per destination q: this rank's pieces' chunk q, then their losses */
    unsigned char *recv;        /* per source r: r's pieces' part of the own chunk, then their losses */
    float **bufs;               /* [n_pieces] */
    double *loss;               /* [n_pieces] every piece's loss */
    MPI_Request *req;           /* [2 * ranks] */
    uint64_t bytes_sent;        /* payload bytes this rank sent in the steps' combines */
    int64_t combines;
    int64_t kill_at;            /* test-only (LOCKSTEP_MPI_KILL_AT=RANK:STEP): SIGKILL this rank on entering
                                   the combine of its kill_at-th step; 0: never */
} mpi_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait for n requests, polling (a blocking MPI wait could neither see a
 * signal nor time out). The sleep grows to 200 µs so that waiting ranks
 * leave the cores to the working ones when there are more ranks than cores. */
static ls_status mpi_wait(const mpi_ctx *c, MPI_Request *req, int n, const char *what, ls_err *err)
{
    double start = now_s();
    long ns = 2000;
    for (;;) {
        int done = 0;
        int rc = MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int ml = 0;
            MPI_Error_string(rc, msg, &ml);
            return ls_fail(err, LS_EINTR, "rank %d: MPI failed while %s (%s): another rank was lost", c->rank, what,
                           msg);
        }
        if (done)
            return LS_OK;
        if (run_interrupted)
            return ls_fail(err, LS_EINTR, "rank %d: interrupted by a signal (Ctrl-C, or mpirun's when a rank died) "
                           "while %s", c->rank, what);
        if (now_s() - start > c->timeout)
            return ls_fail(err, LS_EINTR, "rank %d: no answer from the other ranks for %.0f s while %s: a rank "
                           "died or hangs (LOCKSTEP_MPI_TIMEOUT)", c->rank, c->timeout, what);
        struct timespec ts = { 0, ns };
        nanosleep(&ts, NULL);
        if (ns < 200000)
            ns *= 2;
    }
}

/* Sends count bytes to rank `to`, counted in the step's traffic. */
static void mpi_send(mpi_ctx *c, const void *buf, size_t bytes, int to, int tag, MPI_Request *req)
{
    MPI_Isend(buf, (int)bytes, MPI_BYTE, to, tag, MPI_COMM_WORLD, req);
    c->bytes_sent += bytes;
}

/* trainer_combine_fn: the reduce-scatter along the tree, then the all-gather. */
static ls_status mpi_combine(void *ctx, const trainer_rank_sums *in, float *sum, double *loss, ls_err *err)
{
    mpi_ctx *c = ctx;
    const int me = c->rank, R = c->ranks;
    const size_t p0 = in->rank_first[me], n_mine = in->rank_first[me + 1] - p0;
    const size_t own = c->lo[me + 1] - c->lo[me];
    int nr = 0;
    if (c->kill_at > 0 && c->combines + 1 == c->kill_at) {
        fprintf(stderr, "lockstep-mpi: rank %d: killing itself with SIGKILL (LOCKSTEP_MPI_KILL_AT)\n", me);
        fflush(stderr);
        raise(SIGKILL);
    }
    /* Reduce-scatter: chunk q of each of my pieces to rank q, then my
     * pieces' losses, in one message; my own chunk straight into place. */
    size_t at = 0, mine_at = 0;
    for (int r = 0; r < me; r++)
        mine_at += (in->rank_first[r + 1] - in->rank_first[r]) * (own * sizeof(float) + sizeof(double));
    for (int q = 0; q < R; q++) {
        size_t lo = c->lo[q], cl = c->lo[q + 1] - lo;
        unsigned char *dst = q == me ? c->recv + mine_at : c->send + at;
        for (size_t i = 0; i < n_mine; i++)
            memcpy(dst + i * cl * sizeof(float), in->mine[i] + lo, cl * sizeof(float));
        memcpy(dst + n_mine * cl * sizeof(float), in->mine_loss, n_mine * sizeof(double));
        if (q == me)
            continue;
        size_t bytes = n_mine * (cl * sizeof(float) + sizeof(double));
        mpi_send(c, dst, bytes, q, TAG_RS, &c->req[nr++]);
        at += bytes;
    }
    at = 0;
    for (int r = 0; r < R; r++) {
        size_t n = in->rank_first[r + 1] - in->rank_first[r], bytes = n * (own * sizeof(float) + sizeof(double));
        if (r != me)
            MPI_Irecv(c->recv + at, (int)bytes, MPI_BYTE, r, TAG_RS, MPI_COMM_WORLD, &c->req[nr++]);
        at += bytes;
    }
    ls_status st = mpi_wait(c, c->req, nr, "exchanging the pieces' sums", err);
    if (st != LS_OK)
        return st;
    at = 0;
    for (int r = 0; r < R; r++) {
        size_t f = in->rank_first[r], n = in->rank_first[r + 1] - f;
        for (size_t i = 0; i < n; i++)
            c->bufs[f + i] = (float *)(void *)(c->recv + at) + i * own;
        memcpy(c->loss + f, c->recv + at + n * own * sizeof(float), n * sizeof(double));
        at += n * (own * sizeof(float) + sizeof(double));
    }
    /* My chunk of the sum: the additions above the pieces, in tree order. */
    float *res;
    if ((st = tree_combine_blocks(in->n_leaves, in->pieces, in->n_pieces, c->bufs, own, c->loss, &res, loss, err)) !=
        LS_OK)
        return st;
    memcpy(sum + c->lo[me], res, own * sizeof(float));
    /* All-gather: my chunk to everyone, everyone's into sum. */
    nr = 0;
    for (int q = 0; q < R; q++) {
        if (q == me)
            continue;
        mpi_send(c, sum + c->lo[me], own * sizeof(float), q, TAG_AG, &c->req[nr++]);
        MPI_Irecv(sum + c->lo[q], (int)((c->lo[q + 1] - c->lo[q]) * sizeof(float)), MPI_BYTE, q, TAG_AG,
                  MPI_COMM_WORLD, &c->req[nr++]);
    }
    c->combines++;
    return mpi_wait(c, c->req, nr, "gathering the summed chunks", err);
}

static void mpi_ctx_free(mpi_ctx *c)
{
    free(c->lo);
    free(c->send);
    free(c->recv);
    free(c->bufs);
    free(c->loss);
    free(c->req);
}

/* Plans the buffers of t's pieces and attaches the combine to t. */
static ls_status mpi_attach(mpi_ctx *c, trainer *t, ls_err *err)
{
    const ls_model_info *mi = &trainer_model(t)->info;
    const size_t n = mi->leaves, len = mi->leaf_len, R = (size_t)c->ranks;
    tree_block *pieces = malloc(n * sizeof *pieces);
    size_t *first = malloc((R + 1) * sizeof *first);
    if (pieces == NULL || first == NULL) {
        free(pieces);
        free(first);
        return ls_fail(err, LS_ENOMEM, "out of memory");
    }
    size_t np = tree_rank_pieces(n, c->ranks, pieces, first), mine_max = 0;
    for (size_t r = 0; r < R; r++)
        if (first[r + 1] - first[r] > mine_max)
            mine_max = first[r + 1] - first[r];
    free(pieces);
    free(first);
    c->len = len;
    c->lo = malloc((R + 1) * sizeof *c->lo);
    size_t units = (len + 15) / 16;
    if (c->lo != NULL)
        for (size_t q = 0; q <= R; q++)
            c->lo[q] = units * q / R * 16 < len ? units * q / R * 16 : len;
    size_t own = c->lo != NULL ? c->lo[c->rank + 1] - c->lo[c->rank] : 0;
    c->send = malloc(mine_max * (len * sizeof(float) + R * sizeof(double)) + 1);
    c->recv = malloc(np * (own * sizeof(float) + sizeof(double)) + 1);
    c->bufs = malloc(np * sizeof *c->bufs);
    c->loss = malloc(np * sizeof *c->loss);
    c->req = malloc(2 * R * sizeof *c->req);
    if (c->lo == NULL || c->send == NULL || c->recv == NULL || c->bufs == NULL || c->loss == NULL || c->req == NULL)
        return ls_fail(err, LS_ENOMEM, "out of memory");
    return trainer_set_ranks(t, c->rank, c->ranks, mpi_combine, c, err);
}

/* What rank 0 tells the others before the first step. */
typedef struct {
    int64_t rc;                 /* exit status when the others are to stop now, else -1 */
    int64_t threads, start, target;
    int64_t text_bytes, src_bytes, param_bytes, opt_bytes;
} mpi_head;

static ls_status bcast(mpi_ctx *c, void *buf, size_t bytes, const char *what, ls_err *err)
{
    MPI_Request req;
    MPI_Ibcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    return mpi_wait(c, &req, 1, what, err);
}

static _Noreturn void mpi_die(const mpi_ctx *c, const char *cmd, const ls_err *err, ls_status st, const char *fate,
                              int code)
{
    fprintf(stderr, "lockstep-mpi %s: rank %d of %d: %s%s%s%s\n", cmd, c->rank, c->ranks,
            err->msg[0] ? err->msg : ls_strerror(st), fate[0] ? " (" : "", fate, fate[0] ? ")" : "");
    fflush(NULL);
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

static void usage(void)
{
    puts("usage: mpirun -np R lockstep-mpi train [train flags] [--threads N]\n"
         "       mpirun -np R lockstep-mpi resume RUN [--db FILE] [--threads N] [--steps N]\n"
         "One run trained by R processes (any R >= 1), bit-identical to `lockstep train --threads 1`:\n"
         "each step's leaves are shared out in aligned blocks of the canonical tree, and the ranks'\n"
         "sums are combined along the tree by a deterministic reduce-scatter and an all-gather.\n"
         "The flags are those of `lockstep train --help` and `lockstep resume --help`; --threads is\n"
         "per rank (default: online CPUs / R, at least 1). Rank 0 alone opens the database, records the\n"
         "ranks and hosts (run settings mpi_ranks, mpi_hosts) and writes the checkpoints; a run is\n"
         "resumed with any rank count, or by plain `lockstep resume`. No progress line.\n"
         "  LOCKSTEP_MPI_TIMEOUT=S  give up after S seconds without an answer from a rank (default 60)\n"
         "exit status: as lockstep train; 130 when interrupted or a rank was lost (the run is marked\n"
         "interrupted and can be resumed)");
}

/* Rank 0: parses, opens or reopens the session. Fills h (rc >= 0: stop with
 * that status). */
static ls_session *rank0_open(mpi_ctx *c, int resume, int argc, char **argv, mpi_head *h, cli_args *a,
                              int64_t *run_id, ls_err *err)
{
    ls_status st;
    const char *cmd = resume ? "resume" : "train";
    unsigned accept = resume ? CLI_DB | CLI_STEPS_FLAG | CLI_THREADS | CLI_CKPT | CLI_PROGRESS
                             : CLI_CONFIG | CLI_TRAIN | CLI_DB | CLI_CKPT | CLI_NO_EVAL;
    st = cli_parse(argc, argv, accept, resume ? 1 : 0, a, err);
    if (st == LS_OK && resume && !a->help && a->n_positional != 1)
        st = ls_fail(err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st == LS_OK && !resume && a->checkpoint_dir != NULL && a->checkpoint_every == 0)
        st = ls_fail(err, LS_EINVAL, "--checkpoint-dir: needs --checkpoint-every K");
    if (st == LS_OK && !a->help && !resume)
        st = cli_check_regular("--db", a->db, err);
    if (st == LS_OK && !a->help && !resume && c->ranks > 1 && strcmp(a->cfg.reduce, "unordered") == 0)
        st = ls_fail(err, LS_EINVAL, "--reduce unordered: a one-process benchmark foil, not for %d ranks", c->ranks);
    if (st == LS_OK && !a->help && resume && access(a->db, F_OK) != 0)
        st = ls_fail(err, LS_EINVAL, "%s: no such database", a->db);
    if (st != LS_OK) {
        cli_error(resume ? "resume" : "train", err, st);
        h->rc = EXIT_USAGE;
        return NULL;
    }
    if (a->help) {
        usage();
        h->rc = EXIT_OK;
        return NULL;
    }
    int threads = a->threads[0] > 0 ? a->threads[0] : pool_online_cpus() / c->ranks;
    if (threads < 1)
        threads = 1;
    ls_session_opts so = { .size = sizeof(ls_session_opts),
                           .threads = threads, .db = a->db, .name = a->name, .steps = a->steps,
                           .checkpoint_every = a->checkpoint_every, .checkpoint_dir = a->checkpoint_dir,
                           .eval_every = a->eval_every };
    ls_session *s = NULL;
    if (resume) {
        runlog *db;
        int64_t id = -1;
        if ((st = cli_open_db(a->db, &db, err)) == LS_OK) {
            st = runlog_find(db, a->positional[0], &id, err);
            runlog_close(db);
        }
        char name[32];
        snprintf(name, sizeof name, "%lld", (long long)id);
        if (st == LS_OK)
            st = ls_session_reopen(&s, a->db, name, LS_REOPEN_RESUME, &so, err);
        *run_id = id;
    } else {
        st = ls_session_open(&s, &a->cfg, &so, err);
    }
    if (st != LS_OK) {
        cli_error(cmd, err, st);
        /* A changed input (data_hash, init_hash) is bad input, not a difference. */
        h->rc = st == LS_EMISMATCH && !cli_input_changed(st, err) ? EXIT_DIFFER : EXIT_USAGE;
        return NULL;
    }
    ls_session_state ss;
    ls_session_state_get(s, &ss);
    *run_id = ss.run_id;
    if (ss.done_already) {
        printf("resume: run %lld is done (%lld steps, trajectory %016llx); nothing to do\n", (long long)ss.run_id,
               (long long)ss.step, (unsigned long long)ss.traj_hash);
        ls_session_close(s, LS_OK, NULL);
        h->rc = EXIT_OK;
        return NULL;
    }
    trainer *t = session_trainer(s);
    h->rc = -1;
    h->threads = threads;
    h->start = trainer_steps_done(t);
    h->target = ss.target;
    return s;
}

/* The run's settings: how many ranks, on which hosts, threads per rank (the
 * latest MPI process's), and the same in one line for this process, keyed
 * by the step it started from as its run_processes row is (show prints it). */
static ls_status rank0_note(mpi_ctx *c, ls_session *s, const char *hosts, int64_t threads, int64_t start,
                            ls_err *err)
{
    char v[32], key[48];
    size_t ll = strlen(hosts) + 96;
    char *line = malloc(ll);
    if (line == NULL)
        return ls_fail(err, LS_ENOMEM, "out of memory");
    snprintf(key, sizeof key, "mpi@%lld", (long long)start);
    snprintf(line, ll, "%d ranks x %lld threads, hosts %s", c->ranks, (long long)threads, hosts);
    ls_status st0 = session_note_setting(s, key, line, err);
    free(line);
    if (st0 != LS_OK)
        return st0;
    snprintf(v, sizeof v, "%d", c->ranks);
    ls_status st = session_note_setting(s, "mpi_ranks", v, err);
    snprintf(v, sizeof v, "%lld", (long long)threads);
    if (st == LS_OK)
        st = session_note_setting(s, "mpi_threads_per_rank", v, err);
    if (st == LS_OK)
        st = session_note_setting(s, "mpi_hosts", hosts, err);
    return st;
}

/* "a,a,b" from every rank's host name (gathered as fixed-size bytes). */
static ls_status gather_hosts(mpi_ctx *c, char **out, ls_err *err)
{
    char mine[MPI_MAX_PROCESSOR_NAME];
    int ml = 0;
    memset(mine, 0, sizeof mine);
    MPI_Get_processor_name(mine, &ml);
    char *all = c->rank == 0 ? calloc((size_t)c->ranks, sizeof mine) : NULL;
    char *list = c->rank == 0 ? calloc((size_t)c->ranks, sizeof mine + 1) : NULL;
    if (c->rank == 0 && (all == NULL || list == NULL)) {
        free(all);
        free(list);
        return ls_fail(err, LS_ENOMEM, "out of memory");
    }
    MPI_Request req;
    MPI_Igather(mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    ls_status st = mpi_wait(c, &req, 1, "gathering the host names", err);
    if (st == LS_OK && c->rank == 0) {
        /* Ranks in order, a run of ranks on one host as "host*count". */
        for (int r = 0; r < c->ranks;) {
            char *h = all + (size_t)r * sizeof mine;
            h[sizeof mine - 1] = '\0';
            int k = r + 1;
            while (k < c->ranks && strncmp(all + (size_t)k * sizeof mine, h, sizeof mine) == 0)
                k++;
            size_t at = strlen(list);
            snprintf(list + at, (size_t)c->ranks * (sizeof mine + 1) - at, k - r > 1 ? "%s%s*%d" : "%s%s",
                     r ? "," : "", h, k - r);
            r = k;
        }
    }
    free(all);
    *out = list;
    return st;
}

static int run_mpi(mpi_ctx *c, int resume, int argc, char **argv)
{
    const char *cmd = resume ? "resume" : "train";
    ls_err err = { "" };
    mpi_head h;
    memset(&h, 0, sizeof h);
    cli_args a;
    ls_session *s = NULL;
    trainer *t = NULL;
    int64_t run_id = -1;
    char text[CONFIG_TEXT_MAX], src[LS_MAX_SOURCES * (LS_SOURCE_MAX + 40)];
    if (c->rank != 0 && !resume) {
        /* A new run: the same flags give the same config, so the data load
         * and the trainer need not wait for rank 0; what rank 0 sends is
         * checked against it below (and replaces it if it differs). */
        ls_err e2;
        if (cli_parse(argc, argv, CLI_CONFIG | CLI_TRAIN | CLI_DB | CLI_CKPT | CLI_NO_EVAL, 0, &a, &e2) == LS_OK &&
            !a.help) {
            int th = a.threads[0] > 0 ? a.threads[0] : pool_online_cpus() / c->ranks;
            if (trainer_create(&t, &a.cfg, th < 1 ? 1 : th, NULL, &e2) != LS_OK)
                t = NULL;
        }
    }
    if (c->rank == 0) {
        s = rank0_open(c, resume, argc, argv, &h, &a, &run_id, &err);
        if (s != NULL) {
            t = session_trainer(s);
            const ls_config *cfg = trainer_config(t);
            size_t ob;
            trainer_optim_state(t, &ob);
            h.text_bytes = (int64_t)config_text(cfg, text, sizeof text) + 1;
            h.src_bytes = (int64_t)config_source_text(cfg, src, sizeof src) + 1;
            h.param_bytes = (int64_t)(trainer_n_params(t) * sizeof(float));
            h.opt_bytes = (int64_t)ob;
        }
    }
    ls_status st = bcast(c, &h, sizeof h, "waiting for rank 0 to open the run", &err);
    if (st != LS_OK)
        goto fail;
    if (h.rc >= 0) {
        if (c->rank != 0)
            trainer_destroy(t);
        fflush(NULL);
        return (int)h.rc;   /* all ranks leave alike (usage, help, nothing to do) */
    }
    if ((st = bcast(c, text, (size_t)h.text_bytes, "receiving the config", &err)) != LS_OK ||
        (st = bcast(c, src, (size_t)h.src_bytes, "receiving the config", &err)) != LS_OK)
        goto fail;
    if (c->rank != 0 && t != NULL) {
        char mine[CONFIG_TEXT_MAX], msrc[sizeof src];
        config_text(trainer_config(t), mine, sizeof mine);
        config_source_text(trainer_config(t), msrc, sizeof msrc);
        if (strcmp(mine, text) != 0 || strcmp(msrc, src) != 0 || trainer_threads(t) != (int)h.threads) {
            trainer_destroy(t);
            t = NULL;
        }
    }
    if (c->rank != 0 && t == NULL) {
        /* The config as rank 0 has it (a resumed run's comes from the record). */
        ls_config cfg;
        if ((st = config_parse_text(&cfg, text, "rank 0's config", &err)) != LS_OK)
            goto fail;
        for (char *p = src; *p;) {
            char *eol = strchr(p, '\n'), *eq = strchr(p, '=');
            if (eol != NULL)
                *eol = '\0';
            if (eq == NULL) {
                st = ls_fail(&err, LS_EFORMAT, "rank 0's data source line '%s' is malformed", p);
                goto fail;
            }
            *eq = '\0';
            if ((st = config_set(&cfg, p, eq + 1, 0, &err)) != LS_OK)
                goto fail;
            p = eol != NULL ? eol + 1 : p + strlen(p);
        }
        if ((st = trainer_create(&t, &cfg, (int)h.threads, NULL, &err)) != LS_OK)
            goto fail;
        size_t ob;
        trainer_optim_state(t, &ob);
        if ((int64_t)(trainer_n_params(t) * sizeof(float)) != h.param_bytes || (int64_t)ob != h.opt_bytes) {
            st = ls_fail(&err, LS_EMISMATCH, "the model's state has another size than rank 0's");
            goto fail;
        }
    }
    /* The state to start from: θ_0 for a new run, the checkpoint's for a resumed one. */
    size_t ob;
    void *opt = trainer_optim_state(t, &ob);
    if ((st = bcast(c, trainer_params_mut(t), (size_t)h.param_bytes, "receiving the parameters", &err)) != LS_OK ||
        (st = bcast(c, opt, ob, "receiving the optimiser state", &err)) != LS_OK)
        goto fail;
    trainer_set_steps_done(t, h.start);
    char *hosts = NULL;
    if ((st = mpi_attach(c, t, &err)) != LS_OK || (st = gather_hosts(c, &hosts, &err)) != LS_OK)
        goto fail;
    if (c->rank == 0) {
        st = rank0_note(c, s, hosts, h.threads, h.start, &err);
        free(hosts);
        if (st != LS_OK)
            goto fail;
    }
    c->bytes_sent = 0;
    c->combines = 0;
    double t0 = now_s();
    ls_metric metrics[LS_MAX_METRICS];
    size_t n_metrics = 0;
    if (c->rank == 0 && a.no_eval) {
        st = run_steps(s, &err);
    } else if (c->rank == 0) {
        st = ls_session_train(s, 0, a.eval_every, &run_interrupted, metrics, &n_metrics, &err);
    } else {
        for (int64_t step = h.start; step < h.target && st == LS_OK; step++) {
            double loss;
            st = trainer_step(t, &loss, &err);
        }
    }
    double seconds = now_s() - t0;
    if (st != LS_OK)
        goto fail;
    /* Traffic per rank (integers, gathered as bytes). */
    uint64_t mine[2] = { c->bytes_sent, (uint64_t)c->combines }, *all = NULL;
    if (c->rank == 0)
        all = calloc(2 * (size_t)c->ranks, sizeof *all);
    MPI_Request req;
    MPI_Igather(mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    if ((st = mpi_wait(c, &req, 1, "gathering the traffic counts", &err)) != LS_OK) {
        free(all);
        goto fail;
    }
    if (c->rank == 0) {
        ls_session_state ss;
        ls_session_state_get(s, &ss);
        double max_b = 0, sum_b = 0;
        for (int r = 0; r < c->ranks && all != NULL; r++) {
            double b = all[2 * r + 1] > 0 ? (double)all[2 * r] / (double)all[2 * r + 1] : 0;
            sum_b += b;
            if (b > max_b)
                max_b = b;
        }
        free(all);
        int64_t steps = ss.step - h.start;
        double ring = 2.0 * (double)(c->ranks - 1) / (double)c->ranks * (double)c->len * sizeof(float);
        char figures[256] = "not evaluated";
        size_t at = 0;
        for (size_t i = 0; i < n_metrics && at < sizeof figures; i++) {
            int k = snprintf(figures + at, sizeof figures - at, "%s%s %.4f", i ? ", " : "", metrics[i].name,
                             metrics[i].value);
            at += k > 0 ? (size_t)k : 0;
        }
        if (resume)
            printf("resume: run %lld from step %lld%s%s%s, recomputed %lld recorded steps: identical\n",
                   (long long)run_id, (long long)ss.resumed_from, ss.checkpoint_path[0] ? " (" : " (no checkpoint",
                   ss.checkpoint_path, ")", (long long)ss.replayed);
        printf("%s: run %lld, %lld steps, done, final loss %.6f, %s, trajectory %016llx\n", cmd, (long long)run_id,
               (long long)ss.step, ss.loss, figures, (unsigned long long)ss.traj_hash);
        printf("mpi: %d ranks x %lld threads, %lld steps in %.3f s (%.2f ms/step, rank 0 wall); sent per step "
               "per rank: max %.0f bytes, mean %.0f; a ring allreduce of the %zu-float buffer: %.0f\n",
               c->ranks, (long long)h.threads, (long long)steps, seconds,
               steps > 0 ? seconds * 1e3 / (double)steps : 0.0, max_b, c->ranks ? sum_b / c->ranks : 0.0, c->len,
               ring);
        ls_err e2 = { "" };
        if ((st = ls_session_close(s, LS_OK, &e2)) != LS_OK) {
            s = NULL;
            err = e2;
            goto fail;
        }
    } else {
        free(all);
        trainer_destroy(t);
    }
    mpi_ctx_free(c);
    return EXIT_OK;
fail:;
    char fate[512] = "";
    if (c->rank == 0 && s != NULL) {
        /* The record first: an interrupted run is resumable. */
        ls_err e2;
        ls_session_close(s, st, &e2);
        cli_run_fate(a.db, run_id, fate, sizeof fate);
    } else if (c->rank != 0) {
        trainer_destroy(t);
    }
    mpi_die(c, cmd, &err, st, fate, cli_exit_code(st));
}

int main(int argc, char **argv)
{
    int provided = 0;
    /* Only the main thread calls MPI; the pool's workers never do. */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    signal(SIGXFSZ, SIG_IGN);
    mpi_ctx c;
    memset(&c, 0, sizeof c);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.ranks);
    const char *to = getenv("LOCKSTEP_MPI_TIMEOUT");
    c.timeout = to != NULL && atof(to) > 0 ? atof(to) : 60.0;
    const char *kill_at = getenv("LOCKSTEP_MPI_KILL_AT");
    if (kill_at != NULL && strchr(kill_at, ':') != NULL && atoi(kill_at) == c.rank)
        c.kill_at = atoll(strchr(kill_at, ':') + 1);
    run_install_signals();
    const char *cmd = argc >= 2 ? argv[1] : "";
    int rc;
    if (strcmp(cmd, "train") == 0 || strcmp(cmd, "resume") == 0) {
        rc = run_mpi(&c, strcmp(cmd, "resume") == 0, argc - 2, argv + 2);
    } else if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        if (c.rank == 0)
            usage();
        rc = EXIT_OK;
    } else {
        if (c.rank == 0)
            fprintf(stderr, "lockstep-mpi: %s (see lockstep-mpi --help)\n",
                    argc < 2 ? "missing command: train or resume" : "the commands are train and resume");
        rc = EXIT_USAGE;
    }
    fflush(NULL);
    MPI_Finalize();
    return rc;
}
