/* test_export.c — `lockstep export --circuit` and `lockstep render`, end to
 * end with the real binary (LOCKSTEP_BIN, else build/lockstep).
 *
 * The binary trains a few runs into a database of its own (once, shared by
 * the cases); the test then rebuilds each run's parameters on its own path —
 * trainer_create and trainer_step in this process, from the recorded config,
 * checked against the recorded parameter hash — and takes the engine's hard
 * evaluation (logic_ca_hard_step / _rollout, trainer_evaluate) as the
 * reference. What the binary wrote is checked behind its back:
 *   - the exported C is compiled with the system compiler (`cc`) together with
 *     a driver this test writes, and run on random patches and random grids
 *     (periodic and zero borders, odd sizes, fire masks, several steps): every
 *     output bit must equal the engine's; for the classifier, the compiled
 *     circuit's test accuracy must equal the engine's to the last bit;
 *   - the netlist is parsed and interpreted here, gate by gate, and must agree
 *     with the engine too; its gate count must be the C file's;
 *   - the PNG is decoded with libpng and every pixel compared with the
 *     engine's rollout from the start state the documentation describes.
 * Bad input must exit 2 with one line and leave no file behind; a tampered
 * record must make the restore fail with exit 1, naming the step.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <png.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "engine/core/config.h"
#include "engine/data/dataset.h"
#include "engine/models/logic/logic.h"
#include "engine/models/logic_ca/logic_ca.h"
#include "engine/tasks/ca_data.h"
#include "engine/num/rng.h"
#include "engine/core/train.h"
#include "engine/tasks/teacher.h"
#include "record/hash.h"
#include "record/runlog.h"
#include "tests/proc_util.h"

/* The width of a logic network's last layer. */
static size_t cfg_last_layer(const ls_config *cfg)
{
    const size_t *v;
    size_t n = ls_config_list(cfg, "layers", &v);
    return n > 0 ? v[n - 1] : 0;
}

static char g_bin[PATH_MAX];
static char g_dir[128];     /* the shared temporary directory */
static char g_db[PATH_MAX]; /* its database */

#define DEADLINE 120.0

/* ---- temporary directory ------------------------------------------------------------ */

static void tpath(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", g_dir, name);
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Names in g_dir that contain ".tmp": leftovers of an output written through a temporary file. */
static int temp_files_left(void)
{
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return n;
}

static void write_all(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* ---- running programs (tests/proc_util.c) -------------------------------------------- */

/* Runs argv (argv[0] a path, or a name looked up in PATH) in g_dir with stdin
 * from /dev/null, capturing stdout and stderr; killed after DEADLINE. */
static void run_argv(proc_res *r, const char *const *argv)
{
    /* Signal dispositions as inherited; argv[0] looked up in PATH. */
    static const proc_opts opt = { PROC_SIG_KEEP, 1, 0, 0 };
    size_t at = 0;
    r->cmd[0] = '\0';
    for (size_t i = 0; argv[i] != NULL && at < sizeof r->cmd; i++)
        at += (size_t)snprintf(r->cmd + at, sizeof r->cmd - at, "%s%s", i ? " " : "", argv[i]);
    proc_child p;
    proc_start(&p, g_dir, NULL, &opt, argv);
    proc_finish(&p, r, DEADLINE);
    if (r->timed_out)
        fail_msg("%s: still running after %.0f s (killed)", r->cmd, DEADLINE);
    if (r->sig != 0)
        fail_msg("%s: died of signal %d\nstderr: %s", r->cmd, r->sig, r->err);
}

/* lockstep with arguments; argv without argv[0]. */
static void run_ls(proc_res *r, const char *const *args)
{
    const char *argv[40];
    size_t n = 0;
    argv[n++] = g_bin;
    while (args[n - 1] != NULL && n < 39) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    run_argv(r, argv);
}

static void expect_code(const proc_res *r, int want)
{
    if (r->code != want)
        fail_msg("%s: exit %d, want %d\nstdout: %s\nstderr: %s", r->cmd, r->code, want, r->out, r->err);
}

#define LS(r, ...)                                         \
    do {                                                   \
        const char *av_[] = { __VA_ARGS__, NULL };         \
        run_ls((r), av_);                                  \
    } while (0)

#define LS_OK(...)                                         \
    do {                                                   \
        proc_res r_;                                       \
        LS(&r_, __VA_ARGS__);                              \
        expect_code(&r_, 0);                               \
        proc_res_free(&r_);                                \
    } while (0)

#define SH_OK(...)                                         \
    do {                                                   \
        proc_res r_;                                       \
        const char *av_[] = { __VA_ARGS__, NULL };         \
        run_argv(&r_, av_);                                \
        expect_code(&r_, 0);                               \
        proc_res_free(&r_);                                \
    } while (0)

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* ---- the shared runs and their engine-side twins ------------------------------------ */

/* Runs the binary trains once: name, then train flags. gol: the default
 * (3000 steps, trained to hard_acc 1), checkpoints every 700 steps so the
 * export recomputes 200 recorded steps; cb: checkerboard with Gaussian
 * logits (random gates: a real circuit even untrained); cba: the
 * asynchronous checkerboard; lt: the logic classifier; mlp: no circuit. */
static const char *const RUNS[][16] = {
    { "gol", "--task", "gol", "--checkpoint-every", "700", NULL },
    { "cb", "--task", "checkerboard", "--residual", "0", "--steps", "3", "--checkpoint-every", "2", NULL },
    { "cba", "--task", "checkerboard", "--async", "--residual", "0", "--steps", "1", NULL },
    { "lt", "--task", "teacher", "--model", "logic", "--steps", "60", "--checkpoint-every", "25", NULL },
    { "mlp", "--task", "teacher", "--steps", "3", NULL },
};
#define N_RUNS (sizeof RUNS / sizeof RUNS[0])

typedef struct {
    ls_config cfg;
    trainer *t;
    logic_ca_hard *h;     /* logic-ca runs */
    int64_t run_id;
    int64_t steps;
    double test_acc;      /* logic: the recorded figure */
} engine_run;

static engine_run g_eng[N_RUNS];
static int g_trained;

static size_t run_index(const char *name)
{
    for (size_t i = 0; i < N_RUNS; i++)
        if (strcmp(RUNS[i][0], name) == 0)
            return i;
    fail_msg("no run %s", name);
    return 0;
}

static void need_runs(void)
{
    if (g_trained)
        return;
    for (size_t i = 0; i < N_RUNS; i++) {
        const char *args[24];
        size_t n = 0;
        args[n++] = "train";
        for (size_t k = 1; RUNS[i][k] != NULL; k++)
            args[n++] = RUNS[i][k];
        const char *tail[] = { "--name", RUNS[i][0], "--db", "D", "--threads", "2", "--no-progress", NULL };
        for (size_t k = 0; k < 8; k++)
            args[n++] = tail[k];
        proc_res r;
        run_ls(&r, args);
        expect_code(&r, 0);
        proc_res_free(&r);
    }
    g_trained = 1;
}

/* The run's parameters rebuilt in this process (trainer_step from the
 * recorded config), checked against the record's last parameter hash. */
static engine_run *engine(const char *name)
{
    need_runs();
    engine_run *e = &g_eng[run_index(name)];
    if (e->t != NULL)
        return e;
    runlog *db;
    ls_err err = { "" };
    assert_int_equal(runlog_open(&db, g_db, &err), LS_OK);
    runlog_run run;
    assert_int_equal(runlog_find(db, name, &e->run_id, &err), LS_OK);
    assert_int_equal(runlog_get_run(db, e->run_id, &run, &err), LS_OK);
    ls_step *rows;
    size_t n_rows;
    assert_int_equal(runlog_read_steps(db, e->run_id, &rows, &n_rows, &err), LS_OK);
    assert_true(n_rows >= 2);
    e->steps = (int64_t)n_rows - 1;
    runlog_evalrow *ev;
    size_t n_ev;
    assert_int_equal(runlog_read_evals(db, e->run_id, &ev, &n_ev, &err), LS_OK);
    e->test_acc = -1;
    for (size_t i = 0; i < n_ev; i++)
        if (strcmp(ev[i].name, "test_acc") == 0 && ev[i].step == e->steps)
            e->test_acc = ev[i].value;
    free(ev);
    if (config_parse_text(&e->cfg, run.config_text, name, &err) != LS_OK)
        fail_msg("%s", err.msg);
    ls_config cfg = e->cfg;
    if (trainer_create(&e->t, &cfg, 2, NULL, &err) != LS_OK)
        fail_msg("%s", err.msg);
    for (int64_t s = 0; s < e->steps; s++) {
        double loss;
        assert_int_equal(trainer_step(e->t, &loss, &err), LS_OK);
    }
    assert_true(hash_params(trainer_params(e->t), trainer_n_params(e->t)) == rows[e->steps].param_hash);
    if (strcmp(e->cfg.model, "logic-ca") == 0)
        assert_int_equal(logic_ca_hard_create(&e->h, trainer_model(e->t), trainer_params(e->t), &err), LS_OK);
    free(rows);
    runlog_run_free(&run);
    runlog_close(db);
    return e;
}

static uint64_t test_rand(uint64_t *s)
{
    return rng_u64(77, RNG_TEST, 0, 0, (*s)++);
}

/* ---- compiling the export ------------------------------------------------------------- */

static const char CA_DRIVER[] =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include \"%s\"\n"
    "static unsigned char *slurp(const char *p, size_t *n)\n"
    "{\n"
    "    FILE *f = fopen(p, \"rb\");\n"
    "    if (f == NULL) exit(3);\n"
    "    fseek(f, 0, SEEK_END);\n"
    "    long len = ftell(f);\n"
    "    fseek(f, 0, SEEK_SET);\n"
    "    unsigned char *b = malloc((size_t)len + 1);\n"
    "    if (b == NULL || fread(b, 1, (size_t)len, f) != (size_t)len) exit(3);\n"
    "    fclose(f);\n"
    "    *n = (size_t)len;\n"
    "    return b;\n"
    "}\n"
    "static void spit(const char *p, const void *b, size_t n)\n"
    "{\n"
    "    FILE *f = fopen(p, \"wb\");\n"
    "    if (f == NULL || fwrite(b, 1, n, f) != n || fclose(f) != 0) exit(4);\n"
    "}\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    size_t n;\n"
    "    if (argc == 4 && strcmp(argv[1], \"patch\") == 0) {\n"
    "        uint64_t *in = (uint64_t *)(void *)slurp(argv[2], &n);\n"
    "        size_t words = n / (9 * LOCKSTEP_CHANNELS * sizeof(uint64_t));\n"
    "        uint64_t *out = malloc(words * LOCKSTEP_CHANNELS * sizeof(uint64_t));\n"
    "        for (size_t w = 0; w < words; w++)\n"
    "            lockstep_step(out + w * LOCKSTEP_CHANNELS, in + w * 9 * LOCKSTEP_CHANNELS);\n"
    "        spit(argv[3], out, words * LOCKSTEP_CHANNELS * sizeof(uint64_t));\n"
    "        return 0;\n"
    "    }\n"
    "    if (argc == 9 && strcmp(argv[1], \"grid\") == 0) {\n"
    "        size_t W = strtoul(argv[2], NULL, 10), H = strtoul(argv[3], NULL, 10), m;\n"
    "        int periodic = atoi(argv[4]);\n"
    "        size_t steps = strtoul(argv[5], NULL, 10), cells = W * H;\n"
    "        unsigned char *a = slurp(argv[6], &n), *b = malloc(n);\n"
    "        unsigned char *mask = strcmp(argv[7], \"-\") ? slurp(argv[7], &m) : NULL;\n"
    "        uint64_t *work = malloc(lockstep_grid_work_words(W, H) * sizeof(uint64_t));\n"
    "        if (n != LOCKSTEP_CHANNELS * cells || b == NULL || work == NULL) return 5;\n"
    "        for (size_t s = 0; s < steps; s++) {\n"
    "            lockstep_grid_step(b, a, W, H, periodic, mask ? mask + s * cells : NULL, work);\n"
    "            unsigned char *t = a;\n"
    "            a = b;\n"
    "            b = t;\n"
    "        }\n"
    "        spit(argv[8], a, n);\n"
    "        return 0;\n"
    "    }\n"
    "    return 2;\n"
    "}\n";

static const char NET_DRIVER[] =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include \"%s\"\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    if (argc != 3) return 2;\n"
    "    FILE *f = fopen(argv[1], \"rb\");\n"
    "    FILE *g = fopen(argv[2], \"wb\");\n"
    "    if (f == NULL || g == NULL) return 3;\n"
    "    float x[64 * LOCKSTEP_FEATURES];\n"
    "    uint64_t in[LOCKSTEP_INPUTS];\n"
    "    uint8_t pred[64];\n"
    "    size_t n;\n"
    "    while ((n = fread(x, sizeof(float) * LOCKSTEP_FEATURES, 64, f)) > 0) {\n"
    "        lockstep_binarize(in, x, n);\n"
    "        lockstep_classify(pred, NULL, in);\n"
    "        if (fwrite(pred, 1, n, g) != n) return 4;\n"
    "    }\n"
    "    return fclose(g) != 0;\n"
    "}\n";

/* Exports run `name` as C (TAG.c; split: the --split value, or NULL) and
 * compiles it: alone with strict flags (self-contained, warning-free), as
 * the benchmark program (run on a small grid), and with a driver (TAG_drv).
 * Returns the active gate count the C file declares. */
static size_t export_and_build(const char *name, const char *tag, const char *split, int ca)
{
    char c_file[64], drv_src[64], drv_bin[64], obj[64], bench[64];
    snprintf(c_file, sizeof c_file, "%s.c", tag);
    snprintf(drv_src, sizeof drv_src, "%s_drv.c", tag);
    snprintf(drv_bin, sizeof drv_bin, "./%s_drv", tag);
    snprintf(obj, sizeof obj, "%s.o", tag);
    snprintf(bench, sizeof bench, "./%s_bench", tag);
    proc_res r;
    if (split != NULL)
        LS(&r, "export", name, "--db", "D", "--circuit", "-o", c_file, "--threads", "2", "--split", split);
    else
        LS(&r, "export", name, "--db", "D", "--circuit", "-o", c_file, "--threads", "2");
    expect_code(&r, 0);
    size_t active = 0, total = 0;
    const char *say = strstr(r.out, " active gates of ");
    assert_non_null(say);
    while (say > r.out && say[-1] >= '0' && say[-1] <= '9')
        say--;
    assert_int_equal(sscanf(say, "%zu active gates of %zu", &active, &total), 2);
    proc_res_free(&r);

    char path[PATH_MAX];
    tpath(c_file, path, sizeof path);
    char *text = proc_read_file(path, NULL, 1);
    /* Self-contained: the only includes outside the optional main are <stddef.h> and <stdint.h>. */
    char *main_part = strstr(text, "#ifdef LOCKSTEP_CIRCUIT_MAIN");
    assert_non_null(main_part);
    for (char *p = strstr(text, "#include"); p != NULL && p < main_part; p = strstr(p + 1, "#include"))
        assert_true(strncmp(p, "#include <stddef.h>\n", 20) == 0 || strncmp(p, "#include <stdint.h>\n", 20) == 0);
    size_t declared = 0;
    const char *d = strstr(text, "#define LOCKSTEP_ACTIVE_GATES ");
    assert_non_null(d);
    assert_int_equal(sscanf(d, "#define LOCKSTEP_ACTIVE_GATES %zu", &declared), 1);
    assert_int_equal(declared, active);
    /* One straight-line expression per active gate: locals g<N> in one
     * function, or (split form) v[slot] = ...; tagged with the gate, in parts. */
    size_t lines = 0, tagged = 0;
    for (const char *p = strstr(text, "    const uint64_t g"); p != NULL; p = strstr(p + 1, "    const uint64_t g"))
        lines++;
    for (const char *p = strstr(text, "; /* g"); p != NULL; p = strstr(p + 1, "; /* g"))
        tagged++;
    if (split != NULL) {
        assert_int_equal(lines, 0);
        assert_int_equal(tagged, active);
        assert_non_null(strstr(text, "void lockstep_part0(uint64_t *v,"));
    } else {
        assert_int_equal(lines, active);
        assert_int_equal(tagged, 0);
    }
    char comment[64];
    snprintf(comment, sizeof comment, "active gates: %zu of %zu", active, total);
    assert_non_null(strstr(text, comment));
    free(text);

    SH_OK("cc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Wconversion", "-Wshadow", "-Wstrict-prototypes",
          "-Wmissing-prototypes", "-Werror", "-O1", "-c", c_file, "-o", obj);
    SH_OK("cc", "-std=c11", "-O2", "-DLOCKSTEP_CIRCUIT_MAIN", c_file, "-o", bench);
    {
        const char *av[] = { bench, ca ? "40" : "8", ca ? "2" : NULL, NULL };
        run_argv(&r, av);
        expect_code(&r, 0);
        assert_non_null(strstr(r.out, ca ? "cells/s" : "samples/s"));
        proc_res_free(&r);
    }
    char src[sizeof CA_DRIVER + 64];
    snprintf(src, sizeof src, ca ? CA_DRIVER : NET_DRIVER, c_file);
    tpath(drv_src, path, sizeof path);
    write_all(path, src, strlen(src));
    SH_OK("cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", drv_src, "-o", drv_bin);
    return active;
}

/* ---- logic-ca: reference values from the engine --------------------------------------- */

/* npatch random patches: patch k's bit (c, p) = bit k of words[(k/64)·9C + c·9 + p];
 * ref [npatch/64][C] words = the engine's new state of the patch's centre. The
 * engine sees the patches as the 3×3 blocks of one zero-bordered grid: the
 * centre of a block has exactly the block as its patch. */
static void engine_patches(const engine_run *e, const uint64_t *words, size_t npatch, uint64_t *ref)
{
    const size_t C = e->h->channels, side = 32 * 3, per_row = 32, cells = side * side;
    uint8_t *in = calloc(C * cells, 1), *out = malloc(C * cells);
    assert_non_null(in);
    assert_non_null(out);
    for (size_t k0 = 0; k0 < npatch; k0 += per_row * per_row) {
        memset(in, 0, C * cells);
        const size_t nk = npatch - k0 < per_row * per_row ? npatch - k0 : per_row * per_row;
        for (size_t q = 0; q < nk; q++) {
            const size_t k = k0 + q, bx = q % per_row * 3, by = q / per_row * 3;
            for (size_t c = 0; c < C; c++)
                for (size_t p = 0; p < 9; p++)
                    in[c * cells + (by + p / 3) * side + bx + p % 3] =
                        (uint8_t)((words[(k / 64) * 9 * C + c * 9 + p] >> (k % 64)) & 1);
        }
        ls_err err = { "" };
        assert_int_equal(logic_ca_hard_step(e->h, out, in, side, side, 0, NULL, &err), LS_OK);
        for (size_t q = 0; q < nk; q++) {
            const size_t k = k0 + q, centre = (q / per_row * 3 + 1) * side + q % per_row * 3 + 1;
            for (size_t c = 0; c < C; c++)
                ref[(k / 64) * C + c] |= (uint64_t)(out[c * cells + centre] & 1) << (k % 64);
        }
    }
    free(in);
    free(out);
}

/* ---- the netlist interpreter ------------------------------------------------------------- */

typedef struct {
    size_t n_gates;       /* lines */
    uint32_t *a, *b;      /* operand: input i, or NL_GATE + line index, or NL_NONE */
    uint8_t *op;
    uint32_t *out;        /* [n_out] */
    size_t n_out;
} netlist;
#define NL_GATE 0x40000000u
#define NL_NONE 0xffffffffu

static const char *const NL_OPS[16] = {
    "FALSE", "AND", "A_AND_NOT_B", "A", "NOT_A_AND_B", "B", "XOR", "OR",
    "NOR", "XNOR", "NOT_B", "A_OR_NOT_B", "NOT_A", "NOT_A_OR_B", "NAND", "TRUE",
};

/* id_line maps a gate id to its line (+1; 0 = not defined yet). */
static uint32_t nl_operand(const char *s, const uint32_t *id_line, size_t max_id, int ca)
{
    unsigned c, p, g;
    if (strcmp(s, "-") == 0)
        return NL_NONE;
    if (ca && sscanf(s, "in[%u][%u]", &c, &p) == 2 && p < 9)
        return c * 9 + p;
    if (!ca && sscanf(s, "in[%u]", &c) == 1)
        return c;
    if (sscanf(s, "g%u", &g) == 1 && g < max_id && id_line[g] != 0)
        return NL_GATE + id_line[g] - 1;
    fail_msg("netlist: bad or undefined operand '%s'", s);
    return NL_NONE;
}

static void netlist_parse(const char *text, int ca, size_t max_id, netlist *nl)
{
    memset(nl, 0, sizeof *nl);
    size_t cap = count_lines(text) + 1;
    nl->a = calloc(cap, sizeof(uint32_t));
    nl->b = calloc(cap, sizeof(uint32_t));
    nl->op = calloc(cap, 1);
    nl->out = calloc(cap, sizeof(uint32_t));
    uint32_t *id_line = calloc(max_id, sizeof(uint32_t));
    assert_true(nl->a && nl->b && nl->op && nl->out && id_line);
    for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
        char buf[256];
        size_t len = strcspn(line, "\n");
        assert_true(len < sizeof buf);
        memcpy(buf, line, len);
        buf[len] = '\0';
        unsigned id;
        char op[32], x[64], y[64];
        if (buf[0] == '#' || buf[0] == '\0') {
        } else if (sscanf(buf, "g%u = %31[A-Z_](%63[^,], %63[^)])", &id, op, x, y) == 4) {
            assert_true(id < max_id && id_line[id] == 0);
            int k = -1;
            for (int i = 0; i < 16; i++)
                if (strcmp(op, NL_OPS[i]) == 0)
                    k = i;
            if (k < 0)
                fail_msg("netlist: unknown op in '%s'", buf);
            nl->op[nl->n_gates] = (uint8_t)k;
            nl->a[nl->n_gates] = nl_operand(x, id_line, max_id, ca);
            nl->b[nl->n_gates] = nl_operand(y, id_line, max_id, ca);
            id_line[id] = (uint32_t)++nl->n_gates;
        } else if (sscanf(buf, "out[%u] = %63s", &id, x) == 2) {
            assert_int_equal(id, nl->n_out);
            nl->out[nl->n_out++] = nl_operand(x, id_line, max_id, ca);
        } else {
            fail_msg("netlist: unparsable line '%s'", buf);
        }
        if (line[len] == '\0')
            break;
    }
    free(id_line);
}

static void netlist_free(netlist *nl)
{
    free(nl->a);
    free(nl->b);
    free(nl->op);
    free(nl->out);
}

/* One word of every output from one word of every input. */
static void netlist_eval(const netlist *nl, const uint64_t *in, uint64_t *val, uint64_t *out)
{
    for (size_t g = 0; g < nl->n_gates; g++) {
        uint64_t x[2] = { 0, 0 };
        const uint32_t src[2] = { nl->a[g], nl->b[g] };
        for (int k = 0; k < 2; k++)
            if (src[k] != NL_NONE)
                x[k] = src[k] >= NL_GATE ? val[src[k] - NL_GATE] : in[src[k]];
        val[g] = logic_hard_word(nl->op[g], x[0], x[1]);
    }
    for (size_t o = 0; o < nl->n_out; o++)
        out[o] = nl->out[o] >= NL_GATE ? val[nl->out[o] - NL_GATE] : in[nl->out[o]];
}

/* ---- the logic-ca cases --------------------------------------------------------------------- */

static void check_ca_export(const char *name, const char *tag, const char *split)
{
    engine_run *e = engine(name);
    const size_t active = export_and_build(name, tag, split, 1);
    const size_t C = e->h->channels;
    char drv[64], path[PATH_MAX], out_path[PATH_MAX];
    snprintf(drv, sizeof drv, "./%s_drv", tag);
    uint64_t seed = 1;

    /* (1) lockstep_step on random patches. */
    const size_t npatch = 2048, words = npatch / 64;
    uint64_t *patch = malloc(words * 9 * C * sizeof(uint64_t));
    uint64_t *ref = calloc(words * C, sizeof(uint64_t));
    assert_true(patch != NULL && ref != NULL);
    for (size_t i = 0; i < words * 9 * C; i++)
        patch[i] = test_rand(&seed);
    /* a few all-zero and all-one patches too */
    for (size_t i = 0; i < 9 * C; i++) {
        patch[i] &= ~UINT64_C(1);
        patch[i] |= UINT64_C(2);
    }
    engine_patches(e, patch, npatch, ref);
    tpath("patch.in", path, sizeof path);
    tpath("patch.out", out_path, sizeof out_path);
    write_all(path, patch, words * 9 * C * sizeof(uint64_t));
    SH_OK(drv, "patch", "patch.in", "patch.out");
    size_t got_len;
    uint64_t *got = (uint64_t *)(void *)proc_read_file(out_path, &got_len, 1);
    assert_int_equal(got_len, words * C * sizeof(uint64_t));
    for (size_t i = 0; i < words * C; i++)
        if (got[i] != ref[i])
            fail_msg("%s: lockstep_step word %zu channel %zu: %016llx, the engine %016llx", name, i / C, i % C,
                     (unsigned long long)got[i], (unsigned long long)ref[i]);
    free(got);

    /* (2) the netlist: same gate count, same function. */
    char net_file[64];
    snprintf(net_file, sizeof net_file, "%s.net", name);
    proc_res r;
    LS(&r, "export", name, "--db", "D", "--circuit", "--netlist", "-o", net_file, "--threads", "2");
    expect_code(&r, 0);
    proc_res_free(&r);
    tpath(net_file, path, sizeof path);
    char *text = proc_read_file(path, NULL, 1);
    netlist nl;
    netlist_parse(text, 1, 1u << 20, &nl);
    char comment[64];
    snprintf(comment, sizeof comment, "# active gates: %zu of ", active);
    assert_non_null(strstr(text, comment));
    free(text);
    assert_int_equal(nl.n_gates, active);
    assert_int_equal(nl.n_out, C);
    uint64_t *val = malloc(nl.n_gates * sizeof(uint64_t)), o[64];
    assert_non_null(val);
    for (size_t w = 0; w < words; w++) {
        netlist_eval(&nl, patch + w * 9 * C, val, o);
        for (size_t c = 0; c < C; c++)
            if (o[c] != ref[w * C + c])
                fail_msg("%s: netlist word %zu channel %zu: %016llx, the engine %016llx", name, w, c,
                         (unsigned long long)o[c], (unsigned long long)ref[w * C + c]);
    }
    free(val);
    netlist_free(&nl);
    free(patch);
    free(ref);

    /* (3) lockstep_grid_step on whole grids of bytes, several steps. */
    static const struct { size_t w, h; int periodic, masked; size_t steps; } GRIDS[] = {
        { 3, 3, 1, 0, 1 }, { 1, 1, 1, 0, 2 }, { 2, 7, 1, 0, 3 }, { 13, 11, 0, 0, 4 }, { 67, 5, 1, 1, 3 },
        { 130, 33, 0, 1, 2 }, { 64, 64, 1, 0, 5 }, { 64, 3, 0, 0, 1 }, { 129, 9, 1, 0, 2 },
    };
    for (size_t gi = 0; gi < sizeof GRIDS / sizeof GRIDS[0]; gi++) {
        const size_t W = GRIDS[gi].w, H = GRIDS[gi].h, cells = W * H, steps = GRIDS[gi].steps;
        uint8_t *frames = malloc((steps + 1) * C * cells), *mask = NULL;
        assert_non_null(frames);
        for (size_t i = 0; i < C * cells; i++) {
            const uint64_t v = test_rand(&seed);
            /* nonzero bytes other than 1 count as 1 */
            frames[i] = (uint8_t)((v & 1) ? ((v >> 8) % 5 == 0 ? 0xff : 1) : 0);
        }
        if (GRIDS[gi].masked) {
            mask = malloc(steps * cells);
            assert_non_null(mask);
            for (size_t i = 0; i < steps * cells; i++)
                mask[i] = (uint8_t)(test_rand(&seed) % 3 != 0 ? 1 + i % 7 : 0);
        }
        tpath("grid.in", path, sizeof path);
        write_all(path, frames, C * cells);
        char mask_name[16] = "-";
        if (mask != NULL) {
            snprintf(mask_name, sizeof mask_name, "grid.mask");
            tpath("grid.mask", path, sizeof path);
            write_all(path, mask, steps * cells);
        }
        ls_err err = { "" };
        assert_int_equal(logic_ca_hard_rollout(e->h, frames, W, H, steps, GRIDS[gi].periodic, mask, &err), LS_OK);
        char ws[16], hs[16], ps[4], ss[16];
        snprintf(ws, sizeof ws, "%zu", W);
        snprintf(hs, sizeof hs, "%zu", H);
        snprintf(ps, sizeof ps, "%d", GRIDS[gi].periodic);
        snprintf(ss, sizeof ss, "%zu", steps);
        SH_OK(drv, "grid", ws, hs, ps, ss, "grid.in", mask_name, "grid.out");
        tpath("grid.out", out_path, sizeof out_path);
        uint8_t *g = (uint8_t *)proc_read_file(out_path, &got_len, 1);
        assert_int_equal(got_len, C * cells);
        const uint8_t *want = frames + steps * C * cells;
        for (size_t i = 0; i < C * cells; i++)
            if (g[i] != want[i])
                fail_msg("%s: grid %zux%zu %s, %zu steps: cell %zu of channel %zu is %d, the engine says %d", name, W,
                         H, GRIDS[gi].periodic ? "periodic" : "zero borders", steps, i % cells, i / cells, g[i],
                         want[i]);
        free(g);
        free(frames);
        free(mask);
    }
}

static void test_export_gol(void **state)
{
    (void)state;
    check_ca_export("gol", "gol", NULL);
    check_ca_export("gol", "gol_split", "100");   /* the split form, parts of 100 gates */
}

static void test_export_checkerboard(void **state)
{
    (void)state;
    check_ca_export("cb", "cb", NULL);
}

static void test_export_checkerboard_async(void **state)
{
    (void)state;
    check_ca_export("cba", "cba", NULL);
}

/* The restore starts from the newest checkpoint: a run that ended done has
 * one of its last step, so nothing is recomputed, and the export's own line
 * says so. */
static void test_export_recomputes_from_checkpoint(void **state)
{
    (void)state;
    need_runs();
    proc_res r;
    LS(&r, "export", "gol", "--db", "D", "--circuit", "--netlist", "--threads", "1");
    expect_code(&r, 0);
    /* stdout is the netlist alone; the summary goes to stderr */
    assert_true(strncmp(r.out, "# lockstep netlist v1\n", 22) == 0);
    assert_non_null(strstr(r.err, "at step 3000 (recomputed 0 recorded steps from step 3000: identical)"));
    assert_int_equal(count_lines(r.err), 1);
    proc_res_free(&r);
}

/* ---- the classifier ------------------------------------------------------------------------ */

static void test_export_logic(void **state)
{
    (void)state;
    engine_run *e = engine("lt");
    const size_t active = export_and_build("lt", "lt", NULL, 0);
    assert_int_equal(export_and_build("lt", "lt_split", "300", 0), active);
    ls_dataset *data;
    ls_err err = { "" };
    assert_int_equal(teacher_make(&data, &err), LS_OK);
    const ls_split *s = &data->test;
    float *x = malloc(s->n * s->dim * sizeof(float));
    uint32_t *ids = malloc(s->n * sizeof(uint32_t));
    assert_true(x != NULL && ids != NULL);
    for (size_t i = 0; i < s->n; i++)
        ids[i] = (uint32_t)i;
    dataset_gather(NULL, s, ids, s->n, x, NULL);
    char path[PATH_MAX], out_path[PATH_MAX];
    tpath("x.bin", path, sizeof path);
    write_all(path, x, s->n * s->dim * sizeof(float));
    SH_OK("./lt_drv", "x.bin", "pred.bin");
    tpath("pred.bin", out_path, sizeof out_path);
    size_t n;
    uint8_t *pred = (uint8_t *)proc_read_file(out_path, &n, 1);
    assert_int_equal(n, s->n);
    size_t right = 0;
    for (size_t i = 0; i < s->n; i++)
        right += pred[i] == s->y[i];
    double engine_acc;
    assert_int_equal(trainer_evaluate(e->t, &engine_acc, &err), LS_OK);
    const double acc = (double)right / (double)s->n;
    if (acc != engine_acc || acc != e->test_acc)
        fail_msg("compiled classifier: accuracy %.17g (%zu/%zu); engine %.17g, recorded %.17g", acc, right, s->n,
                 engine_acc, e->test_acc);
    /* the split form predicts the same classes, sample by sample */
    SH_OK("./lt_split_drv", "x.bin", "pred_split.bin");
    tpath("pred_split.bin", out_path, sizeof out_path);
    size_t n2;
    uint8_t *pred2 = (uint8_t *)proc_read_file(out_path, &n2, 1);
    assert_int_equal(n2, n);
    assert_memory_equal(pred2, pred, n);
    free(pred2);
    free(pred);
    free(x);
    free(ids);
    dataset_destroy(data);

    /* the netlist declares as many gates as the C file */
    proc_res r;
    LS(&r, "export", "lt", "--db", "D", "--circuit", "--netlist", "-o", "lt.net");
    expect_code(&r, 0);
    proc_res_free(&r);
    tpath("lt.net", path, sizeof path);
    char *text = proc_read_file(path, NULL, 1);
    netlist nl;
    netlist_parse(text, 0, 1u << 20, &nl);
    assert_int_equal(nl.n_gates, active);
    assert_int_equal(nl.n_out, cfg_last_layer(&e->cfg));
    netlist_free(&nl);
    free(text);
}

/* ---- render -------------------------------------------------------------------------------- */

typedef struct {
    jmp_buf jb;
} png_err;

static void png_fail(png_structp png, png_const_charp msg)
{
    png_err *pe = png_get_error_ptr(png);
    fprintf(stderr, "libpng: %s\n", msg);
    longjmp(pe->jb, 1);
}

/* Decodes an 8-bit grey PNG into a malloc'ed [h][w] array; NULL when it is not one. */
static uint8_t *png_decode(const char *path, size_t *w, size_t *h)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    png_err pe;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &pe, png_fail, NULL);
    png_infop info = png_create_info_struct(png);
    uint8_t *volatile img = NULL;
    if (setjmp(pe.jb) != 0) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(f);
        free(img);
        return NULL;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    const size_t W = png_get_image_width(png, info), H = png_get_image_height(png, info);
    if (png_get_bit_depth(png, info) != 8 || png_get_color_type(png, info) != PNG_COLOR_TYPE_GRAY ||
        png_get_interlace_type(png, info) != PNG_INTERLACE_NONE)
        png_error(png, "not 8-bit grey, not interlaced");
    img = malloc(W * H);
    if (img == NULL)
        png_error(png, "out of memory");
    for (size_t y = 0; y < H; y++)
        png_read_row(png, img + y * W, NULL);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    *w = W;
    *h = H;
    return img;
}

/* Every pixel of `png` against the documented layout of frames[t][c][G][G]
 * (channel 0 drawn), cols columns, K pixels per cell. */
static void expect_png(const char *png, const uint8_t *frames, size_t C, size_t G, size_t nframes, size_t cols,
                       size_t K)
{
    char path[PATH_MAX];
    tpath(png, path, sizeof path);
    size_t W, H;
    uint8_t *img = png_decode(path, &W, &H);
    if (img == NULL)
        fail_msg("%s: not a readable 8-bit grey PNG", png);
    const size_t rows = (nframes + cols - 1) / cols, fs = G * K;
    assert_int_equal(W, cols * fs + cols - 1);
    assert_int_equal(H, rows * fs + rows - 1);
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < W; x++) {
            const size_t r = y / (fs + 1), q = x / (fs + 1), yy = y % (fs + 1), xx = x % (fs + 1);
            const size_t t = r * cols + q;
            int want = 128;
            if (yy < fs && xx < fs && t < nframes)
                want = frames[(t * C) * G * G + (yy / K) * G + xx / K] ? 0 : 255;
            if (img[y * W + x] != want)
                fail_msg("%s: pixel (%zu, %zu) is %d, want %d (frame %zu, cell %zu,%zu)", png, x, y, img[y * W + x],
                         want, t, xx / K, yy / K);
        }
    free(img);
}

static void test_render_gol(void **state)
{
    (void)state;
    engine_run *e = engine("gol");
    const size_t G = 32, T = 32, C = e->h->channels, cells = G * G;
    proc_res r;
    LS(&r, "render", "gol", "--db", "D", "-o", "gol.png");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "wrote gol.png"));
    proc_res_free(&r);
    /* The documented default: four gliders on a 32x32 grid, 32 steps, 6 columns, scale 3. */
    uint8_t *frames = calloc((T + 1) * C * cells, 1);
    assert_non_null(frames);
    static const int GX[5] = { 1, 2, 0, 1, 2 }, GY[5] = { 0, 1, 2, 2, 2 };
    const size_t o[2] = { G / 16, G / 16 + G / 2 };
    for (size_t gy = 0; gy < 2; gy++)
        for (size_t gx = 0; gx < 2; gx++)
            for (size_t k = 0; k < 5; k++)
                frames[(o[gy] + (size_t)GY[k]) * G + o[gx] + (size_t)GX[k]] = 1;
    ls_err err = { "" };
    assert_int_equal(logic_ca_hard_rollout(e->h, frames, G, G, T, (int)ls_config_int(&e->cfg, "periodic"), NULL, &err), LS_OK);
    expect_png("gol.png", frames, C, G, T + 1, 6, 3);
    /* The trained circuit is right on all 512 boards, so it is Life itself:
     * the frames are the gliders of B3/S23, as an independent check. */
    uint8_t *life = malloc(cells);
    assert_non_null(life);
    for (size_t t = 0; t < T; t++) {
        logic_ca_life_step(life, frames + t * C * cells, G, G, 1);
        assert_memory_equal(life, frames + (t + 1) * C * cells, cells);
    }
    free(life);

    /* --seed: random cells at the documented address; explicit layout. */
    LS(&r, "render", "gol", "--db", "D", "-o", "gol2.png", "--seed", "5", "--grid", "17", "--steps", "6", "--scale",
       "2", "--cols", "4");
    expect_code(&r, 0);
    proc_res_free(&r);
    const size_t G2 = 17, T2 = 6;
    uint8_t *f2 = calloc((T2 + 1) * C * G2 * G2, 1);
    assert_non_null(f2);
    for (size_t c = 0; c < C; c++)
        for (size_t n = 0; n < G2 * G2; n++)
            f2[c * G2 * G2 + n] = rng_uniformf(5, RNG_EVAL, 0, 0, n * C + c) < 0.5f;
    assert_int_equal(logic_ca_hard_rollout(e->h, f2, G2, G2, T2, (int)ls_config_int(&e->cfg, "periodic"), NULL, &err), LS_OK);
    expect_png("gol2.png", f2, C, G2, T2 + 1, 4, 2);
    free(f2);
    free(frames);
}

static void test_render_checkerboard(void **state)
{
    (void)state;
    engine_run *e = engine("cb");
    const size_t C = e->h->channels;
    ls_err err = { "" };
    proc_res r;
    /* Defaults on --grid 64: 80 steps from hard_acc_64's start state (address i = 16). */
    LS(&r, "render", "cb", "--db", "D", "-o", "cb64.png", "--grid", "64", "--scale", "1");
    expect_code(&r, 0);
    proc_res_free(&r);
    const size_t G = 64, T = LOGIC_CA_BIG_STEPS, cells = G * G;
    uint8_t *frames = malloc((T + 1) * C * cells);
    assert_non_null(frames);
    for (size_t c = 0; c < C; c++)
        for (size_t n = 0; n < cells; n++)
            frames[c * cells + n] =
                rng_uniformf(LOGIC_CA_EVAL_SEED, RNG_EVAL, LOGIC_CA_EVAL_GRIDS, 0, n * C + c) < 0.5f;
    assert_int_equal(logic_ca_hard_rollout(e->h, frames, G, G, T, (int)ls_config_int(&e->cfg, "periodic"), NULL, &err), LS_OK);
    expect_png("cb64.png", frames, C, G, T + 1, 9, 1);
    free(frames);

    /* The run's own grid and ca_steps by default; --seed 7, scale 6 (96 / 16). */
    LS(&r, "render", "cb", "--db", "D", "-o", "cb.png", "--seed", "7");
    expect_code(&r, 0);
    proc_res_free(&r);
    const size_t G1 = (size_t)ls_config_int(&e->cfg, "grid"), T1 = (size_t)ls_config_int(&e->cfg, "ca_steps"), cells1 = G1 * G1;
    frames = malloc((T1 + 1) * C * cells1);
    assert_non_null(frames);
    for (size_t c = 0; c < C; c++)
        for (size_t n = 0; n < cells1; n++)
            frames[c * cells1 + n] = rng_uniformf(7, RNG_EVAL, 0, 0, n * C + c) < 0.5f;
    assert_int_equal(logic_ca_hard_rollout(e->h, frames, G1, G1, T1, (int)ls_config_int(&e->cfg, "periodic"), NULL, &err), LS_OK);
    size_t cols = 1;
    while (cols * cols < T1 + 1)
        cols++;
    expect_png("cb.png", frames, C, G1, T1 + 1, cols, (96 + G1 - 1) / G1);
    free(frames);
}

static void test_render_async(void **state)
{
    (void)state;
    engine_run *e = engine("cba");
    const size_t C = e->h->channels, G = (size_t)ls_config_int(&e->cfg, "grid"), T = 9, cells = G * G;
    proc_res r;
    LS(&r, "render", "cba", "--db", "D", "-o", "cba.png", "--steps", "9", "--seed", "3", "--scale", "2");
    expect_code(&r, 0);
    proc_res_free(&r);
    uint8_t *frames = malloc((T + 1) * C * cells), *masks = malloc(T * cells);
    assert_true(frames != NULL && masks != NULL);
    for (size_t c = 0; c < C; c++)
        for (size_t n = 0; n < cells; n++)
            frames[c * cells + n] = rng_uniformf(3, RNG_EVAL, 0, 0, n * C + c) < 0.5f;
    for (size_t u = 0; u < T; u++)
        for (size_t n = 0; n < cells; n++)
            masks[u * cells + n] = rng_uniformf(3, RNG_EVAL, 0, 1 + u, n) < ls_config_float(&e->cfg, "fire_rate");
    ls_err err = { "" };
    assert_int_equal(logic_ca_hard_rollout(e->h, frames, G, G, T, (int)ls_config_int(&e->cfg, "periodic"), masks, &err), LS_OK);
    expect_png("cba.png", frames, C, G, T + 1, 4, 2);
    free(frames);
    free(masks);
}

/* ---- bad input and a tampered record ------------------------------------------------------- */

typedef struct {
    const char *args[16];
    const char *says;      /* a word the one-line message must contain */
} bad_case;

static const bad_case BAD[] = {
    { { "export", "nosuch", "--db", "D", "--circuit", NULL }, "nosuch" },
    { { "export", "mlp", "--db", "D", "--circuit", "-o", "m.c", NULL }, "mlp" },
    { { "export", "gol", "--db", "D", NULL }, "--circuit" },
    { { "export", "gol", "--db", "D", "--circuit", "-o", "/nonexistent-dir/x.c", NULL }, "nonexistent-dir" },
    { { "export", "gol", "--db", "D", "--circuit", "-o", ".", NULL }, "directory" },
    { { "export", "gol", "--db", "nodb", "--circuit", NULL }, "nodb" },
    { { "export", "gol", "cb", "--db", "D", "--circuit", NULL }, "cb" },
    { { "export", "gol", "--db", "D", "--circuit", "-o", NULL }, "-o" },
    { { "export", "gol", "--db", "D", "--circuit", "--bogus", NULL }, "--bogus" },
    { { "render", "lt", "--db", "D", "-o", "x.png", NULL }, "logic" },
    { { "render", "mlp", "--db", "D", "-o", "x.png", NULL }, "mlp" },
    { { "render", "gol", "--db", "D", NULL }, "-o" },
    { { "render", "gol", "--db", "D", "-o", "x.png", "--grid", "0", NULL }, "--grid" },
    { { "render", "gol", "--db", "D", "-o", "x.png", "--grid", "abc", NULL }, "--grid" },
    { { "render", "gol", "--db", "D", "-o", "x.png", "--scale", "0", NULL }, "--scale" },
    { { "render", "gol", "--db", "D", "-o", "x.png", "--steps", "-1", NULL }, "--steps" },
    { { "render", "gol", "--db", "D", "-o", "x.png", "--steps", "3", "--cols", "5", NULL }, "--cols" },
    { { "render", "gol", "--db", "D", "-o", "x.png", "--grid", "1024", "--steps", "10000", NULL }, "pixels" },
    { { "render", "gol", "--db", "D", "-o", "/nonexistent-dir/x.png", NULL }, "nonexistent-dir" },
    { { "render", "nosuch", "--db", "D", "-o", "x.png", NULL }, "nosuch" },
};

static void test_bad_input(void **state)
{
    (void)state;
    need_runs();
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        proc_res r;
        run_ls(&r, BAD[i].args);
        expect_code(&r, 2);
        if (count_lines(r.err) != 1 || strstr(r.err, BAD[i].says) == NULL)
            fail_msg("%s: want one line naming '%s' on stderr, got:\n%s", r.cmd, BAD[i].says, r.err);
        assert_int_equal(r.out[0], '\0');
        proc_res_free(&r);
    }
    char path[PATH_MAX];
    static const char *const NOT_WRITTEN[] = { "m.c", "x.png", "nodb" };
    for (size_t i = 0; i < 3; i++) {
        tpath(NOT_WRITTEN[i], path, sizeof path);
        assert_false(file_exists(path));
    }
    assert_int_equal(temp_files_left(), 0);
    static const char *const HELP[] = { "export", "render" };
    for (size_t i = 0; i < 2; i++) {
        proc_res r;
        LS(&r, HELP[i], "--help");
        expect_code(&r, 0);
        assert_non_null(strstr(r.out, HELP[i]));
        proc_res_free(&r);
    }
}

/* -o onto a symbolic link writes through it (a rename would replace the
 * link; for a device such as /dev/null, the device); onto a regular file it
 * replaces the file. */
static void test_output_paths(void **state)
{
    (void)state;
    need_runs();
    char link[PATH_MAX], target[PATH_MAX];
    tpath("link.net", link, sizeof link);
    tpath("target.net", target, sizeof target);
    write_all(target, "old", 3);
    assert_int_equal(symlink("target.net", link), 0);
    LS_OK("export", "cb", "--db", "D", "--circuit", "--netlist", "-o", "link.net");
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    char *text = proc_read_file(target, NULL, 1);
    assert_true(strncmp(text, "# lockstep netlist v1\n", 22) == 0);
    free(text);
    LS_OK("export", "cb", "--db", "D", "--circuit", "-o", "target.net");
    text = proc_read_file(target, NULL, 1);
    assert_true(strncmp(text, "/* lockstep circuit", 19) == 0);
    free(text);
    assert_int_equal(temp_files_left(), 0);
}

static void sql_exec(const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(g_db, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* A changed loss after a checkpoint: the recomputation stops at that step,
 * exit 1, and no file is written; a changed parameter hash at a
 * checkpoint's own step is caught there. The run's final checkpoint (step
 * 50) is disowned first, by changing its row: a restore trusts the newest
 * checkpoint that matches its row and recomputes only what follows it. */
static void test_tampered_record(void **state)
{
    (void)state;
    need_runs();
    LS_OK("train", "--task", "gol", "--steps", "50", "--checkpoint-every", "20", "--name", "tamper", "--db", "D",
          "--threads", "2", "--no-progress");
    LS_OK("export", "tamper", "--db", "D", "--circuit", "-o", "t1.c");
    sql_exec("UPDATE steps SET loss_bits = (loss_bits | 1) - (loss_bits & 1) WHERE step = 45 AND run = "
             "(SELECT id FROM runs WHERE name = 'tamper')");
    sql_exec("UPDATE steps SET param_hash = (param_hash | 1) - (param_hash & 1) WHERE step = 50 AND run = "
             "(SELECT id FROM runs WHERE name = 'tamper')");
    proc_res r;
    LS(&r, "export", "tamper", "--db", "D", "--circuit", "-o", "t2.c");
    expect_code(&r, 1);
    if (strstr(r.err, "step 45:") == NULL || count_lines(r.err) != 1)
        fail_msg("want one line naming step 45:\n%s", r.err);
    proc_res_free(&r);
    LS(&r, "render", "tamper", "--db", "D", "-o", "t2.png");
    expect_code(&r, 1);
    assert_non_null(strstr(r.err, "step 45:"));
    proc_res_free(&r);
    char path[PATH_MAX];
    tpath("t2.c", path, sizeof path);
    assert_false(file_exists(path));
    tpath("t2.png", path, sizeof path);
    assert_false(file_exists(path));
    assert_int_equal(temp_files_left(), 0);
    sql_exec("UPDATE steps SET loss_bits = (loss_bits | 1) - (loss_bits & 1) WHERE step = 45 AND run = "
             "(SELECT id FROM runs WHERE name = 'tamper')");
    sql_exec("UPDATE steps SET param_hash = (param_hash | 1) - (param_hash & 1) WHERE step = 40 AND run = "
             "(SELECT id FROM runs WHERE name = 'tamper')");
    LS(&r, "export", "tamper", "--db", "D", "--circuit", "--netlist");
    expect_code(&r, 1);
    if (strstr(r.err, "step 40:") == NULL)
        fail_msg("want the checkpoint's step 40 named:\n%s", r.err);
    assert_int_equal(r.out[0], '\0');
    proc_res_free(&r);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/lockstep-export-XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    tpath("D", g_db, sizeof g_db);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_RUNS; i++) {
        logic_ca_hard_destroy(g_eng[i].h);
        trainer_destroy(g_eng[i].t);
    }
    proc_rm_tree(g_dir, 0);
    return 0;
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_export", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_gol),
        cmocka_unit_test(test_export_checkerboard),
        cmocka_unit_test(test_export_checkerboard_async),
        cmocka_unit_test(test_export_recomputes_from_checkpoint),
        cmocka_unit_test(test_export_logic),
        cmocka_unit_test(test_render_gol),
        cmocka_unit_test(test_render_checkerboard),
        cmocka_unit_test(test_render_async),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_output_paths),
        cmocka_unit_test(test_tampered_record),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown) ? 1 : 0;
}
