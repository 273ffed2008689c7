/* fuzz_golden.c — libFuzzer target for the golden-file reader (record/golden.h).
 *
 * The input is the file's bytes, passed with its length and no terminating
 * NUL (golden_parse promises not to need one; libFuzzer's buffer is exactly
 * `size` bytes, so ASan sees any read past it). What parses must survive
 * golden_write + golden_parse unchanged (fuzz_replay.h, fr_golden); its config
 * lines also go through config_parse_text, as `golden check` does.
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
    if (fr_golden((const char *)data, size, why)) {
        fprintf(stderr, "fuzz_golden: %s\n", why);
        abort();
    }
    golden_file g;
    ls_err e;
    if (golden_parse((const char *)data, size, "fuzz.golden", &g, &e) == LS_OK) {
        int r = fr_config_text1(g.config_text, why);
        golden_free(&g);
        if (r) {
            fprintf(stderr, "fuzz_golden (config of a parsed golden file): %s\n", why);
            abort();
        }
    }
    return 0;
}
