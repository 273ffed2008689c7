/* cmd_export.c — `lockstep export RUN --circuit | --weights FILE`: the hard circuit of a
 * trained logic or logic-ca run, as one self-contained C file that evaluates
 * 64 cells (logic-ca) or 64 samples (logic) per 64-bit word, or as a text
 * netlist (tools/export_circuit.h), or its parameters (tools/export_weights.h).
 *
 * The run is first restored to its last recorded step (run_restore: newest
 * checkpoint, then every later recorded step recomputed and checked), so what
 * is exported is provably the recorded run's circuit. The circuit is then
 * unrolled into one flat list of gates in evaluation order, dead
 * gates are dropped, and the flat circuit is evaluated here against the
 * engine's own hard evaluation before anything is written: a disagreement is
 * a lockstep bug and nothing is exported.
 *
 * The flat circuit and its checks are the logic models' knowledge
 * (engine/models/logic/circuit.h); this file parses the flags, restores the
 * run and hands the checked circuit to a writer.
 */
#include "tools/tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/models/logic/circuit.h"
#include "tools/export_circuit.h"
#include "tools/export_weights.h"

static void export_usage(void)
{
    puts("usage: lockstep export RUN --circuit [--netlist] [-o FILE] [--split N] [--db FILE] [--threads N]\n"
         "                      [--no-progress]\n"
         "       lockstep export RUN --weights FILE.safetensors|FILE.npy [--db FILE] [--threads N]\n"
         "                      [--no-progress]\n"
         "Writes the hard circuit of a logic-ca or logic run, or the parameters of any run, at its\n"
         "last recorded step. The run is restored first: its newest checkpoint is loaded and every\n"
         "recorded step after it is recomputed and checked against the record (loss bits, parameter\n"
         "and trajectory hash).\n"
         "  --weights FILE   the parameters, through a temporary file and a rename: FILE.safetensors\n"
         "                   holds the model's named tensors (W1, b1, ...; \"params\" for a model\n"
         "                   without names) as F32 with the run, step, config and parameter hash in\n"
         "                   __metadata__; FILE.npy holds them as one flat float32 array [n_params].\n"
         "                   The values are the parameters' bits: their hash is the record's.\n"
         "  --circuit        export the circuit (argmax op of every gate; dead gates are left out)\n"
         "  (default)        one self-contained C file, 64 cells (logic-ca) or 64 samples (logic)\n"
         "                   per 64-bit word: lockstep_step / lockstep_grid_step (logic-ca),\n"
         "                   lockstep_binarize / lockstep_eval / lockstep_classify (logic); built\n"
         "                   with -DLOCKSTEP_CIRCUIT_MAIN it is a program that prints its throughput\n"
         "  --netlist        a text netlist instead: one line per active gate, gID = OP(X, Y),\n"
         "                   then the outputs, out[i] = gID\n"
         "  --split N        C functions of at most N gates (default 4096): a larger circuit is split\n"
         "                   into parts that work on a value array, which compilers build in seconds\n"
         "  -o FILE          write FILE (through a temporary file and a rename); default stdout\n"
         "  --db FILE        SQLite record (default runs.db)\n"
         "  --threads N      worker threads for the recomputation (default: online CPUs)\n"
         "  --no-progress    no progress line while recomputing\n"
         "The summary line (active gates, where it was written) goes to stdout with -o, else stderr.\n"
         "exit status: 0 written, 1 a recomputed step differs from the record (the step is named),\n"
         "2 bad usage, unknown run, a run whose model has no hard circuit (mlp), an unwritable FILE\n"
         "or one that is the record,\n"
         "130 interrupted");
}

/* Takes the flags cli_parse does not know out of argv. */
typedef struct {
    int circuit, netlist, split_given;
    const char *out;
    const char *weights;
    size_t split;
} export_flags_t;

static ls_status export_flags(int argc, char **argv, char **rest, int *n_rest, export_flags_t *ef, ls_err *err)
{
    *n_rest = 0;
    memset(ef, 0, sizeof *ef);
    ef->split = EXPORT_SPLIT_DEFAULT;
    for (int i = 0; i < argc; i++) {
        const char **out = &ef->out;
        if (strcmp(argv[i], "--") == 0) {
            /* The end of the flags: the rest (a run named "-x") goes to
             * cli_parse with the "--", which treats it as positional. */
            for (; i < argc; i++) {
                if (*n_rest >= 64)
                    return ls_fail(err, LS_EINVAL, "too many arguments");
                rest[(*n_rest)++] = argv[i];
            }
            break;
        }
        if (strcmp(argv[i], "--circuit") == 0) {
            ef->circuit = 1;
        } else if (strcmp(argv[i], "--netlist") == 0) {
            ef->netlist = 1;
        } else if (strcmp(argv[i], "--weights") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return ls_fail(err, LS_EINVAL, "--weights: needs a file name (FILE.safetensors or FILE.npy)");
            ef->weights = argv[++i];
        } else if (strncmp(argv[i], "--weights=", 10) == 0) {
            if (argv[i][10] == '\0')
                return ls_fail(err, LS_EINVAL, "--weights: needs a file name (FILE.safetensors or FILE.npy)");
            ef->weights = argv[i] + 10;
        } else if (strcmp(argv[i], "--split") == 0 || strncmp(argv[i], "--split=", 8) == 0) {
            ef->split_given = 1;
            const char *v = argv[i][7] == '=' ? argv[i] + 8 : i + 1 < argc ? argv[++i] : "";
            char *end;
            errno = 0;
            unsigned long long n = strtoull(v, &end, 10);
            if (*v < '0' || *v > '9' || *end != '\0' || errno != 0 || n < 1 || n > (1u << 30))
                return ls_fail(err, LS_EINVAL, "--split: '%s' is not a gate count (1..%u)", v, 1u << 30);
            ef->split = (size_t)n;
        } else if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return ls_fail(err, LS_EINVAL, "%s: needs a file name", argv[i]);
            *out = argv[++i];
        } else if (strncmp(argv[i], "--output=", 9) == 0) {
            if (argv[i][9] == '\0')
                return ls_fail(err, LS_EINVAL, "--output: needs a file name");
            *out = argv[i] + 9;
        } else if (*n_rest < 64) {
            rest[(*n_rest)++] = argv[i];
        } else {
            return ls_fail(err, LS_EINVAL, "too many arguments");
        }
    }
    return LS_OK;
}

int cmd_export(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    char *rest[64];
    int n_rest = 0;
    export_flags_t ef;
    ls_status st = export_flags(argc, argv, rest, &n_rest, &ef, &err);
    const int circuit = ef.circuit, netlist = ef.netlist;
    const char *out_path = ef.out;
    if (st == LS_OK)
        st = cli_parse(n_rest, rest, CLI_DB | CLI_THREADS | CLI_PROGRESS, 1, &a, &err);
    if (st == LS_OK && a.help) {
        export_usage();
        return EXIT_OK;
    }
    if (st == LS_OK && a.n_positional != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st == LS_OK && ef.weights != NULL && (circuit || netlist || out_path != NULL || ef.split_given))
        st = ls_fail(&err, LS_EINVAL, "--weights FILE writes the parameters; --circuit, --netlist, --split and -o "
                     "are for the circuit");
    if (st == LS_OK && !circuit && ef.weights == NULL)
        st = ls_fail(&err, LS_EINVAL, "say what to export: --circuit (the run's hard circuit) or --weights FILE "
                     "(its parameters)");
    if (st != LS_OK) {
        cli_error("export", &err, st);
        return EXIT_USAGE;
    }
    if (ef.weights != NULL)
        return export_weights(&a, ef.weights);
    runlog *db;
    runlog_run run;
    int code = cli_open_run("export", a.db, a.positional[0], &db, &run);
    if (code != EXIT_OK)
        return code;
    /* The output is checked against the record first of all: a path that
     * would replace the database is refused whatever else is wrong. */
    if ((st = cli_guard_output("-o", out_path, a.db, db, &err)) != LS_OK) {
        cli_error("export", &err, st);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    const int ca = strcmp(run.model, "logic-ca") == 0;
    if (!ca && strcmp(run.model, "logic") != 0) {
        fprintf(stderr, "lockstep export: run %lld '%s' (model %s) has no hard circuit (logic and "
                "logic-ca runs have)\n", (long long)run.id, run.name, run.model);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    cli_out out;
    if ((st = cli_out_open(&out, "-o", out_path, a.db, db, &err)) != LS_OK) {
        cli_error("export", &err, st);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    run_install_signals();
    ls_session *session = NULL;
    trainer *t = NULL;
    ls_session_state info;
    logic_ca_hard *h = NULL;
    ls_dataset *data = NULL;
    circuit_flat f;
    memset(&f, 0, sizeof f);
    st = run_restore(a.db, run.id, a.threads[0], a.progress, &session, &info, &err);
    t = session != NULL ? session_trainer(session) : NULL;
    int bad_input = st != LS_OK && st != LS_EMISMATCH;
    ls_config cfg;
    if (st == LS_OK) {
        cfg = *trainer_config(t);
        if (ca) {
            st = logic_ca_hard_create(&h, trainer_model(t), trainer_params(t), &err);
            if (st == LS_OK)
                st = circuit_from_ca(&f, h, &err);
            if (st == LS_OK)
                st = circuit_check_ca(&f, h, &err);
        } else {
            st = trainer_load_data(&cfg, &data, &err);
            if (st == LS_OK)
                st = circuit_from_net(&f, &cfg, data, trainer_params(t), &err);
            if (st == LS_OK)
                st = circuit_check_net(&f, t, data, &err);
        }
    }
    if (st == LS_OK) {
        export_ctx x = { &run, &info, &cfg, &f, ca, ef.split,
                         ef.split < EXPORT_PART_GATES ? ef.split : EXPORT_PART_GATES, NULL, 0 };
        if (!netlist && f.active > ef.split)
            st = export_plan_slots(&x, &err);
        if (st == LS_OK) {
            if (netlist)
                export_write_netlist(out.f, &x);
            else if (ca)
                export_write_c_ca(out.f, &x);
            else
                export_write_c_net(out.f, &x);
            st = cli_out_commit(&out, &err);
            bad_input = st != LS_OK;
        }
        free(x.slot);
    }
    if (st != LS_OK) {
        cli_out_abort(&out);
        cli_error("export", &err, st);
        code = bad_input ? EXIT_USAGE : cli_exit_code(st);
    } else {
        FILE *say = out.to_stdout ? stderr : stdout;
        fprintf(say, "export: run %lld '%s' at step %lld (recomputed %lld recorded steps from step %lld: "
                "identical), %s: %zu active gates of %zu (%zu of them wires, inverters or constants)%s%s\n",
                (long long)run.id, run.name, (long long)info.step, (long long)info.replayed,
                (long long)info.resumed_from, netlist ? "netlist" : "C", f.active, f.n_gates, f.trivial,
                out.to_stdout ? "" : ", wrote ", out.to_stdout ? "" : out_path);
    }
    circuit_free(&f);
    dataset_destroy(data);
    logic_ca_hard_destroy(h);
    ls_session_close(session, LS_OK, NULL);
    runlog_run_free(&run);
    runlog_close(db);
    return code;
}

