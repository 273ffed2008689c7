/* commands.h — the one table of the command line: every command with its
 * synopsis, what it does, its flags with their help, and its exit statuses.
 * `lockstep --help` and `lockstep CMD --help` print from it, each command's
 * parser reads its flags from it (tools/flags.h), and `lockstep help --man`
 * and `lockstep help --markdown` generate doc/lockstep.1 and docs/cli.md
 * from it (`make docs-cli`; tests/test_cli_docs.sh fails when the files in
 * the tree differ from what the table generates).
 *
 * Text conventions, so one text serves the terminal, roff and Markdown:
 * synopsis and help lines are plain ASCII; a line break inside about,
 * help or notes is a '\n' (the terminal keeps it, the documents join the
 * lines into a paragraph); an empty line ("\n\n") starts a paragraph.
 */
#ifndef LS_COMMANDS_H
#define LS_COMMANDS_H

#include <stddef.h>
#include <stdio.h>

#include "tools/flags.h"

#define COMMAND_MAX_SYNOPSIS 6

typedef struct {
    const char *name;                             /* "train", "graph cliques" */
    int (*run)(int argc, char **argv);            /* NULL: an operation its parent command dispatches */
    const char *synopsis[COMMAND_MAX_SYNOPSIS];   /* each after "lockstep NAME "; NULL-terminated */
    const char *summary;                          /* one line for `lockstep --help` */
    const char *about;                            /* what the command does */
    const flag_spec *flags;
    size_t n_flags;
    const char *notes;                            /* after the flags: output, exit status */
} command;

/* The command named name ("graph cliques" for an operation), or NULL. */
const command *command_find(const char *name);
/* Command i of the table, in `lockstep --help` order; NULL past the end. */
const command *command_at(size_t i);

/* `lockstep CMD --help`: "usage: lockstep CMD ...", about, flags, notes. */
void command_usage(const command *c, FILE *f);
/* `lockstep --help`: every command's first synopsis line and summary. */
void command_overview(FILE *f);
/* The whole manual page (man(7) macros) and the Markdown reference. */
void command_write_man(FILE *f);
void command_write_markdown(FILE *f);

/* `lockstep help [CMD | --man | --markdown]`. */
int cmd_help(int argc, char **argv);

#endif
