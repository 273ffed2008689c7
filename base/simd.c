/* simd.c — which hand-written SIMD path the kernels take (see simd.h). */
#include "base/simd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t simd_once = PTHREAD_ONCE_INIT;
static int simd_hw;    /* the best path the CPU offers; written once */
static int simd_env;   /* the setting LOCKSTEP_SIMD asks for; written once */

static void simd_init(void)
{
    int hw = SIMD_PATH_SCALAR;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        hw = SIMD_PATH_AVX512;
    else if (__builtin_cpu_supports("avx2"))
        hw = SIMD_PATH_AVX2;
#endif
    simd_hw = hw;
    simd_env = SIMD_BEST;
    const char *env = getenv("LOCKSTEP_SIMD");
    if (env != NULL) {
        if (strcmp(env, "off") == 0 || strcmp(env, "0") == 0 || strcmp(env, "scalar") == 0)
            simd_env = SIMD_OFF;
        else if (strcmp(env, "avx2") == 0)
            simd_env = SIMD_AVX2;
    }
}

/* The switch's setting; on first use it starts from LOCKSTEP_SIMD. */
static int simd_setting(simd_switch *s)
{
    pthread_once(&simd_once, simd_init);
    int v = atomic_load_explicit(&s->setting, memory_order_relaxed);
    if (v < 0) {
        int unread = -1;
        atomic_compare_exchange_strong(&s->setting, &unread, simd_env);
        v = atomic_load_explicit(&s->setting, memory_order_relaxed);
    }
    return v;
}

int simd_path(simd_switch *s)
{
    int setting = simd_setting(s);
    if (setting == SIMD_OFF)
        return SIMD_PATH_SCALAR;
    if (setting == SIMD_AVX2 && simd_hw > SIMD_PATH_AVX2)
        return SIMD_PATH_AVX2;
    return simd_hw;
}

int simd_set(simd_switch *s, int enabled)
{
    simd_setting(s);
    int setting = enabled == SIMD_OFF ? SIMD_OFF : enabled == SIMD_AVX2 ? SIMD_AVX2 : SIMD_BEST;
    return atomic_exchange(&s->setting, setting);
}

const char *simd_path_name(int path)
{
    switch (path) {
    case SIMD_PATH_AVX512: return "avx512";
    case SIMD_PATH_AVX2: return "avx2";
    default: return "scalar";
    }
}
