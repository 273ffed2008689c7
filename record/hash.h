/* hash.h — the hashes that identify parameters and trajectories (docs/formats.md, hashes).
 *
 * Frozen since golden format v1: param_hash = XXH3_64bits of the parameters as
 * binary32 little-endian (any NaN first replaced by the canonical quiet NaN
 * 0x7fc00000); traj_0 = XXH3_64bits(config text ‖ param_hash_0 as 8 bytes LE);
 * traj_t = XXH3_64bits(traj_{t-1} ‖ param_hash_t ‖ loss bits), 24 bytes LE,
 * where the loss bits are the binary64 bits with any NaN replaced by
 * 0x7ff8000000000000.
 */
#ifndef LS_HASH_H
#define LS_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

uint64_t hash_bytes(const void *p, size_t n);                    /* XXH3_64bits */
uint64_t hash_params(const float *params, size_t n);
uint64_t hash_loss_bits(double loss);                            /* canonical binary64 bits */
uint64_t hash_traj0(const char *config_text, uint64_t param_hash0);
uint64_t hash_traj_next(uint64_t traj_prev, uint64_t param_hash, double loss);

/* One recorded step. Step 0 has no loss (has_loss = 0). */
typedef struct {
    int64_t step;
    int has_loss;
    uint64_t loss_bits;   /* binary64 bits of the batch loss, canonical NaN */
    uint64_t param_hash;
    uint64_t traj_hash;
    double seconds;       /* wall time of the step (not part of any hash) */
} ls_step;

double hash_bits_to_double(uint64_t bits);

/* param_hash in parts, so the threads that update θ can hash it where they
 * wrote it (engine/core/train.c). XXH3 over a long input adds a contribution of
 * each 64-byte stripe to eight 64-bit accumulators (sums modulo 2^64, so in
 * any order and on any number of threads) and scrambles them after each block
 * of HASH_PART_FLOATS floats (a few cycles: done in the join). So:
 *   hash_params_part(parts, params, n, lo, hi) on pieces [lo, hi) that cover
 *   [0, n), each lo a multiple of HASH_PART_FLOATS and each hi one or n, in
 *   any order and on any threads, writes the sums of the blocks inside its
 *   piece to parts (hash_parts_words(n) words, each piece its own words) and
 *   returns 1 when its piece holds a NaN;
 *   hash_params_join(parts, params, n) then equals hash_params(params, n),
 *   provided no piece returned 1 (else call hash_params: NaNs hash as the
 *   canonical NaN, which the parts do not see). The tests check the join
 *   against the shared libxxhash. */
#define HASH_PART_FLOATS 256   /* one XXH3 block: 16 stripes of 64 bytes */
size_t hash_parts_words(size_t n);
int hash_params_part(uint64_t *parts, const float *params, size_t n, size_t lo, size_t hi);
uint64_t hash_params_join(const uint64_t *parts, const float *params, size_t n);
/* The per-tensor hashes a run records (ls_tensor_hash of each float32
 * tensor of θ), in parts the same way: XXH3 over the tensor's header and
 * then its bytes, so a tensor's blocks start where its header leaves them,
 * not at θ's. hash_tensors_part(ht, params, lo, hi), on the update's pieces
 * [j piece, min((j + 1) piece, n_params)) that cover θ, in any order and on
 * any threads, sums the blocks that lie whole in its piece;
 * hash_tensors_join(ht, params, parts_fresh, out) sums the rest (those that
 * hold header bytes or straddle two pieces: a few per piece) and writes
 * out[i] = ls_tensor_hash of tensor i. parts_fresh = 0 (θ written since
 * the parts, or no parts yet) sums every block in the join: the same
 * hashes, on one thread. */
typedef struct hash_tensors hash_tensors;
ls_status hash_tensors_create(hash_tensors **out, const ls_tensor *tensors, size_t n, size_t n_params, size_t piece,
                              ls_err *err);
void hash_tensors_destroy(hash_tensors *ht);
void hash_tensors_part(hash_tensors *ht, const float *params, size_t lo, size_t hi);
void hash_tensors_join(hash_tensors *ht, const float *params, int parts_fresh, uint64_t *out);

/* Tests: the parts' vector path (simd.h: SIMD_OFF, SIMD_BEST, SIMD_AVX2);
 * returns the previous setting. */
int hash_set_simd(int enabled);

#endif
