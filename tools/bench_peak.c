/* bench_peak.c — `lockstep bench --peak`: what this machine's cores can do
 * at most, on the SIMD path the kernels take now (dense_simd_name: avx512,
 * avx2 or scalar), for the two kinds of arithmetic that bound a step:
 *
 * - fma (the default): fused multiply-adds, two flops each, the dense
 *   kernels' arithmetic (engine/num/dense.h). `make bench` divides the MLP's
 *   GFLOP/s by this figure to get the fraction of peak reached. (Before
 *   2026-11-26 the kernels rounded each product and this measured separate
 *   multiplies and adds; a core with two FMA units does twice those flops.)
 * - div and sqrt: float divisions and square roots a second (each lane one),
 *   what AdamW's update waits on: the contract's formula (docs/contract.md,
 *   The step) does three divisions and a square root per parameter, and on
 *   a core whose divider is slow that, not memory, sets the update's time
 *   (docs/performance.md).
 *
 * Each kernel is independent chains of one vector operation, as many chains
 * as the latency needs to keep the units busy, with no loads or stores:
 * nothing a real kernel does could be faster. The binary is built without
 * -march; each path carries its own target attribute, like
 * engine/num/dense.c. Threads: one chain set per thread, all started
 * together; the figure is the sum over threads.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/num/dense.h"
#include "tools/tools.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define PEAK_X86 1
#include <immintrin.h>
#else
#define PEAK_X86 0
#endif

enum { PEAK_TRIALS = 7, PEAK_MAX_THREADS = 256 };

/* The asm statements hide the values from the optimiser so that it can
 * neither merge chains nor drop the loop. Each kernel keeps its chains in named variables (an array would be kept
 * in memory around the asm statements). */
#define CHAINS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define CHAINS6(X) X(0) X(1) X(2) X(3) X(4) X(5)

#if PEAK_X86
/* 16 FMA chains of 16 floats: 512 flops per iteration. A 512-bit FMA has a
 * latency of 4 cycles and a core issues up to two a cycle, so 8 chains would
 * just keep the units busy; 16 leave room. */
static __attribute__((target("avx512f"), noinline)) float peak_z(long n, float seed)
{
#define Z_INIT(i) __m512 a##i = _mm512_set1_ps(seed + (float)(i)), m##i = _mm512_set1_ps(seed + (float)(i + 8));
    CHAINS8(Z_INIT)
    const __m512 c = _mm512_set1_ps(1.0000001f), d = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < n; it++) {
#define Z_STEP(i) a##i = _mm512_fmadd_ps(a##i, c, d); m##i = _mm512_fmadd_ps(m##i, c, d);
        CHAINS8(Z_STEP)
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(m0), "+v"(m1), "+v"(m2), "+v"(m3));
        __asm__ volatile("" : "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(m4), "+v"(m5), "+v"(m6), "+v"(m7));
    }
    __m512 s = _mm512_setzero_ps();
#define Z_SUM(i) s = _mm512_add_ps(s, _mm512_add_ps(a##i, m##i));
    CHAINS8(Z_SUM)
    float out[16];
    _mm512_storeu_ps(out, s);
    return out[0];
}

/* 12 FMA chains of 8 floats (14 of the 16 ymm registers with the two
 * constants): 192 flops per iteration. */
static __attribute__((target("avx2,fma"), noinline)) float peak_y(long n, float seed)
{
#define Y_INIT(i) __m256 a##i = _mm256_set1_ps(seed + (float)(i)), m##i = _mm256_set1_ps(seed + (float)(i + 6));
    CHAINS6(Y_INIT)
    const __m256 c = _mm256_set1_ps(1.0000001f), d = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < n; it++) {
#define Y_STEP(i) a##i = _mm256_fmadd_ps(a##i, c, d); m##i = _mm256_fmadd_ps(m##i, c, d);
        CHAINS6(Y_STEP)
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(m0), "+x"(m1), "+x"(m2));
        __asm__ volatile("" : "+x"(a3), "+x"(a4), "+x"(a5), "+x"(m3), "+x"(m4), "+x"(m5));
    }
    __m256 s = _mm256_setzero_ps();
#define Y_SUM(i) s = _mm256_add_ps(s, _mm256_add_ps(a##i, m##i));
    CHAINS6(Y_SUM)
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0];
}

/* Eight chains of divisions or of square roots: a divider's latency is
 * about three times its issue interval, so eight keep it busy. A division
 * by 1.0000001 or a square root keeps every value normal and near 1 over a
 * trial: no subnormal or special operand makes the unit slower or faster
 * than on AdamW's values. */
#define DIV_KERNEL(name, isa, vec, set1, op, store, lanes)                                      \
    static __attribute__((target(isa), noinline)) float name(long n, float seed)                  \
    {                                                                                             \
        vec a0 = set1(seed), a1 = set1(seed + 1), a2 = set1(seed + 2), a3 = set1(seed + 3);         \
        vec a4 = set1(seed + 4), a5 = set1(seed + 5), a6 = set1(seed + 6), a7 = set1(seed + 7);     \
        const vec c = set1(1.0000001f);                                                           \
        (void)c;                                                                                  \
        for (long it = 0; it < n; it++) {                                                         \
            a0 = op(a0, c); a1 = op(a1, c); a2 = op(a2, c); a3 = op(a3, c);                       \
            a4 = op(a4, c); a5 = op(a5, c); a6 = op(a6, c); a7 = op(a7, c);                       \
            __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3));                        \
            __asm__ volatile("" : "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7));                        \
        }                                                                                         \
        float out[lanes];                                                                         \
        store(out, a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7);                                       \
        return out[0];                                                                            \
    }
#define DIV_OP(a, c) ((a) / (c))
#define SQRT_Z(a, c) _mm512_sqrt_ps(a)
#define SQRT_Y(a, c) _mm256_sqrt_ps(a)
DIV_KERNEL(div_z, "avx512f", __m512, _mm512_set1_ps, DIV_OP, _mm512_storeu_ps, 16)
DIV_KERNEL(sqrt_z, "avx512f", __m512, _mm512_set1_ps, SQRT_Z, _mm512_storeu_ps, 16)
DIV_KERNEL(div_y, "avx2", __m256, _mm256_set1_ps, DIV_OP, _mm256_storeu_ps, 8)
DIV_KERNEL(sqrt_y, "avx2", __m256, _mm256_set1_ps, SQRT_Y, _mm256_storeu_ps, 8)
#endif

/* 12 chains of fmaf on one float (the scalar twins' call; libm's where the
 * build does not let the compiler emit the instruction): 24 flops per
 * iteration. */
static __attribute__((noinline)) float peak_scalar(long n, float seed)
{
#define S_INIT(i) float a##i = seed + (float)(i), m##i = seed + (float)(i + 6);
    CHAINS6(S_INIT)
    for (long it = 0; it < n; it++) {
#define S_STEP(i) a##i = fmaf(a##i, 1.0000001f, 1e-7f); m##i = fmaf(m##i, 1.0000001f, 1e-7f);
        CHAINS6(S_STEP)
#if PEAK_X86
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(m0), "+x"(m1), "+x"(m2));
        __asm__ volatile("" : "+x"(a3), "+x"(a4), "+x"(a5), "+x"(m3), "+x"(m4), "+x"(m5));
#else
        __asm__ volatile("" : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(m0), "+r"(m1), "+r"(m2));
        __asm__ volatile("" : "+r"(a3), "+r"(a4), "+r"(a5), "+r"(m3), "+r"(m4), "+r"(m5));
#endif
    }
    float s = 0.0f;
#define S_SUM(i) s = s + a##i + m##i;
    CHAINS6(S_SUM)
    return s;
}

/* Eight chains of scalar divisions or square roots (the scalar twins'
 * arithmetic). */
static __attribute__((noinline)) float div_scalar(long n, float seed, int root)
{
#define D_INIT(i) float a##i = seed + (float)(i);
    CHAINS8(D_INIT)
    for (long it = 0; it < n; it++) {
        if (root) {
#define D_SQRT(i) a##i = sqrtf(a##i);
            CHAINS8(D_SQRT)
        } else {
#define D_DIV(i) a##i = a##i / 1.0000001f;
            CHAINS8(D_DIV)
        }
#if PEAK_X86
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3));
        __asm__ volatile("" : "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7));
#else
        __asm__ volatile("" : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3));
        __asm__ volatile("" : "+r"(a4), "+r"(a5), "+r"(a6), "+r"(a7));
#endif
    }
    return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

/* What a trial measures. */
typedef enum { OP_FMA, OP_DIV, OP_SQRT } peak_op;
static const char *const OP_NAMES[] = { "fma", "div", "sqrt" };

typedef struct {
    const char *path;
    peak_op op;
    long iters;
    pthread_barrier_t *start;
    float result;
} peak_job;

/* Flops (fma: two a lane) or operations (div, sqrt: one a lane) per
 * iteration of a kernel. */
static double peak_work_per_iter(const char *path, peak_op op)
{
    const double lanes = strcmp(path, "avx512") == 0 ? 16 : strcmp(path, "avx2") == 0 ? 8 : 1;
    if (op != OP_FMA)
        return 8 * lanes;   /* eight chains */
    return strcmp(path, "avx512") == 0 ? 512 : strcmp(path, "avx2") == 0 ? 192 : 24;
}

static void *peak_worker(void *arg)
{
    peak_job *j = arg;
    pthread_barrier_wait(j->start);
    const int root = j->op == OP_SQRT;
#if PEAK_X86
    if (strcmp(j->path, "avx512") == 0) {
        j->result = j->op == OP_FMA ? peak_z(j->iters, 1.0f) : root ? sqrt_z(j->iters, 1.0f) : div_z(j->iters, 1.0f);
        return NULL;
    }
    if (strcmp(j->path, "avx2") == 0) {
        j->result = j->op == OP_FMA ? peak_y(j->iters, 1.0f) : root ? sqrt_y(j->iters, 1.0f) : div_y(j->iters, 1.0f);
        return NULL;
    }
#endif
    j->result = j->op == OP_FMA ? peak_scalar(j->iters, 1.0f) : div_scalar(j->iters, 1.0f, root);
    return NULL;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* GFLOP/s (fma) or G operations a second (div, sqrt) of one trial with
 * `threads` threads, or -1 when a thread cannot start. */
static double peak_trial(const char *path, peak_op op, int threads, long iters)
{
    pthread_t tid[PEAK_MAX_THREADS];
    peak_job job[PEAK_MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    int started = 0;
    for (int t = 0; t < threads; t++) {
        job[t] = (peak_job){ path, op, iters, &start, 0.0f };
        if (pthread_create(&tid[t], NULL, peak_worker, &job[t]) != 0)
            break;
        started++;
    }
    if (started < threads) {
        /* Cannot happen on a sane machine; let the started ones finish. */
        for (int t = started; t < threads; t++)
            pthread_barrier_wait(&start);
    }
    const double t0 = now_seconds();
    pthread_barrier_wait(&start);
    float sink = 0.0f;
    for (int t = 0; t < started; t++) {
        pthread_join(tid[t], NULL);
        sink += job[t].result;
    }
    const double dt = now_seconds() - t0;
    pthread_barrier_destroy(&start);
    if (started < threads || sink != sink)   /* the sum is read so no result is dead */
        return -1;
    return (double)threads * (double)iters * peak_work_per_iter(path, op) / dt / 1e9;
}

int bench_peak(int argc, char **argv)
{
    int threads = 1;
    peak_op op = OP_FMA;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            puts("usage: lockstep bench --peak [--threads T] [--op fma|div|sqrt]\n"
                 "What T cores (default 1) do at most, on the SIMD path the kernels take now\n"
                 "(LOCKSTEP_SIMD applies): the best of 7 short trials of independent chains.\n"
                 "  fma   fused multiply-adds, 2 flops each, as the dense kernels (the default);\n"
                 "        prints one line: peak PATH THREADS GFLOP/s\n"
                 "  div   float divisions a second, each lane one: AdamW's update does 3 a parameter;\n"
                 "        prints one line: div PATH THREADS G/s\n"
                 "  sqrt  float square roots a second (AdamW: 1 a parameter); prints: sqrt PATH THREADS G/s");
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--peak") == 0)
            continue;
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            ls_err err;
            int64_t t;
            if (flags_int("--threads", argv[++i], 1, PEAK_MAX_THREADS, &t, &err) != LS_OK) {
                fprintf(stderr, "lockstep bench: %s (one count with --peak)\n", err.msg);
                return EXIT_USAGE;
            }
            threads = (int)t;
            continue;
        }
        if (strcmp(argv[i], "--op") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            int found = 0;
            for (int k = 0; k < 3; k++)
                if (strcmp(v, OP_NAMES[k]) == 0) {
                    op = (peak_op)k;
                    found = 1;
                }
            if (!found) {
                fprintf(stderr, "lockstep bench: --op: '%s' is not fma, div or sqrt\n", v);
                return EXIT_USAGE;
            }
            continue;
        }
        if ((strcmp(argv[i], "--threads") == 0 || strcmp(argv[i], "--op") == 0) && i + 1 == argc)
            fprintf(stderr, "lockstep bench: %s needs a value (%s)\n", argv[i],
                    argv[i][2] == 't' ? "a count" : "fma, div or sqrt");
        else
            fprintf(stderr, "lockstep bench: %s: --peak takes only --threads T and --op OP\n", argv[i]);
        return EXIT_USAGE;
    }
    const char *path = dense_simd_name();
    /* About 1e8 cycles a trial (30 ms at 3.5 GHz) when a core does 32 flops
     * a cycle on a vector path and 4 on the scalar one, or a division or
     * square root every 4 cycles; the best trial is the peak (a shared
     * machine only ever makes a trial slower). */
    const double lanes = strcmp(path, "avx512") == 0 ? 16 : strcmp(path, "avx2") == 0 ? 8 : 1;
    const double per_cycle = op != OP_FMA ? lanes / 4 : strcmp(path, "scalar") == 0 ? 4 : 32;
    const long iters = (long)(1e8 * per_cycle / peak_work_per_iter(path, op));
    double best = 0;
    for (int t = 0; t < PEAK_TRIALS; t++) {
        const double g = peak_trial(path, op, threads, iters);
        if (g < 0) {
            fprintf(stderr, "lockstep bench: cannot start %d threads\n", threads);
            return EXIT_USAGE;
        }
        if (g > best)
            best = g;
    }
    printf("%s %s %d %.*f\n", op == OP_FMA ? "peak" : OP_NAMES[op], path, threads, op == OP_FMA ? 1 : 2, best);
    return EXIT_OK;
}
