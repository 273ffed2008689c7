/* fuzz_config.c — libFuzzer target for the command line and config text.
 *
 * The input is split on NUL bytes into argv strings and given to cli_parse
 * (tools/cli.c) once with each flag set a subcommand uses (train, equiv,
 * bench, golden update, resume, runs/show/verify). Every
 * NUL-separated piece is also parsed as config text (config_parse_text, on a
 * NUL-terminated copy), and the pieces are applied as flags through
 * config_set (fuzz_replay.h) — the replay the regression test can do without
 * tools/. Build and run: make fuzz (tests/fuzz/fuzz.mk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz_replay.h"
#include "tools/tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_cli(const uint8_t *data, size_t size, unsigned accept, int max_positional, char *why)
{
    static const ls_status allowed[] = { LS_EINVAL };
    char *mem, *argv[FR_MAX_ARGS + 1];
    int argc;
    if (!fr_split(data, size, &mem, argv, &argc))
        return 0;
    argv[argc] = NULL;   /* as main() receives it */
    cli_args a;
    ls_err e;
    memset(&e, 0, sizeof e);
    ls_status st = cli_parse(argc, argv, accept, max_positional, &a, &e);
    int r = fr_status("cli_parse", st, &e, allowed, 1, why);
    if (r == 0 && st == LS_OK) {
        if (a.n_positional < 0 || a.n_positional > max_positional)
            r = fr_fail(why, "cli_parse: %d positional arguments, at most %d allowed", a.n_positional,
                        max_positional);
        else if (a.n_threads < 1 || a.n_threads > CLI_MAX_THREADS_LIST)
            r = fr_fail(why, "cli_parse: %d thread counts", a.n_threads);
        else if (accept & CLI_CONFIG)
            r = fr_config_canonical(&a.cfg, "cli_parse", why);
    }
    free(mem);
    return r;
}

/* The flag sets the subcommands pass to cli_parse (tools/cmd_*.c). */
static const struct {
    unsigned accept;
    int max_positional;
} CALLS[] = {
    { CLI_CONFIG | CLI_TRAIN | CLI_DB | CLI_CKPT, 0 },                   /* train */
    { CLI_CONFIG | CLI_TRAIN | CLI_DB | CLI_THREAD_LIST, 0 },            /* equiv */
    { CLI_CONFIG | CLI_STEPS_FLAG | CLI_THREAD_LIST | CLI_REPS, 0 },     /* bench */
    { CLI_CONFIG | CLI_STEPS_FLAG, 1 },                                  /* golden update */
    { CLI_DB | CLI_STEPS_FLAG | CLI_THREADS | CLI_CKPT | CLI_PROGRESS, 1 }, /* resume */
    { CLI_DB, 2 },                                                       /* runs, show, verify */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[FR_WHY];
    int r = 0;
    for (size_t i = 0; r == 0 && i < sizeof CALLS / sizeof CALLS[0]; i++)
        r = check_cli(data, size, CALLS[i].accept, CALLS[i].max_positional, why);
    if (r || fr_config_text(data, size, why) || fr_config_pairs(data, size, why)) {
        fprintf(stderr, "fuzz_config: %s\n", why);
        abort();
    }
    return 0;
}
