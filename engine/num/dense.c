/* dense.c — dense-layer kernels with a fixed order of arithmetic.
 *
 * Both kernels are one pattern, C[i][n] = start + sum over r of A[i][r] * Bm[r][n]
 * with r in ascending order (forward: i = sample, r = input k, Bm = w;
 * backward_weights: i = input k, r = sample b, Bm = dout). The scalar twins
 * are the plain loops of dense.h, each term a C99 fmaf (the exact product
 * added to the running sum and rounded once: one result on every machine,
 * from the instruction or from libm's correctly rounded emulation). The SIMD
 * paths (AVX2 with FMA3, AVX-512F) vectorise over n, which is contiguous in
 * Bm and C, so every lane performs exactly the scalar twin's operations for
 * its own output element, in the same order: one fused multiply-add
 * (_mm256_fmadd_ps, or on AVX-512 vfmadd231ps with A's element as a
 * broadcast operand: simd_fmadd_bcast_z). (Which NaN payload wins when
 * several operands are NaN is not pinned: base/simd.h.) Speed comes from
 * register tiling: a tile of several rows i times several vectors of n
 * keeps its accumulators in registers, so each vector of Bm loaded is used
 * by every row of the tile. Tiling, blocking of the reduction (partial
 * sums stored to C and reloaded: a float store and load are exact), packing
 * (a copy) and the tails (masked loads and stores, masked lanes are
 * discarded) change no element's sequence of operations — which is why the
 * bits equal the scalar twin whatever the shape, and tests check it.
 *
 * The loop nest (gemm_z, gemm_y): for each panel of 64 (AVX2: 16) columns of
 * Bm, for each tile of 6 (AVX2: 4) rows of A, the whole reduction r = 0 ..
 * R-1 with the tile's accumulators in registers. A full AVX-512 tile runs
 * micro_z64, one plain loop without masks or branches; edge tiles (fewer
 * rows, fewer or partial vectors) run the same operations with masks. On
 * AVX-512 a panel that serves many tiles (the weight gradient's) is first
 * copied into a contiguous buffer on the stack (packed, as BLIS and
 * OpenBLAS do), where it stays in L1 for every tile of rows. The AVX2
 * weight gradient instead runs a group of tiles atom by atom
 * (gemm_y_atoms), so an atom's rows stay in L1 across the group.
 *
 * The binary is built without -march: the SIMD functions carry
 * __attribute__((target(...))) and are chosen at run time with
 * __builtin_cpu_supports. The choice is made once (pthread_once, so any
 * thread may make the first call) from the CPU and LOCKSTEP_SIMD ("off",
 * "0" or "scalar": the scalar twins; "avx2": at most AVX2; anything else or
 * unset: the best path the CPU offers); after that
 * dense_set_simd changes it through an atomic int, so a call made while
 * kernels run on other threads is not a data race (but set it before starting
 * workers if a run must use one path throughout — the bits do not depend on
 * it anyway).
 */
#include "engine/num/dense.h"
#include "base/simd.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define DENSE_X86 1
#include <immintrin.h>
#else
#define DENSE_X86 0
#endif

/* ---- The scalar twins: the definitions in dense.h, written out. ---- */

/* The scalar twins with leading dimensions (dense.h, dense_forward_ld):
 * the definitions in dense.h, written out. */
static void forward_ld_scalar(float *out, size_t ldo, const float *in, size_t ldi, const float *w, size_t ldw,
                              const float *bias, size_t B, size_t K, size_t N)
{
    /* Row by row: out[b][n] is the running sum s of dense.h, kept in memory;
     * each k adds one exact product to every element of the row, rounded
     * once (fmaf). Per element this is exactly s = bias[n] (or 0),
     * s = fmaf(in[b][k], w[k][n], s) for k ascending. */
    for (size_t b = 0; b < B; b++) {
        float *o = out + b * ldo;
        for (size_t n = 0; n < N; n++)
            o[n] = bias != NULL ? bias[n] : 0.0f;
        for (size_t k = 0; k < K; k++) {
            const float x = in[b * ldi + k];
            const float *wk = w + k * ldw;
            for (size_t n = 0; n < N; n++)
                o[n] = fmaf(x, wk[n], o[n]);
        }
    }
}

/* The canonical tree over atoms for one running value (dense.h): push the
 * sum of atom j (0-based, in order), merging while the two newest partials
 * cover equal numbers of atoms, which after atom j is once per trailing 1
 * bit of j; fold what is left from the newest down. */
typedef struct {
    float part[DENSE_MAX_LEVELS];
    int depth;
} atom_stack;

static inline void atom_push(atom_stack *st, float s, size_t j)
{
    st->part[st->depth++] = s;
    for (; j & 1; j >>= 1, st->depth--)
        st->part[st->depth - 2] = st->part[st->depth - 2] + st->part[st->depth - 1];
}

static inline float atom_fold(atom_stack *st)
{
    if (st->depth == 0)
        return 0.0f;
    for (; st->depth > 1; st->depth--)
        st->part[st->depth - 2] = st->part[st->depth - 2] + st->part[st->depth - 1];
    return st->part[0];
}

static void backward_weights_ld_scalar(float *dw, size_t ldw, float *dbias, const float *in, size_t ldi,
                                       const float *dout, size_t ldd, size_t B, size_t K, size_t N, int accumulate)
{
    for (size_t k = 0; k < K; k++) {
        for (size_t n = 0; n < N; n++) {
            atom_stack st = { .depth = 0 };
            for (size_t a0 = 0, j = 0; a0 < B; a0 += LS_ATOM, j++) {
                const size_t a1 = B - a0 < LS_ATOM ? B : a0 + LS_ATOM;
                float s = 0.0f;
                for (size_t b = a0; b < a1; b++)
                    s = fmaf(in[b * ldi + k], dout[b * ldd + n], s);
                atom_push(&st, s, j);
            }
            const float s = atom_fold(&st);
            dw[k * ldw + n] = accumulate ? dw[k * ldw + n] + s : s;
        }
    }
    if (dbias != NULL) {
        for (size_t n = 0; n < N; n++) {
            atom_stack st = { .depth = 0 };
            for (size_t a0 = 0, j = 0; a0 < B; a0 += LS_ATOM, j++) {
                const size_t a1 = B - a0 < LS_ATOM ? B : a0 + LS_ATOM;
                float s = 0.0f;
                for (size_t b = a0; b < a1; b++)
                    s = s + dout[b * ldd + n];
                atom_push(&st, s, j);
            }
            const float s = atom_fold(&st);
            dbias[n] = accumulate ? dbias[n] + s : s;
        }
    }
}

void dense_forward_scalar(float *out, const float *in, const float *w, const float *bias,
                          size_t B, size_t K, size_t N)
{
    forward_ld_scalar(out, N, in, K, w, N, bias, B, K, N);
}

void dense_backward_weights_scalar(float *dw, float *dbias, const float *in, const float *dout,
                                   size_t B, size_t K, size_t N, int accumulate)
{
    backward_weights_ld_scalar(dw, N, dbias, in, K, dout, N, B, K, N, accumulate);
}

/* ---- Run-time choice of the path (base/simd.c). ---- */

enum { PATH_SCALAR = SIMD_PATH_SCALAR, PATH_AVX2 = SIMD_PATH_AVX2, PATH_AVX512 = SIMD_PATH_AVX512 };

_Static_assert(DENSE_SIMD_OFF == SIMD_OFF && DENSE_SIMD_BEST == SIMD_BEST && DENSE_SIMD_AVX2 == SIMD_AVX2,
               "dense_set_simd takes simd.h's settings");

static simd_switch simd_choice = SIMD_SWITCH_INIT;

/* The AVX2 path fuses with vfmadd (the FMA3 extension, which every AVX2 CPU
 * made so far has, but which is a separate CPUID bit); without it the
 * kernels take the scalar twins, whose fmaf gives the same bits. */
static int current_path(void)
{
    const int path = simd_path(&simd_choice);
#if DENSE_X86
    if (path == PATH_AVX2 && !__builtin_cpu_supports("fma"))
        return PATH_SCALAR;
#endif
    return path;
}

/* The micro-kernel's broadcast form (micro_z64_reg / micro_z64_mem): -1
 * until first use, then 1 (in registers) or 0 (memory operands). */
static atomic_int broadcast_form = -1;

/* The CPU's form: memory operands on AMD, registers elsewhere. */
static int broadcast_default(void)
{
#if DENSE_X86
    __builtin_cpu_init();
    return !__builtin_cpu_is("amd");
#else
    return 1;
#endif
}

static int broadcast_in_register(void)
{
    int f = atomic_load_explicit(&broadcast_form, memory_order_relaxed);
    if (f < 0) {
        f = broadcast_default();
        int unset = -1;
        atomic_compare_exchange_strong(&broadcast_form, &unset, f);
        f = atomic_load(&broadcast_form);
    }
    return f;
}

int dense_set_broadcast(int form)
{
    broadcast_in_register();
    return atomic_exchange(&broadcast_form, form < 0 ? broadcast_default() : form != 0);
}

int dense_set_simd(int enabled)
{
    return simd_set(&simd_choice, enabled);
}

const char *dense_simd_name(void)
{
    return simd_path_name(current_path());
}

#if DENSE_X86

/* ---- The tiled kernel, shared by both functions and both ISAs. ---- */

/* C[i][n] = c[i*ldc + n], A[i][r] = a[i*a_i + r*a_r], Bm[r][n] = bm[r*ldb + n]. */
typedef struct {
    float *c;
    size_t ldc;
    const float *a;
    size_t a_i, a_r;
    const float *bm;
    size_t ldb;
    const float *bias;   /* [N], read when start == START_BIAS */
    size_t M, R, N;
} gemm;

/* Where each element's running sum s starts for a block of r: 0.0f, bias[n],
 * or C[i][n] (the partial sum an earlier block of r stored there). */
enum { START_ZERO, START_BIAS, START_C };
/* What is stored: C = s, or C = C + s (backward's accumulate). */
enum { END_STORE, END_ADD };

/* Rows of A per tile, and vectors of n per tile, for each ISA. AVX-512 has 32
 * registers: 6 x 4 accumulators + 4 vectors of Bm. Per row r of the
 * reduction a full tile does 4 vector loads of Bm and 24 fused multiply-adds,
 * with each of the 6 elements of A broadcast once into a register (10 loads)
 * or read by each of its 4 FMAs as a broadcast memory operand (28 loads;
 * micro_z64_reg / micro_z64_mem say which CPU takes which): 12 cycles of a
 * core with two 512-bit FMA units. The 4 x 4 tile of the unfused
 * kernels (a Zen 4 core ran it at 90-99% of its separate mul+add peak) left
 * the FMA units of a 2-core Intel Xeon waiting on its loads: fused, 6 x 4
 * runs the MLP's leaf 1.2 times faster than 4 x 4 there (a harness timing
 * each of the leaf's calls, best of 15). 32-row calls lose more to the tile's
 * entry and exit, one reason the MLP's default leaf is 64. AVX2 has 16
 * registers: 4 x 2 accumulators + 2 + the broadcast; AVX2 tiles of 4 x 3
 * and 6 x 2 were no faster (6 x 2 spills with gcc). */
#define Z_MB 6
#define Z_NV 4
#define Y_MB 4
#define Y_NV 2
#define Z_NB (16 * Z_NV)   /* columns of a tile */
#define Y_NB (8 * Y_NV)
/* The AVX2 weight gradient's group of tiles (atoms_group_y): at most
 * YGROUP_TILES tiles whose stacks fit in YGROUP_FLOATS floats (48 KiB). */
#define YGROUP_TILES 64
#define YGROUP_FLOATS (12 * 1024)
_Static_assert(YGROUP_FLOATS >= DENSE_MAX_LEVELS * Y_MB * Y_NB, "a group holds at least one tile's stack");

/* The first tile of a panel that is not packed reads each row of Bm
 * first, rows ldb floats apart (the MLP's forward: a row of W every KiB).
 * At 2 threads half of those lines were last written by the other core's
 * update, and waiting for them left the FMAs idle: asking for the lines
 * AHEAD_ROWS rows ahead (a hint, no bits move) made a 2-thread step 2.5-7%
 * faster in four sets of 12-15 alternations and left 1 thread as it was
 * (README, Performance). Later tiles find the panel in L2. */
#define AHEAD_ROWS 16
/* Loops over the rows and vectors of a tile are unrolled completely so that
 * acc[][] lives in registers; each compiler needs its own spelling. */
#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define UNROLL _Pragma("GCC unroll 8")
#endif

/* One reduction row of a full tile: acc[i][v] = fma(A[i][r], w_v, acc[i][v])
 * for the tile's 6 rows and 4 vectors, then each row's pointer x[i] moves to
 * the next element of A. Shared by the plain and the atom micro-kernels;
 * inlined, so acc stays in registers. */
static FORCE_INLINE __attribute__((target("avx512f")))
void row_z64(const int in_register, __m512 acc[Z_MB][4], const float *x[Z_MB], size_t a_r, __m512 w0, __m512 w1,
             __m512 w2, __m512 w3)
{
UNROLL
    for (int i = 0; i < Z_MB; i++) {
        if (in_register) {
            const __m512 xb = _mm512_set1_ps(*x[i]);
            acc[i][0] = _mm512_fmadd_ps(xb, w0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(xb, w1, acc[i][1]);
            acc[i][2] = _mm512_fmadd_ps(xb, w2, acc[i][2]);
            acc[i][3] = _mm512_fmadd_ps(xb, w3, acc[i][3]);
        } else {
            acc[i][0] = simd_fmadd_bcast_z(acc[i][0], w0, x[i]);
            acc[i][1] = simd_fmadd_bcast_z(acc[i][1], w1, x[i]);
            acc[i][2] = simd_fmadd_bcast_z(acc[i][2], w2, x[i]);
            acc[i][3] = simd_fmadd_bcast_z(acc[i][3], w3, x[i]);
        }
        x[i] += a_r;
    }
}

/* The micro-kernel of a full tile (6 rows of A, 64 columns of Bm, no
 * masks). Each of the 24 accumulators starts at 0.0f (sp == NULL) or at
 * sp[i*sld + 16v ..] (the bias with sld = 0, or C's partial sums with sld =
 * ldc), then acc = fma(A[i][r], Bm[r][16v ..], acc) for r = 0 .. R-1 in order,
 * in registers throughout; then C = acc, or C = C + acc when add_c. A
 * separate function with one plain loop: the compiler keeps its registers for
 * the tile, and the loop has no branch but its own. */
static FORCE_INLINE __attribute__((target("avx512f")))
void micro_z64_body(const int in_register, const float *sp, size_t sld, float *c, size_t ldc, int add_c,
                    const float *a, size_t a_i, size_t a_r, const float *b, size_t ldb, size_t R, int fetch_ahead)
{
    __m512 acc[Z_MB][4];
UNROLL
    for (int i = 0; i < Z_MB; i++)
UNROLL
        for (int v = 0; v < 4; v++)
            acc[i][v] = sp == NULL ? _mm512_setzero_ps() : _mm512_loadu_ps(sp + (size_t)i * sld + 16 * v);
    const float *x[Z_MB];
UNROLL
    for (int i = 0; i < Z_MB; i++)
        x[i] = a + (size_t)i * a_i;
    for (size_t r = 0; r < R; r++) {
        const __m512 w0 = _mm512_loadu_ps(b), w1 = _mm512_loadu_ps(b + 16), w2 = _mm512_loadu_ps(b + 32),
                     w3 = _mm512_loadu_ps(b + 48);
        if (fetch_ahead && r + AHEAD_ROWS < R) {
            const char *ahead = (const char *)(b + AHEAD_ROWS * ldb);
            _mm_prefetch(ahead, _MM_HINT_T0);
            _mm_prefetch(ahead + 64, _MM_HINT_T0);
            _mm_prefetch(ahead + 128, _MM_HINT_T0);
            _mm_prefetch(ahead + 192, _MM_HINT_T0);
        }
        b += ldb;
        row_z64(in_register, acc, x, a_r, w0, w1, w2, w3);
    }
UNROLL
    for (int i = 0; i < Z_MB; i++)
UNROLL
        for (int v = 0; v < 4; v++) {
            float *p = c + (size_t)i * ldc + 16 * v;
            /* The old value is the left operand, as in tile_z's END_ADD. */
            _mm512_storeu_ps(p, add_c ? _mm512_add_ps(_mm512_loadu_ps(p), acc[i][v]) : acc[i][v]);
        }
}

/* The two ways to give a row's element of A to its four FMAs: broadcast
 * once into a register (vbroadcastss, then register operands: 10 loads a
 * reduction row), or as each FMA's memory operand ({1to16}: 28 loads, no
 * broadcast instruction). The same operations, so the same bits. On Zen 4
 * a vbroadcastss zmm takes an FP pipe from the arithmetic, and the memory
 * operands ran faster (base/simd.h); on the Intel Xeon of 2026-11-26, with
 * two load ports for 24 FMAs in 12 cycles, the broadcasts in registers made
 * each of the leaf's large calls 14-20% faster (best of 6 alternations). */
static __attribute__((target("avx512f"), noinline))
void micro_z64_reg(const float *sp, size_t sld, float *c, size_t ldc, int add_c,
                   const float *a, size_t a_i, size_t a_r, const float *b, size_t ldb, size_t R, int fetch_ahead)
{
    micro_z64_body(1, sp, sld, c, ldc, add_c, a, a_i, a_r, b, ldb, R, fetch_ahead);
}

static __attribute__((target("avx512f"), noinline))
void micro_z64_mem(const float *sp, size_t sld, float *c, size_t ldc, int add_c,
                   const float *a, size_t a_i, size_t a_r, const float *b, size_t ldb, size_t R, int fetch_ahead)
{
    micro_z64_body(0, sp, sld, c, ldc, add_c, a, a_i, a_r, b, ldb, R, fetch_ahead);
}

/* One tile: rows i0 .. i0+mb-1, vectors n0 .. n0 + 16*nv - 1 (the last one
 * masked by tail), reduction r0 .. r1-1. mb and nv are constants at every
 * call site, so the loops unroll and acc stays in registers. */
static FORCE_INLINE __attribute__((target("avx512f")))
void tile_z(const gemm *g, const float *pb, size_t ldb, size_t i0, size_t n0, size_t r0, size_t r1, int start,
            int end, const int mb, const int nv, __mmask16 tail)
{
    if (mb == Z_MB && nv == Z_NV && tail == (__mmask16)0xFFFF) {
        float *c = g->c + i0 * g->ldc + n0;
        const float *sp = start == START_ZERO ? NULL : start == START_BIAS ? g->bias + n0 : c;
        (broadcast_in_register() ? micro_z64_reg : micro_z64_mem)(
            sp, start == START_C ? g->ldc : 0, c, g->ldc, end == END_ADD, g->a + i0 * g->a_i + r0 * g->a_r, g->a_i,
            g->a_r, pb, ldb, r1 - r0, i0 == 0 && ldb != 16 * Z_NV);
        return;
    }
    __m512 acc[Z_MB][Z_NV];
    const float *arow[Z_MB];
    __mmask16 mask[Z_NV];
UNROLL
    for (int v = 0; v < Z_NV; v++)
        mask[v] = v == nv - 1 ? tail : (__mmask16)0xFFFF;
UNROLL
    for (int i = 0; i < Z_MB; i++)
        arow[i] = g->a + (i0 + (size_t)(i < mb ? i : 0)) * g->a_i;

UNROLL
    for (int i = 0; i < mb; i++) {
UNROLL
        for (int v = 0; v < nv; v++) {
            if (start == START_ZERO)
                acc[i][v] = _mm512_setzero_ps();
            else if (start == START_BIAS)
                acc[i][v] = _mm512_maskz_loadu_ps(mask[v], g->bias + n0 + 16 * (size_t)v);
            else
                acc[i][v] = _mm512_maskz_loadu_ps(mask[v], g->c + (i0 + (size_t)i) * g->ldc + n0 + 16 * (size_t)v);
        }
    }

    const size_t a_r = g->a_r;
    const int full = tail == (__mmask16)0xFFFF;
    const float *pa[Z_MB];
UNROLL
    for (int i = 0; i < Z_MB; i++)
        pa[i] = arow[i] + r0 * a_r;
    if (full) {
        for (size_t r = r0; r < r1; r++, pb += ldb) {
            __m512 wv[Z_NV];
UNROLL
            for (int v = 0; v < nv; v++)
                wv[v] = _mm512_loadu_ps(pb + 16 * v);
UNROLL
            for (int i = 0; i < mb; i++) {
UNROLL
                for (int v = 0; v < nv; v++)
                    acc[i][v] = simd_fmadd_bcast_z(acc[i][v], wv[v], pa[i]);
                pa[i] += a_r;
            }
        }
    } else {
        for (size_t r = r0; r < r1; r++, pb += ldb) {
            __m512 wv[Z_NV];
UNROLL
            for (int v = 0; v < nv; v++)
                wv[v] = _mm512_maskz_loadu_ps(mask[v], pb + 16 * v);
UNROLL
            for (int i = 0; i < mb; i++) {
UNROLL
                for (int v = 0; v < nv; v++)
                    acc[i][v] = simd_fmadd_bcast_z(acc[i][v], wv[v], pa[i]);
                pa[i] += a_r;
            }
        }
    }

UNROLL
    for (int i = 0; i < mb; i++) {
UNROLL
        for (int v = 0; v < nv; v++) {
            float *p = g->c + (i0 + (size_t)i) * g->ldc + n0 + 16 * (size_t)v;
            __m512 s = acc[i][v];
            if (end == END_ADD)
                s = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], p), s);
            _mm512_mask_storeu_ps(p, mask[v], s);
        }
    }
}

/* micro_z64_body over atoms, for the weight gradient's full tiles: the
 * accumulators start at 0.0f for each atom of LS_ATOM rows, and after the
 * atom they merge, in registers, with the older partials of the tile's
 * stack (one vector add per accumulator per merge, the stack's partial the
 * left operand) before the result goes onto the stack: one store of the
 * tile per atom. At the end the registers hold the newest partial and fold
 * in the older ones from the top down; C = the sum, or C + the sum. The
 * operations are atoms_tile_z's, so the bits are the scalar twin's. */
#define ZSLOT (Z_MB * Z_NB)
static FORCE_INLINE __attribute__((target("avx512f")))
void micro_z64_atoms_body(const int in_register, float *c, size_t ldc, int add_c, const float *a, size_t a_i,
                          size_t a_r, const float *b, size_t ldb, size_t R, float *stack)
{
    __m512 acc[Z_MB][4];
    const float *x[Z_MB];
UNROLL
    for (int i = 0; i < Z_MB; i++)
        x[i] = a + (size_t)i * a_i;
    int depth = 0;
    for (size_t a0 = 0, j = 0; a0 < R; a0 += LS_ATOM, j++) {
        const size_t n = R - a0 < LS_ATOM ? R - a0 : LS_ATOM;
UNROLL
        for (int i = 0; i < Z_MB; i++)
UNROLL
            for (int v = 0; v < 4; v++)
                acc[i][v] = _mm512_setzero_ps();
        for (size_t r = 0; r < n; r++) {
            const __m512 w0 = _mm512_loadu_ps(b), w1 = _mm512_loadu_ps(b + 16), w2 = _mm512_loadu_ps(b + 32),
                         w3 = _mm512_loadu_ps(b + 48);
            b += ldb;
            row_z64(in_register, acc, x, a_r, w0, w1, w2, w3);
        }
        for (size_t t = j; t & 1; t >>= 1) {
            const float *p = stack + (size_t)--depth * ZSLOT;
UNROLL
            for (int i = 0; i < Z_MB; i++)
UNROLL
                for (int v = 0; v < 4; v++)
                    acc[i][v] = _mm512_add_ps(_mm512_load_ps(p + i * Z_NB + 16 * v), acc[i][v]);
        }
        float *p = stack + (size_t)depth++ * ZSLOT;
UNROLL
        for (int i = 0; i < Z_MB; i++)
UNROLL
            for (int v = 0; v < 4; v++)
                _mm512_store_ps(p + i * Z_NB + 16 * v, acc[i][v]);
    }
    if (depth == 0) {
UNROLL
        for (int i = 0; i < Z_MB; i++)
UNROLL
            for (int v = 0; v < 4; v++)
                acc[i][v] = _mm512_setzero_ps();
    }
    for (int l = depth - 2; l >= 0; l--) {
        const float *p = stack + (size_t)l * ZSLOT;
UNROLL
        for (int i = 0; i < Z_MB; i++)
UNROLL
            for (int v = 0; v < 4; v++)
                acc[i][v] = _mm512_add_ps(_mm512_load_ps(p + i * Z_NB + 16 * v), acc[i][v]);
    }
UNROLL
    for (int i = 0; i < Z_MB; i++)
UNROLL
        for (int v = 0; v < 4; v++) {
            float *q = c + (size_t)i * ldc + 16 * v;
            _mm512_storeu_ps(q, add_c ? _mm512_add_ps(_mm512_loadu_ps(q), acc[i][v]) : acc[i][v]);
        }
}

static __attribute__((target("avx512f"), noinline))
void micro_z64_atoms_reg(float *c, size_t ldc, int add_c, const float *a, size_t a_i, size_t a_r, const float *b,
                         size_t ldb, size_t R, float *stack)
{
    micro_z64_atoms_body(1, c, ldc, add_c, a, a_i, a_r, b, ldb, R, stack);
}

static __attribute__((target("avx512f"), noinline))
void micro_z64_atoms_mem(float *c, size_t ldc, int add_c, const float *a, size_t a_i, size_t a_r, const float *b,
                         size_t ldb, size_t R, float *stack)
{
    micro_z64_atoms_body(0, c, ldc, add_c, a, a_i, a_r, b, ldb, R, stack);
}

/* The edge tiles' stack of atom partials, slot floats a level (the tile's
 * rows times its padded width), shared by both ISAs: element-wise adds, the
 * older partial the left operand, so the bits are the scalar twin's
 * whatever the compiler makes of the loops; `used` floats of a slot are the
 * tile's rows (the lanes a masked tile leaves alone hold zeros or old sums,
 * merged but never stored). After atom j: merge once per trailing 1 bit of
 * j. */
static void atoms_merge(float *stack, int *depth, size_t j, size_t slot, size_t used)
{
    for (; j & 1; j >>= 1, (*depth)--) {
        float *lo = stack + (size_t)(*depth - 2) * slot;
        const float *hi = lo + slot;
        for (size_t e = 0; e < used; e++)
            lo[e] = lo[e] + hi[e];
    }
}

/* Levels a stack holds at most for R rows: floor(log2(atoms)) + 1, and one
 * for the atom being computed. */
static size_t atoms_levels(size_t R)
{
    size_t levels = 2;
    for (size_t n = (R + LS_ATOM - 1) / LS_ATOM; n > 1; n >>= 1)
        levels++;
    return levels < DENSE_MAX_LEVELS ? levels : DENSE_MAX_LEVELS;
}

/* The stack folded from the top: the sum in slot 0 (depth >= 1). */
static void atoms_fold(float *stack, int depth, size_t slot, size_t used)
{
    for (; depth > 1; depth--) {
        float *lo = stack + (size_t)(depth - 2) * slot;
        const float *hi = lo + slot;
        for (size_t e = 0; e < used; e++)
            lo[e] = lo[e] + hi[e];
    }
}

/* The weight gradient's tile over atoms (dense.h): each atom of LS_ATOM
 * rows of the reduction runs through tile_z into a slot of the tile's stack
 * (slot d holds the d-th partial of the binary-counter stream, so a merge
 * writes into the older slot and nothing is copied), the partials merge
 * as the canonical tree over atoms says, and the sum is stored to C (or
 * added: END_ADD) once. The stack is ZSLOT floats a level and stays in L1
 * for the tile's whole reduction. Lanes a masked tile does not compute are
 * merged too but never stored. Full tiles take micro_z64_atoms. */
static FORCE_INLINE __attribute__((target("avx512f")))
void atoms_tile_z(const gemm *g, const float *pb, size_t ldb, size_t i0, size_t n0, int end, const int mb,
                  const int nv, __mmask16 tail, float *stack)
{
    if (mb == Z_MB && nv == Z_NV && tail == (__mmask16)0xFFFF) {
        (broadcast_in_register() ? micro_z64_atoms_reg : micro_z64_atoms_mem)(
            g->c + i0 * g->ldc + n0, g->ldc, end == END_ADD, g->a + i0 * g->a_i, g->a_i, g->a_r, pb, ldb, g->R, stack);
        return;
    }
    gemm sub = { NULL, Z_NB, g->a + i0 * g->a_i, g->a_i, g->a_r, NULL, ldb, NULL, (size_t)mb, g->R, 0 };
    int depth = 0;
    for (size_t a0 = 0, j = 0; a0 < g->R; a0 += LS_ATOM, j++) {
        const size_t a1 = g->R - a0 < LS_ATOM ? g->R : a0 + LS_ATOM;
        sub.c = stack + (size_t)depth * ZSLOT;
        tile_z(&sub, pb + a0 * ldb, ldb, 0, 0, a0, a1, START_ZERO, END_STORE, mb, nv, tail);
        depth++;
        atoms_merge(stack, &depth, j, ZSLOT, (size_t)mb * Z_NB);
    }
    if (depth > 0)
        atoms_fold(stack, depth, ZSLOT, (size_t)mb * Z_NB);
UNROLL
    for (int i = 0; i < mb; i++) {
UNROLL
        for (int v = 0; v < nv; v++) {
            const __mmask16 m = v == nv - 1 ? tail : (__mmask16)0xFFFF;
            float *p = g->c + (i0 + (size_t)i) * g->ldc + n0 + 16 * (size_t)v;
            __m512 s = depth == 0 ? _mm512_setzero_ps() : _mm512_load_ps(stack + i * Z_NB + 16 * v);
            if (end == END_ADD)
                s = _mm512_add_ps(_mm512_maskz_loadu_ps(m, p), s);
            _mm512_mask_storeu_ps(p, m, s);
        }
    }
}

/* Lanes 0..7 of a mask for the last 8-float vector: table[8 - m .. 15 - m]
 * has m leading -1 (load) entries. */
static const int32_t y_mask_table[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };

/* The AVX2 twin of tile_z: 8 floats per vector; the last vector of a tile is
 * loaded and stored with vmaskmov when tail_n (its live lanes) is below 8.
 * masked is a constant at each call site so full tiles use plain loads. */
static FORCE_INLINE __attribute__((target("avx2,fma")))
void tile_y(const gemm *g, size_t i0, size_t n0, size_t r0, size_t r1, int start, int end,
            const int mb, const int nv, const int masked, __m256i tmask)
{
    __m256 acc[Y_MB][Y_NV];
    const float *arow[Y_MB];
UNROLL
    for (int i = 0; i < Y_MB; i++)
        arow[i] = g->a + (i0 + (size_t)(i < mb ? i : 0)) * g->a_i;

#define Y_LOAD(v, p) ((masked && (v) == nv - 1) ? _mm256_maskload_ps((p), tmask) : _mm256_loadu_ps(p))
UNROLL
    for (int i = 0; i < mb; i++) {
UNROLL
        for (int v = 0; v < nv; v++) {
            if (start == START_ZERO)
                acc[i][v] = _mm256_setzero_ps();
            else if (start == START_BIAS)
                acc[i][v] = Y_LOAD(v, g->bias + n0 + 8 * (size_t)v);
            else
                acc[i][v] = Y_LOAD(v, g->c + (i0 + (size_t)i) * g->ldc + n0 + 8 * (size_t)v);
        }
    }

    const float *pb = g->bm + r0 * g->ldb + n0;
    for (size_t r = r0; r < r1; r++, pb += g->ldb) {
        __m256 wv[Y_NV];
UNROLL
        for (int v = 0; v < nv; v++)
            wv[v] = Y_LOAD(v, pb + 8 * v);
        const size_t ar = r * g->a_r;
UNROLL
        for (int i = 0; i < mb; i++) {
            const __m256 x = _mm256_broadcast_ss(&arow[i][ar]);
UNROLL
            for (int v = 0; v < nv; v++)
                acc[i][v] = _mm256_fmadd_ps(x, wv[v], acc[i][v]);
        }
    }

UNROLL
    for (int i = 0; i < mb; i++) {
UNROLL
        for (int v = 0; v < nv; v++) {
            float *p = g->c + (i0 + (size_t)i) * g->ldc + n0 + 8 * (size_t)v;
            __m256 s = acc[i][v];
            if (end == END_ADD)
                s = _mm256_add_ps(Y_LOAD(v, p), s);
            if (masked && v == nv - 1)
                _mm256_maskstore_ps(p, tmask, s);
            else
                _mm256_storeu_ps(p, s);
        }
    }
#undef Y_LOAD
}

/* atoms_tile_z's AVX2 twin: each atom through tile_y into a slot of the
 * stack (YSLOT floats a level), merged as the canonical tree over atoms
 * says, the sum stored (or added) once. */
#define YSLOT (Y_MB * Y_NB)

/* Atom [a0, a1) of the reduction for the tile at rows i0, columns n0: its
 * partial into the stack's slot `depth` (tile_y from zero), then the
 * merges the canonical tree makes after atom j. */
static FORCE_INLINE __attribute__((target("avx2,fma")))
void atom_step_y(const gemm *g, size_t i0, size_t n0, size_t a0, size_t a1, size_t j, float *stack, int *depth,
                 const int mb, const int nv, const int masked, __m256i tmask)
{
    gemm sub = { stack + (size_t)*depth * YSLOT, Y_NB, g->a + i0 * g->a_i, g->a_i, g->a_r, g->bm + n0, g->ldb,
                 NULL, (size_t)mb, g->R, 0 };
    tile_y(&sub, 0, 0, a0, a1, START_ZERO, END_STORE, mb, nv, masked, tmask);
    (*depth)++;
    atoms_merge(stack, depth, j, YSLOT, (size_t)mb * Y_NB);
}

/* The tile's stack folded and its sum stored (or added) to C. */
static FORCE_INLINE __attribute__((target("avx2,fma")))
void atoms_store_y(const gemm *g, size_t i0, size_t n0, int end, float *stack, int depth, const int mb,
                   const int nv, const int masked, __m256i tmask)
{
    if (depth > 0)
        atoms_fold(stack, depth, YSLOT, (size_t)mb * Y_NB);
UNROLL
    for (int i = 0; i < mb; i++) {
UNROLL
        for (int v = 0; v < nv; v++) {
            float *p = g->c + (i0 + (size_t)i) * g->ldc + n0 + 8 * (size_t)v;
            const int part = masked && v == nv - 1;
            __m256 s = depth == 0 ? _mm256_setzero_ps() : _mm256_load_ps(stack + i * Y_NB + 8 * v);
            if (end == END_ADD)
                s = _mm256_add_ps(part ? _mm256_maskload_ps(p, tmask) : _mm256_loadu_ps(p), s);
            if (part)
                _mm256_maskstore_ps(p, tmask, s);
            else
                _mm256_storeu_ps(p, s);
        }
    }
}

/* One panel's tiles i0 = t0·Y_MB .. over a group of nt tiles with the
 * atoms outermost: every tile of the group takes atom j before any takes
 * atom j + 1, each tile's partials in its own stack (stacks[t], `levels`
 * slots), so an atom's rows of A and of Bm (16 rows) stay in L1 while the
 * group's tiles use them. Tile by tile through the whole reduction (the
 * order before) read both from L2 for every tile: the weight gradient ran
 * at about half the forward's rate. Per element the same atoms, the same
 * merges in the same order: the same bits. */
static FORCE_INLINE __attribute__((target("avx2,fma")))
void atoms_group_y(const gemm *g, size_t t0, size_t nt, size_t n0, int end, const int nv, const int masked,
                   __m256i tmask, float *stacks, size_t levels)
{
    int depth[YGROUP_TILES];
    for (size_t t = 0; t < nt; t++)
        depth[t] = 0;
    for (size_t a0 = 0, j = 0; a0 < g->R; a0 += LS_ATOM, j++) {
        const size_t a1 = g->R - a0 < LS_ATOM ? g->R : a0 + LS_ATOM;
        for (size_t t = 0; t < nt; t++) {
            const size_t i0 = (t0 + t) * Y_MB, mrem = g->M - i0;
            float *st = stacks + t * levels * YSLOT;
            if (mrem >= Y_MB)
                atom_step_y(g, i0, n0, a0, a1, j, st, &depth[t], Y_MB, nv, masked, tmask);
            else if (mrem == 3)
                atom_step_y(g, i0, n0, a0, a1, j, st, &depth[t], 3, nv, masked, tmask);
            else if (mrem == 2)
                atom_step_y(g, i0, n0, a0, a1, j, st, &depth[t], 2, nv, masked, tmask);
            else
                atom_step_y(g, i0, n0, a0, a1, j, st, &depth[t], 1, nv, masked, tmask);
        }
    }
    for (size_t t = 0; t < nt; t++) {
        const size_t i0 = (t0 + t) * Y_MB, mrem = g->M - i0;
        float *st = stacks + t * levels * YSLOT;
        if (mrem >= Y_MB)
            atoms_store_y(g, i0, n0, end, st, depth[t], Y_MB, nv, masked, tmask);
        else if (mrem == 3)
            atoms_store_y(g, i0, n0, end, st, depth[t], 3, nv, masked, tmask);
        else if (mrem == 2)
            atoms_store_y(g, i0, n0, end, st, depth[t], 2, nv, masked, tmask);
        else
            atoms_store_y(g, i0, n0, end, st, depth[t], 1, nv, masked, tmask);
    }
}

/* Columns of n per panel: one tile's width. The reduction is not blocked
 * (rc = SIZE_MAX) in either kernel, so every accumulator stays in a register
 * from the first row of the reduction to the last and is stored once. A
 * panel of at most PACK_ROWS = 128 rows of 64 floats (32 KiB) that serves
 * at least PACK_MIN_M rows of A is first packed into a contiguous buffer,
 * where it stays in L1 while the tiles pass. In the MLP's training that is
 * the weight gradient (the leaf's rows of dout, read by 784 / 6 tiles of
 * the first layer): unpacked, rows 1 KiB apart (its 256 columns) fall into
 * a quarter of L1's sets and evict one another, and packing made those
 * calls 8-11% faster alone. The training's forward panels (W, up to 784
 * rows) serve only the leaf's 64 / 6 tiles: packing them in blocks of 128
 * rows gained 2-5% alone but lost 1.5% on whole steps (median of 9
 * alternations), so the rule leaves them alone (a forward call of 128
 * samples or more over at most 128 inputs is packed). Packing is a copy,
 * so no bits move. */
#define PACK_ROWS 128
#define PACK_MIN_M 128   /* rows of A a panel must serve to be packed */

/* The panel loop; atoms is a constant in each of the two functions below,
 * so the forward's code carries nothing of the atoms. (The AVX2 weight
 * gradient has its own loop, gemm_y_atoms: groups of tiles, atoms outermost.) */
static FORCE_INLINE __attribute__((target("avx512f")))
void gemm_z_body(const gemm *g, int start, int end, size_t rc, const int atoms)
{
    _Alignas(64) float pack[PACK_ROWS * Z_NB];
    _Alignas(64) float stack[DENSE_MAX_LEVELS * ZSLOT];   /* 36 KiB, touched only with atoms */
    if (atoms)   /* lanes a masked tile never writes are merged: zeros, not stale bits */
        memset(stack, 0, atoms_levels(g->R) * ZSLOT * sizeof(float));
    for (size_t n0 = 0; n0 < g->N; n0 += Z_NB) {
        const size_t rem = g->N - n0;
        const int nv = rem >= Z_NB ? Z_NV : (int)((rem + 15) / 16);
        const unsigned live = (rem >= Z_NB || rem % 16 == 0) ? 16u : (unsigned)(rem % 16);
        const __mmask16 tail = (__mmask16)((1u << live) - 1u);
        size_t r0 = 0;
        do {   /* at least once, so R == 0 still writes the start value */
            const size_t r1 = g->R - r0 > rc ? r0 + rc : g->R;
            const int st = r0 == 0 ? start : START_C;
            const float *pb = g->bm + r0 * g->ldb + n0;
            size_t ldb = g->ldb;
            if (nv == Z_NV && r1 - r0 <= PACK_ROWS && g->M >= PACK_MIN_M && ldb != Z_NB) {
                /* A copy: the same values, so the same bits. */
                for (size_t r = r0; r < r1; r++)
UNROLL
                    for (int v = 0; v < Z_NV; v++)
                        _mm512_store_ps(pack + (r - r0) * Z_NB + 16 * v, _mm512_loadu_ps(pb + (r - r0) * ldb + 16 * v));
                pb = pack;
                ldb = Z_NB;
            }
            for (size_t i0 = 0; i0 < g->M; i0 += Z_MB) {
                const size_t mrem = g->M - i0;
                const int mb = mrem >= Z_MB ? Z_MB : (int)mrem;
#define TZ(MB, NV)                                                                                      \
    (atoms ? atoms_tile_z(g, pb, ldb, i0, n0, end, MB, NV, tail, stack)                               \
           : tile_z(g, pb, ldb, i0, n0, r0, r1, st, end, MB, NV, tail))
                switch (mb * 8 + nv) {
                case 6 * 8 + 4: TZ(6, 4); break;
                case 6 * 8 + 3: TZ(6, 3); break;
                case 6 * 8 + 2: TZ(6, 2); break;
                case 6 * 8 + 1: TZ(6, 1); break;
                case 5 * 8 + 4: TZ(5, 4); break;
                case 5 * 8 + 3: TZ(5, 3); break;
                case 5 * 8 + 2: TZ(5, 2); break;
                case 5 * 8 + 1: TZ(5, 1); break;
                case 4 * 8 + 4: TZ(4, 4); break;
                case 4 * 8 + 3: TZ(4, 3); break;
                case 4 * 8 + 2: TZ(4, 2); break;
                case 4 * 8 + 1: TZ(4, 1); break;
                case 3 * 8 + 4: TZ(3, 4); break;
                case 3 * 8 + 3: TZ(3, 3); break;
                case 3 * 8 + 2: TZ(3, 2); break;
                case 3 * 8 + 1: TZ(3, 1); break;
                case 2 * 8 + 4: TZ(2, 4); break;
                case 2 * 8 + 3: TZ(2, 3); break;
                case 2 * 8 + 2: TZ(2, 2); break;
                case 2 * 8 + 1: TZ(2, 1); break;
                case 1 * 8 + 4: TZ(1, 4); break;
                case 1 * 8 + 3: TZ(1, 3); break;
                case 1 * 8 + 2: TZ(1, 2); break;
                default: TZ(1, 1); break;
                }
#undef TZ
            }
            r0 = r1;
        } while (r0 < g->R);
    }
}

static FORCE_INLINE __attribute__((target("avx2,fma")))
void gemm_y_body(const gemm *g, int start, int end, size_t rc)
{
    for (size_t n0 = 0; n0 < g->N; n0 += Y_NB) {
        const size_t rem = g->N - n0;
        const int nv = rem >= Y_NB ? Y_NV : (int)((rem + 7) / 8);
        const int live = rem >= Y_NB ? 8 : (int)(rem - 8 * (size_t)(nv - 1));
        const __m256i tmask = _mm256_loadu_si256((const __m256i *)(const void *)(y_mask_table + 8 - live));
        size_t r0 = 0;
        do {
            const size_t r1 = g->R - r0 > rc ? r0 + rc : g->R;
            const int st = r0 == 0 ? start : START_C;
            for (size_t i0 = 0; i0 < g->M; i0 += Y_MB) {
                const size_t mrem = g->M - i0;
                const int mb = mrem >= Y_MB ? Y_MB : (int)mrem;
#define TY(MB, NV, MASKED) tile_y(g, i0, n0, r0, r1, st, end, MB, NV, MASKED, tmask)
                if (live == 8) {
                    switch (mb * 8 + nv) {
                    case 4 * 8 + 2: TY(4, 2, 0); break;
                    case 4 * 8 + 1: TY(4, 1, 0); break;
                    case 3 * 8 + 2: TY(3, 2, 0); break;
                    case 3 * 8 + 1: TY(3, 1, 0); break;
                    case 2 * 8 + 2: TY(2, 2, 0); break;
                    case 2 * 8 + 1: TY(2, 1, 0); break;
                    case 1 * 8 + 2: TY(1, 2, 0); break;
                    default: TY(1, 1, 0); break;
                    }
                } else {
                    switch (mb * 8 + nv) {
                    case 4 * 8 + 2: TY(4, 2, 1); break;
                    case 4 * 8 + 1: TY(4, 1, 1); break;
                    case 3 * 8 + 2: TY(3, 2, 1); break;
                    case 3 * 8 + 1: TY(3, 1, 1); break;
                    case 2 * 8 + 2: TY(2, 2, 1); break;
                    case 2 * 8 + 1: TY(2, 1, 1); break;
                    case 1 * 8 + 2: TY(1, 2, 1); break;
                    default: TY(1, 1, 1); break;
                    }
                }
#undef TY
            }
            r0 = r1;
        } while (r0 < g->R);
    }
}

/* Reduction block of the forward pass: none (see Z_NB). */
#define FWD_RC SIZE_MAX

static __attribute__((target("avx512f"), noinline))
void gemm_z(const gemm *g, int start, int end, size_t rc)
{
    gemm_z_body(g, start, end, rc, 0);
}

static __attribute__((target("avx512f"), noinline))
void gemm_z_atoms(const gemm *g, int end)
{
    gemm_z_body(g, START_ZERO, end, SIZE_MAX, 1);
}

static __attribute__((target("avx2,fma"), noinline))
void gemm_y(const gemm *g, int start, int end, size_t rc)
{
    gemm_y_body(g, start, end, rc);
}

static __attribute__((target("avx2,fma"), noinline))
void gemm_y_atoms(const gemm *g, int end)
{
    _Alignas(32) float stacks[YGROUP_FLOATS];
    const size_t levels = atoms_levels(g->R), tiles = (g->M + Y_MB - 1) / Y_MB;
    size_t group = YGROUP_FLOATS / (levels * YSLOT);
    if (group > YGROUP_TILES)
        group = YGROUP_TILES;
    /* lanes a masked tile never writes are merged: zeros, not stale bits */
    memset(stacks, 0, group * levels * YSLOT * sizeof(float));
    for (size_t n0 = 0; n0 < g->N; n0 += Y_NB) {
        const size_t rem = g->N - n0;
        const int nv = rem >= Y_NB ? Y_NV : (int)((rem + 7) / 8);
        const int live = rem >= Y_NB ? 8 : (int)(rem - 8 * (size_t)(nv - 1));
        const __m256i tmask = _mm256_loadu_si256((const __m256i *)(const void *)(y_mask_table + 8 - live));
        for (size_t t0 = 0; t0 < tiles; t0 += group) {
            const size_t nt = tiles - t0 < group ? tiles - t0 : group;
            if (live == 8 && nv == 2)
                atoms_group_y(g, t0, nt, n0, end, 2, 0, tmask, stacks, levels);
            else if (live == 8)
                atoms_group_y(g, t0, nt, n0, end, 1, 0, tmask, stacks, levels);
            else if (nv == 2)
                atoms_group_y(g, t0, nt, n0, end, 2, 1, tmask, stacks, levels);
            else
                atoms_group_y(g, t0, nt, n0, end, 1, 1, tmask, stacks, levels);
        }
    }
}

/* atoms: the reduction runs over atoms of LS_ATOM rows summed along the
 * canonical tree (the weight gradient, dense.h); 0: one sequential sum. */
static void gemm_run(int path, const gemm *g, int start, int end, size_t rc, int atoms)
{
    if (path == PATH_AVX512)
        atoms ? gemm_z_atoms(g, end) : gemm_z(g, start, end, rc);
    else
        atoms ? gemm_y_atoms(g, end) : gemm_y(g, start, end, rc);
}

/* dbias[n] = (dbias[n] +) the sum over b of dout[b][n] (row b at dout +
 * b·ldd) over atoms (dense.h): vectorised over n, each atom's rows in
 * order, the atoms along the canonical tree. */
/* NV vectors of columns side by side: each column's sums as the scalar
 * twin's (rows in order within an atom, the atoms by the canonical tree);
 * NV independent chains, so the additions' latencies overlap. */
static FORCE_INLINE __attribute__((target("avx2")))
void dbias_cols_y(float *dbias, const float *dout, size_t ldd, size_t B, int accumulate, const int NV)
{
    __m256 part[DENSE_MAX_LEVELS][4];
    int depth = 0;
    for (size_t a0 = 0, j = 0; a0 < B; a0 += LS_ATOM, j++) {
        const size_t a1 = B - a0 < LS_ATOM ? B : a0 + LS_ATOM;
        __m256 s[4];
UNROLL
        for (int v = 0; v < NV; v++)
            s[v] = _mm256_setzero_ps();
        for (size_t b = a0; b < a1; b++)
UNROLL
            for (int v = 0; v < NV; v++)
                s[v] = _mm256_add_ps(s[v], _mm256_loadu_ps(dout + b * ldd + 8 * (size_t)v));
UNROLL
        for (int v = 0; v < NV; v++)
            part[depth][v] = s[v];
        depth++;
        for (size_t t = j; t & 1; t >>= 1, depth--)
UNROLL
            for (int v = 0; v < NV; v++)
                part[depth - 2][v] = _mm256_add_ps(part[depth - 2][v], part[depth - 1][v]);
    }
    for (; depth > 1; depth--)
UNROLL
        for (int v = 0; v < NV; v++)
            part[depth - 2][v] = _mm256_add_ps(part[depth - 2][v], part[depth - 1][v]);
UNROLL
    for (int v = 0; v < NV; v++) {
        __m256 s = depth == 0 ? _mm256_setzero_ps() : part[0][v];
        if (accumulate)
            s = _mm256_add_ps(_mm256_loadu_ps(dbias + 8 * v), s);
        _mm256_storeu_ps(dbias + 8 * v, s);
    }
}

static __attribute__((target("avx2")))
void dbias_y(float *dbias, const float *dout, size_t ldd, size_t B, size_t N, int accumulate)
{
    size_t n = 0;
    for (; n + 32 <= N; n += 32)
        dbias_cols_y(dbias + n, dout + n, ldd, B, accumulate, 4);
    for (; n + 8 <= N; n += 8)
        dbias_cols_y(dbias + n, dout + n, ldd, B, accumulate, 1);
    for (; n < N; n++) {   /* the scalar twin's operations for the last columns */
        atom_stack st = { .depth = 0 };
        for (size_t a0 = 0, j = 0; a0 < B; a0 += LS_ATOM, j++) {
            const size_t a1 = B - a0 < LS_ATOM ? B : a0 + LS_ATOM;
            float s = 0.0f;
            for (size_t b = a0; b < a1; b++)
                s = s + dout[b * ldd + n];
            atom_push(&st, s, j);
        }
        const float s = atom_fold(&st);
        dbias[n] = accumulate ? dbias[n] + s : s;
    }
}

/* One 8 x 8 block: dst[j][i] = src[i][j]. Unpacks pair rows, shuffles make
 * 4-row columns in each 128-bit half, and the half swaps finish them. */
static __attribute__((target("avx2")))
void transpose8_y(float *dst, size_t ldd, const float *src, size_t lds)
{
    const __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + lds), r2 = _mm256_loadu_ps(src + 2 * lds),
                 r3 = _mm256_loadu_ps(src + 3 * lds), r4 = _mm256_loadu_ps(src + 4 * lds),
                 r5 = _mm256_loadu_ps(src + 5 * lds), r6 = _mm256_loadu_ps(src + 6 * lds),
                 r7 = _mm256_loadu_ps(src + 7 * lds);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
                 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
                 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
                 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)),
                 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
                 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)),
                 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* Whole 8 x 8 blocks through transpose8_y, the ragged edges element by element. */
static __attribute__((target("avx2")))
void transpose_y(float *dst, size_t ldd, const float *src, size_t lds, size_t R, size_t C)
{
    const size_t R8 = R / 8 * 8, C8 = C / 8 * 8;
    for (size_t r = 0; r < R8; r += 8)
        for (size_t c = 0; c < C8; c += 8)
            transpose8_y(dst + c * ldd + r, ldd, src + r * lds + c, lds);
    for (size_t r = 0; r < R; r++)
        for (size_t c = r < R8 ? C8 : 0; c < C; c++)
            dst[c * ldd + r] = src[r * lds + c];
}

#endif /* DENSE_X86 */

void dense_transpose_block(float *dst, size_t ldd, const float *src, size_t lds, size_t R, size_t C)
{
#if DENSE_X86
    if (current_path() != PATH_SCALAR) {
        transpose_y(dst, ldd, src, lds, R, C);
        return;
    }
#endif
    /* 32 x 32 blocks so the strided side stays in cache. */
    for (size_t r0 = 0; r0 < R; r0 += 32)
        for (size_t c0 = 0; c0 < C; c0 += 32)
            for (size_t r = r0; r < R && r < r0 + 32; r++)
                for (size_t c = c0; c < C && c < c0 + 32; c++)
                    dst[c * ldd + r] = src[r * lds + c];
}

void dense_transpose(float *dst, const float *src, size_t R, size_t C)
{
    dense_transpose_block(dst, R, src, C, R, C);
}

void dense_forward_ld(float *out, size_t ldo, const float *in, size_t ldi, const float *w, size_t ldw,
                      const float *bias, size_t B, size_t K, size_t N)
{
    const int path = current_path();
#if DENSE_X86
    if (path != PATH_SCALAR) {
        if (B == 0 || N == 0)
            return;
        const gemm g = { out, ldo, in, ldi, 1, w, ldw, bias, B, K, N };
        gemm_run(path, &g, bias != NULL ? START_BIAS : START_ZERO, END_STORE, FWD_RC, 0);
        return;
    }
#endif
    (void)path;
    forward_ld_scalar(out, ldo, in, ldi, w, ldw, bias, B, K, N);
}

void dense_forward(float *out, const float *in, const float *w, const float *bias,
                   size_t B, size_t K, size_t N)
{
    dense_forward_ld(out, N, in, K, w, N, bias, B, K, N);
}

void dense_backward_weights_ld(float *dw, size_t ldw, float *dbias, const float *in, size_t ldi,
                               const float *dout, size_t ldd, size_t B, size_t K, size_t N, int accumulate)
{
    const int path = current_path();
#if DENSE_X86
    if (path != PATH_SCALAR) {
        if (N == 0)
            return;
        if (K > 0) {
            /* rows of A are the k of in (stride 1), the reduction runs over b
             * (stride ldi) in atoms. Never blocked over b: END_ADD needs the
             * whole sum before it is added to dw. */
            const gemm g = { dw, ldw, in, 1, ldi, dout, ldd, NULL, K, B, N };
            gemm_run(path, &g, START_ZERO, accumulate ? END_ADD : END_STORE, SIZE_MAX, 1);
        }
        if (dbias != NULL)
            dbias_y(dbias, dout, ldd, B, N, accumulate);
        return;
    }
#endif
    (void)path;
    backward_weights_ld_scalar(dw, ldw, dbias, in, ldi, dout, ldd, B, K, N, accumulate);
}

void dense_backward_weights(float *dw, float *dbias, const float *in, const float *dout,
                            size_t B, size_t K, size_t N, int accumulate)
{
    dense_backward_weights_ld(dw, N, dbias, in, K, dout, N, B, K, N, accumulate);
}
