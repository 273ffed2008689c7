/* golden.h — golden files: a reference run pinned as text (docs/formats.md, golden files).
 *
 *     # lockstep golden v1
 *     # config
 *     batch=20
 *     ...                      (the canonical config, one key=value a line)
 *     # sources                (optional: where the data are, key=value a line)
 *     file=/usr/share/games/fortunes/cookie
 *     # steps: step loss_bits loss param_hash traj_hash
 *     0 - - 1f2e3d4c5b6a7988 0011223344556677
 *     1 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef
 *
 * Hashes and loss bits are 16 lowercase hex digits; the loss is "%.17g". The
 * steps are 0, 1, 2, ... without gaps. The sources (a task's file paths,
 * ls_task_desc.sources) are no part of the config or its hashes: they say
 * where a run reads the data that the config's data_hash identifies, for a
 * task that needs them (text's --file). Lines end in '\n'; the reader also
 * takes "\r\n" (a file that went through a Windows checkout). The format is
 * versioned: a reader refuses a version it does not know.
 */
#ifndef LS_GOLDEN_H
#define LS_GOLDEN_H

#include <stddef.h>
#include <stdio.h>

#include "include/lockstep.h"
#include "record/hash.h"

/* A golden file pins seconds of training, checked at four thread counts by
 * every test run: the command line refuses to make or run one of more steps
 * (the parser itself takes any number, as the format has no limit). */
#define GOLDEN_MAX_STEPS 10000

typedef struct {
    char *config_text;   /* the canonical config lines, each ending in '\n' */
    char *source_text;   /* the source lines, each ending in '\n' ("" when none) */
    ls_step *steps;      /* steps[i].step == i */
    size_t n_steps;
    void *mem;
} golden_file;

/* Parse text of len bytes. Anything malformed is LS_EFORMAT naming the line
 * number and what is wrong ("what" names the source, e.g. the file path). */
ls_status golden_parse(const char *text, size_t len, const char *what, golden_file *out, ls_err *err);
/* golden_parse of the file at path; a path that is not a regular file (a
 * FIFO, a directory, a device) is LS_EIO naming it, found without blocking. */
ls_status golden_read(const char *path, golden_file *out, ls_err *err);
void golden_free(golden_file *g);   /* accepts a zeroed or freed struct */

/* Write the text of a golden file. Refuses (LS_EINVAL, nothing written) what
 * golden_parse would refuse: no rows, steps[i].step != i, has_loss != (i > 0),
 * or config text that is not sorted key=value lines each ending in '\n'. */
ls_status golden_write(FILE *f, const char *config_text, const ls_step *steps, size_t n_steps);
/* Write to path through a temporary file and rename. */
ls_status golden_save(const char *path, const char *config_text, const ls_step *steps,
                      size_t n_steps, ls_err *err);
/* golden_save with a sources section (source_text: key=value lines each
 * ending in '\n', as config_source_text writes them; NULL or "": none). */
ls_status golden_save_sources(const char *path, const char *config_text, const char *source_text,
                              const ls_step *steps, size_t n_steps, ls_err *err);

/* The whole file at path (malloc'ed, *text_len bytes; free it): a path that
 * is not a regular file is LS_EIO naming it, found without blocking. */
ls_status golden_read_text(const char *path, char **text, size_t *text_len, ls_err *err);
/* Write path through a temporary file, fsync and rename, the text written
 * by write(f, ctx) (any golden version). */
ls_status golden_save_with(const char *path, ls_status (*write)(FILE *f, const void *ctx), const void *ctx,
                           ls_err *err);

/* Parses the text of a v2 golden file (record/golden_run.c) and says how
 * many steps and tensors it pins; LS_EFORMAT naming the line otherwise. For
 * the fuzzer and the tests: ls_golden_compare reads files itself. */
ls_status golden_run_check(const char *text, size_t len, const char *what, size_t *n_steps, size_t *n_tensors,
                           ls_err *err);

/* The text of line `step`'s row as golden_write writes it (no newline). */
void golden_format_step(const ls_step *s, char *buf, size_t len);

#endif
