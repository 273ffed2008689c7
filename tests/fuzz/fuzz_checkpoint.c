/* fuzz_checkpoint.c — libFuzzer target for the checkpoint reader
 * (record/checkpoint.h, ckpt_parse: "any bytes at all: this is the fuzzing
 * entry point").
 *
 * Each input is parsed as it is, and again with its last 8 bytes replaced by
 * the right checksum, because no mutation would otherwise reach the checks
 * after the checksum or the accepting path. What parses must re-encode to
 * the same bytes (fuzz_replay.h, fr_checkpoint).
 * Build and run: make fuzz (tests/fuzz/fuzz.mk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz_replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[FR_WHY];
    if (fr_checkpoint(data, size, why)) {
        fprintf(stderr, "fuzz_checkpoint: %s\n", why);
        abort();
    }
    return 0;
}
