/* cmd_render.c — `lockstep render RUN -o FILE.png`: a picture of a logic-ca
 * run's hard circuit at work, every frame of a rollout side by side, so a
 * person can watch the pattern grow.
 *
 * The run is restored to its last recorded step (run_restore), its hard
 * circuit built (logic_ca_hard_create) and rolled out with
 * logic_ca_hard_step from a start state, on the run's borders (periodic or
 * zero). Start states (everything addressed, so a render is reproducible):
 *   gol without --seed: channel 0 holds four gliders heading right and down,
 *     top-left corners at (o, o), (o + G/2, o), (o, o + G/2), (o + G/2, o + G/2)
 *     with o = G/16 (those that fit); the glider's cells, relative to its
 *     corner, are (1,0) (2,1) (0,2) (1,2) (2,2) as (x, y).
 *   otherwise (checkerboard, or gol with --seed S): channel c of cell n
 *     (n = y·G + x) is 1 when rng_uniformf(S, RNG_EVAL, i, 0, n·C + c) < 0.5,
 *     S = --seed (default LOGIC_CA_EVAL_SEED), i = LOGIC_CA_EVAL_GRIDS when
 *     the side is LOGIC_CA_BIG_GRID and not the run's own grid, else 0 — so
 *     the defaults draw exactly the start states the hard_acc (grid 0) and
 *     hard_acc_64 figures of the checkerboard are measured on.
 *   asynchronous runs: cell n fires at CA step u when
 *     rng_uniformf(S, RNG_EVAL, i, 1 + u, n) < fire_rate (the evaluation's masks).
 * Defaults: gol: a 32×32 grid, 32 steps; other tasks: the run's grid and
 * ca_steps, or LOGIC_CA_BIG_STEPS steps when --grid is LOGIC_CA_BIG_GRID.
 *
 * The image (8-bit grey PNG): frames 0 .. T (frame 0 = the start state), F =
 * T + 1 of them, laid out in `cols` columns (default ceil(sqrt(F))): frame t
 * at row t / cols, column t % cols. A frame is G·K × G·K pixels (K = --scale),
 * cell (x, y) the K×K block at (x·K, y·K) of its frame; channel 0 only: 1 is
 * black (0), 0 is white (255). Frames are separated by 1-pixel grey (128)
 * lines, not framed at the outer edge; empty slots of the last row are grey.
 * Frame (row r, column q) starts at pixel (q·(G·K + 1), r·(G·K + 1)).
 */
#include "tools/tools.h"
#include "tools/escape.h"
#include "tools/commands.h"

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "engine/models/logic_ca/logic_ca.h"
#include "engine/num/rng.h"

#define RENDER_MAX_SIDE 1024
#define RENDER_MAX_STEPS 10000
#define RENDER_MAX_SCALE 64
#define RENDER_MAX_PIXELS (UINT64_C(1) << 28)   /* 256 Mpixel */
#define RENDER_MAX_DIM 65535                    /* pixels per side */

enum { PX_ON = 0, PX_OFF = 255, PX_SEP = 128 };

typedef struct {
    size_t side, steps, scale, cols, rows, frames;
    size_t width, height;     /* pixels */
    int periodic, gliders;
    uint64_t seed;
    uint64_t addr;            /* i of the start and mask addresses */
    uint8_t *frame0;          /* [frames][side²]: channel 0 of every frame */
} render_plan;

static ls_status parse_size(const char *flag, const char *v, uint64_t lo, uint64_t hi, uint64_t *out, ls_err *err)
{
    if (v == NULL || *v == '\0')
        return ls_fail(err, LS_EINVAL, "%s: needs a value", flag);
    return flags_u64(flag, NULL, v, strlen(v), lo, hi, out, err);
}

typedef struct {
    const char *out;
    uint64_t grid, steps, seed, scale, cols;   /* 0 (seed: has_seed 0): not given */
    int has_seed;
} render_flags;

/* render's own flags; the numbers are checked against the run's config later. */
static ls_status render_flag(void *ctx, const flag_spec *f, const char *v, ls_err *err)
{
    static const struct { const char *name; uint64_t lo, hi; size_t off; } NUM[] = {
        { "--grid", 1, RENDER_MAX_SIDE, offsetof(render_flags, grid) },
        { "--steps", 0, RENDER_MAX_STEPS, offsetof(render_flags, steps) },
        { "--seed", 0, UINT64_MAX, offsetof(render_flags, seed) },
        { "--scale", 1, RENDER_MAX_SCALE, offsetof(render_flags, scale) },
        { "--cols", 1, RENDER_MAX_STEPS + 1, offsetof(render_flags, cols) },
    };
    render_flags *rf = ctx;
    if (strcmp(f->name, "-o") == 0) {
        rf->out = v;
        return LS_OK;
    }
    for (size_t k = 0; k < sizeof NUM / sizeof NUM[0]; k++) {
        if (strcmp(f->name, NUM[k].name) != 0)
            continue;
        uint64_t x = 0;
        ls_status st = parse_size(NUM[k].name, v, NUM[k].lo, NUM[k].hi, &x, err);
        if (st != LS_OK)
            return st;
        *(uint64_t *)(void *)((char *)rf + NUM[k].off) = x;
        if (strcmp(NUM[k].name, "--seed") == 0)
            rf->has_seed = 1;
    }
    return LS_OK;
}

/* Sizes, defaults and limits (header comment). */
static ls_status render_plan_make(render_plan *p, const render_flags *rf, const ls_config *cfg, ls_err *err)
{
    memset(p, 0, sizeof *p);
    const int gol = strcmp(cfg->task, "gol") == 0;
    p->side = rf->grid ? rf->grid : gol ? 32 : (size_t)ls_config_int(cfg, "grid");
    const int big = p->side == LOGIC_CA_BIG_GRID && p->side != (size_t)ls_config_int(cfg, "grid");
    p->steps = rf->steps != UINT64_MAX ? rf->steps : gol ? 32 : big ? LOGIC_CA_BIG_STEPS : (size_t)ls_config_int(cfg, "ca_steps");
    p->periodic = (int)ls_config_int(cfg, "periodic");
    p->gliders = gol && !rf->has_seed;
    p->seed = rf->has_seed ? rf->seed : LOGIC_CA_EVAL_SEED;
    p->addr = !gol && big ? LOGIC_CA_EVAL_GRIDS : 0;
    p->frames = p->steps + 1;
    p->scale = rf->scale ? rf->scale : (96 + p->side - 1) / p->side;
    if (p->scale > 8 && !rf->scale)
        p->scale = 8;
    if (rf->cols > p->frames)
        return ls_fail(err, LS_EINVAL, "--cols: %llu is more than the %zu frames", (unsigned long long)rf->cols,
                       p->frames);
    p->cols = rf->cols;
    if (p->cols == 0)
        while (p->cols * p->cols < p->frames)
            p->cols++;
    p->rows = (p->frames + p->cols - 1) / p->cols;
    const uint64_t fs = (uint64_t)p->side * p->scale;
    const uint64_t w = p->cols * fs + (p->cols - 1), h = p->rows * fs + (p->rows - 1);
    if (w > RENDER_MAX_DIM || h > RENDER_MAX_DIM || w * h > RENDER_MAX_PIXELS)
        return ls_fail(err, LS_EINVAL, "the image would be %llux%llu pixels (limits: %d per side, %llu in all); "
                       "lower --steps, --grid or --scale", (unsigned long long)w, (unsigned long long)h,
                       RENDER_MAX_DIM, (unsigned long long)RENDER_MAX_PIXELS);
    p->width = (size_t)w;
    p->height = (size_t)h;
    return LS_OK;
}

/* The rollout: channel 0 of every frame into p->frame0. */
static ls_status render_rollout(render_plan *p, const logic_ca_hard *h, const ls_config *cfg, ls_err *err)
{
    const size_t G = p->side, cells = G * G, C = h->channels;
    p->frame0 = malloc(p->frames * cells);
    uint8_t *mem = malloc(2 * C * cells + cells);
    if (p->frame0 == NULL || mem == NULL) {
        free(mem);
        return ls_fail(err, LS_ENOMEM, "out of memory for %zu frames of %zux%zu", p->frames, G, G);
    }
    uint8_t *a = mem, *b = mem + C * cells, *mask = b + C * cells;
    memset(a, 0, C * cells);
    if (p->gliders) {
        static const uint8_t GX[5] = { 1, 2, 0, 1, 2 }, GY[5] = { 0, 1, 2, 2, 2 };
        const size_t o[2] = { G / 16, G / 16 + G / 2 };
        for (size_t gy = 0; gy < 2; gy++)
            for (size_t gx = 0; gx < 2; gx++)
                if (o[gx] + 3 <= G && o[gy] + 3 <= G)
                    for (size_t k = 0; k < 5; k++)
                        a[(o[gy] + GY[k]) * G + o[gx] + GX[k]] = 1;
    } else {
        for (size_t c = 0; c < C; c++)
            for (size_t n = 0; n < cells; n++)
                a[c * cells + n] = rng_uniformf(p->seed, RNG_EVAL, p->addr, 0, n * C + c) < 0.5f;
    }
    ls_status st = LS_OK;
    memcpy(p->frame0, a, cells);
    for (size_t u = 0; u < p->steps && st == LS_OK; u++) {
        if (ls_config_int(cfg, "async"))
            for (size_t n = 0; n < cells; n++)
                mask[n] = rng_uniformf(p->seed, RNG_EVAL, p->addr, 1 + u, n) < ls_config_float(cfg, "fire_rate");
        st = logic_ca_hard_step(h, b, a, G, G, p->periodic, ls_config_int(cfg, "async") ? mask : NULL, err);
        memcpy(p->frame0 + (u + 1) * cells, b, cells);
        uint8_t *t = a;
        a = b;
        b = t;
    }
    free(mem);
    return st;
}

/* Grey value of pixel row y into row[width]. */
static void render_row(const render_plan *p, size_t y, uint8_t *row)
{
    const size_t fs = p->side * p->scale, r = y / (fs + 1), yy = y % (fs + 1);
    memset(row, PX_SEP, p->width);
    if (yy == fs)
        return;
    const size_t cy = yy / p->scale;
    for (size_t q = 0; q < p->cols; q++) {
        const size_t t = r * p->cols + q;
        if (t >= p->frames)
            break;
        const uint8_t *src = p->frame0 + t * p->side * p->side + cy * p->side;
        uint8_t *dst = row + q * (fs + 1);
        for (size_t x = 0; x < p->side; x++)
            memset(dst + x * p->scale, src[x] ? PX_ON : PX_OFF, p->scale);
    }
}

typedef struct {
    jmp_buf jb;
    char msg[200];
} png_ctx;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_ctx *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    longjmp(c->jb, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* Everything after setjmp lives here, so no local of render_png changes
 * between setjmp and a longjmp. */
static void png_body(png_structp png, png_infop info, const render_plan *p, uint8_t *row, FILE *f, char *desc)
{
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)p->width, (png_uint_32)p->height, 8, PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_text text[2];
    memset(text, 0, sizeof text);
    text[0].compression = PNG_TEXT_COMPRESSION_NONE;
    text[0].key = (png_charp) "Software";
    text[0].text = (png_charp)LS_ENGINE_VERSION;
    text[1].compression = PNG_TEXT_COMPRESSION_NONE;
    text[1].key = (png_charp) "Description";
    text[1].text = desc;
    png_set_text(png, info, text, 2);
    png_write_info(png, info);
    for (size_t y = 0; y < p->height; y++) {
        render_row(p, y, row);
        png_write_row(png, row);
    }
    png_write_end(png, info);
}

static ls_status render_png(const render_plan *p, FILE *f, char *desc, ls_err *err)
{
    png_ctx c;
    c.msg[0] = '\0';
    uint8_t *row = malloc(p->width);
    png_structp png = row != NULL ? png_create_write_struct(PNG_LIBPNG_VER_STRING, &c, png_on_error, png_on_warning)
                                  : NULL;
    png_infop info = png != NULL ? png_create_info_struct(png) : NULL;
    if (info == NULL) {
        png_destroy_write_struct(png != NULL ? &png : NULL, NULL);
        free(row);
        return ls_fail(err, LS_ENOMEM, "out of memory");
    }
    if (setjmp(c.jb) != 0) {
        png_destroy_write_struct(&png, &info);
        free(row);
        return ls_fail(err, LS_EIO, "PNG: %s", c.msg);
    }
    png_body(png, info, p, row, f, desc);
    png_destroy_write_struct(&png, &info);
    free(row);
    return LS_OK;
}

ls_status render_default_png(trainer *t, const char *desc, FILE *f, size_t *width, size_t *height, ls_err *err)
{
    render_flags rf;
    memset(&rf, 0, sizeof rf);
    rf.steps = UINT64_MAX;   /* render's defaults, as without flags */
    render_plan p;
    logic_ca_hard *h = NULL;
    char d[512];
    snprintf(d, sizeof d, "%s", desc != NULL ? desc : "");
    ls_status st = render_plan_make(&p, &rf, trainer_config(t), err);
    if (st == LS_OK)
        st = logic_ca_hard_create(&h, trainer_model(t), trainer_params(t), err);
    if (st == LS_OK)
        st = render_rollout(&p, h, trainer_config(t), err);
    if (st == LS_OK)
        st = render_png(&p, f, d, err);
    if (st == LS_OK) {
        *width = p.width;
        *height = p.height;
    }
    free(p.frame0);
    logic_ca_hard_destroy(h);
    return st;
}

int cmd_render(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    render_flags rf;
    memset(&rf, 0, sizeof rf);
    rf.steps = UINT64_MAX;   /* "not given": 0 steps is a valid request */
    ls_status st = cli_parse_cmd("render", argc, argv, CLI_DB | CLI_THREADS | CLI_PROGRESS, 1, render_flag, &rf, &a,
                                 &err);
    if (st == LS_OK && a.help) {
        command_usage(command_find("render"), stdout);
        return EXIT_OK;
    }
    if (st == LS_OK && a.n_positional != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st == LS_OK && rf.out == NULL)
        st = ls_fail(&err, LS_EINVAL, "needs -o FILE.png");
    if (st != LS_OK) {
        cli_error("render", &err, st);
        return EXIT_USAGE;
    }
    runlog *db;
    runlog_run run;
    int code = cli_open_run("render", a.db, a.positional[0], &db, &run);
    if (code != EXIT_OK)
        return code;
    render_plan p;
    memset(&p, 0, sizeof p);
    ls_config cfg;
    /* The output is checked against the record first of all: a path that
     * would replace the database is refused whatever else is wrong. */
    st = cli_guard_output("-o", rf.out, a.db, db, &err);
    if (st == LS_OK && strcmp(run.model, "logic-ca") != 0)
        st = ls_fail(&err, LS_EINVAL, "run %lld '%s' (model %s) is not a logic-ca run, which render draws",
                     (long long)run.id, ESC_NAME(run.name), run.model);
    /* The plan is checked against the recorded config before the (longer) restore. */
    if (st == LS_OK)
        st = config_parse_text(&cfg, run.config_text, "the run's config", &err);
    if (st == LS_OK)
        st = render_plan_make(&p, &rf, &cfg, &err);
    cli_out out;
    memset(&out, 0, sizeof out);
    if (st == LS_OK)
        st = cli_out_open(&out, "-o", rf.out, a.db, db, &err);
    if (st != LS_OK) {
        cli_error("render", &err, st);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    run_install_signals();
    ls_session *session = NULL;
    trainer *t = NULL;
    ls_session_state info;
    logic_ca_hard *h = NULL;
    st = run_restore(a.db, run.id, a.threads[0], a.progress, &session, &info, &err);
    t = session != NULL ? session_trainer(session) : NULL;
    int bad_input = st != LS_OK && st != LS_EMISMATCH;
    if (st == LS_OK)
        st = logic_ca_hard_create(&h, trainer_model(t), trainer_params(t), &err);
    if (st == LS_OK)
        st = render_rollout(&p, h, trainer_config(t), &err);
    if (st == LS_OK) {
        char name[160], desc[512];
        cli_comment_safe(name, sizeof name, run.name);
        snprintf(desc, sizeof desc, "run %lld '%s' (%s, task %s) at step %lld, trajectory hash %016llx; hard "
                 "rollout of %zu steps on a %zux%zu %s grid from %s (seed %llu); %zu columns, %zu px per cell",
                 (long long)run.id, name, run.model, run.task, (long long)info.step,
                 (unsigned long long)info.traj_hash, p.steps, p.side, p.side, p.periodic ? "periodic" : "zero-bordered",
                 p.gliders ? "gliders" : "random cells", (unsigned long long)p.seed, p.cols, p.scale);
        st = render_png(&p, out.f, desc, &err);
        if (st == LS_OK)
            st = cli_out_commit(&out, &err);
        bad_input = st != LS_OK;
    }
    if (st != LS_OK) {
        cli_out_abort(&out);
        cli_error("render", &err, st);
        code = bad_input ? EXIT_USAGE : cli_exit_code_input(st, &err);
    } else {
        printf("render: run %lld '%s' at step %lld: %zu frames of %zux%zu (%s, %zu steps) in %zu columns, "
               "%zu px per cell, %zux%zu pixels, wrote %s\n", (long long)run.id, ESC_NAME(run.name), (long long)info.step,
               p.frames, p.side, p.side, p.gliders ? "gliders" : "random start", p.steps, p.cols, p.scale, p.width,
               p.height, rf.out);
    }
    free(p.frame0);
    logic_ca_hard_destroy(h);
    ls_session_close(session, LS_OK, NULL);
    runlog_run_free(&run);
    runlog_close(db);
    return code;
}
