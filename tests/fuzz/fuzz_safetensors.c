/* fuzz_safetensors.c — libFuzzer target for the .safetensors reader behind
 * --init (engine/data/safetensors.h): every input through safetensors_parse
 * and the checks of fuzz_replay.h (fr_safetensors). Build and run: make fuzz
 * (tests/fuzz/fuzz.mk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz_replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[FR_WHY];
    if (fr_safetensors(data, size, why)) {
        fprintf(stderr, "fuzz_safetensors: %s\n", why);
        abort();
    }
    return 0;
}
