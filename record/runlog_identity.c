/* runlog_identity.c — the database's own identity (runlog.h, Identity).
 *
 * Identity (runlog.h): one row in `identity`, checked against the file's
 * device and inode when a writer first asks for it (runlog_identity), not at
 * open: a reader (show, export) must leave a copied file as it is. The check
 * is a read; only a database without an identity, or a copy, takes the
 * write lock, and it decides again under the lock, so processes writing a
 * new copy at once agree on one identity.
 * Device and inode, not the path: a path can be reused by another file and
 * one file can have several paths, but two files that exist at once never
 * share both numbers. A file whose numbers change without being copied (a
 * move across file systems, a file system that renumbers) only gets a new
 * identity too: its old checkpoints stay loadable (an ancestor's) and are
 * no longer deleted by it — a leak, never a loss.
 */
#include "record/runlog_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static int rl_hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* 32 lowercase hex digits at s into id; 0 on success. */
static int rl_unhex(const char *s, unsigned char *id)
{
    for (int i = 0; i < RUNLOG_ID_BYTES; i++) {
        int hi = rl_hexval((unsigned char)s[2 * i]), lo = hi < 0 ? -1 : rl_hexval((unsigned char)s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        id[i] = (unsigned char)(hi * 16 + lo);
    }
    return 0;
}

static void rl_tohex(const unsigned char *id, char *out)
{
    for (int i = 0; i < RUNLOG_ID_BYTES; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* 128 bits from the kernel's generator: getrandom, else /dev/urandom. An
 * all-zero draw (nobody's identity, record/checkpoint.h) is drawn again. */
static int rl_random_id(unsigned char *id)
{
    for (int tries = 0; tries < 4; tries++) {
        size_t got = 0;
        while (got < RUNLOG_ID_BYTES) {
            ssize_t k = getrandom(id + got, RUNLOG_ID_BYTES - got, 0);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        if (got < RUNLOG_ID_BYTES) {
            int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                return -1;
            got = 0;
            while (got < RUNLOG_ID_BYTES) {
                ssize_t k = read(fd, id + got, RUNLOG_ID_BYTES - got);
                if (k < 0 && errno == EINTR)
                    continue;
                if (k <= 0)
                    break;
                got += (size_t)k;
            }
            close(fd);
            if (got < RUNLOG_ID_BYTES)
                return -1;
        }
        for (int i = 0; i < RUNLOG_ID_BYTES; i++)
            if (id[i] != 0)
                return 0;
    }
    return -1;
}

/* Reads the identity row into r->ident when it belongs to this file
 * (dev, ino): 1; 0 when there is none or it is another file's (*old_hex,
 * *old_anc: the row's id and ancestors, "" when none); <0 on a database
 * error other than a missing table. */
static int rl_identity_read(runlog *r, int any_file, uint64_t dev, uint64_t ino, char *old_hex, size_t hex_cap,
                            char *old_anc, size_t anc_cap)
{
    old_hex[0] = 0;
    old_anc[0] = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT id, dev, ino, ancestors FROM identity WHERE one = 1", -1, &st, NULL) !=
        SQLITE_OK)
        return 0;   /* no table yet: a database made before identities */
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        const char *anc = (const char *)sqlite3_column_text(st, 3);
        rl_copy(old_hex, hex_cap, (const unsigned char *)id);
        rl_copy(old_anc, anc_cap, (const unsigned char *)anc);
        int good = id != NULL && strlen(id) == 2 * RUNLOG_ID_BYTES && rl_unhex(id, r->ident.id) == 0;
        if (!good)
            old_hex[0] = 0;   /* unreadable: not an ancestor worth keeping */
        if (good && (any_file || (rl_u64(sqlite3_column_int64(st, 1)) == dev &&
                                  rl_u64(sqlite3_column_int64(st, 2)) == ino))) {
            found = 1;
            rl_copy(r->ident.hex, sizeof r->ident.hex, (const unsigned char *)id);
            r->ident.n_ancestors = 0;
            const char *p = anc != NULL ? anc : "";
            while (*p && r->ident.n_ancestors < RUNLOG_MAX_ANCESTORS) {
                while (*p == ' ')
                    p++;
                size_t n = strcspn(p, " ");
                if (n == 2 * RUNLOG_ID_BYTES && rl_unhex(p, r->ident.ancestors[r->ident.n_ancestors]) == 0)
                    r->ident.n_ancestors++;
                p += n;
            }
        }
    } else if (rc != SQLITE_DONE) {
        found = -1;
    }
    sqlite3_finalize(st);
    return found;
}

static ls_status rl_identity(runlog *r, ls_err *err)
{
    struct stat sb;
    if (stat(r->path, &sb) != 0)
        return ls_fail(err, LS_EIO, "%s: %s", r->path, strerror(errno));
    const uint64_t dev = (uint64_t)sb.st_dev, ino = (uint64_t)sb.st_ino;
    char old_hex[2 * RUNLOG_ID_BYTES + 1], old_anc[RUNLOG_MAX_ANCESTORS * (2 * RUNLOG_ID_BYTES + 1) + 1];
    int found = rl_identity_read(r, 0, dev, ino, old_hex, sizeof old_hex, old_anc, sizeof old_anc);
    if (found == 1)
        return LS_OK;
    /* None, or another file's: decide again under the write lock. */
    ls_status st = rl_begin(r, "giving the database an identity", err);
    if (st != LS_OK)
        return st;
    if (sqlite3_exec(r->db, rl_identity_schema, NULL, NULL, NULL) != SQLITE_OK) {
        st = rl_dberr(r, "giving the database an identity", err);
        rl_rollback(r);
        return st;
    }
    found = rl_identity_read(r, 0, dev, ino, old_hex, sizeof old_hex, old_anc, sizeof old_anc);
    if (found == 1) {
        rl_rollback(r);   /* another process did it first; the table existed or is kept by it */
        return LS_OK;
    }
    if (found < 0) {
        st = rl_dberr(r, "reading the database identity", err);
        rl_rollback(r);
        return st;
    }
    unsigned char id[RUNLOG_ID_BYTES];
    if (rl_random_id(id) != 0) {
        rl_rollback(r);
        return ls_fail(err, LS_EIO, "%s: no random bytes for the database identity (getrandom, /dev/urandom)",
                       r->path);
    }
    memset(&r->ident, 0, sizeof r->ident);
    memcpy(r->ident.id, id, sizeof id);
    rl_tohex(id, r->ident.hex);
    /* The copied identity first, then its own ancestors, as many as fit. */
    char anc[sizeof old_anc];
    anc[0] = 0;
    size_t an = 0;
    const char *p = old_anc;
    if (old_hex[0] != 0) {
        rl_unhex(old_hex, r->ident.ancestors[r->ident.n_ancestors++]);
        an += (size_t)snprintf(anc + an, sizeof anc - an, "%s", old_hex);
    }
    while (*p && r->ident.n_ancestors < RUNLOG_MAX_ANCESTORS) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 2 * RUNLOG_ID_BYTES && rl_unhex(p, r->ident.ancestors[r->ident.n_ancestors]) == 0) {
            r->ident.n_ancestors++;
            an += (size_t)snprintf(anc + an, sizeof anc - an, "%s%.*s", an ? " " : "", (int)n, p);
        }
        p += n;
    }
    sqlite3_stmt *q;
    st = rl_prepare(r, "INSERT OR REPLACE INTO identity(one, id, dev, ino, path, ancestors, created)"
                       " VALUES(1, ?1, ?2, ?3, ?4, ?5, " RL_NOW ")", &q, "giving the database an identity", err);
    if (st == LS_OK) {
        sqlite3_bind_text(q, 1, r->ident.hex, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 2, rl_i64(dev));
        sqlite3_bind_int64(q, 3, rl_i64(ino));
        sqlite3_bind_text(q, 4, r->path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 5, anc, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(q) != SQLITE_DONE)
            st = rl_dberr(r, "giving the database an identity", err);
        sqlite3_finalize(q);
    }
    if (st != LS_OK) {
        rl_rollback(r);
        return st;
    }
    return rl_commit(r, "giving the database an identity", err);
}

ls_status runlog_get_identity(runlog *r, int for_writing, const runlog_identity **out, ls_err *err)
{
    *out = &r->ident;
    if (r->ident_state == 2 || (r->ident_state == 1 && !for_writing))
        return LS_OK;
    if (for_writing) {
        memset(&r->ident, 0, sizeof r->ident);
        ls_status st = rl_identity(r, err);
        if (st != LS_OK) {
            memset(&r->ident, 0, sizeof r->ident);
            r->ident_state = 0;
            return st;
        }
        r->ident_state = 2;
        return LS_OK;
    }
    /* Read only: what is stored, whichever file it was given to. */
    memset(&r->ident, 0, sizeof r->ident);
    char old_hex[2 * RUNLOG_ID_BYTES + 1], old_anc[RUNLOG_MAX_ANCESTORS * (2 * RUNLOG_ID_BYTES + 1) + 1];
    int found = rl_identity_read(r, 1, 0, 0, old_hex, sizeof old_hex, old_anc, sizeof old_anc);
    if (found < 0)
        return rl_dberr(r, "reading the database identity", err);
    if (found == 0)
        memset(&r->ident, 0, sizeof r->ident);
    r->ident_state = 1;
    return LS_OK;
}
