/* checkpoint.h — checkpoint files: the resumable state of a run at a step.
 *
 * A checkpoint holds what a trainer needs to continue a run bit for bit: the
 * parameters θ_t, the optimiser state (one opaque block: moments, t and the
 * running products β^t), the step t and the hash of the canonical config the
 * state belongs to. The file is written to "<path>.tmp", fsync'ed, renamed
 * over <path> and its directory fsync'ed, so a crash leaves either the old
 * file or the new one, never half of one.
 *
 * Format version 1 (frozen; a change bumps CKPT_VERSION), little-endian:
 *
 *     offset  size            field
 *          0  8               magic "LKSTCKPT"
 *          8  4   u32         version (1)
 *         12  4   u32         header size (48: the bytes before the parameters)
 *         16  8   u64         config hash (XXH3_64bits of the canonical config text)
 *         24  8   i64         step t (>= 0)
 *         32  8   u64         n_params
 *         40  8   u64         opt_bytes
 *         48  4·n_params      θ_t, binary32 little-endian
 *          …  opt_bytes       the optimiser state block
 *          …  8   u64         XXH3_64bits of every byte before it
 *
 * The trailing checksum is the checkpoint's state hash (what the record's
 * checkpoints table keeps). The optimiser block is the engine's in-memory
 * struct, copied as bytes: it holds host-endian integers and floats, so
 * checkpoint files are written and read on little-endian hosts only (x86-64,
 * aarch64 — every host lockstep supports); on a big-endian host ckpt_save and
 * ckpt_load refuse with LS_EINVAL rather than write or read a file another
 * host would misread.
 *
 * Errors name the file (or the `what` given to ckpt_parse) and the problem:
 * LS_EIO (cannot read/write), LS_ENOTFOUND (no such file), LS_EFORMAT (not a
 * checkpoint, truncated, wrong version, bad checksum), LS_EMISMATCH (a sound
 * checkpoint of another config, model size or optimiser). Nothing prints.
 */
#ifndef LS_CHECKPOINT_H
#define LS_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "../include/lockstep.h"

#define CKPT_MAGIC "LKSTCKPT"
#define CKPT_VERSION 1
#define CKPT_HEADER_BYTES 48
#define CKPT_TRAILER_BYTES 8

/* A parsed checkpoint image: fields of the header, and pointers into the
 * caller's buffer (valid while it lives) for the parameters (n_params × 4
 * bytes, little-endian binary32, possibly unaligned) and the optimiser block. */
typedef struct {
    uint32_t version;
    uint64_t config_hash;
    int64_t step;
    uint64_t n_params;
    uint64_t opt_bytes;
    const unsigned char *params;
    const unsigned char *opt_state;
    uint64_t checksum;            /* the state hash */
} ckpt_view;

/* Bytes of the image of a checkpoint; 0 when the sizes overflow size_t. */
size_t ckpt_image_bytes(size_t n_params, size_t opt_bytes);

/* Writes the image into buf[0, ckpt_image_bytes) (cap must be at least that;
 * LS_EINVAL otherwise) and returns its checksum in *state_hash (may be NULL). */
ls_status ckpt_encode(unsigned char *buf, size_t cap, uint64_t config_hash, int64_t step, const float *params,
                      size_t n_params, const void *opt_state, size_t opt_bytes, uint64_t *state_hash, ls_err *err);

/* Checks an image of len bytes (any bytes at all: this is the fuzzing entry
 * point) and fills *out. Checks, in order: length of the fixed header, magic,
 * version, header size, sizes against len (exactly header + params + state +
 * trailer; overflow-safe), step >= 0, checksum. `what` names the source in
 * the error line ("FILE: ..."). Never reads outside buf[0, len). */
ls_status ckpt_parse(const unsigned char *buf, size_t len, const char *what, ckpt_view *out, ls_err *err);

/* Writes a checkpoint atomically (temporary file, fsync, rename, fsync of
 * the directory). *state_hash (may be NULL) receives the checksum. */
ls_status ckpt_save(const char *path, uint64_t config_hash, int64_t step, const float *params, size_t n_params,
                    const void *opt_state, size_t opt_bytes, uint64_t *state_hash, ls_err *err);

/* Reads and checks a checkpoint, then checks that it belongs to this run:
 * config hash, n_params and opt_bytes must equal the arguments (LS_EMISMATCH
 * naming the file and both values). Only then are *step, params[n_params] and
 * opt_state[opt_bytes] written; on any error they are untouched. */
ls_status ckpt_load(const char *path, uint64_t config_hash, size_t n_params, size_t opt_bytes, int64_t *step,
                    float *params, void *opt_state, ls_err *err);
/* The same, also returning the file's checksum (its state hash) in *state_hash. */
ls_status ckpt_load_hash(const char *path, uint64_t config_hash, size_t n_params, size_t opt_bytes, int64_t *step,
                         float *params, void *opt_state, uint64_t *state_hash, ls_err *err);

/* Test-only crash hook: when set, ckpt_save calls hook() once per file after
 * writing the first half of the temporary file and before the rest, the
 * fsync and the rename (so a hook that kills the process leaves a torn
 * temporary file behind). Process-wide, not thread-safe; NULL unsets it. */
void ckpt_set_test_hook(void (*hook)(void));

#endif
