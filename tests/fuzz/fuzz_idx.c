/* fuzz_idx.c — libFuzzer target for the IDX loader (engine/data/idx.h).
 *
 * Every input goes through idx_parse as an image file, as a label file and
 * with the magic it claims (fuzz_replay.h, fr_idx). An input that starts with
 * the gzip magic 1f 8b is also written to a scratch file and read back through
 * idx_read_gz, because the gunzip step is static in idx.c and only
 * reachable through a path; what it inflates to goes through fr_idx too.
 * Build and run: make fuzz (tests/fuzz/fuzz.mk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_replay.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int scratch_fd = -1;
static char scratch[64];   /* the path idx_read_gz opens */

/* One scratch file per process, rewritten for every gzip input. It is
 * unlinked at once and reached as /proc/self/fd/N, so a run that dies (a
 * crash, an OOM, Ctrl-C) leaves nothing behind; /dev/shm when it exists so
 * no disk is touched. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    char tmpl[256];
    snprintf(tmpl, sizeof tmpl, "%s/lockstep-fuzz-idx-XXXXXX", dir);
    scratch_fd = mkstemp(tmpl);
    if (scratch_fd < 0) {
        perror("fuzz_idx: mkstemp");
        abort();
    }
    unlink(tmpl);
    snprintf(scratch, sizeof scratch, "/proc/self/fd/%d", scratch_fd);
    if (access(scratch, R_OK) != 0) {
        perror("fuzz_idx: /proc/self/fd");
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[FR_WHY];
    if (fr_idx(data, size, why)) {
        fprintf(stderr, "fuzz_idx: %s\n", why);
        abort();
    }
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
        if (ftruncate(scratch_fd, 0) != 0 || pwrite(scratch_fd, data, size, 0) != (ssize_t)size) {
            perror("fuzz_idx: writing the scratch file");
            abort();
        }
        if (fr_idx_gz_file(scratch, why)) {
            fprintf(stderr, "fuzz_idx: %s\n", why);
            abort();
        }
    }
    return 0;
}
