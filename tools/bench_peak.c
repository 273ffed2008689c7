/* bench_peak.c — `lockstep bench --peak`: the FP32 peak of this machine's
 * cores for the arithmetic the dense kernels do (fused multiply-adds, two
 * flops each: engine/num/dense.h), on the SIMD path the kernels take now
 * (dense_simd_name: avx512, avx2 or scalar).
 *
 * The kernel is independent chains of vector FMAs, as many chains as the
 * latency needs to keep every FMA unit busy, with no loads or stores:
 * nothing a real kernel does could be faster, so `make bench` divides the
 * MLP's GFLOP/s by this figure to get the fraction of peak reached. (Before
 * 2026-11-26 the kernels rounded each product and this measured separate
 * multiplies and adds; a core with two FMA units does twice those flops.)
 * The binary is built without -march; each path carries its own target
 * attribute, like engine/num/dense.c. Threads: one chain set per thread, all
 * started together; the figure is the sum over threads.
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

typedef struct {
    const char *path;
    long iters;
    pthread_barrier_t *start;
    float result;
} peak_job;

static double peak_flops_per_iter(const char *path)
{
    if (strcmp(path, "avx512") == 0)
        return 512;
    if (strcmp(path, "avx2") == 0)
        return 192;
    return 24;
}

static void *peak_worker(void *arg)
{
    peak_job *j = arg;
    pthread_barrier_wait(j->start);
#if PEAK_X86
    if (strcmp(j->path, "avx512") == 0) {
        j->result = peak_z(j->iters, 1.0f);
        return NULL;
    }
    if (strcmp(j->path, "avx2") == 0) {
        j->result = peak_y(j->iters, 1.0f);
        return NULL;
    }
#endif
    j->result = peak_scalar(j->iters, 1.0f);
    return NULL;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* GFLOP/s of one trial with `threads` threads, or -1 when a thread cannot start. */
static double peak_trial(const char *path, int threads, long iters)
{
    pthread_t tid[PEAK_MAX_THREADS];
    peak_job job[PEAK_MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    int started = 0;
    for (int t = 0; t < threads; t++) {
        job[t] = (peak_job){ path, iters, &start, 0.0f };
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
    return (double)threads * (double)iters * peak_flops_per_iter(path) / dt / 1e9;
}

int bench_peak(int argc, char **argv)
{
    int threads = 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            puts("usage: lockstep bench --peak [--threads T]\n"
                 "The FP32 peak of T cores (default 1) for fused multiply-adds (2 flops each, as the\n"
                 "dense kernels), on the SIMD path the kernels take now (LOCKSTEP_SIMD applies): the best\n"
                 "of 7 short trials. Prints one line: peak PATH THREADS GFLOP/s.");
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
        fprintf(stderr, "lockstep bench: %s: --peak takes only --threads T\n", argv[i]);
        return EXIT_USAGE;
    }
    const char *path = dense_simd_name();
    /* About 1e8 cycles a trial (30 ms at 3.5 GHz) when a core does 32 flops
     * a cycle on a vector path and 4 on the scalar one; the best trial is the
     * peak (a shared machine only ever makes a trial slower). */
    const double per_cycle = strcmp(path, "scalar") == 0 ? 4 : 32;
    const long iters = (long)(1e8 * per_cycle / peak_flops_per_iter(path));
    double best = 0;
    for (int t = 0; t < PEAK_TRIALS; t++) {
        const double g = peak_trial(path, threads, iters);
        if (g < 0) {
            fprintf(stderr, "lockstep bench: cannot start %d threads\n", threads);
            return EXIT_USAGE;
        }
        if (g > best)
            best = g;
    }
    printf("peak %s %d %.1f\n", path, threads, best);
    return EXIT_OK;
}
