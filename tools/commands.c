/* commands.c — the command table and everything printed from it: the
 * usages, the overview, the manual page and the Markdown reference
 * (commands.h). */
#include "tools/commands.h"

#include <ctype.h>
#include <string.h>

#include "record/golden.h"
#include "tools/tools.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- the table ------------------------------------------------------------------------------- */

#define DB_FLAG { "--db", NULL, "FILE", "SQLite record (default runs.db)", "a file name" }
#define NO_PROGRESS(h) { "--no-progress", NULL, NULL, h, NULL }
#define THREADS(h) { "--threads", NULL, "N", h, NULL }
#define CKPT_FLAGS                                                                                           \
    { "--checkpoint-every", NULL, "K",                                                                     \
      "write a checkpoint (parameters, optimiser state, step) every K steps and\n"                           \
      "register it in the database; the last 2 of the run are kept. An interrupted\n"                        \
      "run continues from its newest one with `lockstep resume RUN`", NULL },                                \
    { "--checkpoint-dir", NULL, "DIR",                                                                      \
      "where checkpoints go (default: <db>.ckpt/, created when missing);\n"                                  \
      "files are named <database id>-run-<id>-step-<t>.ckpt", "a directory name" },                          \
    { "--keep-checkpoints", NULL, "N|all",                                                                  \
      "keep the newest N checkpoints (default 2), or all: `lockstep audit` replays\n"                        \
      "the steps between kept checkpoints concurrently", NULL }

static const flag_spec TRAIN_FLAGS[] = {
    { "--task", NULL, "T", "the task (default fashion-mnist; train --help lists every task)", NULL },
    { "--model", NULL, "M", "the model (default: the task's)", NULL },
    { "--steps", NULL, "N", "steps to train (default: the task's, which train --help lists)", NULL },
    THREADS("worker threads (default: online CPUs); never changes the bits"),
    DB_FLAG,
    { "--name", NULL, "NAME", "a unique name for the run (default run-<id>)", NULL },
    { "--eval-every", NULL, "K", "record the evaluation every K steps (always at the end)", NULL },
    { "--no-eval", NULL, NULL, "no evaluation after the last step either (a run that only trains)", NULL },
    NO_PROGRESS("no progress line (none is shown when stderr is not a terminal)"),
    CKPT_FLAGS,
    { "--print-plan", NULL, NULL,
      "print how the engine runs each step of this config at --threads N (the\n"
      "reduction, phases, finish, update and scratch) and exit; records nothing", NULL },
};

static const flag_spec RESUME_FLAGS[] = {
    DB_FLAG,
    THREADS("worker threads (default: online CPUs); may differ from the first process's"),
    { "--steps", NULL, "N",
      "the run's target step count (default: the one it was started with); a done\n"
      "run is continued when N is beyond its last step", NULL },
    { "--checkpoint-every", NULL, "K", "replace the run's checkpoint interval from now on", NULL },
    { "--checkpoint-dir", NULL, "DIR", "replace the run's checkpoint directory from now on", "a directory name" },
    { "--keep-checkpoints", NULL, "N|all", "replace how many of the newest checkpoints the run keeps", NULL },
    NO_PROGRESS("no progress line"),
};

static const flag_spec EXPORT_FLAGS[] = {
    { "--circuit", NULL, NULL, "export the circuit (argmax op of every gate; dead gates are left out):\n"
      "by default one self-contained C file, 64 cells (logic-ca) or 64 samples (logic)\n"
      "per 64-bit word: lockstep_step / lockstep_grid_step (logic-ca),\n"
      "lockstep_binarize / lockstep_eval / lockstep_classify (logic); built\n"
      "with -DLOCKSTEP_CIRCUIT_MAIN it is a program that prints its throughput", NULL },
    { "--netlist", NULL, NULL, "a text netlist instead: one line per active gate, gID = OP(X, Y),\n"
      "then the outputs, out[i] = gID", NULL },
    { "--split", NULL, "N", "C functions of at most N gates (default 4096): a larger circuit is split\n"
      "into parts that work on a value array, which compilers build in seconds", NULL },
    { "-o", "--output", "FILE", "write FILE (through a temporary file and a rename); default stdout", "a file name" },
    { "--weights", NULL, "FILE", "the parameters instead, through a temporary file and a rename:\n"
      "FILE.safetensors holds the model's named tensors (W1, b1, ...; \"params\" for a\n"
      "model without names) as F32 with the run, step, config and parameter hash in\n"
      "__metadata__; FILE.npy holds them as one flat float32 array [n_params].\n"
      "The values are the parameters' bits: their hash is the record's.",
      "a file name (FILE.safetensors or FILE.npy)" },
    DB_FLAG,
    THREADS("worker threads for the recomputation (default: online CPUs)"),
    NO_PROGRESS("no progress line while recomputing"),
};

static const flag_spec PREDICT_FLAGS[] = {
    { "--input", NULL, "X.npy", "the samples: float32, float64 (rounded once to float32) or uint8 (read as\n"
      "v/255), shape [N, ...] with as many features a sample as the model takes\n"
      "(the run's task reads its own features the same way)", "a file name" },
    { "-o", "--output", "Y.npy", "write Y.npy (through a temporary file and a rename; - for stdout):\n"
      "float32 scores [N, outputs] (the model's class logits)", "a file name" },
    { "--labels", NULL, NULL, "int64 labels [N] instead: the highest score, the lowest index on ties", NULL },
    DB_FLAG,
    THREADS("worker threads for the recomputation (default: online CPUs)"),
    NO_PROGRESS("no progress line while recomputing"),
};

static const flag_spec SAMPLE_FLAGS[] = {
    { "--prompt", NULL, "TEXT", "the text the generated bytes continue (may be \"\"); a context shorter than\n"
      "the run's --context is padded on the left with newlines", NULL },
    { "--tokens", NULL, "N", "bytes to generate, 1 to 1000000", NULL },
    { "--temperature", NULL, "T", "divides the scores before the softmax (default 0: always the byte of\n"
      "the highest score, the lowest on ties)", NULL },
    { "--seed", NULL, "S", "the draws' seed, for T > 0 (default 0): byte i draws the addressed uniform\n"
      "(S, RNG_SAMPLE, i)", NULL },
    DB_FLAG,
    THREADS("worker threads for the recomputation (default: online CPUs); never changes the text"),
    NO_PROGRESS("no progress line while recomputing"),
};

static const flag_spec RENDER_FLAGS[] = {
    { "-o", "--output", "FILE.png", "the PNG to write (8-bit grey; through a temporary file and a rename)",
      "a file name" },
    { "--grid", NULL, "N", "grid side (gol: 32; checkerboard: the run's grid)", NULL },
    { "--steps", NULL, "N", "CA steps (gol: 32; checkerboard: the run's ca_steps, 80 on --grid 64)", NULL },
    { "--seed", NULL, "S", "start state: random cells from the addressed RNG (RNG_EVAL, seed S);\n"
      "gol without --seed starts from four gliders; checkerboard's default\n"
      "seed 0 gives the start states of its hard_acc / hard_acc_64 figures", NULL },
    { "--scale", NULL, "K", "pixels per cell side (default: frames of about 96 pixels)", NULL },
    { "--cols", NULL, "N", "frames per row (default: about square)", NULL },
    DB_FLAG,
    THREADS("worker threads for the recomputation (default: online CPUs)"),
    NO_PROGRESS("no progress line while recomputing"),
};

static const flag_spec RUNS_FLAGS[] = {
    DB_FLAG,
    { "--status", NULL, "S", "only runs of status S (running, done, interrupted, diverged, failed)", "a value" },
    { "--task", NULL, "T", "only runs of task T", "a value" },
    { "--name", NULL, "GLOB", "only runs whose name matches the shell pattern GLOB (quote it: 'lr-*')", "a value" },
    { "--last", NULL, "N", "only the N newest of those", "a value" },
    { "--json", NULL, NULL, "a JSON array of objects", NULL },
    { "--csv", NULL, NULL, "a header line, then one line a run (columns: id name status model task\n"
      "steps threads trajectory config_hash started ended host; docs/formats.md)", NULL },
    { "--sweep", NULL, "ID", "instead: the runs of sweep ID (lockstep sweep) with final loss and\n"
      "evaluation, best first (highest evaluation, else lowest final loss)", "a value" },
};

static const flag_spec SHOW_FLAGS[] = {
    DB_FLAG,
    { "--steps", NULL, NULL, "add the step table", NULL },
    { "--json", NULL, NULL, "the same as one JSON object (with --steps: and \"step_rows\")", NULL },
    { "--csv", NULL, NULL, "with --steps: the step table alone as CSV:\n"
      "step,loss,loss_bits,param_hash,trajectory,seconds", NULL },
};

static const flag_spec DB_ONLY_FLAGS[] = { DB_FLAG };

static const flag_spec VERIFY_FLAGS[] = {
    DB_FLAG,
    { "--loss-rtol", NULL, "R", "also name the first step whose losses a, b fail |a - b| <= A + R*|b|\n"
      "(default 0)", "a value" },
    { "--loss-atol", NULL, "A", "the absolute part of that tolerance (default 0)", "a value" },
};

static const flag_spec REPORT_FLAGS[] = {
    { "-o", "--output", "FILE.html", "the page to write (through a temporary file and a rename); - for stdout",
      "a file name" },
    DB_FLAG,
    THREADS("worker threads to restore logic runs (default: online CPUs)"),
    NO_PROGRESS("no progress line while restoring"),
};

static const flag_spec AUDIT_FLAGS[] = {
    DB_FLAG,
    THREADS("worker threads for the re-execution (default: online CPUs)"),
    { "--record-only", NULL, NULL, "re-execute nothing: check the trajectory hash chain of the step rows,\n"
      "that they have no gap, the config hash and the checkpoint files (milliseconds)", NULL },
    { "--certificate", NULL, "FILE.json", "write a JSON certificate of the audit (see lockstep reproduce): the\n"
      "canonical config text and its hash, data_hash, sources, step count, trajectory and parameter\n"
      "hash at the last step, lockstep version and build, verdict and time", "a file name" },
};

static const flag_spec REPRODUCE_FLAGS[] = {
    THREADS("worker threads (default: online CPUs)"),
    { "--source", NULL, "NAME=PATH", "read the task's source NAME (one of its source keys, e.g. train_x or\n"
      "edges) from PATH instead of where the certificate says; repeatable, each NAME once.\n"
      "The data are still checked against the certificate's data_hash", "NAME=PATH" },
};

static const flag_spec EQUIV_FLAGS[] = {
    THREADS("the thread counts, a list like 1,2,4,8"),
    { "--leaf", NULL, "L,...", "leaf sizes, a list like 16,64,1024: each thread count at each", NULL },
    DB_FLAG,
    { "--steps", NULL, "N", "steps to train (default: the task's)", NULL },
    { "--name", NULL, "NAME", "the runs' name prefix", NULL },
    { "--eval-every", NULL, "K", "record the evaluation every K steps (always at the end)", NULL },
    NO_PROGRESS("no progress line"),
};

static const flag_spec BENCH_FLAGS[] = {
    THREADS("the thread counts, a list like 1,2"),
    { "--steps", NULL, "N", "steps per repetition (default 60)", NULL },
    { "--reps", NULL, "R", "repetitions, 1..64 (default 3); the median is shown", NULL },
    { "--peak", NULL, NULL, "instead: what --threads T cores do at most: FP32 fused multiply-adds (the\n"
      "kernels' arithmetic), or with --op div or sqrt AdamW's divisions or square roots\n"
      "(lockstep bench --peak --help)", NULL },
};

static const flag_spec GOLDEN_FLAGS[] = {
    { "--steps", NULL, "N", "update FILE from flags: the steps to pin; check: only the first N steps", NULL },
    { "--threads", NULL, "LIST", "check: the thread counts (default 1,2,3,8)", NULL },
    { "--db", NULL, "FILE", "save and compare: the SQLite record (default runs.db)", "a file name" },
};

static const flag_spec SWEEP_FLAGS[] = {
    { "--seeds", NULL, "LIST", "seeds, e.g. 1-8 or 1,3,5 or 1-4,10 (or --seed as a list)", NULL },
    { "--FLAG", NULL, "A,B,...", "any train flag (--lr, --batch, --model, --task, --steps, ...) as a list;\n"
      "a flag whose value is a list itself takes A/B: --hidden 32/64,64", NULL },
    THREADS("workers shared by all runs (default: online CPUs); never changes the bits"),
    DB_FLAG,
    { "--name", NULL, "PREFIX", "the sweep's id and the runs' name prefix (default sweep-<date>-<time>)",
      "a prefix" },
    { "--eval-every", NULL, "K", "record each run's evaluation every K steps (always at the end)", NULL },
    { "--checkpoint-every", NULL, "K", "as for train; `lockstep resume RUN` per run", NULL },
    { "--checkpoint-dir", NULL, "DIR", "as for train", "a directory name" },
    NO_PROGRESS("no progress line"),
    { "--one-by-one", NULL, NULL, "the benchmark's baseline: the same runs, recorded the same way, each\n"
      "trained alone on --threads threads, one after another", NULL },
};

static const flag_spec CLIQUES_FLAGS[] = {
    { "-k", "--k", "K", "clique size, 1..64", NULL },
    { "--count", NULL, NULL, "print the number of k-cliques alone (the default)", NULL },
    { "--list", NULL, NULL, "print each clique on a line, its nodes sorted by id (names for an\n"
      "edge list of names), cliques in root order: the same bytes at any\n"
      "thread count", NULL },
    { "--max", NULL, "N", "with --list: at most N cliques (0: all)", NULL },
    THREADS("worker threads (default: the online CPUs)"),
    { "--time", NULL, NULL, "the time taken, on stderr (always on a terminal)", NULL },
};

static const flag_spec GED_FLAGS[] = {
    { "--pairs", NULL, "FILE", "one pair a line, 'FILE_A FILE_B' (# comments); one output line a\n"
      "pair, in input order, the same bytes at any thread count", "a FILE" },
    { "--node-cap", NULL, "N", "the exact search only when both graphs have at most N nodes\n"
      "(default 10; 0..64; a search can take minutes from about 14 nodes: a\n"
      "progress line shows on a terminal, Ctrl-C stops it with exit 130)", NULL },
    { "--costs", NULL, "C", "integer costs, unit by default: 5 numbers\n"
      "node-sub,node-del,node-ins,edge-del,edge-ins, or named ones:\n"
      "node-sub=2,edge-del=3 (the rest stay 1)", NULL },
    THREADS("worker threads: pairs are the work units (default: the online CPUs)"),
    { "--time", NULL, NULL, "pairs per second, on stderr (always on a terminal)", NULL },
};

static const flag_spec HELP_FLAGS[] = {
    { "--man", NULL, NULL, "the manual page (doc/lockstep.1) on stdout", NULL },
    { "--markdown", NULL, NULL, "the command-line reference (docs/cli.md) on stdout", NULL },
};

#define FLAGS(a) a, sizeof a / sizeof a[0]

static const command COMMANDS[] = {
    { "train", cmd_train,
      { "[--task T] [--model M] [--steps N] [--threads N] [--db FILE] [--name NAME]\n"
        "[--eval-every K | --no-eval] [--no-progress] [--checkpoint-every K [--checkpoint-dir DIR]\n"
        "[--keep-checkpoints N|all]] [--print-plan] [--init FILE.safetensors]\n"
        "[config flags]" },
      "train one run, recording every step's loss, parameter hash and trajectory hash",
      "Trains one run and records every step (loss, parameter hash, trajectory hash) in the database.\n"
      "Config flags (--batch B, --leaf L, --seed S, --optimizer sgd|adamw, --lr, --lr-schedule,\n"
      "--clip-norm, ..., and the model's and task's own keys) are part of the run's config: `lockstep\n"
      "train --help` lists every task, model and key with its range and default. --init FILE.safetensors\n"
      "starts from the file's tensors (as `lockstep export RUN --weights` writes them) instead of the\n"
      "model's initialisation: their names and shapes must be the model's, in F32; the file's XXH3 is\n"
      "init_hash in the config, its path is recorded with the run.",
      FLAGS(TRAIN_FLAGS),
      "exit status: 0 done, 1 diverged, 2 bad usage or input, 130 interrupted" },
    { "resume", cmd_resume,
      { "RUN [--db FILE] [--threads N] [--steps N] [--checkpoint-every K]\n"
        "[--checkpoint-dir DIR] [--keep-checkpoints N|all] [--no-progress]" },
      "continue an interrupted run from its newest checkpoint, checking the recorded steps",
      "Continues a run (an id or a name) that was interrupted, killed or failed: rebuilds the trainer\n"
      "from the recorded config, loads the run's newest checkpoint (none: starts from step 0), recomputes\n"
      "every step recorded after it and checks its loss bits, parameter hash and trajectory hash against\n"
      "the record, then trains and records the remaining steps and marks the run done. The result is\n"
      "bit-identical to an uninterrupted run, at any thread count.",
      FLAGS(RESUME_FLAGS),
      "exit status: 0 done (or nothing to do: the run is done), 1 a recomputed step differs from the\n"
      "record (the step is named) or training diverged, 2 bad usage, unknown run, a run still running\n"
      "in another process, an unusable checkpoint (the file and the problem are named), or data or\n"
      "an --init file that changed since the run (data_hash or init_hash and the files named),\n"
      "130 interrupted" },
    { "export", cmd_export,
      { "RUN --circuit [--netlist] [-o FILE] [--split N] [--db FILE] [--threads N]\n"
        "[--no-progress]",
        "RUN --weights FILE.safetensors|FILE.npy [--db FILE] [--threads N] [--no-progress]" },
      "the hard circuit of a logic or logic-ca run as C or a netlist, or any run's parameters",
      "Writes the hard circuit of a logic-ca or logic run, or the parameters of any run, at its\n"
      "last recorded step. The run is restored first: its newest checkpoint is loaded and every\n"
      "recorded step after it is recomputed and checked against the record (loss bits, parameter\n"
      "and trajectory hash).",
      FLAGS(EXPORT_FLAGS),
      "The summary line (active gates, where it was written) goes to stdout with -o, else stderr.\n"
      "exit status: 0 written, 1 a recomputed step differs from the record (the step is named),\n"
      "2 bad usage, unknown run, a run whose model has no hard circuit (mlp), an unwritable FILE\n"
      "or one that is the record, 130 interrupted" },
    { "predict", cmd_predict,
      { "RUN --input X.npy -o Y.npy [--labels] [--db FILE] [--threads N] [--no-progress]" },
      "the run's scores [N, outputs] (float32) or labels [N] (int64) for the samples in X.npy",
      "Applies a run's model, at its last recorded step, to the samples in X.npy. The run is\n"
      "restored first: its newest checkpoint is loaded and every recorded step after it is\n"
      "recomputed and checked against the record (loss bits, parameter and trajectory hash).",
      FLAGS(PREDICT_FLAGS),
      "Models with scores: mlp, linear, seq, cnn, gpt (logic, logic-ca and gnn runs have none; a\n"
      "logic or logic-ca run's circuit: export --circuit).\n"
      "The summary line goes to stdout (to stderr with -o -).\n"
      "exit status: 0 written, 1 a recomputed step differs from the record (the step is named),\n"
      "2 bad usage, unknown run, a model without scores, a malformed X.npy or one of the wrong\n"
      "shape, an unwritable Y.npy or one that is the record, 130 interrupted" },
    { "sample", cmd_sample,
      { "RUN --prompt TEXT --tokens N [--temperature T] [--seed S] [--db FILE] [--threads N]\n"
        "[--no-progress]" },
      "text from a run of the text task: the prompt and N bytes after it",
      "Continues the prompt with N bytes from a run of the text task, at its last recorded step (the\n"
      "run is restored first: newest checkpoint, then every later recorded step recomputed and\n"
      "checked). Each byte comes from the model's scores of the last --context bytes: temperature 0\n"
      "gives the highest score, T > 0 a draw from the softmax of the scores / T, in binary64 with\n"
      "the engine's exp and drawn with its addressed random numbers, so the same run, prompt,\n"
      "temperature and seed give the same bytes at every thread count and on every machine.",
      FLAGS(SAMPLE_FLAGS),
      "Output: the prompt and the generated bytes, then a newline; printable ASCII, newline and tab\n"
      "as they are, a backslash as \\\\, any other byte as \\xNN.\n"
      "exit status: 0 printed, 1 a recomputed step differs from the record, 2 bad usage, unknown\n"
      "run, a run that is not of the text task, N out of range, a negative temperature,\n"
      "130 interrupted" },
    { "render", cmd_render,
      { "RUN -o FILE.png [--grid N] [--steps N] [--seed S] [--scale K] [--cols N] [--db FILE]\n"
        "[--threads N] [--no-progress]" },
      "a PNG of a logic-ca run's hard rollout, frame by frame",
      "Draws a logic-ca run's hard circuit rolling out from a start state: every frame, the start\n"
      "state first, in a grid of frames (frame t at row t / cols, column t % cols), K x K pixels\n"
      "per cell, channel 0 black (1) on white (0), frames separated by 1-pixel grey lines. The run\n"
      "is restored to its last recorded step first (newest checkpoint, then every later recorded\n"
      "step recomputed and checked against the record).",
      FLAGS(RENDER_FLAGS),
      "exit status: 0 written, 1 a recomputed step differs from the record, 2 bad usage, unknown\n"
      "run, a run that is not logic-ca, an unwritable FILE, 130 interrupted" },
    { "runs", cmd_runs,
      { "[--db FILE] [--status S] [--task T] [--name GLOB] [--last N] [--json | --csv]\n"
        "[--sweep ID]" },
      "list runs (or a sweep's runs, best first)",
      "Lists the runs in the database, oldest first. A run whose process died shows as interrupted.",
      FLAGS(RUNS_FLAGS),
      "exit status: 0 listed, 2 bad usage or no such database" },
    { "show", cmd_show,
      { "RUN [--db FILE] [--steps] [--json | --steps --csv]" },
      "config, environment, summary, step table",
      "Config, environment, summary, evaluations and audits of a run; --steps adds the step table.",
      FLAGS(SHOW_FLAGS),
      "Column and key names: docs/formats.md; they are kept stable.\n"
      "exit status: 0 shown, 2 bad usage or unknown run" },
    { "verify", cmd_verify,
      { "RUN_A RUN_B [--db FILE] [--loss-rtol R] [--loss-atol A]" },
      "compare two runs bit for bit, step by step (DB:RUN names a run in another database)",
      "Compares the runs bit for bit: parameter hashes from step 0 and loss bits from step 1, over\n"
      "the steps both have.\n"
      "\n"
      "A run is an id or a name in --db, or DB:RUN, a run in another database (runs recorded on two\n"
      "machines, compared without merging): an argument is DB:RUN when the text before one of its\n"
      "':' names an existing file (the longest such text), else a run in --db. Runs in two\n"
      "different files are only read: no verdict is stored (in one file, it is, as usual).\n"
      "\n"
      "Where the parameters differ, the first tensor (in name order) whose hash differs at that step\n"
      "is named, when both runs recorded per-tensor hashes there. With --loss-rtol/--loss-atol it\n"
      "also names the first step whose losses leave the tolerance (where it started to matter),\n"
      "beside the first bitwise difference (where the bits split); the exit status stays bitwise.\n"
      "Runs of other frameworks (ls_record_*, lockstep.record in Python) are compared alike.",
      FLAGS(VERIFY_FLAGS),
      "exit status: 0 equal, 1 differ (naming the first step and the two losses), 2 bad usage or\n"
      "unknown run" },
    { "report", cmd_report,
      { "RUN [RUN...] -o FILE.html [--db FILE] [--threads N] [--no-progress]" },
      "one self-contained HTML page: runs, their diff, loss curves, verdicts, audits",
      "Writes one self-contained HTML page (inline CSS and SVG, no script, nothing fetched) about the\n"
      "runs: an overview; for two or more runs the verify verdict of each against the first and its\n"
      "first diverging step, the config and environment fields that differ, the losses overlaid (log\n"
      "scale when they span a factor 20) with the divergence marked, and every evaluation figure over\n"
      "steps; then each run's summary, config, environment, evaluations, and the verdicts and audits\n"
      "recorded about it; logic runs: the circuit's gate counts, logic-ca runs: their rollout picture\n"
      "(these restore the run: its newest checkpoint, later steps recomputed and checked).\n"
      "Long runs are drawn with the least and greatest loss of each pixel column, so spikes show.\n"
      "A RUN is an id or a name in --db, or DB:RUN, a run in another database (as for verify).",
      FLAGS(REPORT_FLAGS),
      "exit status: 0 written, 2 bad usage, unknown run or database, an unwritable FILE" },
    { "audit", cmd_audit,
      { "RUN [--db FILE] [--threads N] [--record-only] [--certificate FILE.json]" },
      "prove a recorded run by re-executing every step (or checking the hash chain)",
      "Proves what a recorded run did. Re-executes it and checks every recorded step's loss bits,\n"
      "parameter hash and trajectory hash, the config hash against the config text, the data against the\n"
      "config's data_hash, and every registered checkpoint file against the recomputed state. The steps\n"
      "between two registered checkpoints form a segment replayed from its checkpoint: a long segment on\n"
      "every thread, short ones side by side (train --keep-checkpoints all keeps every checkpoint, so\n"
      "there are many); the first bad step named is the one a replay from\n"
      "step 0 would name. The verdict is stored in the record (table audits) and shown by `show`.",
      FLAGS(AUDIT_FLAGS),
      "exit status: 0 proved, 1 a difference (the first bad step and both values named), 2 bad usage\n"
      "or input, 130 interrupted" },
    { "reproduce", cmd_reproduce,
      { "CERT.json [--threads N] [--source NAME=PATH]..." },
      "retrain an audit certificate's config without a database and compare the trajectory",
      "Checks a certificate written by `lockstep audit --certificate` without any database: trains the\n"
      "certificate's config (on the data its sources name, or --source, checked against its data_hash)\n"
      "for its step count and compares the trajectory hash. What is trained is exactly the config text\n"
      "the certificate states, canonical and of its config_hash; its sources are only where the data are\n"
      "(the task's source keys, each once), never settings.",
      FLAGS(REPRODUCE_FLAGS),
      "exit status: 0 reproduced, 1 differs (both trajectory hashes named, or the data differ),\n"
      "2 bad usage or a malformed certificate (the field named), 130 interrupted" },
    { "import", cmd_import,
      { "OTHER.db [RUN...] [--db FILE]" },
      "copy runs of another database here, with everything recorded",
      "Copies runs (default: all) of OTHER.db into the database (--db, default runs.db, created when\n"
      "missing) with their steps, evaluations, checkpoint registrations, sources, processes, audits and\n"
      "the verdicts between them, keeping config hashes and trajectories: `verify` then compares them\n"
      "with the runs here. The checkpoint files stay where they are and stay OTHER.db's (never deleted\n"
      "from here). A run name the database has already is refused and nothing is copied.",
      FLAGS(DB_ONLY_FLAGS),
      "Prints one line per run: its id in OTHER.db and its id here.\n"
      "exit status: 0 copied, 2 bad usage or input (a name clash, a run or file that does not exist)" },
    { "rm", cmd_rm,
      { "RUN [--db FILE]" },
      "delete a run, its rows and the checkpoint files this database wrote",
      "Deletes a run: its rows (steps, evaluations, checkpoints, sources, processes, audits, the verdicts\n"
      "naming it) and the checkpoint files this database wrote for it. A file this database did not\n"
      "write (an imported run's, another database's, an older file naming nobody) is kept, and said.",
      FLAGS(DB_ONLY_FLAGS),
      "exit status: 0 deleted, 2 bad usage or input (no such run, a run still running)" },
    { "rename", cmd_rename,
      { "RUN NEW [--db FILE]" },
      "give a run another name",
      "Gives run RUN the name NEW (printable, not starting with '-', not all digits, at most 100\n"
      "characters). A name another run has is refused.",
      FLAGS(DB_ONLY_FLAGS),
      "exit status: 0 renamed, 2 bad usage or input (no such run, a bad or taken name)" },
    { "equiv", cmd_equiv,
      { "--threads 1,2,4,8 [--leaf 16,64,...] [train flags]" },
      "train one config at each thread count (and leaf size) and verify all against the first",
      "Trains one config at each thread count, and with --leaf at each leaf size, records each\n"
      "run, and verifies every run against the first, bit for bit at every step. The verdict is\n"
      "stored in the database. Every train flag is taken (lockstep train --help).",
      FLAGS(EQUIV_FLAGS),
      "exit status: 0 all identical, 1 some run differs, 2 bad usage or input" },
    { "golden", cmd_golden,
      { "check [FILE...] [--threads 1,2,3,8] [--steps N]", "update [FILE...]", "update FILE --steps N [train flags]",
        "save RUN FILE [--db FILE]", "compare FILE RUN [--db FILE]" },
      "re-run the golden files at several thread counts, or rewrite them; pin a recorded run",
      "check re-runs each golden file's config at 1, 2, 3 and 8 threads and compares every step\n"
      "(loss bits, parameter hash, trajectory hash). Default files: golden/*.golden.\n"
      "update rewrites files from their own config (refused when CI is set), or creates FILE from\n"
      "train flags; every change to a golden file needs a line in golden/CHANGES saying what changed\n"
      "and why. A golden file pins seconds of training: at most " STR(GOLDEN_MAX_STEPS) " steps. Every file is\n"
      "read and checked before any is run or written; update never writes over a database, a\n"
      "checkpoint or anything that is not a golden file.\n"
      "save writes a recorded run (lockstep's own, or another framework's recorded with ls_record_* or\n"
      "lockstep.record) as a v2 golden file: its losses, parameter hashes and per-tensor hashes\n"
      "(refused when CI is set). compare checks a recorded run against such a file (or a v1 one) and\n"
      "names the first differing step, the first tensor there (in name order) and both losses.",
      FLAGS(GOLDEN_FLAGS),
      "exit status: 0 all match, 1 a file differs, 2 a file is missing or unparseable, or its data\n"
      "or --init file are not those it pins (data_hash, init_hash), 130 interrupted" },
    { "bench", cmd_bench,
      { "[train flags] --threads 1,2 [--steps N] [--reps R]", "--peak [--threads T] [--op fma|div|sqrt]" },
      "throughput per thread count, tree vs unordered",
      "Throughput (samples/s, median of R repetitions) per thread count with\n"
      "the canonical tree, and the same with --reduce unordered (same leaf kernel, same leaf\n"
      "size), the speedup over one thread, the cost of the tree against unordered, GFLOP/s of the\n"
      "MLP, and the time spent hashing and recording a step in SQLite. Then, per thread count,\n"
      "where a step's time goes (us per step, medians; rows start with 'parts'): the model's\n"
      "prepare, its phases, the leaves with the tree's blocks, the finish, the update (these two\n"
      "with the tree's last pass; the update with the hash's share), the hash and the record.\n"
      "Nothing is recorded in runs.db.\n"
      "For the logic CA (gol, checkerboard) there is no unordered foil: the step time and the\n"
      "speedup are the figures; it holds its leaves, so its whole tree runs in the finish.",
      FLAGS(BENCH_FLAGS),
      "exit status: 0 measured, 1 diverged, 2 bad usage or input, 130 interrupted" },
    { "sweep", cmd_sweep,
      { "--seeds 1-8 [--lr 0.01,0.05] [any train flag as a list] [train flags]\n"
        "[--threads N] [--db FILE] [--name PREFIX] [--eval-every K] [--no-progress]\n"
        "[--checkpoint-every K [--checkpoint-dir DIR]]" },
      "train every combination at once in one process, each run recorded with the sweep's id",
      "Trains every combination of the listed values at once in one process, sharing --threads\n"
      "workers: the work units are (run, leaf block) and (run, part), so small runs fill the cores\n"
      "together. Each run is recorded as its own run, named PREFIX-seed3-lr0.05, with the sweep's\n"
      "id (PREFIX) in its settings; its trajectory is bit for bit that of the same config trained\n"
      "alone (lockstep train, any --threads).",
      FLAGS(SWEEP_FLAGS),
      "Prints one line per run (name, id, status, steps, final loss, evaluation, trajectory).\n"
      "`lockstep runs --sweep PREFIX` lists the sweep's runs, best first.\n"
      "Ctrl-C marks every unfinished run interrupted; each resumes with `lockstep resume RUN`.\n"
      "exit status: 0 all done, 1 a run diverged, 2 bad usage or input (or a run failed),\n"
      "130 interrupted" },
    { "graph", cmd_graph,
      { "cliques FILE -k K [--count | --list [--max N]] [--threads N] [--time]",
        "ged FILE_A FILE_B [--node-cap N] [--costs C] [--threads N] [--time]",
        "ged --pairs FILE [--node-cap N] [--costs C] [--threads N] [--time]" },
      "exact graph operations: k-cliques, graph edit distance",
      "Exact graph operations whose answers do not depend on the thread count.\n"
      "A graph FILE is an edge list ('a b [weight]' a line) or the graph text format\n"
      "(GRAPH / NODES / LABELS / DIRECTED / 'a b'; gzip is read, so the networkx Graph\n"
      "Atlas atlas.dat.gz is one); FILE:I names the I-th graph (from 0) of a file of\n"
      "several (docs/formats.md). See `lockstep graph cliques --help`, `... ged --help`.",
      NULL, 0,
      "exit status: 0 done, 2 bad usage or input" },
    { "graph cliques", NULL,
      { "FILE -k K [--count | --list [--max N]] [--threads N] [--time]" },
      "the k-cliques of an undirected graph",
      "The k-cliques of an undirected graph (kClist: degeneracy order, ties by node id).",
      FLAGS(CLIQUES_FLAGS),
      "exit status: 0 done, 2 bad usage or input, 130 interrupted (a count is printed only\n"
      "when complete)" },
    { "graph ged", NULL,
      { "FILE_A FILE_B [--node-cap N] [--costs C] [--threads N] [--time]",
        "--pairs FILE [--node-cap N] [--costs C] [--threads N] [--time]" },
      "graph edit distance: lower bound, exact value, upper bound",
      "Graph edit distance: prints 'lower L exact E upper U' per pair ('exact E' left out\n"
      "when a graph has more than --node-cap nodes). lower: the larger of a bipartite\n"
      "lower bound and the size bound; upper: Riesen & Bunke's bipartite bound; exact:\n"
      "depth-first branch and bound.",
      FLAGS(GED_FLAGS),
      "exit status: 0 done, 2 bad usage or input, 130 interrupted (nothing printed)" },
    { "help", cmd_help,
      { "[COMMAND | --man | --markdown]" },
      "this overview, a command's usage, or the manual page and reference generated from them",
      "Prints the overview of every command, one command's usage (as COMMAND --help), or the\n"
      "documents generated from the same table: the manual page and the Markdown reference.",
      FLAGS(HELP_FLAGS),
      "exit status: 0 printed, 2 bad usage" },
};

/* ---- the prose of the documents around the commands ---------------------------------------- */

/* A block of a document section: a paragraph, a term with its text, or
 * literal lines (code). */
typedef struct {
    char kind;          /* 'S' section title, 'P' paragraph, 'T' term + text, 'C' code */
    const char *a, *b;
} doc_block;

static const doc_block DOC_DESCRIPTION[] = {
    { 'S', "DESCRIPTION", NULL },
    { 'P', "lockstep trains a model on a task and records every step in an SQLite database: the loss, a\n"
           "hash of the parameters and a hash of the whole trajectory so far. Its contract: for a given\n"
           "config (task, model, seed, batch, optimiser and every other setting that can change a\n"
           "parameter) the parameters after step t are a function of that config alone. They do not\n"
           "depend on the number of threads, on how the work was scheduled, on whether the run was\n"
           "interrupted and resumed, on the compiler, the optimisation level or the SIMD path the CPU\n"
           "takes. Each step's samples are split into leaves (fixed groups of consecutive samples);\n"
           "workers compute the leaves' gradients in any order, and one fixed binary tree over the leaf\n"
           "indices sums them. Two runs of one config at different thread counts are therefore bit for\n"
           "bit identical, and lockstep verify proves it from the record, or names the first step at\n"
           "which two runs differ.", NULL },
    { 'P', "A RUN is a run id or a unique run name. Every command takes --help for its full list of\n"
           "flags. Errors are one line on standard error naming the file, flag or value at fault.", NULL },
    { 'P', "Flags: --k v and --k=v are the same; \"--\" ends the flags of every command (what follows is a\n"
           "name: a run, a file, even one starting with '-'); a flag given twice takes its last value; an\n"
           "unknown flag is refused with the nearest known one suggested.", NULL },
};

static const doc_block DOC_AFTER[] = {
    { 'S', "EXIT STATUS", NULL },
    { 'T', "0", "Success; the runs or files compared are equal." },
    { 'T', "1", "Runs differ, a recomputed step differs from the record, a check failed, or training\n"
                "diverged (the loss became NaN or infinite)." },
    { 'T', "2", "Bad usage or bad input: an unknown flag, value, run or database, a malformed file (also:\n"
                "stdout could not be written)." },
    { 'T', "130", "Interrupted (SIGINT or SIGTERM); the run is recorded as interrupted and lockstep resume\n"
                  "continues it." },
    { 'S', "ENVIRONMENT", NULL },
    { 'T', "LOCKSTEP_DATA_DIR", "The folder of the Fashion-MNIST files; default\n"
                                "/usr/share/datasets/fashion-mnist, where the Debian package\n"
                                "dataset-fashion-mnist puts them." },
    { 'T', "LOCKSTEP_SIMD", "The vector path of the dense and logic kernels: off, 0 or scalar for the scalar\n"
                            "code, avx2 for at most AVX2; anything else (or unset) for the best path the CPU\n"
                            "offers. The bits are the same on every path; this exists to prove it." },
    { 'T', "CI", "When set, lockstep golden update refuses to rewrite golden files." },
    { 'S', "FILES", NULL },
    { 'T', "runs.db", "The default SQLite record (see --db): one row per run with its canonical config and\n"
                      "environment, one row per step with the loss, the parameter hash and the trajectory\n"
                      "hash, the evaluations, checkpoints and verdicts." },
    { 'T', "DB.ckpt/", "The default checkpoint folder of database DB, created when missing; files are named\n"
                       "<database id>-run-<id>-step-<t>.ckpt." },
    { 'T', "golden/*.golden", "Reference runs checked by lockstep golden check." },
    { 'S', "EXAMPLES", NULL },
    { 'P', "Train the MLP on Fashion-MNIST for one epoch at 1 and at 2 threads, then prove the two runs\n"
           "identical:", NULL },
    { 'C', "lockstep train --task fashion-mnist --threads 1 --name t1\n"
           "lockstep train --task fashion-mnist --threads 2 --name t2\n"
           "lockstep verify t1 t2", NULL },
    { 'P', "On the small synthetic task, at four thread counts in one command:", NULL },
    { 'C', "lockstep equiv --task teacher --threads 1,2,4,8", NULL },
    { 'P', "Train with checkpoints, and continue after an interruption:", NULL },
    { 'C', "lockstep train --task gol --checkpoint-every 100 --name gol1\n"
           "^C\n"
           "lockstep resume gol1 --threads 8", NULL },
    { 'P', "Export the trained circuit as C and draw its rollout:", NULL },
    { 'C', "lockstep export gol1 --circuit -o gol1.c\n"
           "lockstep render gol1 -o gol1.png --grid 32 --steps 32", NULL },
    { 'P', "Export a classifier's weights and predict with it:", NULL },
    { 'C', "lockstep export one --weights one.safetensors\n"
           "lockstep predict one --input x.npy -o labels.npy --labels", NULL },
    { 'S', "SEE ALSO", NULL },
    { 'P', "sqlite3(1), pkg-config(1). The library behind the command is described in lockstep.h,\n"
           "installed with it; link with pkg-config --cflags --libs lockstep.", NULL },
};

#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

const command *command_find(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(COMMANDS[i].name, name) == 0)
            return &COMMANDS[i];
    return NULL;
}

const command *command_at(size_t i)
{
    return i < N_COMMANDS ? &COMMANDS[i] : NULL;
}

/* "--steps N", "-o FILE.png", "--no-progress". */
static void flag_label(const flag_spec *f, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s", f->name, f->arg != NULL ? " " : "", f->arg != NULL ? f->arg : "");
}

/* text with every line after the first indented by indent spaces. */
static void put_indented(FILE *f, const char *text, int indent)
{
    for (const char *p = text; *p; p++) {
        fputc(*p, f);
        if (*p == '\n' && p[1] != '\0' && p[1] != '\n')
            fprintf(f, "%*s", indent, "");
    }
}

void command_usage(const command *c, FILE *f)
{
    for (int s = 0; s < COMMAND_MAX_SYNOPSIS && c->synopsis[s] != NULL; s++) {
        fprintf(f, "%s lockstep %s ", s == 0 ? "usage:" : "      ", c->name);
        put_indented(f, c->synopsis[s], (int)(strlen("usage: lockstep  ") + strlen(c->name)));
        fputc('\n', f);
    }
    fprintf(f, "%s\n", c->about);
    for (size_t i = 0; i < c->n_flags; i++) {
        const flag_spec *fl = &c->flags[i];
        char label[64];
        if (fl->help == NULL)
            continue;
        flag_label(fl, label, sizeof label);
        if (strlen(label) <= 16)
            fprintf(f, "  %-16s ", label);
        else
            fprintf(f, "  %s\n%19s", label, "");
        put_indented(f, fl->help, 19);
        fputc('\n', f);
    }
    if (c->notes != NULL)
        fprintf(f, "%s\n", c->notes);
}

void command_overview(FILE *f)
{
    fputs("lockstep - training whose bits do not depend on the thread count\n"
          "\n"
          "usage: lockstep COMMAND [flags]     (lockstep COMMAND --help for its flags)\n"
          "\n", f);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        const command *c = &COMMANDS[i];
        if (c->run == NULL)
            continue;
        for (int s = 0; s < COMMAND_MAX_SYNOPSIS && c->synopsis[s] != NULL; s++) {
            fprintf(f, "  %-9s ", s == 0 ? c->name : "");
            put_indented(f, c->synopsis[s], 12);
            fputc('\n', f);
        }
        fprintf(f, "  %-9s %s\n", "", c->summary);
    }
    fputs("\n"
          "\"--\" ends the flags of every command: what follows is a name (a run, a file).\n"
          "A flag given twice takes its last value. --k v and --k=v are the same.\n"
          "exit status: 0 success/equal, 1 differ/diverged (or nothing to compare), 2 bad usage or\n"
          "input (also: stdout could not be written), 130 interrupted\n", f);
}

/* ---- roff ------------------------------------------------------------------------------------ */

/* Text for roff: '-' as \-, '\' as \e, a line never starting with '.' or
 * '\''; with join, line breaks become spaces (roff fills the paragraph). */
static void roff_text(FILE *f, const char *s, int join)
{
    int bol = 1;
    for (; *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", f);
        bol = 0;
        if (*s == '-')
            fputs("\\-", f);
        else if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '\n' && join && s[1] == '\n') {
            fputs("\n.PP\n", f);
            s++;
            bol = 1;
        } else {
            fputc(*s, f);
            bol = *s == '\n';
        }
    }
}

static void roff_blocks(FILE *f, const doc_block *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (b[i].kind) {
        case 'S': fprintf(f, ".SH %s\n", b[i].a); break;
        case 'P':
            fputs(".PP\n", f);
            roff_text(f, b[i].a, 1);
            fputc('\n', f);
            break;
        case 'T':
            fputs(".TP\n.B ", f);
            roff_text(f, b[i].a, 1);
            fputc('\n', f);
            roff_text(f, b[i].b, 1);
            fputc('\n', f);
            break;
        default:
            fputs(".PP\n.RS\n.nf\n", f);
            roff_text(f, b[i].a, 0);
            fputs("\n.fi\n.RE\n", f);
            break;
        }
    }
}

static void roff_synopsis(FILE *f, const command *c)
{
    for (int s = 0; s < COMMAND_MAX_SYNOPSIS && c->synopsis[s] != NULL; s++) {
        fputs("\\fBlockstep ", f);
        roff_text(f, c->name, 0);
        fputs("\\fR ", f);
        for (const char *p = c->synopsis[s]; *p; p++) {
            char one[2] = { *p, '\0' };
            roff_text(f, one, 0);
            if (*p == '\n')
                fputs("        ", f);
        }
        fputc('\n', f);
    }
}

void command_write_man(FILE *f)
{
    fputs(".\\\" lockstep.1 - the manual page of the lockstep command (man(7) macros).\n"
          ".\\\" Generated by `lockstep help --man` from the command table in tools/commands.c\n"
          ".\\\" (make docs-cli): edit the table, not this file.\n", f);
    fprintf(f, ".TH LOCKSTEP 1 \"\" \"lockstep %s\" \"User Commands\"\n.nh\n", LS_VERSION_STRING);
    fputs(".SH NAME\nlockstep \\- train neural networks whose bits do not depend on the thread count\n"
          ".SH SYNOPSIS\n.nf\n\\fBlockstep\\fR \\fIcommand\\fR [\\fIflags\\fR]\n", f);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (COMMANDS[i].run != NULL)
            roff_synopsis(f, &COMMANDS[i]);
    fputs("\\fBlockstep\\fR \\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR\n.fi\n", f);
    roff_blocks(f, DOC_DESCRIPTION, sizeof DOC_DESCRIPTION / sizeof DOC_DESCRIPTION[0]);
    fputs(".SH COMMANDS\n", f);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        const command *c = &COMMANDS[i];
        fputs(".SS \"lockstep ", f);
        roff_text(f, c->name, 0);
        fputs("\"\n.nf\n", f);
        roff_synopsis(f, c);
        fputs(".fi\n.PP\n", f);
        roff_text(f, c->about, 1);
        fputc('\n', f);
        for (size_t k = 0; k < c->n_flags; k++) {
            const flag_spec *fl = &c->flags[k];
            if (fl->help == NULL)
                continue;
            fputs(".TP\n\\fB", f);
            roff_text(f, fl->name, 0);
            fputs("\\fR", f);
            if (fl->alias != NULL) {
                fputs(", \\fB", f);
                roff_text(f, fl->alias, 0);
                fputs("\\fR", f);
            }
            if (fl->arg != NULL) {
                fputs(" \\fI", f);
                roff_text(f, fl->arg, 0);
                fputs("\\fR", f);
            }
            fputc('\n', f);
            roff_text(f, fl->help, 1);
            fputc('\n', f);
        }
        if (c->notes != NULL) {
            fputs(".PP\n", f);
            roff_text(f, c->notes, 1);
            fputc('\n', f);
        }
    }
    roff_blocks(f, DOC_AFTER, sizeof DOC_AFTER / sizeof DOC_AFTER[0]);
}

/* ---- Markdown -------------------------------------------------------------------------------- */

/* Text for Markdown: line breaks kept (a paragraph's lines join when
 * rendered; continuation lines of a list item indented by indent), the
 * characters Markdown would read as markup escaped outside code spans. */
static void md_text(FILE *f, const char *s, int indent)
{
    int code = 0;
    for (; *s; s++) {
        if (*s == '`')
            code = !code;
        if (!code && (*s == '*' || *s == '_' || *s == '<' || *s == '|' || *s == '[' || *s == ']'))
            fputc('\\', f);
        fputc(*s, f);
        if (*s == '\n' && indent > 0 && s[1] != '\0' && s[1] != '\n')
            fprintf(f, "%*s", indent, "");
    }
}

static void md_blocks(FILE *f, const doc_block *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (b[i].kind) {
        case 'S':
            /* "EXIT STATUS" as "Exit status": man page titles are capitals. */
            fputs("## ", f);
            for (const char *p = b[i].a; *p; p++)
                fputc(p == b[i].a ? *p : (char)tolower((unsigned char)*p), f);
            fputs("\n\n", f);
            break;
        case 'P':
            md_text(f, b[i].a, 0);
            fputs("\n\n", f);
            break;
        case 'T':
            fprintf(f, "- `%s`: ", b[i].a);
            md_text(f, b[i].b, 2);
            fputs("\n", f);
            if (i + 1 == n || b[i + 1].kind != 'T')
                fputc('\n', f);
            break;
        default: fprintf(f, "```\n%s\n```\n\n", b[i].a); break;
        }
    }
}

/* Form s of c's synopsis in a code block, its continuation lines indented. */
static void md_form(FILE *f, const command *c, int s)
{
    fprintf(f, "lockstep %s ", c->name);
    put_indented(f, c->synopsis[s], 8);
    fputc('\n', f);
}

void command_write_markdown(FILE *f)
{
    fputs("# The lockstep command line\n\n"
          "<!-- Generated by `lockstep help --markdown` from the command table in tools/commands.c\n"
          "     (make docs-cli): edit the table, not this file. -->\n\n", f);
    fprintf(f, "lockstep %s. The manual page doc/lockstep.1 is generated from the same table.\n\n",
            LS_VERSION_STRING);
    fputs("```\nlockstep COMMAND [flags]\n", f);
    for (size_t i = 0; i < N_COMMANDS; i++)
        for (int s = 0; COMMANDS[i].run != NULL && s < COMMAND_MAX_SYNOPSIS && COMMANDS[i].synopsis[s] != NULL; s++)
            md_form(f, &COMMANDS[i], s);
    fputs("lockstep --help | --version\n```\n\n", f);
    md_blocks(f, DOC_DESCRIPTION, sizeof DOC_DESCRIPTION / sizeof DOC_DESCRIPTION[0]);
    fputs("## Commands\n\n", f);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        const command *c = &COMMANDS[i];
        fprintf(f, "### lockstep %s\n\n```\n", c->name);
        for (int s = 0; s < COMMAND_MAX_SYNOPSIS && c->synopsis[s] != NULL; s++)
            md_form(f, c, s);
        fputs("```\n\n", f);
        md_text(f, c->about, 0);
        fputs("\n\n", f);
        for (size_t k = 0; k < c->n_flags; k++) {
            const flag_spec *fl = &c->flags[k];
            if (fl->help == NULL)
                continue;
            char label[64];
            flag_label(fl, label, sizeof label);
            fprintf(f, "- `%s`", label);
            if (fl->alias != NULL)
                fprintf(f, " (or `%s%s%s`)", fl->alias, fl->arg != NULL ? " " : "", fl->arg != NULL ? fl->arg : "");
            fputs(": ", f);
            md_text(f, fl->help, 2);
            fputc('\n', f);
        }
        if (c->n_flags > 0)
            fputc('\n', f);
        if (c->notes != NULL) {
            md_text(f, c->notes, 0);
            fputs("\n\n", f);
        }
    }
    md_blocks(f, DOC_AFTER, sizeof DOC_AFTER / sizeof DOC_AFTER[0]);
}

/* ---- lockstep help --------------------------------------------------------------------------- */

int cmd_help(int argc, char **argv)
{
    const command *me = command_find("help");
    flags_iter it;
    flags_init(&it, argc, argv, me->flags, me->n_flags);
    ls_err err = { "" };
    ls_status st = LS_OK;
    const char *v, *name = NULL;
    int man = 0, md = 0, k;
    while ((k = flags_next(&it, &v, &err, &st)) != FLAGS_END) {
        if (k == FLAGS_ERROR) {
            cli_error("help", &err, st);
            return EXIT_USAGE;
        }
        if (k == FLAGS_HELP) {
            command_usage(me, stdout);
            return EXIT_OK;
        }
        if (k == FLAGS_ARG && name == NULL) {
            name = v;
        } else if (k == FLAGS_ARG) {
            fprintf(stderr, "lockstep help: '%s': unexpected argument\n", v);
            return EXIT_USAGE;
        } else if (strcmp(me->flags[k].name, "--man") == 0) {
            man = 1;
        } else {
            md = 1;
        }
    }
    if (man + md + (name != NULL) > 1) {
        fputs("lockstep help: --man, --markdown and COMMAND: one of them\n", stderr);
        return EXIT_USAGE;
    }
    if (man) {
        command_write_man(stdout);
    } else if (md) {
        command_write_markdown(stdout);
    } else if (name != NULL) {
        const command *c = command_find(name);
        if (c == NULL) {
            fprintf(stderr, "lockstep help: '%s' is not a command (see lockstep --help)\n", name);
            return EXIT_USAGE;
        }
        command_usage(c, stdout);
    } else {
        command_overview(stdout);
    }
    return EXIT_OK;
}
