/* cmd_audit.c — `lockstep audit` and `lockstep reproduce`: prove what a
 * recorded run did, and let anyone with the data check it without the
 * database.
 *
 * audit --record-only checks the record against itself, re-executing
 * nothing: the step rows have no gap from 0, the trajectory hash chain
 * (include/lockstep.h: traj_0 from the canonical config text and step 0's
 * parameter hash, traj_t from traj_{t−1}, param_hash_t and the loss bits of
 * step t) gives every recorded trajectory hash, the stored config hash is
 * XXH3 of the config text and the text reads back canonical, and every
 * registered checkpoint file is sound, of its registered step and state
 * hash, and its parameters hash as the record has them at that step.
 * Milliseconds, and a row edited by hand breaks the chain at its step. A
 * run of a task or model this binary lacks (a program's own,
 * ls_register_task) is checked all the same, except that its config text
 * is hashed but not read back; the verdict's detail says so. A full audit
 * of such a run needs its code: exit 2, no verdict.
 *
 * audit (full) checks the config the same way, then re-executes the run
 * (engine/core/audit.h: the segments between registered checkpoints, each
 * an LS_REOPEN_AUDIT session from its checkpoint, a long one on all the
 * threads, short ones side by side): every
 * recorded step's loss bits, parameter hash and trajectory hash, and at
 * each step with registered checkpoints the files against the recomputed
 * state; the data are checked against the config's data_hash when they
 * load. The first bad step is the one a replay from step 0 names.
 *
 * Either way the verdict goes to the record's `audits` table (runlog.h),
 * one line goes to stdout, and --certificate writes a small JSON document
 * (below) that `lockstep reproduce` checks by training the certificate's
 * config again, with no database. Exit 0 proved/reproduced, 1 at the first
 * difference (the step and both values named), 2 bad input, 130 interrupted.
 *
 * The certificate, one object, keys in this order, every one required:
 *   "lockstep"   version string          "build"     compiler; flags
 *   "config"     canonical config text   "config_hash" XXH3 of it, 16 hex digits
 *   "data_hash"  16 hex digits           "sources"   the run's source lines, or null
 *   "steps"      N (the last step proved, a decimal integer, at most CLI_STEPS_MAX)
 *   "trajectory" traj_N, 16 hex digits   "param_hash" param_hash_N, 16 hex digits
 *   "verdict"    "proved" or "failed"    "audited"   UTC time of the audit
 * Strings are JSON strings; the writer escapes '"', '\\' and control
 * characters (\n, \t, \r, else \u00XX) and the reader takes exactly those
 * escapes back (and \/, \b, \f, \uXXXX below 0x80), nothing more.
 *
 * What reproduce trains is exactly the config the certificate states: the
 * text must parse, read back canonical byte for byte and hash to
 * "config_hash", and its data_hash line must be "data_hash". "sources" are
 * only where the data are: each line one of the task's source keys
 * (ls_task_desc.sources), at most once, with a path; a line naming anything
 * else (lr, seed, a key twice) is refused, since a source line applied as a
 * setting would let a forger change what is trained after the config was
 * checked. --source NAME=PATH moves a source; the data are still checked
 * against data_hash when they load.
 */
#include "tools/tools.h"
#include "tools/escape.h"
#include "tools/commands.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "engine/core/audit.h"
#include "engine/num/dense.h"
#include "record/checkpoint.h"
#include "buildinfo.h"

#define CERT_MAX_BYTES (1u << 20)

/* What one audit found. */
typedef struct {
    int proved;
    int64_t steps;          /* last step proved, -1 when none */
    int64_t first_bad;      /* -1: none, or a finding that is not a step's */
    uint64_t traj, param_hash;
    int64_t checkpoints;    /* checkpoint files checked */
    char detail[1024];
} audit_result;

static void audit_fail(audit_result *r, int64_t step, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void audit_fail(audit_result *r, int64_t step, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
    r->proved = 0;
    r->first_bad = step;
}

/* The stored config hash is XXH3 of the recorded text: 1, or 0 with the
 * finding in r. */
static int audit_config_hash(const runlog_run *run, audit_result *r)
{
    const uint64_t h = hash_bytes(run->config_text, strlen(run->config_text));
    if (h == run->config_hash)
        return 1;
    audit_fail(r, -1, "config hash: recorded %016llx, XXH3 of the recorded config text is %016llx",
               (unsigned long long)run->config_hash, (unsigned long long)h);
    return 0;
}

/* The config as recorded: it parses, reads back to the same canonical
 * text, and the stored hash is XXH3 of that text; 1 then, 0 with a finding
 * in r otherwise. -1 when its task or model is not in this binary (one a
 * program registered: ls_register_task), with the reason in err: that is
 * no finding about the record, so no verdict. */
static int audit_config(const runlog_run *run, ls_config *cfg, audit_result *r, ls_err *err)
{
    ls_err e = { "" };
    char what[64];
    snprintf(what, sizeof what, "run %lld config", (long long)run->id);
    const ls_status st = config_parse_text(cfg, run->config_text, what, &e);
    if (st == LS_ENOTFOUND) {
        ls_fail(err, LS_ENOTFOUND, "%s", e.msg);
        return -1;
    }
    if (st != LS_OK) {
        audit_fail(r, -1, "the recorded config does not parse: %s", e.msg);
        return 0;
    }
    char text[CONFIG_TEXT_MAX];
    config_text(cfg, text, sizeof text);
    if (!audit_config_hash(run, r))
        return 0;
    if (strcmp(text, run->config_text) != 0 || config_hash(cfg) != run->config_hash) {
        audit_fail(r, -1, "config: the recorded text does not read back canonical (hash %016llx, read back "
                   "%016llx)", (unsigned long long)run->config_hash, (unsigned long long)config_hash(cfg));
        return 0;
    }
    return 1;
}

/* --record-only: the rows, their hash chain and the checkpoint files. */
static ls_status audit_record(runlog *db, const runlog_run *run, audit_result *r, ls_err *err)
{
    ls_config cfg;
    ls_err unread = { "" };
    const int cfg_ok = audit_config(run, &cfg, r, &unread);
    /* A task or model this binary lacks (cfg_ok < 0): the chain and the
     * files need none of its code, only the text, whose hash is checked
     * here; the text is not read back (the detail says so). */
    if (cfg_ok == 0 || (cfg_ok < 0 && !audit_config_hash(run, r)))
        return LS_OK;
    ls_step *rows;
    size_t n;
    ls_status st = runlog_read_steps(db, run->id, &rows, &n, err);
    if (st != LS_OK)
        return st;
    if (n == 0) {
        free(rows);
        return ls_fail(err, LS_EINVAL, "run %lld '%s' has no recorded steps: nothing to audit", (long long)run->id,
                       ESC_NAME(run->name));
    }
    uint64_t traj = 0;
    for (size_t i = 0; i < n && r->proved; i++) {
        const ls_step *row = &rows[i];
        if (row->step != (int64_t)i) {
            audit_fail(r, (int64_t)i, "step %zu: no row (the rows go on at step %lld)", i, (long long)row->step);
            break;
        }
        if (i == 0 && row->has_loss) {
            audit_fail(r, 0, "step 0: the row has a loss (%016llx); step 0 has none",
                       (unsigned long long)row->loss_bits);
            break;
        }
        if (i > 0 && !row->has_loss) {
            audit_fail(r, (int64_t)i, "step %zu: the row has no loss", i);
            break;
        }
        const uint64_t want = i == 0 ? hash_traj0(run->config_text, row->param_hash)
                                     : hash_traj_next(traj, row->param_hash, hash_bits_to_double(row->loss_bits));
        if (want != row->traj_hash) {
            if (i == 0)
                audit_fail(r, 0, "step 0: recorded trajectory %016llx; the config text and the recorded param hash "
                           "%016llx give %016llx", (unsigned long long)row->traj_hash,
                           (unsigned long long)row->param_hash, (unsigned long long)want);
            else
                audit_fail(r, (int64_t)i, "step %zu: recorded trajectory %016llx; the chain gives %016llx from "
                           "trajectory %016llx, the recorded param hash %016llx and loss bits %016llx (%.17g)", i,
                           (unsigned long long)row->traj_hash, (unsigned long long)want, (unsigned long long)traj,
                           (unsigned long long)row->param_hash, (unsigned long long)row->loss_bits,
                           hash_bits_to_double(row->loss_bits));
            break;
        }
        traj = want;
        r->steps = (int64_t)i;
        r->traj = want;
        r->param_hash = row->param_hash;
    }
    runlog_ckpt *ck = NULL;
    size_t n_ck = 0;
    if (r->proved && (st = runlog_checkpoints(db, run->id, &ck, &n_ck, err)) != LS_OK) {
        free(rows);
        return st;
    }
    const int64_t rows_proved = r->steps;
    for (size_t i = 0; i < n_ck && r->proved; i++) {
        const runlog_ckpt *k = &ck[i];
        if (k->step < 0 || (size_t)k->step >= n) {
            audit_fail(r, k->step, "checkpoint %s is registered at step %lld, which has no row", k->path,
                       (long long)k->step);
            break;
        }
        size_t len;
        unsigned char *img;
        ckpt_view v;
        ls_err why = { "" };
        /* The checked read (record/checkpoint.h): a FIFO or a device in the
         * checkpoint's place is named as such, never waited on or read on. */
        const ls_status rs = ckpt_read_file(k->path, &img, &len, &why);
        if (rs != LS_OK) {
            if (rs == LS_ENOTFOUND)
                audit_fail(r, k->step, "step %lld: checkpoint %s: missing", (long long)k->step, k->path);
            else
                audit_fail(r, k->step, "step %lld: checkpoint %s", (long long)k->step, why.msg);
            break;
        }
        if (ckpt_parse_any(img, len, k->path, &v, &why) != LS_OK) {
            audit_fail(r, k->step, "step %lld: %s", (long long)k->step, why.msg);
        } else if (v.step != k->step || v.checksum != k->state_hash || v.config_hash != run->config_hash) {
            audit_fail(r, k->step, "step %lld: checkpoint %s holds step %lld, config %016llx, state hash %016llx; "
                       "registered: step %lld, config %016llx, state hash %016llx", (long long)k->step, k->path,
                       (long long)v.step, (unsigned long long)v.config_hash, (unsigned long long)v.checksum,
                       (long long)k->step, (unsigned long long)run->config_hash,
                       (unsigned long long)k->state_hash);
        } else {
            /* Its parameters must be the record's at its step. */
            float *p = v.n_params > 0 && v.n_params < SIZE_MAX / sizeof(float) ? malloc((size_t)v.n_params * sizeof(float))
                                                                                : NULL;
            if (p == NULL && v.n_params > 0) {
                free(img);
                runlog_checkpoints_free(ck, n_ck);
                free(rows);
                return ls_fail(err, LS_ENOMEM, "%s: out of memory", k->path);
            }
            for (size_t j = 0; j < (size_t)v.n_params; j++) {
                const unsigned char *b = v.params + 4 * j;
                uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
                memcpy(&p[j], &u, sizeof u);
            }
            const uint64_t ph = hash_params(p, (size_t)v.n_params);
            free(p);
            if (ph != rows[k->step].param_hash)
                audit_fail(r, k->step, "step %lld: checkpoint %s: its parameters hash to %016llx, the record has "
                           "%016llx", (long long)k->step, k->path, (unsigned long long)ph,
                           (unsigned long long)rows[k->step].param_hash);
            else
                r->checkpoints++;
        }
        free(img);
    }
    runlog_checkpoints_free(ck, n_ck);
    free(rows);
    if (!r->proved && r->first_bad >= 0 && r->first_bad <= rows_proved)
        r->steps = r->first_bad - 1;   /* a checkpoint's step is proved only with its file */
    if (r->proved)
        snprintf(r->detail, sizeof r->detail, "record only: steps 0..%lld chained, config hash, %lld checkpoint "
                 "file%s%s%s", (long long)r->steps, (long long)r->checkpoints, r->checkpoints == 1 ? "" : "s",
                 cfg_ok < 0 ? "; the config text not read back: " : "", cfg_ok < 0 ? unread.msg : "");
    return LS_OK;
}

/* The full audit: the config, then every step re-executed (engine/core/audit.h:
 * the segments between checkpoints on the threads as audit.c shares them). */
static ls_status audit_full(const char *db_path, const runlog_run *run, int threads, audit_result *r, int *threads_used,
                            ls_err *err)
{
    ls_config cfg;
    const int cfg_ok = audit_config(run, &cfg, r, err);
    if (cfg_ok < 0)
        return LS_ENOTFOUND;
    if (cfg_ok == 0)
        return LS_OK;
    audit_report rep;
    ls_status st = audit_replay(db_path, run->id, threads, &run_interrupted, &rep, err);
    if (st != LS_OK)
        return st;
    *threads_used = rep.threads;
    snprintf(r->detail, sizeof r->detail, "%s", rep.detail);
    r->proved = rep.proved;
    r->steps = rep.steps;
    r->first_bad = rep.first_bad;
    r->traj = rep.traj_hash;
    r->param_hash = rep.param_hash;
    r->checkpoints = rep.checkpoints;
    return LS_OK;
}

/* ---- the certificate ------------------------------------------------------------ */

static void utc_now(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void cert_write(FILE *f, const runlog_run *run, uint64_t data_hash, const audit_result *r)
{
    char when[32];
    utc_now(when, sizeof when);
    fputs("{\n  \"lockstep\": ", f);
    esc_json(f, LS_VERSION_STRING);
    fputs(",\n  \"build\": ", f);
    esc_json(f, LS_BUILD_CC "; " LS_BUILD_CFLAGS);
    fputs(",\n  \"config\": ", f);
    esc_json(f, run->config_text);
    fprintf(f, ",\n  \"config_hash\": \"%016llx\",\n  \"data_hash\": \"%016llx\",\n  \"sources\": ",
            (unsigned long long)run->config_hash, (unsigned long long)data_hash);
    if (run->source_text != NULL && run->source_text[0])
        esc_json(f, run->source_text);
    else
        fputs("null", f);
    fprintf(f, ",\n  \"steps\": %lld,\n  \"trajectory\": \"%016llx\",\n  \"param_hash\": \"%016llx\",\n"
            "  \"verdict\": \"%s\",\n  \"audited\": ", (long long)r->steps, (unsigned long long)r->traj,
            (unsigned long long)r->param_hash, r->proved ? "proved" : "failed");
    esc_json(f, when);
    fputs("\n}\n", f);
}

/* ---- audit ---------------------------------------------------------------------- */

typedef struct {
    int record_only;
    const char *cert;
} audit_flags;

static ls_status audit_flag(void *ctx, const flag_spec *f, const char *value, ls_err *err)
{
    audit_flags *af = ctx;
    (void)err;
    if (strcmp(f->name, "--record-only") == 0)
        af->record_only = 1;
    else
        af->cert = value;   /* --certificate */
    return LS_OK;
}

int cmd_audit(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    audit_flags af = { 0, NULL };
    ls_status st = cli_parse_cmd("audit", argc, argv, CLI_DB | CLI_THREADS, 1, audit_flag, &af, &a, &err);
    const int record_only = af.record_only;
    const char *cert = af.cert;
    if (st == LS_OK && !a.help && a.n_positional != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st != LS_OK) {
        cli_error("audit", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        command_usage(command_find("audit"), stdout);
        return EXIT_OK;
    }
    runlog *db;
    runlog_run run;
    int rc = cli_open_run("audit", a.db, a.positional[0], &db, &run);
    if (rc != EXIT_OK)
        return rc;
    if (run.external) {
        /* Its hashes are of another framework's tensors: lockstep can
         * neither re-execute it nor rebuild its chain from a config. */
        fprintf(stderr, "lockstep audit: run %lld was recorded by %s, not trained by lockstep: nothing to "
                "re-execute (verify compares it with another run)\n", (long long)run.id, run.framework);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    cli_out out;
    memset(&out, 0, sizeof out);
    if (cert != NULL) {
        /* A certificate states the config's data hash, and `reproduce`
         * trains the config again: both need the task's and model's code. */
        ls_config cfg;
        ls_err e = { "" };
        if (config_parse_text(&cfg, run.config_text, "the run's config", &e) == LS_ENOTFOUND)
            st = ls_fail(&err, LS_ENOTFOUND, "--certificate: %s", e.msg);
    }
    if (st != LS_OK || (cert != NULL && (st = cli_out_open(&out, "--certificate", cert, a.db, db, &err)) != LS_OK)) {
        cli_error("audit", &err, st);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    run_install_signals();
    audit_result r;
    memset(&r, 0, sizeof r);
    r.proved = 1;
    r.steps = -1;
    r.first_bad = -1;
    int threads = 0;   /* a record-only audit re-executes nothing: no thread count, stored NULL */
    if (record_only)
        st = audit_record(db, &run, &r, &err);
    else
        st = audit_full(a.db, &run, a.threads[0], &r, &threads, &err);
    if (st != LS_OK) {
        cli_error("audit", &err, st);
        if (cert != NULL)
            cli_out_abort(&out);
        runlog_run_free(&run);
        runlog_close(db);
        return cli_exit_code(st) == EXIT_DIFFER ? EXIT_USAGE : cli_exit_code(st);
    }
    runlog_audit row;
    memset(&row, 0, sizeof row);
    snprintf(row.version, sizeof row.version, "%s", LS_ENGINE_VERSION);
    snprintf(row.build, sizeof row.build, "%s; %s; simd %s%s%s", LS_BUILD_CC, LS_BUILD_CFLAGS, dense_simd_name(),
             LS_BUILD_GIT[0] ? "; git " : "", LS_BUILD_GIT);
    gethostname(row.host, sizeof row.host - 1);
    row.threads = threads;
    snprintf(row.mode, sizeof row.mode, "%s", record_only ? "record-only" : "full");
    row.steps = r.steps;
    row.proved = r.proved;
    row.first_bad = r.first_bad;
    snprintf(row.detail, sizeof row.detail, "%s", r.detail);
    if (r.proved)
        printf("audit: run %lld '%s' proved: %s, trajectory %016llx\n", (long long)run.id, ESC_NAME(run.name), r.detail,
               (unsigned long long)r.traj);
    else if (r.first_bad >= 0)
        printf("audit: run %lld '%s' failed at step %lld (steps 0..%lld proved): %s\n", (long long)run.id, ESC_NAME(run.name),
               (long long)r.first_bad, (long long)r.steps, r.detail);
    else
        printf("audit: run %lld '%s' failed: %s\n", (long long)run.id, ESC_NAME(run.name), r.detail);
    rc = r.proved ? EXIT_OK : EXIT_DIFFER;
    if ((st = runlog_audit_add(db, run.id, &row, &err)) != LS_OK) {
        cli_error("audit", &err, st);
        rc = EXIT_USAGE;
    }
    if (cert != NULL && rc != EXIT_USAGE) {
        ls_config cfg;
        ls_err e2 = { "" };
        uint64_t data_hash = config_parse_text(&cfg, run.config_text, "config", &e2) == LS_OK ? cfg.data_hash : 0;
        cert_write(out.f, &run, data_hash, &r);
        if ((st = cli_out_commit(&out, &err)) != LS_OK) {
            cli_error("audit", &err, st);
            rc = EXIT_USAGE;
        }
    } else if (cert != NULL) {
        cli_out_abort(&out);
    }
    runlog_run_free(&run);
    runlog_close(db);
    return rc;
}

/* ---- reproduce ------------------------------------------------------------------ */

typedef struct {
    char *lockstep, *build, *config, *config_hash, *data_hash, *sources, *trajectory, *param_hash, *verdict,
        *audited;
    int64_t steps;
    int has_steps;
} cert_doc;

static void cert_free(cert_doc *c)
{
    free(c->lockstep);
    free(c->build);
    free(c->config);
    free(c->config_hash);
    free(c->data_hash);
    free(c->sources);
    free(c->trajectory);
    free(c->param_hash);
    free(c->verdict);
    free(c->audited);
}

typedef struct {
    const char *p, *end, *path;
} jreader;

static void j_ws(jreader *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                                                                        : -1;
}

/* A JSON string at j->p into *out (malloc'ed). field names it in errors. */
static ls_status j_string(jreader *j, const char *field, char **out, ls_err *err)
{
    if (j->p >= j->end || *j->p != '"')
        return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": a string expected", j->path, field);
    j->p++;
    size_t cap = 64, n = 0;
    char *s = malloc(cap);
    if (s == NULL)
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", j->path);
    for (;;) {
        if (j->p >= j->end) {
            free(s);
            return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": the string does not end", j->path, field);
        }
        unsigned char c = (unsigned char)*j->p++;
        if (c == '"')
            break;
        if (c < 0x20) {
            free(s);
            return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": a control character in a string", j->path, field);
        }
        if (c == '\\') {
            if (j->p >= j->end) {
                free(s);
                return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": the string does not end", j->path, field);
            }
            char e = *j->p++;
            switch (e) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case '/': c = '/'; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    int h = j->p < j->end ? hexval(*j->p++) : -1;
                    if (h < 0) {
                        free(s);
                        return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": a bad \\u escape", j->path, field);
                    }
                    v = v * 16 + h;
                }
                if (v == 0 || v >= 0x80) {
                    free(s);
                    return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": \\u%04x is not taken here", j->path, field,
                                   (unsigned)v);
                }
                c = (unsigned char)v;
                break;
            }
            default:
                free(s);
                return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": a bad escape \\%c", j->path, field, e);
            }
        }
        if (n + 1 >= cap) {
            char *b = realloc(s, cap * 2);
            if (b == NULL) {
                free(s);
                return ls_fail(err, LS_ENOMEM, "%s: out of memory", j->path);
            }
            s = b;
            cap *= 2;
        }
        s[n++] = (char)c;
    }
    s[n] = '\0';
    *out = s;
    return LS_OK;
}

/* Exactly the document cert_write writes (any whitespace between tokens,
 * keys in any order, each once, none unknown). */
static ls_status cert_parse(const char *text, size_t len, const char *path, cert_doc *c, ls_err *err)
{
    memset(c, 0, sizeof *c);
    if (strlen(text) != len)
        return ls_fail(err, LS_EFORMAT, "%s: a NUL byte in the certificate", path);
    jreader j = { text, text + len, path };
    enum { F_SOURCES = 5, F_STEPS = 6, N_FIELDS = 11 };
    static const char *const fields[N_FIELDS] = { "lockstep", "build", "config", "config_hash", "data_hash",
                                                  "sources", "steps", "trajectory", "param_hash", "verdict",
                                                  "audited" };
    char **slots[N_FIELDS] = { &c->lockstep, &c->build, &c->config, &c->config_hash, &c->data_hash, &c->sources,
                               NULL, &c->trajectory, &c->param_hash, &c->verdict, &c->audited };
    int seen[N_FIELDS] = { 0 };
    j_ws(&j);
    if (j.p >= j.end || *j.p != '{')
        return ls_fail(err, LS_EFORMAT, "%s: not a certificate (a JSON object expected)", path);
    j.p++;
    ls_status st;
    for (;;) {
        j_ws(&j);
        char *key;
        if ((st = j_string(&j, "(a key)", &key, err)) != LS_OK)
            return st;
        size_t f;
        for (f = 0; f < N_FIELDS && strcmp(key, fields[f]) != 0; f++)
            ;
        if (f == N_FIELDS || seen[f]) {
            st = ls_fail(err, LS_EFORMAT, "%s: field \"%.40s\": %s", path, key,
                         f == N_FIELDS ? "unknown" : "given twice");
            free(key);
            return st;
        }
        free(key);
        seen[f] = 1;
        j_ws(&j);
        if (j.p >= j.end || *j.p != ':')
            return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": ':' expected", path, fields[f]);
        j.p++;
        j_ws(&j);
        if (f == F_STEPS) {
            char *e;
            errno = 0;
            if (j.p >= j.end || *j.p < '0' || *j.p > '9')
                return ls_fail(err, LS_EFORMAT, "%s: field \"steps\": a non-negative integer expected", path);
            long long v = strtoll(j.p, &e, 10);
            if (errno != 0 || e > j.end || v < 1 || (*j.p == '0' && e - j.p > 1))
                return ls_fail(err, LS_EFORMAT, "%s: field \"steps\": a positive integer expected", path);
            /* The limit train's --steps has: a certificate asks for no more work. */
            if (v > CLI_STEPS_MAX)
                return ls_fail(err, LS_EFORMAT, "%s: field \"steps\": %lld is more than %lld", path, v,
                               (long long)CLI_STEPS_MAX);
            c->steps = v;
            c->has_steps = 1;
            j.p = e;
        } else if (f == F_SOURCES && j.end - j.p >= 4 && strncmp(j.p, "null", 4) == 0) {
            j.p += 4;
        } else if ((st = j_string(&j, fields[f], slots[f], err)) != LS_OK) {
            return st;
        }
        j_ws(&j);
        if (j.p < j.end && *j.p == ',') {
            j.p++;
            continue;
        }
        if (j.p < j.end && *j.p == '}') {
            j.p++;
            break;
        }
        return ls_fail(err, LS_EFORMAT, "%s: after field \"%s\": ',' or '}' expected", path, fields[f]);
    }
    j_ws(&j);
    if (j.p != j.end)
        return ls_fail(err, LS_EFORMAT, "%s: something after the certificate's closing '}'", path);
    for (size_t f = 0; f < N_FIELDS; f++)
        if (!seen[f])
            return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": missing", path, fields[f]);
    return LS_OK;
}

/* 16 lowercase hex digits. */
static ls_status parse_hex64(const char *path, const char *field, const char *s, uint64_t *out, ls_err *err)
{
    uint64_t v = 0;
    size_t n = strlen(s);
    for (size_t i = 0; i < n && n == 16; i++) {
        int h = hexval(s[i]);
        if (h < 0 || (s[i] >= 'A' && s[i] <= 'F'))
            n = 0;
        else
            v = v << 4 | (uint64_t)h;
    }
    if (n != 16)
        return ls_fail(err, LS_EFORMAT, "%s: field \"%s\": 16 lowercase hex digits expected, not \"%.40s\"", path,
                       field, s);
    *out = v;
    return LS_OK;
}

/* The certificate's text, NUL-terminated (malloc'ed in *text). A
 * certificate is small: a regular file (base/file.h opens it without
 * blocking, so a FIFO or a device is refused, not waited on) of at most
 * CERT_MAX_BYTES, read no further than one byte past that. */
static ls_status cert_read(const char *path, char **text, size_t *len, ls_err *err)
{
    int fd;
    size_t size;
    *text = NULL;
    ls_status st = file_open_regular(path, &fd, &size, err);
    if (st != LS_OK)
        return st;
    if (size > CERT_MAX_BYTES) {
        close(fd);
        return ls_fail(err, LS_EFORMAT, "%s: %zu bytes; a certificate is at most %u", path, size,
                       (unsigned)CERT_MAX_BYTES);
    }
    char *buf = malloc((size_t)CERT_MAX_BYTES + 2);
    if (buf == NULL) {
        close(fd);
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
    }
    size_t n = 0;
    while (n <= CERT_MAX_BYTES) {
        ssize_t got = read(fd, buf + n, (size_t)CERT_MAX_BYTES + 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            st = ls_fail(err, LS_EIO, "%s: %s", path, strerror(errno));
            break;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (st == LS_OK && n > CERT_MAX_BYTES)   /* it grew after the size was read */
        st = ls_fail(err, LS_EFORMAT, "%s: more than %u bytes; a certificate is at most that", path,
                     (unsigned)CERT_MAX_BYTES);
    if (st != LS_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return LS_OK;
}

/* reproduce's own flag: --source NAME=PATH, repeatable (one more than a
 * task can have is kept, so too many is refused by name, not dropped). */
typedef struct {
    const char *src[LS_MAX_SOURCES + 1];
    int n;
} reproduce_flags;

static ls_status reproduce_flag(void *ctx, const flag_spec *f, const char *value, ls_err *err)
{
    reproduce_flags *rf = ctx;
    (void)f;
    if (rf->n > LS_MAX_SOURCES)
        return ls_fail(err, LS_EINVAL, "--source: more than %d given; a task has at most %d sources",
                       LS_MAX_SOURCES + 1, LS_MAX_SOURCES);
    rf->src[rf->n++] = value;
    return LS_OK;
}

/* Sets one source of cfg from "NAME=PATH" (len bytes at line; what names
 * where it comes from in errors: "CERT: field \"sources\"", "--source").
 * NAME must be one of the task's source keys, exactly (a setting is never
 * taken here), not yet in *set (a bit per source slot), and PATH not
 * empty. */
static ls_status source_set(ls_config *cfg, const char *line, size_t len, const char *what, uint32_t *set,
                            ls_err *err)
{
    const ls_task_desc *t = cfg->task_desc;
    const char *eq = memchr(line, '=', len);
    size_t nl = eq != NULL ? (size_t)(eq - line) : len;
    size_t slot;
    for (slot = 0; slot < t->n_sources; slot++)
        if (strlen(t->sources[slot].name) == nl && memcmp(t->sources[slot].name, line, nl) == 0)
            break;
    if (eq == NULL || nl == 0)
        return ls_fail(err, LS_EFORMAT, "%s: '%.*s' is not NAME=PATH", what, (int)(len < 80 ? len : 80), line);
    /* The engine's own source, the starting weights (--init), after the task's. */
    const int init = slot == t->n_sources && nl == 4 && memcmp(line, "init", 4) == 0;
    const char *name = init ? "init" : slot < t->n_sources ? t->sources[slot].name : "";
    if (slot == t->n_sources && !init) {
        char names[256] = "";
        size_t at = 0;
        for (size_t i = 0; i < t->n_sources && at < sizeof names; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", t->sources[i].name);
        return ls_fail(err, LS_EFORMAT, "%s: '%.*s' is not a source of task %s (%s%s): sources say where data "
                       "are, never settings", what, (int)(nl < 64 ? nl : 64), line, cfg->task,
                       t->n_sources ? "its sources: " : "it has none", names);
    }
    if (*set & (1u << slot))
        return ls_fail(err, LS_EFORMAT, "%s: '%s' given twice", what, name);
    if (len - nl - 1 == 0)
        return ls_fail(err, LS_EFORMAT, "%s: '%s' has no path", what, name);
    if (len - nl - 1 >= LS_SOURCE_MAX)
        return ls_fail(err, LS_EFORMAT, "%s: '%s': the path is longer than %d bytes", what, name,
                       LS_SOURCE_MAX - 1);
    char path[LS_SOURCE_MAX];
    memcpy(path, eq + 1, len - nl - 1);
    path[len - nl - 1] = '\0';
    ls_err e = { "" };
    if (config_set(cfg, name, path, 0, &e) != LS_OK)
        return ls_fail(err, LS_EFORMAT, "%s: %s", what, e.msg);
    *set |= 1u << slot;
    return LS_OK;
}

/* The config to train, exactly the certificate's: parsed, canonical byte
 * for byte, of the stated hashes; then the data's locations, from the
 * certificate's sources and the --source flags (which may move one of
 * them, each at most once). */
static ls_status cert_config(const cert_doc *c, const char *path, const reproduce_flags *rf, ls_config *cfg,
                             ls_err *err)
{
    uint64_t want_cfg = 0, want_data = 0;
    ls_status st;
    if ((st = parse_hex64(path, "config_hash", c->config_hash, &want_cfg, err)) != LS_OK ||
        (st = parse_hex64(path, "data_hash", c->data_hash, &want_data, err)) != LS_OK)
        return st;
    ls_err e = { "" };
    if (config_parse_text(cfg, c->config, "config", &e) != LS_OK)
        return ls_fail(err, LS_EFORMAT, "%s: field \"config\": %s", path, e.msg);
    char canon[CONFIG_TEXT_MAX];
    if (config_text(cfg, canon, sizeof canon) >= sizeof canon || strcmp(canon, c->config) != 0)
        return ls_fail(err, LS_EFORMAT, "%s: field \"config\": not a canonical config text (a key twice, out of "
                       "order, or not the canonical form of its value)", path);
    if (config_hash(cfg) != want_cfg)
        return ls_fail(err, LS_EFORMAT, "%s: field \"config_hash\": %016llx, the config's is %016llx", path,
                       (unsigned long long)want_cfg, (unsigned long long)config_hash(cfg));
    if (cfg->data_hash != want_data)
        return ls_fail(err, LS_EFORMAT, "%s: field \"data_hash\": %016llx, the config says %016llx", path,
                       (unsigned long long)want_data, (unsigned long long)cfg->data_hash);
    char what[PATH_MAX + 32];
    snprintf(what, sizeof what, "%s: field \"sources\"", path);
    uint32_t in_cert = 0, in_flags = 0;
    for (const char *p = c->sources; p != NULL && *p;) {
        size_t ll = strcspn(p, "\n");
        if ((st = source_set(cfg, p, ll, what, &in_cert, err)) != LS_OK)
            return st;
        p += ll + (p[ll] == '\n');
    }
    for (int i = 0; i < rf->n; i++)
        if ((st = source_set(cfg, rf->src[i], strlen(rf->src[i]), "--source", &in_flags, err)) != LS_OK)
            return st;
    /* Sources are not config: the text trained is still the one checked. */
    if (config_text(cfg, canon, sizeof canon) >= sizeof canon || strcmp(canon, c->config) != 0)
        return ls_fail(err, LS_EFORMAT, "%s: field \"sources\": changes the config", path);
    return LS_OK;
}

int cmd_reproduce(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    reproduce_flags rf = { { NULL }, 0 };
    ls_status st = cli_parse_cmd("reproduce", argc, argv, CLI_THREADS, 1, reproduce_flag, &rf, &a, &err);
    if (st == LS_OK && !a.help && a.n_positional != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one certificate file");
    if (st != LS_OK) {
        cli_error("reproduce", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        command_usage(command_find("reproduce"), stdout);
        return EXIT_OK;
    }
    const char *path = a.positional[0];
    char *text;
    size_t len = 0;
    if ((st = cert_read(path, &text, &len, &err)) != LS_OK) {
        cli_error("reproduce", &err, st);
        return EXIT_USAGE;
    }
    cert_doc c;
    st = cert_parse(text, len, path, &c, &err);
    free(text);
    uint64_t want_traj = 0, want_ph = 0;
    ls_config cfg;
    if (st == LS_OK && (st = parse_hex64(path, "trajectory", c.trajectory, &want_traj, &err)) == LS_OK &&
        (st = parse_hex64(path, "param_hash", c.param_hash, &want_ph, &err)) == LS_OK) {
        if (strcmp(c.verdict, "proved") != 0 && strcmp(c.verdict, "failed") != 0)
            st = ls_fail(&err, LS_EFORMAT, "%s: field \"verdict\": \"proved\" or \"failed\" expected", path);
    }
    if (st == LS_OK)
        st = cert_config(&c, path, &rf, &cfg, &err);
    if (st != LS_OK) {
        cli_error("reproduce", &err, st);
        cert_free(&c);
        return EXIT_USAGE;
    }
    run_install_signals();
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = a.threads[0], .db = NULL, .steps = c.steps };
    ls_session *s;
    int rc = EXIT_OK;
    if ((st = ls_session_open(&s, &cfg, &o, &err)) != LS_OK) {
        if (st == LS_EMISMATCH)
            fprintf(stderr, "lockstep reproduce: differs: %s\n", err.msg);
        else
            cli_error("reproduce", &err, st);
        cert_free(&c);
        return cli_exit_code(st);
    }
    ls_session_state ss;
    ls_session_state_get(s, &ss);
    while (st == LS_OK && ss.step < c.steps) {
        if (run_interrupted)
            st = ls_fail(&err, LS_EINTR, "interrupted after step %lld", (long long)ss.step);
        else if ((st = ls_session_step(s, NULL, &err)) == LS_OK)
            ls_session_state_get(s, &ss);
    }
    ls_session_close(s, st, NULL);
    if (st == LS_EDIVERGED) {
        printf("reproduce: differs: %s (the certificate has %lld steps, trajectory %016llx)\n", err.msg,
               (long long)c.steps, (unsigned long long)want_traj);
        rc = EXIT_DIFFER;
    } else if (st != LS_OK) {
        cli_error("reproduce", &err, st);
        rc = cli_exit_code(st) == EXIT_DIFFER ? EXIT_USAGE : cli_exit_code(st);
    } else if (ss.traj_hash == want_traj && ss.param_hash == want_ph) {
        printf("reproduce: reproduced: steps 0..%lld at %d thread%s, trajectory %016llx\n", (long long)ss.step,
               ss.threads, ss.threads == 1 ? "" : "s", (unsigned long long)ss.traj_hash);
    } else {
        printf("reproduce: differs: after step %lld the certificate has trajectory %016llx (param hash %016llx), "
               "this machine computes %016llx (param hash %016llx)\n", (long long)ss.step,
               (unsigned long long)want_traj, (unsigned long long)want_ph, (unsigned long long)ss.traj_hash,
               (unsigned long long)ss.param_hash);
        rc = EXIT_DIFFER;
    }
    cert_free(&c);
    return rc;
}
