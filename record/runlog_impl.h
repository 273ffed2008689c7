/* runlog_impl.h — what the record/runlog*.c files share, and nobody else:
 * the handle's layout, the tables created after schema version 1 was
 * frozen, and the helpers every statement goes through (runlog.c lists
 * which file does what). Callers outside record/ include runlog.h only.
 *
 * 64-bit hashes and loss bits are stored in INTEGER columns as the int64 with
 * the same bit pattern, and read back the same way (rl_i64, rl_u64).
 *
 * Errors: every SQLite failure is LS_EDB with "PATH: what: sqlite message"
 * (rl_dberr); nothing here prints.
 */
#ifndef LS_RUNLOG_IMPL_H
#define LS_RUNLOG_IMPL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "record/runlog.h"

#define RL_NOW "strftime('%Y-%m-%dT%H:%M:%fZ','now')"

typedef struct {
    int64_t run;
    ls_step s;
    unsigned char *thash;      /* the step's per-tensor hashes (8 bytes LE each), malloc'ed, or NULL */
    size_t thash_bytes;
} rl_row;

struct runlog {
    sqlite3 *db;
    sqlite3_stmt *ins_step;    /* prepared once: the hot insert */
    void (*commit_hook)(void *);  /* test-only: see runlog_set_commit_hook */
    void *commit_hook_ctx;
    size_t n_buf;              /* rows buffered in buf, not yet committed */
    rl_row buf[RUNLOG_BATCH];
    runlog_identity ident;     /* see runlog_identity */
    int ident_state;
    int schema;                /* the file's user_version (1 or 2); a writer's handle is always 2 */           /* 0: not looked at, 1: read as stored, 2: this file's, made if needed */
    char path[];               /* the file as given, for messages */
};

/* ---- the schema (runlog.c) ------------------------------------------------ */

/* Tables added to schema version 1 without changing it, each created IF NOT
 * EXISTS by the first writer that needs it. */
extern const char rl_sources_schema[];    /* run_sources */
extern const char rl_process_schema[];    /* run_processes, steps_hex, run_settings */
extern const char rl_identity_schema[];   /* identity */
/* The tables of schema version 2 (run_external, run_tensors, step_tensors). */
extern const char rl_v2_schema[];
/* The audits table, with the build column an older one lacks; `what` names
 * the operation in an error. */
ls_status rl_audit_table(runlog *r, const char *what, ls_err *err);

/* ---- statements and transactions (runlog.c) ------------------------------- */

/* uint64 ↔ int64 with the same bits, without implementation-defined casts. */
static inline int64_t rl_i64(uint64_t u)
{
    int64_t i;
    memcpy(&i, &u, sizeof i);
    return i;
}

static inline uint64_t rl_u64(int64_t i)
{
    uint64_t u;
    memcpy(&u, &i, sizeof u);
    return u;
}

ls_status rl_dberr(const runlog *r, const char *what, ls_err *err);
void rl_rollback(runlog *r);
ls_status rl_begin(runlog *r, const char *what, ls_err *err);   /* BEGIN IMMEDIATE, retried on BUSY */
ls_status rl_commit(runlog *r, const char *what, ls_err *err);  /* rolls back when it fails */
ls_status rl_prepare(runlog *r, const char *sql, sqlite3_stmt **st, const char *what, ls_err *err);
/* One prepared write in its own transaction; finalizes stmt. */
ls_status rl_write_one(runlog *r, sqlite3_stmt *stmt, const char *what, ls_err *err);
void rl_bind_text_or_null(sqlite3_stmt *st, int i, const char *s);
void rl_bind_pos_or_null(sqlite3_stmt *st, int i, int64_t v);   /* v <= 0 → NULL */
/* src (may be NULL: "") into dst, cut to cap - 1 bytes. */
void rl_copy(char *dst, size_t cap, const unsigned char *src);

/* ---- liveness (runlog_live.c) --------------------------------------------- */

/* The kernel's id of this boot, or "" when unknown. */
void rl_boot_id(char *out, size_t cap);
/* State letter and start time (clock ticks since boot) of a process: 0, or
 * -1 with errno (ENOENT: gone). */
int rl_proc_stat(long long pid, char *state, unsigned long long *start);
/* Whether the writer of a "running" row is gone, from the row's pid,
 * pid_start and boot_id columns of st. */
int rl_writer_gone(sqlite3_stmt *st, int col_pid, int col_start, int col_boot);

/* ---- run names (runlog_names.c) ------------------------------------------- */

int rl_all_digits(const char *s);   /* 1 for a non-empty string of ASCII digits */
/* name as an error line shows it, at most cap - 1 bytes. */
void rl_escape_name(const char *name, char *out, size_t cap);

#endif
