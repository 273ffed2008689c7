/* fuzz_golden_run.c — libFuzzer target for the reader of v2 golden files,
 * which pin a recorded run (record/golden_run.c, golden_run_check).
 *
 * The input is the file's bytes, passed with its length and no terminating
 * NUL (the reader must not need one: libFuzzer's buffer is exactly `size`
 * bytes, so ASan sees any read past it). The status must be LS_OK or
 * LS_EFORMAT with a message (fuzz_replay.h, fr_status).
 * Build and run: make fuzz (tests/fuzz/fuzz.mk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[FR_WHY];
    if (fr_golden_run((const char *)data, size, why)) {
        fprintf(stderr, "fuzz_golden_run: %s\n", why);
        abort();
    }
    return 0;
}
