/* checkpoint.h — checkpoint files: the resumable state of a run at a step.
 *
 * A checkpoint holds what a trainer needs to continue a run bit for bit: the
 * parameters θ_t, the optimiser state (one opaque block: moments, t and the
 * running products β^t), the step t and the hash of the canonical config the
 * state belongs to. The file is written to "<path>.tmp", fsync'ed, renamed
 * over <path> and its directory fsync'ed, so a crash leaves either the old
 * file or the new one, never half of one.
 *
 * Format version 2 (frozen; a change bumps CKPT_VERSION), little-endian:
 *
 *     offset  size            field
 *          0  8               magic "LKSTCKPT"
 *          8  4   u32         version (2)
 *         12  4   u32         header size (72: the bytes before the parameters)
 *         16  8   u64         config hash (XXH3_64bits of the canonical config text)
 *         24  8   i64         step t (>= 0)
 *         32  8   u64         n_params
 *         40  8   u64         opt_bytes
 *         48  16              owner: the identity of the database the file was
 *                             written for (runlog.h, 128 random bits; all zero:
 *                             nobody's)
 *         64  8   i64         owner: the run id in that database
 *         72  4·n_params      θ_t, binary32 little-endian
 *          …  opt_bytes       the optimiser state block
 *          …  8   u64         XXH3_64bits of every byte before it
 *
 * Version 1 (frozen, still read, never written) is the same without the
 * owner: a 48-byte header, the parameters at offset 48. A version-1 file
 * does not say whose it is, so nothing can prove it belongs to a database;
 * engine/core/session.c loads one only when the database registered its state
 * hash, and never deletes one.
 *
 * Why an owner in the file: a checkpoint directory may be shared by several
 * databases, and a path in a database row proves nothing about the file
 * now at that path. The header is what a deleter checks (ckpt_read_head):
 * a file is deleted only by the database, and for the run, its header names.
 *
 * The trailing checksum is the checkpoint's state hash (what the record's
 * checkpoints table keeps). The optimiser block is the engine's state, a
 * whole number of 32-bit words (engine/core/optim.c: its 64-bit counts are
 * two words, low first), each stored little-endian as θ is: a file written
 * on any byte order reads the same on the other (make check-cross runs the
 * tests on big-endian s390x).
 *
 * Errors name the file (or the `what` given to ckpt_parse) and the problem:
 * LS_EIO (cannot read/write), LS_ENOTFOUND (no such file), LS_EFORMAT (not a
 * checkpoint, truncated, wrong version, bad checksum), LS_EMISMATCH (a sound
 * checkpoint of another database or run, config, model size or optimiser).
 * Nothing prints.
 */
#ifndef LS_CHECKPOINT_H
#define LS_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

#define CKPT_MAGIC "LKSTCKPT"
#define CKPT_VERSION 2
#define CKPT_HEADER_BYTES 72          /* version 2 (CKPT_VERSION) */
#define CKPT_V1_HEADER_BYTES 48       /* version 1 */
#define CKPT_TRAILER_BYTES 8
#define CKPT_DBID_BYTES 16

/* Whose a checkpoint is: a database identity (runlog_identity) and a run id
 * in it. An all-zero identity is nobody's: no database has it. */
typedef struct {
    unsigned char db_id[CKPT_DBID_BYTES];
    int64_t run_id;
} ckpt_owner;

/* A parsed checkpoint image: fields of the header, and pointers into the
 * caller's buffer (valid while it lives) for the parameters (n_params × 4
 * bytes, little-endian binary32, possibly unaligned) and the optimiser block. */
typedef struct {
    uint32_t version;             /* 1 or 2 */
    uint32_t header_bytes;        /* 48 or 72: where the parameters start */
    uint64_t config_hash;
    int64_t step;
    uint64_t n_params;
    uint64_t opt_bytes;
    int has_owner;                /* version >= 2 */
    ckpt_owner owner;             /* zero when !has_owner */
    const unsigned char *params;
    const unsigned char *opt_state;
    uint64_t checksum;            /* the state hash */
} ckpt_view;

/* Bytes of the image of a (current version) checkpoint; 0 when the sizes
 * overflow size_t. */
size_t ckpt_image_bytes(size_t n_params, size_t opt_bytes);

/* Writes the current-version image into buf[0, ckpt_image_bytes) (cap must
 * be at least that; LS_EINVAL otherwise), owned by *owner (NULL: nobody's),
 * and returns its checksum in *state_hash (may be NULL). */
ls_status ckpt_encode_owned(unsigned char *buf, size_t cap, const ckpt_owner *owner, uint64_t config_hash,
                            int64_t step, const float *params, size_t n_params, const void *opt_state,
                            size_t opt_bytes, uint64_t *state_hash, ls_err *err);
/* The same, nobody's. */
ls_status ckpt_encode(unsigned char *buf, size_t cap, uint64_t config_hash, int64_t step, const float *params,
                      size_t n_params, const void *opt_state, size_t opt_bytes, uint64_t *state_hash, ls_err *err);

/* Checks an image of len bytes (any bytes at all: this is the fuzzing entry
 * point) and fills *out. Checks, in order: length of the fixed header, magic,
 * version, header size, sizes against len (exactly header + params + state +
 * trailer; overflow-safe), step >= 0, checksum. `what` names the source in
 * the error line ("FILE: ..."). Never reads outside buf[0, len).
 * ckpt_parse accepts the current version only (every image it accepts
 * re-encodes with ckpt_encode_owned to the same bytes); ckpt_parse_any also
 * accepts version 1, through the same code. */
ls_status ckpt_parse(const unsigned char *buf, size_t len, const char *what, ckpt_view *out, ls_err *err);
ls_status ckpt_parse_any(const unsigned char *buf, size_t len, const char *what, ckpt_view *out, ls_err *err);

/* Writes a checkpoint atomically (temporary file, fsync, rename, fsync of
 * the directory), owned by *owner (NULL: nobody's). *state_hash (may be
 * NULL) receives the checksum. The rename replaces whatever is at path:
 * the caller decides whether that file may go (ckpt_read_head). */
ls_status ckpt_save_owned(const char *path, const ckpt_owner *owner, uint64_t config_hash, int64_t step,
                          const float *params, size_t n_params, const void *opt_state, size_t opt_bytes,
                          uint64_t *state_hash, ls_err *err);
ls_status ckpt_save(const char *path, uint64_t config_hash, int64_t step, const float *params, size_t n_params,
                    const void *opt_state, size_t opt_bytes, uint64_t *state_hash, ls_err *err);

/* What a loader requires of a file besides being sound. */
typedef struct {
    uint64_t config_hash;
    size_t n_params;
    size_t opt_bytes;
    /* Owners accepted: n_db_ids identities of CKPT_DBID_BYTES each, and the
     * run id. db_ids NULL: any owner; n_db_ids 0: none (db_ids must still
     * point at one identity, named in the message). A version-1 file has no
     * owner and is not refused for it (its caller checks it another way). */
    const unsigned char *db_ids;
    size_t n_db_ids;
    int64_t run_id;
} ckpt_expect;

/* What a loaded file said about itself. */
typedef struct {
    uint32_t version;
    int has_owner;
    ckpt_owner owner;
    int64_t step;
    uint64_t state_hash;          /* the checksum */
} ckpt_info;

/* Reads and checks a checkpoint of either version, then checks that it
 * belongs to this run, in this order: the owner, the config hash, n_params,
 * opt_bytes (each LS_EMISMATCH naming the file and both values). Only then
 * are params[n_params], opt_state[opt_bytes] and *info (may be NULL)
 * written; on any error they are untouched. */
ls_status ckpt_load_checked(const char *path, const ckpt_expect *want, float *params, void *opt_state,
                            ckpt_info *info, ls_err *err);
/* The same, any owner: *step receives the step. */
ls_status ckpt_load(const char *path, uint64_t config_hash, size_t n_params, size_t opt_bytes, int64_t *step,
                    float *params, void *opt_state, ls_err *err);

/* The whole checkpoint file at path in a malloc'ed buffer (*buf, freed by
 * the caller), for ckpt_parse_any: through the checked open (base/file.h; a
 * FIFO, a device or a directory is refused at once, naming the path), and
 * never more bytes than its header states (a longer file is refused naming
 * its size and that limit). LS_ENOTFOUND when there is no file. */
ls_status ckpt_read_file(const char *path, unsigned char **buf, size_t *len, ls_err *err);

/* Reads only the header of path (the fixed fields of either version: magic,
 * version, header size, step, owner), not the payload or the checksum; for
 * deciding whose a file is before deleting or replacing it. info->state_hash
 * is 0. LS_ENOTFOUND when there is no file; LS_EFORMAT when the header is
 * not a checkpoint header. */
ls_status ckpt_read_head(const char *path, ckpt_info *info, ls_err *err);

/* Test-only crash hook: when set, ckpt_save calls hook() once per file after
 * writing the first half of the temporary file and before the rest, the
 * fsync and the rename (so a hook that kills the process leaves a torn
 * temporary file behind). Process-wide, not thread-safe; NULL unsets it. */
void ckpt_set_test_hook(void (*hook)(void));

#endif
