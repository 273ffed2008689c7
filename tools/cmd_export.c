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
#include "tools/escape.h"

#include <stdlib.h>
#include <string.h>

#include "engine/models/logic/circuit.h"
#include "tools/commands.h"
#include "tools/export_circuit.h"
#include "tools/export_weights.h"

typedef struct {
    int circuit, netlist, split_given;
    const char *out;
    const char *weights;
    size_t split;
} export_flags_t;

static ls_status export_flag(void *ctx, const flag_spec *f, const char *v, ls_err *err)
{
    export_flags_t *ef = ctx;
    if (strcmp(f->name, "--circuit") == 0) {
        ef->circuit = 1;
    } else if (strcmp(f->name, "--netlist") == 0) {
        ef->netlist = 1;
    } else if (strcmp(f->name, "--weights") == 0) {
        ef->weights = v;
    } else if (strcmp(f->name, "-o") == 0) {
        ef->out = v;
    } else if (strcmp(f->name, "--split") == 0) {
        ef->split_given = 1;
        uint64_t n;
        ls_status st = flags_u64("--split", NULL, v, strlen(v), 1, UINT64_C(1) << 30, &n, err);
        if (st != LS_OK)
            return st;
        ef->split = (size_t)n;
    }
    return LS_OK;
}

int cmd_export(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    export_flags_t ef;
    memset(&ef, 0, sizeof ef);
    ef.split = EXPORT_SPLIT_DEFAULT;
    ls_status st = cli_parse_cmd("export", argc, argv, CLI_DB | CLI_THREADS | CLI_PROGRESS, 1, export_flag, &ef, &a,
                                 &err);
    const int circuit = ef.circuit, netlist = ef.netlist;
    const char *out_path = ef.out;
    if (st == LS_OK && a.help) {
        command_usage(command_find("export"), stdout);
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
                "logic-ca runs have)\n", (long long)run.id, ESC_NAME(run.name), run.model);
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
            /* The circuit is checked against the engine's evaluation, which
             * needs the data a restore that recomputed nothing has not loaded. */
            if ((st = session_need_data(session, &err)) == LS_OK)
                t = session_trainer(session);
            if (st == LS_OK)
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
        code = bad_input ? EXIT_USAGE : cli_exit_code_input(st, &err);
    } else {
        FILE *say = out.to_stdout ? stderr : stdout;
        fprintf(say, "export: run %lld '%s' at step %lld (recomputed %lld recorded steps from step %lld: "
                "identical), %s: %zu active gates of %zu (%zu of them wires, inverters or constants)%s%s\n",
                (long long)run.id, ESC_NAME(run.name), (long long)info.step, (long long)info.replayed,
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

