/* cmd_export.c — `lockstep export RUN --circuit`: the hard circuit of a
 * trained logic or logic-ca run, as one self-contained C file that evaluates
 * 64 cells (logic-ca) or 64 samples (logic) per 64-bit word, or as a text
 * netlist. Also the helpers export and render share: finding a run and
 * writing an output file through a temporary file.
 *
 * The run is first restored to its last recorded step (run_restore: newest
 * checkpoint, then every later recorded step recomputed and checked), so what
 * is exported is provably the recorded run's circuit. The circuit is then
 * unrolled into one flat list of gates in evaluation order (below), dead
 * gates are dropped, and the flat circuit is evaluated here against the
 * engine's own hard evaluation before anything is written: a disagreement is
 * a lockstep bug and nothing is exported.
 *
 * The flat circuit. Nodes 0 .. n_in−1 are the inputs, node n_in + i is gate
 * i ("g<i>" in the C file and the netlist); a gate reads only inputs and
 * earlier gates.
 *   logic-ca: inputs in[c][p] = node c·9 + p, channel c at position p of the
 *     cell's 3×3 patch (row-major, 4 = the cell itself). With P the gates of
 *     the kernel layers (engine order, logic_ca.h), gate c·P + g is kernel
 *     gate g applied to channel c, and gate C·P + j is update gate P + j. The
 *     update network's own-state input c is the patch centre in[c][4]. The
 *     outputs out[c] are the last update layer's gates.
 *   logic: inputs in[i], i = feature·bits + t (bit t of a feature v is
 *     v > (t+1)/(bits+1) in float); gate i is the engine's gate i (layers in
 *     order); the outputs out[i] are the last layer's gates, class i / G.
 * A gate is active when an output reads it, directly or through active
 * gates, through an operand its op actually depends on (op A ignores B, ...).
 * The C file and the netlist list exactly the active gates.
 *
 * C forms. Up to --split N active gates (default 4096) the gate function is
 * one straight-line function of locals, g<N> = expression: values live in
 * registers, the fastest code. Beyond, compilers take minutes on one such
 * function, so the gates go into external functions of EXPORT_PART_GATES
 * statements on a value array whose slots are reused once dead (plan_slots,
 * which proves its own plan before anything is written).
 *
 * `lockstep export RUN --weights FILE` writes the restored run's parameters
 * instead, as the model names them (ls_model_info.tensors; a model without
 * names gives one tensor "params" of shape [n_params]):
 *   FILE.safetensors: an 8-byte little-endian header length N, N bytes of
 *     JSON {"W1":{"dtype":"F32","shape":[784,256],"data_offsets":[0,802816]},
 *     ..., "__metadata__":{"lockstep_run":"3","step":"2345","config_hash":
 *     "<16 hex>","param_hash":"<16 hex>","format":"pt"}} padded with spaces so
 *     the data start at a multiple of 8 bytes (as the reference
 *     implementation pads), then the tensors' binary32 values, little-endian,
 *     in θ order (so the data section is θ itself);
 *   FILE.npy: θ as one flat float32 array, format 1.0, '<f4', shape
 *     (n_params,), written as numpy.save writes it.
 * Either way the values are θ's bits unchanged: their XXH3 (param_hash) is
 * the record's, which the summary line prints.
 */
#include "tools/tools.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/models/logic/logic.h"
#include "engine/models/logic_ca/logic_ca.h"
#include "engine/num/rng.h"

/* ---- shared helpers: the run, the output file ------------------------------------------------- */

int cli_open_run(const char *cmd, const char *db_path, const char *id_or_name, runlog **db, runlog_run *run)
{
    ls_err err = { "" };
    *db = NULL;
    /* Readers never create a database: a mistyped path is an error. */
    if (access(db_path, F_OK) != 0) {
        fprintf(stderr, "lockstep %s: %s: no such database\n", cmd, db_path);
        return EXIT_USAGE;
    }
    ls_status st = cli_open_db(db_path, db, &err);
    int64_t id = -1;
    if (st == LS_OK)
        st = runlog_find(*db, id_or_name, &id, &err);
    if (st == LS_OK)
        st = runlog_get_run(*db, id, run, &err);
    if (st != LS_OK) {
        cli_error(cmd, &err, st);
        runlog_close(*db);
        *db = NULL;
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

ls_status cli_out_open(cli_out *o, const char *label, const char *path, const char *db_path, runlog *db,
                       ls_err *err)
{
    memset(o, 0, sizeof *o);
    if (path == NULL || strcmp(path, "-") == 0) {
        o->f = stdout;
        o->to_stdout = 1;
        return LS_OK;
    }
    ls_status st = cli_guard_output(label, path, db_path, db, err);
    if (st != LS_OK)
        return st;
    struct stat sb, lsb;
    const int exists = stat(path, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode))
        return ls_fail(err, LS_EIO, "%s %s: is a directory", label, path);
    /* A device or a pipe is written in place: renaming a file over it would
     * replace it (think of /dev/null). So is a dangling symbolic link: the
     * write creates the file it names, as the user asked. */
    const int link = lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode);
    if ((exists && !S_ISREG(sb.st_mode)) || (link && !exists)) {
        if ((o->f = fopen(path, "wb")) == NULL)
            return ls_fail(err, LS_EIO, "%s %s: cannot write: %s", label, path, strerror(errno));
        o->in_place = 1;
        snprintf(o->path, sizeof o->path, "%s", path);
        return LS_OK;
    }
    /* A symbolic link keeps pointing where it did: the temporary file and
     * the rename go to the file it points to, so a failed command never
     * leaves a truncated file behind the link either. */
    const char *target = path;
    char *resolved = NULL;
    if (link) {
        if ((resolved = realpath(path, NULL)) == NULL)
            return ls_fail(err, LS_EIO, "%s %s: cannot resolve the symbolic link: %s", label, path, strerror(errno));
        target = resolved;
    }
    int w = snprintf(o->path, sizeof o->path, "%s", target);
    int wt = snprintf(o->tmp, sizeof o->tmp, "%s.tmp-XXXXXX", target);
    free(resolved);
    if (w < 0 || (size_t)w >= sizeof o->path || wt < 0 || (size_t)wt >= sizeof o->tmp)
        return ls_fail(err, LS_EINVAL, "%s %.60s...: the path is too long", label, path);
    int fd = mkstemp(o->tmp);
    if (fd < 0)
        return ls_fail(err, LS_EIO, "%s %s: cannot write: %s", label, path, strerror(errno));
    /* mkstemp makes the file 0600; give it what a plain fopen would. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || (o->f = fdopen(fd, "wb")) == NULL) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        return ls_fail(err, LS_EIO, "%s %s: cannot write: %s", label, path, strerror(e));
    }
    return LS_OK;
}

ls_status cli_out_commit(cli_out *o, ls_err *err)
{
    if (o->f == NULL)
        return LS_OK;
    if (o->to_stdout) {
        o->f = NULL;
        if (fflush(stdout) != 0 || ferror(stdout))
            return ls_fail(err, LS_EIO, "stdout: write failed: %s", strerror(errno));
        return LS_OK;
    }
    int bad = fflush(o->f) != 0 || ferror(o->f);
    int e = errno;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (o->in_place)
        return bad ? ls_fail(err, LS_EIO, "%s: write failed: %s", o->path, strerror(e)) : LS_OK;
    if (!bad && rename(o->tmp, o->path) == 0)
        return LS_OK;
    if (!bad)
        e = errno;
    unlink(o->tmp);
    return ls_fail(err, LS_EIO, "%s: write failed: %s", o->path, strerror(e));
}

void cli_out_abort(cli_out *o)
{
    if (o->f == NULL || o->to_stdout) {
        o->f = NULL;
        return;
    }
    fclose(o->f);
    o->f = NULL;
    if (!o->in_place)
        unlink(o->tmp);
}

/* Printable ASCII for comments: no control characters, no comment ends. */
void cli_comment_safe(char *dst, size_t cap, const char *src)
{
    size_t j = 0;
    for (size_t i = 0; src[i] != '\0' && j + 1 < cap; i++) {
        char ch = src[i];
        if (ch < 32 || ch > 126)
            ch = '?';
        if (ch == '/' && j > 0 && dst[j - 1] == '*')
            ch = '|';
        dst[j++] = ch;
    }
    dst[j] = '\0';
}

/* ---- NumPy and raw float output ------------------------------------------------------------ */

void cli_write_f32le(FILE *f, const float *x, size_t n)
{
    unsigned char buf[4096];
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        for (int k = 0; k < 4; k++)
            buf[at++] = (unsigned char)(u >> (8 * k));
        if (at == sizeof buf) {
            fwrite(buf, 1, at, f);
            at = 0;
        }
    }
    if (at > 0)
        fwrite(buf, 1, at, f);
}

void cli_npy_header(FILE *f, const char *descr, const size_t *shape, size_t ndim)
{
    char dict[512], dims[400];
    size_t at = 0;
    dims[0] = '\0';
    for (size_t i = 0; i < ndim && at < sizeof dims; i++) {
        int w = snprintf(dims + at, sizeof dims - at, "%s%zu", i ? ", " : "", shape[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s%s), }", descr, dims,
                       ndim == 1 ? "," : "");
    const size_t hl = len > 0 ? (size_t)len : 0;
    /* numpy.lib.format: spaces, then '\n', so that the magic (6), the
     * version (2), the length (2) and the header end on a multiple of 64;
     * like numpy, a full 64 spaces when it would end there already. */
    const size_t pad = 64 - (10 + hl + 1) % 64, total = hl + pad + 1;
    const unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(total & 0xff),
                                    (unsigned char)(total >> 8) };
    fwrite(pre, 1, sizeof pre, f);
    fwrite(dict, 1, hl, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
}

/* ---- the flat circuit --------------------------------------------------------------------------- */

typedef struct {
    size_t n_in, n_gates, n_out;
    uint32_t *a, *b;      /* [n_gates] operand nodes */
    uint8_t *op;          /* [n_gates] op index 0..15 */
    uint8_t *live;        /* [n_gates] 1 when active */
    uint32_t *out;        /* [n_out] output nodes */
    size_t active, trivial;   /* active gates; of those, wires (A, B) and constants */
    size_t per_channel;   /* logic-ca: P, the kernel gates unrolled per channel */
    /* logic only */
    size_t dim, bits, classes, group;
    float thr[16];
} flat_circuit;

static const char *const OP_NAMES[LOGIC_OPS] = {
    "FALSE", "AND", "A_AND_NOT_B", "A", "NOT_A_AND_B", "B", "XOR", "OR",
    "NOR", "XNOR", "NOT_B", "A_OR_NOT_B", "NOT_A", "NOT_A_OR_B", "NAND", "TRUE",
};

/* Whether op's output depends on operand a (which = 0) or b (which = 1). */
static int op_reads(int op, int which)
{
    for (int x = 0; x < 2; x++)
        if (which == 0 ? logic_hard_bit(op, 0, x) != logic_hard_bit(op, 1, x)
                       : logic_hard_bit(op, x, 0) != logic_hard_bit(op, x, 1))
            return 1;
    return 0;
}

static void flat_free(flat_circuit *f)
{
    free(f->a);   /* a, b, op, live and out are one allocation */
    memset(f, 0, sizeof *f);
}

static ls_status flat_alloc(flat_circuit *f, size_t n_in, size_t n_gates, size_t n_out, ls_err *err)
{
    f->n_in = n_in;
    f->n_gates = n_gates;
    f->n_out = n_out;
    if (n_in + n_gates > UINT32_MAX)
        return ls_fail(err, LS_EINVAL, "%zu gates are too many", n_gates);
    uint32_t *mem = malloc((2 * n_gates + n_out) * sizeof(uint32_t) + 2 * n_gates + 1);
    if (mem == NULL)
        return ls_fail(err, LS_ENOMEM, "out of memory for %zu gates", n_gates);
    f->a = mem;
    f->b = mem + n_gates;
    f->out = mem + 2 * n_gates;
    f->op = (uint8_t *)(f->out + n_out);
    f->live = f->op + n_gates;
    return LS_OK;
}

/* Marks the active gates (backwards from the outputs) and counts them. */
static void flat_prune(flat_circuit *f)
{
    memset(f->live, 0, f->n_gates);
    for (size_t o = 0; o < f->n_out; o++)
        if (f->out[o] >= f->n_in)
            f->live[f->out[o] - f->n_in] = 1;
    f->active = f->trivial = 0;
    for (size_t g = f->n_gates; g-- > 0;) {
        if (!f->live[g])
            continue;
        f->active++;
        const int op = f->op[g];
        f->trivial += !(op_reads(op, 0) && op_reads(op, 1));
        if (op_reads(op, 0) && f->a[g] >= f->n_in)
            f->live[f->a[g] - f->n_in] = 1;
        if (op_reads(op, 1) && f->b[g] >= f->n_in)
            f->live[f->b[g] - f->n_in] = 1;
    }
}

/* The logic-ca circuit unrolled over channels (header comment). */
static ls_status flat_from_ca(flat_circuit *f, const logic_ca_hard *h, ls_err *err)
{
    const size_t C = h->channels, np = h->n_perception, K = h->kernels, S = h->width[np - 1];
    const size_t P = h->gate_off[np], U = h->gates - P, n_in = 9 * C;
    ls_status st = flat_alloc(f, n_in, C * P + U, C, err);
    if (st != LS_OK)
        return st;
    f->per_channel = P;
    for (size_t c = 0; c < C; c++)
        for (size_t l = 0; l < np; l++)
            for (size_t i = 0; i < h->layer[l].out; i++) {
                const size_t g = h->gate_off[l] + i, x = c * P + g;
                const uint32_t ra = h->layer[l].a[i], rb = h->layer[l].b[i];
                if (l == 0) {
                    f->a[x] = (uint32_t)(c * 9 + ra);
                    f->b[x] = (uint32_t)(c * 9 + rb);
                } else {
                    f->a[x] = (uint32_t)(n_in + c * P + h->gate_off[l - 1] + ra);
                    f->b[x] = (uint32_t)(n_in + c * P + h->gate_off[l - 1] + rb);
                }
                f->op[x] = h->ops[g];
            }
    for (size_t l = np; l < h->n_layers; l++)
        for (size_t i = 0; i < h->layer[l].out; i++) {
            const size_t g = h->gate_off[l] + i, x = C * P + (g - P);
            const uint32_t r[2] = { h->layer[l].a[i], h->layer[l].b[i] };
            uint32_t node[2];
            for (int k = 0; k < 2; k++) {
                if (l > np) {
                    node[k] = (uint32_t)(n_in + C * P + (h->gate_off[l - 1] + r[k] - P));
                } else if (r[k] < C) {
                    node[k] = (uint32_t)(r[k] * 9 + 4);   /* own state = the patch centre */
                } else {
                    /* perception input C + c·S·K + s·K + k = kernel kk's output s on channel c */
                    const size_t q = r[k] - C, c = q / (S * K), s = q % (S * K) / K, kk = q % K;
                    node[k] = (uint32_t)(n_in + c * P + h->gate_off[np - 1] + kk * S + s);
                }
            }
            f->a[x] = node[0];
            f->b[x] = node[1];
            f->op[x] = h->ops[g];
        }
    const size_t last = h->gate_off[h->n_layers - 1];
    for (size_t c = 0; c < C; c++)
        f->out[c] = (uint32_t)(n_in + C * P + (last + c - P));
    flat_prune(f);
    return LS_OK;
}

/* The logic model's circuit. Its wiring is private to engine/logic_net.c, so
 * it is rebuilt here from the config as logic_net.h documents it (layer l
 * wired by logic_wire_random / logic_wire_unique with (seed, addr = l)); the
 * self-check against the engine's test accuracy guards the two against
 * drifting apart. */
static ls_status flat_from_net(flat_circuit *f, const ls_config *cfg, const ls_dataset *data, const float *params,
                               ls_err *err)
{
    const size_t *layers;
    const size_t L = ls_config_list(cfg, "layers", &layers), dim = data->train.dim;
    const size_t bits = (size_t)ls_config_int(cfg, "bits"), k = data->n_classes;
    size_t total = 0;
    for (size_t l = 0; l < L; l++)
        total += layers[l];
    const size_t n_in = dim * bits, last = layers[L - 1];
    if (k == 0 || last % k != 0 || bits == 0 || bits > 15)
        return ls_fail(err, LS_EINVAL, "the run's network does not fit its data set");
    ls_status st = flat_alloc(f, n_in, total, last, err);
    if (st != LS_OK)
        return st;
    f->dim = dim;
    f->bits = bits;
    f->classes = k;
    f->group = last / k;
    for (size_t i = 0; i < bits; i++)
        f->thr[i] = (float)(i + 1) / (float)(bits + 1);
    const int unique = strcmp(ls_config_str(cfg, "wiring"), "unique") == 0;
    size_t in = n_in, off = 0, prev = 0;
    for (size_t l = 0; l < L && st == LS_OK; l++) {
        const size_t w = layers[l];
        st = unique ? logic_wire_unique(f->a + off, f->b + off, in, w, cfg->seed, l, err)
                    : logic_wire_random(f->a + off, f->b + off, in, w, cfg->seed, l, err);
        /* layer-local input rows → nodes */
        const size_t base = l == 0 ? 0 : n_in + prev;
        for (size_t g = 0; g < w; g++) {
            f->a[off + g] = (uint32_t)(base + f->a[off + g]);
            f->b[off + g] = (uint32_t)(base + f->b[off + g]);
        }
        prev = off;
        off += w;
        in = w;
    }
    if (st != LS_OK) {
        flat_free(f);
        return st;
    }
    logic_hard_ops(f->op, params, total);
    for (size_t i = 0; i < last; i++)
        f->out[i] = (uint32_t)(n_in + total - last + i);
    flat_prune(f);
    return LS_OK;
}

ls_status export_gate_counts(trainer *t, export_gates *g, ls_err *err)
{
    memset(g, 0, sizeof *g);
    const ls_config *cfg = trainer_config(t);
    const int ca = strcmp(cfg->model, "logic-ca") == 0;
    flat_circuit f;
    memset(&f, 0, sizeof f);
    logic_ca_hard *h = NULL;
    ls_dataset *data = NULL;
    ls_status st;
    if (ca) {
        st = logic_ca_hard_create(&h, trainer_model(t), trainer_params(t), err);
        if (st == LS_OK)
            st = flat_from_ca(&f, h, err);
    } else {
        ls_config c = *cfg;
        const ls_dataset *have = trainer_data(t);
        st = have != NULL ? LS_OK : trainer_load_data(&c, &data, err);
        if (st == LS_OK)
            st = flat_from_net(&f, &c, have != NULL ? have : data, trainer_params(t), err);
    }
    if (st == LS_OK) {
        g->inputs = f.n_in;
        g->outputs = f.n_out;
        g->gates = f.n_gates;
        g->active = f.active;
        g->trivial = f.trivial;
        for (size_t i = 0; i < f.n_gates; i++)
            g->by_op[f.op[i] % LOGIC_OPS] += f.live[i];
        for (int k = 0; k < LOGIC_OPS && k < 16; k++)
            g->op_names[k] = OP_NAMES[k];
    }
    flat_free(&f);
    dataset_destroy(data);
    logic_ca_hard_destroy(h);
    return st;
}

/* Evaluates the active gates on `words` words per node: val [n_in + n_gates][words],
 * the inputs filled in by the caller. */
static void flat_eval(const flat_circuit *f, uint64_t *val, size_t words)
{
    for (size_t g = 0; g < f->n_gates; g++) {
        if (!f->live[g])
            continue;
        uint64_t *y = val + (f->n_in + g) * words;
        const uint64_t *x = val + (size_t)f->a[g] * words, *z = val + (size_t)f->b[g] * words;
        for (size_t w = 0; w < words; w++)
            y[w] = logic_hard_word(f->op[g], x[w], z[w]);
    }
}

/* The pruned flat circuit against logic_ca_hard_step on a small random grid,
 * periodic and zero-bordered, every channel of every cell. */
static ls_status check_ca(const flat_circuit *f, const logic_ca_hard *h, ls_err *err)
{
    const size_t C = h->channels, W = 61, H = 37, cells = W * H, words = (cells + 63) / 64;
    uint8_t *in = malloc(2 * C * cells);
    uint64_t *val = calloc((f->n_in + f->n_gates) * words, sizeof(uint64_t));
    ls_status st = in != NULL && val != NULL ? LS_OK : ls_fail(err, LS_ENOMEM, "out of memory");
    for (int periodic = 0; periodic < 2 && st == LS_OK; periodic++) {
        uint8_t *out = in + C * cells;
        for (size_t i = 0; i < C * cells; i++)
            in[i] = (uint8_t)(rng_u64(1, RNG_TEST, 0xe4, (uint64_t)periodic, i) & 1);
        if ((st = logic_ca_hard_step(h, out, in, W, H, periodic, NULL, err)) != LS_OK)
            break;
        memset(val, 0, f->n_in * words * sizeof(uint64_t));
        for (size_t c = 0; c < C; c++)
            for (size_t n = 0; n < cells; n++)
                for (size_t p = 0; p < 9; p++) {
                    long y = (long)(n / W) + (long)(p / 3) - 1, x = (long)(n % W) + (long)(p % 3) - 1;
                    if (periodic) {
                        y = (y + (long)H) % (long)H;
                        x = (x + (long)W) % (long)W;
                    } else if (y < 0 || x < 0 || y >= (long)H || x >= (long)W) {
                        continue;
                    }
                    if (in[c * cells + (size_t)y * W + (size_t)x])
                        val[(c * 9 + p) * words + n / 64] |= UINT64_C(1) << (n % 64);
                }
        flat_eval(f, val, words);
        for (size_t c = 0; c < C && st == LS_OK; c++)
            for (size_t n = 0; n < cells; n++)
                if (((val[(size_t)f->out[c] * words + n / 64] >> (n % 64)) & 1) != out[c * cells + n]) {
                    st = ls_fail(err, LS_EMISMATCH, "the flattened circuit differs from the engine's hard "
                                 "step at cell %zu, channel %zu (a lockstep bug; nothing was written)", n, c);
                    break;
                }
    }
    free(in);
    free(val);
    return st;
}

/* Binarised inputs of samples [first, first + n) of split s, n <= 64, one word per input row. */
static void net_inputs(const flat_circuit *f, const ls_split *s, size_t first, size_t n, float *xf, uint64_t *in)
{
    uint32_t ids[64];
    for (size_t i = 0; i < n; i++)
        ids[i] = (uint32_t)(first + i);
    dataset_gather(s, ids, n, xf, NULL);
    memset(in, 0, f->n_in * sizeof(uint64_t));
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < f->dim; d++)
            for (size_t t = 0; t < f->bits; t++)
                in[d * f->bits + t] |= (uint64_t)(xf[i * f->dim + d] > f->thr[t]) << i;
}

/* Class of lane j: argmax of the group bit counts, lowest class on ties. */
static size_t net_class(const flat_circuit *f, const uint64_t *val, size_t j)
{
    size_t best = 0, best_n = 0;
    for (size_t c = 0; c < f->classes; c++) {
        size_t n = 0;
        for (size_t i = c * f->group; i < (c + 1) * f->group; i++)
            n += (val[f->out[i]] >> j) & 1;
        if (c == 0 || n > best_n) {
            best = c;
            best_n = n;
        }
    }
    return best;
}

/* The pruned flat circuit's test accuracy against the engine's hard evaluation. */
static ls_status check_net(const flat_circuit *f, trainer *t, const ls_dataset *data, ls_err *err)
{
    double engine_acc;
    ls_status st = trainer_evaluate(t, &engine_acc, err);
    if (st != LS_OK)
        return st;
    const ls_split *s = &data->test;
    float *xf = malloc(64 * f->dim * sizeof(float));
    uint64_t *val = calloc(f->n_in + f->n_gates, sizeof(uint64_t));
    if (xf == NULL || val == NULL) {
        free(xf);
        free(val);
        return ls_fail(err, LS_ENOMEM, "out of memory");
    }
    size_t right = 0;
    for (size_t first = 0; first < s->n; first += 64) {
        const size_t n = s->n - first < 64 ? s->n - first : 64;
        net_inputs(f, s, first, n, xf, val);
        flat_eval(f, val, 1);
        for (size_t j = 0; j < n; j++)
            right += net_class(f, val, j) == s->y[first + j];
    }
    free(xf);
    free(val);
    const double acc = s->n > 0 ? (double)right / (double)s->n : 0.0;
    if (acc != engine_acc)
        return ls_fail(err, LS_EMISMATCH, "the flattened circuit classifies %zu of %zu test samples right, "
                       "the engine's hard evaluation %.17g (a lockstep bug; nothing was written)", right, s->n,
                       engine_acc);
    return LS_OK;
}

/* ---- writing ------------------------------------------------------------------------------------ */

/* One function of locals up to EXPORT_SPLIT_DEFAULT active gates (the
 * fastest code: values live in registers); beyond, parts of at most
 * EXPORT_PART_GATES gates. Measured on a 44,399-gate classifier: one function
 * takes gcc -O2 99 s; parts of 128 take gcc 17 s, clang 13 s. The parts are
 * external functions because compilers inline a static function called once,
 * which rebuilds the one huge function (clang: over 2 minutes). */
#define EXPORT_SPLIT_DEFAULT 4096
#define EXPORT_PART_GATES 128

typedef struct {
    const runlog_run *run;
    const ls_session_state *info;
    const ls_config *cfg;
    const flat_circuit *f;
    int ca;
    size_t split;             /* most gates in the one-function form (the split form beyond it) */
    size_t part_gates;        /* split form: gates per part function */
    uint32_t *slot;           /* split form: [n_gates] the v[] slot of each active gate */
    size_t n_slots;
} export_ctx;

static void node_name(const export_ctx *x, uint32_t node, int c_syntax, char *buf, size_t len)
{
    const flat_circuit *f = x->f;
    if (node >= f->n_in && c_syntax && x->slot != NULL)
        snprintf(buf, len, "v[%lu]", (unsigned long)x->slot[node - f->n_in]);
    else if (node >= f->n_in)
        snprintf(buf, len, "g%lu", (unsigned long)(node - f->n_in));
    else if (c_syntax && x->ca)
        snprintf(buf, len, "patch[%lu]", (unsigned long)node);
    else if (x->ca)
        snprintf(buf, len, "in[%lu][%lu]", (unsigned long)(node / 9), (unsigned long)(node % 9));
    else
        snprintf(buf, len, "in[%lu]", (unsigned long)node);
}

/* The header: run, hashes, what the file holds, the canonical config. Every
 * line starts with `lead` (" * " for C, "# " for the netlist). */
static void write_header(FILE *o, const export_ctx *x, const char *lead)
{
    char name[160], text[CONFIG_TEXT_MAX];
    cli_comment_safe(name, sizeof name, x->run->name);
    fprintf(o, "%slockstep circuit of run %lld '%s' (model %s, task %s) at step %lld\n", lead, (long long)x->run->id,
            name, x->cfg->model, x->cfg->task, (long long)x->info->step);
    fprintf(o, "%sconfig hash %016llx, trajectory hash %016llx, parameter hash %016llx\n", lead,
            (unsigned long long)x->info->config_hash, (unsigned long long)x->info->traj_hash,
            (unsigned long long)x->info->param_hash);
    fprintf(o, "%sexported by %s; the record was recomputed from step %lld to %lld and matched\n", lead,
            LS_ENGINE_VERSION, (long long)x->info->resumed_from, (long long)x->info->step);
    fprintf(o, "%sactive gates: %zu of %zu (%zu of them wires, inverters or constants); dead gates are left out\n",
            lead, x->f->active, x->f->n_gates, x->f->trivial);
    if (x->slot != NULL)
        fprintf(o, "%ssplit form (over %zu gates): lockstep_part0, 1, ... compute the gates in order, %zu each,\n"
                   "%son a value array v[%zu] whose slots are reused once a value is dead; a comment after each\n"
                   "%sstatement names its gate (gN)\n", lead, x->split, x->part_gates, lead, x->n_slots, lead);
    size_t bare = strlen(lead);
    while (bare > 0 && lead[bare - 1] == ' ')
        bare--;
    fprintf(o, "%.*s\n%scanonical config:\n", (int)bare, lead, lead);
    config_text(x->cfg, text, sizeof text);
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char safe[256];
        cli_comment_safe(safe, sizeof safe, line);
        fprintf(o, "%s  %s\n", lead, safe);
    }
}

static void write_netlist(FILE *o, const export_ctx *x)
{
    const flat_circuit *f = x->f;
    fputs("# lockstep netlist v1\n", o);
    write_header(o, x, "# ");
    fputs("#\n", o);
    if (x->ca) {
        fprintf(o, "# one CA step of one cell; %zu channels\n"
                   "# inputs: in[c][p] = channel c at position p of the cell's 3x3 patch (row-major: 0 1 2 / 3 4 5 /\n"
                   "#   6 7 8; 4 is the cell itself); outputs: out[c] = the cell's new state on channel c\n",
                f->n_out);
    } else {
        fprintf(o, "# inputs: in[i], i = feature*%zu + t: bit t of feature v is v > (t+1)/%zu (binary32)\n"
                   "# outputs: out[i], i in [c*%zu, (c+1)*%zu) counts for class c; the prediction is the class\n"
                   "#   with the most 1 outputs (the lowest class on ties)\n",
                f->bits, f->bits + 1, f->group, f->group);
    }
    fputs("# gates: one line per active gate, in evaluation order: gID = OP(X, Y); X and Y name a gate,\n"
          "#   an input, or '-' for an operand OP ignores. OP is one of FALSE AND A_AND_NOT_B A NOT_A_AND_B B\n"
          "#   XOR OR NOR XNOR NOT_B A_OR_NOT_B NOT_A NOT_A_OR_B NAND TRUE (truth table for AB = 00 01 10 11\n"
          "#   read as the bits of the op's index, most significant first)\n", o);
    for (size_t g = 0; g < f->n_gates; g++) {
        if (!f->live[g])
            continue;
        char na[32] = "-", nb[32] = "-";
        if (op_reads(f->op[g], 0))
            node_name(x, f->a[g], 0, na, sizeof na);
        if (op_reads(f->op[g], 1))
            node_name(x, f->b[g], 0, nb, sizeof nb);
        fprintf(o, "g%zu = %s(%s, %s)\n", g, OP_NAMES[f->op[g]], na, nb);
    }
    for (size_t i = 0; i < f->n_out; i++) {
        char n[32];
        node_name(x, f->out[i], 0, n, sizeof n);
        fprintf(o, "out[%zu] = %s\n", i, n);
    }
}

/* C expression of op on operand texts a, b (64-bit words). */
static void op_expr(int op, const char *a, const char *b, char *buf, size_t len)
{
    switch (op) {
    case 0: snprintf(buf, len, "(uint64_t)0"); break;
    case 1: snprintf(buf, len, "%s & %s", a, b); break;
    case 2: snprintf(buf, len, "%s & ~%s", a, b); break;
    case 3: snprintf(buf, len, "%s", a); break;
    case 4: snprintf(buf, len, "~%s & %s", a, b); break;
    case 5: snprintf(buf, len, "%s", b); break;
    case 6: snprintf(buf, len, "%s ^ %s", a, b); break;
    case 7: snprintf(buf, len, "%s | %s", a, b); break;
    case 8: snprintf(buf, len, "~(%s | %s)", a, b); break;
    case 9: snprintf(buf, len, "~(%s ^ %s)", a, b); break;
    case 10: snprintf(buf, len, "~%s", b); break;
    case 11: snprintf(buf, len, "%s | ~%s", a, b); break;
    case 12: snprintf(buf, len, "~%s", a); break;
    case 13: snprintf(buf, len, "~%s | %s", a, b); break;
    case 14: snprintf(buf, len, "~(%s & %s)", a, b); break;
    default: snprintf(buf, len, "~(uint64_t)0"); break;
    }
}

/* Slots of the split form: a linear scan over the active gates in order,
 * each value freed after its last reader (or kept when an output reads it),
 * so v[] holds only the values still needed — about two layers' worth. */
static ls_status plan_slots(export_ctx *x, ls_err *err)
{
    const flat_circuit *f = x->f;
    const size_t NEVER = SIZE_MAX;
    size_t *last = malloc(f->n_gates * sizeof(size_t));
    uint32_t *freed = malloc(f->n_gates * sizeof(uint32_t));
    x->slot = malloc(f->n_gates * sizeof(uint32_t));
    if (last == NULL || freed == NULL || x->slot == NULL) {
        free(last);
        free(freed);
        free(x->slot);
        x->slot = NULL;
        return ls_fail(err, LS_ENOMEM, "out of memory for %zu gates", f->n_gates);
    }
    for (size_t g = 0; g < f->n_gates; g++)
        last[g] = 0;
    for (size_t g = 0; g < f->n_gates; g++)
        for (int k = 0; k < 2 && f->live[g]; k++) {
            const uint32_t node = k == 0 ? f->a[g] : f->b[g];
            if (op_reads(f->op[g], k) && node >= f->n_in)
                last[node - f->n_in] = g;
        }
    for (size_t i = 0; i < f->n_out; i++)
        if (f->out[i] >= f->n_in)
            last[f->out[i] - f->n_in] = NEVER;
    size_t n_free = 0;
    x->n_slots = 0;
    for (size_t g = 0; g < f->n_gates; g++) {
        if (!f->live[g])
            continue;
        /* operands dying here give their slots back first: v[s] = v[s] & v[t] is fine */
        for (int k = 0; k < 2; k++) {
            const uint32_t node = k == 0 ? f->a[g] : f->b[g];
            if (!op_reads(f->op[g], k) || node < f->n_in || last[node - f->n_in] != g)
                continue;
            if (k == 1 && op_reads(f->op[g], 0) && f->a[g] == node)
                continue;   /* a == b: freed once */
            freed[n_free++] = x->slot[node - f->n_in];
        }
        x->slot[g] = n_free > 0 ? freed[--n_free] : (uint32_t)x->n_slots++;
    }
    /* Proof of the plan: replaying it, every read finds its operand's value
     * still in the slot (freed[] is reused as the slots' current owners). */
    ls_status st = LS_OK;
    uint32_t *owner = freed;
    for (size_t i = 0; i < x->n_slots; i++)
        owner[i] = UINT32_MAX;
    for (size_t g = 0; g < f->n_gates && st == LS_OK; g++) {
        for (int k = 0; k < 2 && f->live[g]; k++) {
            const uint32_t node = k == 0 ? f->a[g] : f->b[g];
            if (op_reads(f->op[g], k) && node >= f->n_in && owner[x->slot[node - f->n_in]] != node - f->n_in)
                st = ls_fail(err, LS_EMISMATCH, "gate %zu would read a reused slot (a lockstep bug)", g);
        }
        if (f->live[g])
            owner[x->slot[g]] = (uint32_t)g;
    }
    for (size_t i = 0; i < f->n_out && st == LS_OK; i++)
        if (f->out[i] >= f->n_in && owner[x->slot[f->out[i] - f->n_in]] != f->out[i] - f->n_in)
            st = ls_fail(err, LS_EMISMATCH, "output %zu would read a reused slot (a lockstep bug)", i);
    free(last);
    free(freed);
    return st;
}

/* The gate function: `sig` is its definition line (its arguments named in
 * and out). Up to x->split active gates: one function of straight-line
 * locals, g<N> per gate. Beyond: the split form — static parts of at most
 * x->split gates each, on a value array v[] (slots reused, plan_slots),
 * every statement tagged with its gate, so no compiler meets one function of
 * tens of thousands of statements (gcc -O2 takes minutes on those). */
static void write_gates(FILE *o, const export_ctx *x, const char *sig, const char *in_name)
{
    const flat_circuit *f = x->f;
    const int split = x->slot != NULL;
    size_t part = 0, in_part = 0;
    int opened = 0;
    for (size_t g = 0; g < f->n_gates; g++) {
        if (!f->live[g])
            continue;
        if (split && in_part == 0)
            fprintf(o, "void lockstep_part%zu(uint64_t *v, const uint64_t *%s);\n"
                       "void lockstep_part%zu(uint64_t *v, const uint64_t *%s)\n{\n    (void)%s;\n",
                    part, in_name, part, in_name, in_name);
        if (!split && !opened)
            fprintf(o, "%s\n{\n", sig);
        opened = 1;
        char na[32], nb[32], e[96];
        node_name(x, f->a[g], 1, na, sizeof na);
        node_name(x, f->b[g], 1, nb, sizeof nb);
        op_expr(f->op[g], na, nb, e, sizeof e);
        if (split)
            fprintf(o, "    v[%lu] = %s; /* g%zu */\n", (unsigned long)x->slot[g], e, g);
        else
            fprintf(o, "    const uint64_t g%zu = %s;\n", g, e);
        if (split && ++in_part == x->part_gates) {
            fputs("}\n\n", o);
            part++;
            in_part = 0;
        }
    }
    if (split) {
        if (in_part > 0) {
            fputs("}\n\n", o);
            part++;
        }
        /* The outputs are copied through a table: thousands of single
         * stores from v[] are what compilers are slowest on. */
        fprintf(o, "static const uint32_t lockstep_out_slot[%zu] = {", f->n_out);
        for (size_t i = 0; i < f->n_out; i++)
            fprintf(o, "%s%lu", i % 16 ? ", " : i ? ",\n    " : "\n    ",
                    f->out[i] >= f->n_in ? (unsigned long)x->slot[f->out[i] - f->n_in] : 0ul);
        fprintf(o, "\n};\n\n%s\n{\n    uint64_t v[%zu];\n", sig, x->n_slots > 0 ? x->n_slots : 1);
        for (size_t p = 0; p < part; p++)
            fprintf(o, "    lockstep_part%zu(v, %s);\n", p, in_name);
        fprintf(o, "    for (size_t i = 0; i < %zu; i++)\n        out[i] = v[lockstep_out_slot[i]];\n", f->n_out);
    } else if (!opened) {
        fprintf(o, "%s\n{\n", sig);
    }
    for (size_t i = 0; i < f->n_out; i++) {
        if (split && f->out[i] >= f->n_in)
            continue;
        char n[32];
        node_name(x, f->out[i], 1, n, sizeof n);
        fprintf(o, "    out[%zu] = %s;\n", i, n);
    }
    fputs("}\n", o);
}

/* The fixed part of a logic-ca file after lockstep_step: the grid helper and
 * the optional benchmark main. */
static const char CA_GRID_C[] =
    "\n"
    "size_t lockstep_grid_work_words(size_t width, size_t height)\n"
    "{\n"
    "    return (LOCKSTEP_CHANNELS * height + 1) * ((width + 2 + 63) / 64 + 1);\n"
    "}\n"
    "\n"
    "/* 64 bits of row w starting at bit off (the word after the last bit is readable). */\n"
    "static uint64_t lockstep_bits(const uint64_t *w, size_t off)\n"
    "{\n"
    "    const size_t k = off >> 6, s = off & 63;\n"
    "    return s ? (w[k] >> s) | (w[k + 1] << (64 - s)) : w[k];\n"
    "}\n"
    "\n"
    "void lockstep_grid_step(uint8_t *out, const uint8_t *in, size_t width, size_t height, int periodic,\n"
    "                        const uint8_t *mask, uint64_t *work)\n"
    "{\n"
    "    const size_t C = LOCKSTEP_CHANNELS, ew = (width + 2 + 63) / 64 + 1, cells = width * height;\n"
    "    /* Row (c, y) packed with one cell of border on each side: bit i is cell x = i - 1\n"
    "     * (x = -1 and x = width wrap or are 0); the last row of work is all zeros. */\n"
    "    uint64_t *zero = work + C * height * ew;\n"
    "    for (size_t i = 0; i < (C * height + 1) * ew; i++)\n"
    "        work[i] = 0;\n"
    "    for (size_t c = 0; c < C; c++)\n"
    "        for (size_t y = 0; y < height; y++) {\n"
    "            uint64_t *r = work + (c * height + y) * ew;\n"
    "            const uint8_t *src = in + c * cells + y * width;\n"
    "            for (size_t x = 0; x < width; x++)\n"
    "                r[(x + 1) >> 6] |= (uint64_t)(src[x] != 0) << ((x + 1) & 63);\n"
    "            if (periodic) {\n"
    "                r[0] |= (uint64_t)(src[width - 1] != 0);\n"
    "                r[(width + 1) >> 6] |= (uint64_t)(src[0] != 0) << ((width + 1) & 63);\n"
    "            }\n"
    "        }\n"
    "    uint64_t patch[9 * LOCKSTEP_CHANNELS], next[LOCKSTEP_CHANNELS];\n"
    "    for (size_t y = 0; y < height; y++)\n"
    "        for (size_t x0 = 0; x0 < width; x0 += 64) {\n"
    "            for (size_t c = 0; c < C; c++)\n"
    "                for (size_t dy = 0; dy < 3; dy++) {\n"
    "                    const uint64_t *r = zero;\n"
    "                    if (y + dy >= 1 && y + dy <= height)\n"
    "                        r = work + (c * height + y + dy - 1) * ew;\n"
    "                    else if (periodic)\n"
    "                        r = work + (c * height + (y + dy + height - 1) % height) * ew;\n"
    "                    for (size_t dx = 0; dx < 3; dx++)\n"
    "                        patch[c * 9 + dy * 3 + dx] = lockstep_bits(r, x0 + dx);\n"
    "                }\n"
    "            lockstep_step(next, patch);\n"
    "            const size_t n = width - x0 < 64 ? width - x0 : 64;\n"
    "            for (size_t c = 0; c < C; c++)\n"
    "                for (size_t j = 0; j < n; j++) {\n"
    "                    const size_t i = c * cells + y * width + x0 + j;\n"
    "                    if (mask == NULL || mask[y * width + x0 + j])\n"
    "                        out[i] = (uint8_t)((next[c] >> j) & 1);\n"
    "                    else\n"
    "                        out[i] = (uint8_t)(in[i] != 0);\n"
    "                }\n"
    "        }\n"
    "}\n"
    "\n"
    "#ifdef LOCKSTEP_CIRCUIT_MAIN\n"
    "/* Throughput: cc -O2 -std=c11 -DLOCKSTEP_CIRCUIT_MAIN FILE.c && ./a.out [SIDE [STEPS]] */\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <time.h>\n"
    "\n"
    "static double lockstep_now(void)\n"
    "{\n"
    "    struct timespec ts;\n"
    "    timespec_get(&ts, TIME_UTC);\n"
    "    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;\n"
    "}\n"
    "\n"
    "static uint64_t lockstep_rand(uint64_t *s)\n"
    "{\n"
    "    uint64_t z = (*s += 0x9e3779b97f4a7c15u);\n"
    "    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;\n"
    "    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;\n"
    "    return z ^ (z >> 31);\n"
    "}\n"
    "\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    const size_t side = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 1024;\n"
    "    const size_t steps = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 10;\n"
    "    const size_t C = LOCKSTEP_CHANNELS, cells = side * side, words = (cells + 63) / 64;\n"
    "    uint8_t *a = malloc(C * cells), *b = malloc(C * cells);\n"
    "    uint64_t *work = malloc(lockstep_grid_work_words(side, side) * sizeof(uint64_t));\n"
    "    uint64_t *patches = malloc(words * 9 * C * sizeof(uint64_t));\n"
    "    if (side == 0 || steps == 0 || !a || !b || !work || !patches)\n"
    "        return 2;\n"
    "    uint64_t s = 1, check = 0, next[LOCKSTEP_CHANNELS];\n"
    "    for (size_t i = 0; i < words * 9 * C; i++)\n"
    "        patches[i] = lockstep_rand(&s);\n"
    "    for (size_t i = 0; i < C * cells; i++)\n"
    "        a[i] = (uint8_t)(lockstep_rand(&s) & 1);\n"
    "    /* the circuit alone, on bit-sliced words */\n"
    "    double t0 = lockstep_now();\n"
    "    for (size_t r = 0; r < steps; r++)\n"
    "        for (size_t w = 0; w < words; w++) {\n"
    "            lockstep_step(next, patches + w * 9 * C);\n"
    "            for (size_t c = 0; c < C; c++)\n"
    "                check ^= next[c] + r;\n"
    "        }\n"
    "    double t1 = lockstep_now();\n"
    "    /* whole grid steps on bytes, periodic */\n"
    "    for (size_t r = 0; r < steps; r++) {\n"
    "        lockstep_grid_step(b, a, side, side, 1, NULL, work);\n"
    "        uint8_t *t = a;\n"
    "        a = b;\n"
    "        b = t;\n"
    "    }\n"
    "    double t2 = lockstep_now();\n"
    "    for (size_t i = 0; i < C * cells; i++)\n"
    "        check = check * 31 + a[i];\n"
    "    const double n = (double)words * 64.0 * (double)steps;\n"
    "    printf(\"lockstep_step: %.4g cells/s (%d active gates, 64 cells per word)\\n\",\n"
    "           n / (t1 - t0), LOCKSTEP_ACTIVE_GATES);\n"
    "    printf(\"lockstep_grid_step: %.4g cells/s (%zux%zu periodic grid, %zu steps, bytes in and out)\\n\",\n"
    "           (double)cells * (double)steps / (t2 - t1), side, side, steps);\n"
    "    printf(\"checksum %016llx\\n\", (unsigned long long)check);\n"
    "    free(a);\n"
    "    free(b);\n"
    "    free(work);\n"
    "    free(patches);\n"
    "    return 0;\n"
    "}\n"
    "#endif\n";

static void write_c_ca(FILE *o, const export_ctx *x)
{
    const flat_circuit *f = x->f;
    fputs("/* lockstep circuit - generated by `lockstep export --circuit`; do not edit.\n *\n", o);
    write_header(o, x, " * ");
    fprintf(o,
            " *\n"
            " * One step of the run's cellular automaton as its hard circuit (argmax gate of\n"
            " * every trained gate), 64 cells per 64-bit word. Self-contained C99: only\n"
            " * <stdint.h> and <stddef.h>; compile it with your program or alone.\n"
            " *\n"
            " *   lockstep_step(out, patch): patch[c*9 + p] is a word whose bit j is cell j's\n"
            " *     value at position p of its 3x3 patch on channel c (row-major: 0 1 2 / 3 4 5 /\n"
            " *     6 7 8; 4 is the cell itself); out[c] gets the 64 cells' new states.\n"
            " *   lockstep_grid_step(out, in, width, height, periodic, mask, work): one step of\n"
            " *     a whole grid of bytes: in, out [C][height][width] 0/1 (nonzero counts as 1;\n"
            " *     out must not alias in); periodic != 0 wraps the borders, else the outside\n"
            " *     is 0; mask [height][width] or NULL: a cell whose mask byte is 0 keeps its\n"
            " *     state (asynchronous steps); work: lockstep_grid_work_words(width, height)\n"
            " *     words of scratch.\n"
            " *   Compiled with -DLOCKSTEP_CIRCUIT_MAIN the file is a program that prints the\n"
            " *     circuit's throughput in cells per second ([SIDE [STEPS]], default 1024 10).\n"
            " * Gate gN is gate N of the unrolled circuit: for N < C*P (P = %zu perception gates\n"
            " * per channel) kernel gate N %% P on channel N / P, else update gate P + N - C*P.\n"
            " */\n"
            "#include <stddef.h>\n"
            "#include <stdint.h>\n"
            "\n"
            "#define LOCKSTEP_CHANNELS %zu\n"
            "#define LOCKSTEP_ACTIVE_GATES %zu\n"
            "#define LOCKSTEP_GATES %zu\n"
            "\n"
            "void lockstep_step(uint64_t *out, const uint64_t *patch);\n"
            "size_t lockstep_grid_work_words(size_t width, size_t height);\n"
            "void lockstep_grid_step(uint8_t *out, const uint8_t *in, size_t width, size_t height, int periodic,\n"
            "                        const uint8_t *mask, uint64_t *work);\n"
            "\n",
            f->per_channel, f->n_out, f->active, f->n_gates);
    write_gates(o, x, "void lockstep_step(uint64_t *out, const uint64_t *patch)", "patch");
    fputs(CA_GRID_C, o);
}

static const char NET_TAIL_C[] =
    "\n"
    "void lockstep_binarize(uint64_t *in, const float *x, size_t n)\n"
    "{\n"
    "    for (size_t i = 0; i < LOCKSTEP_INPUTS; i++)\n"
    "        in[i] = 0;\n"
    "    for (size_t j = 0; j < n && j < 64; j++)\n"
    "        for (size_t d = 0; d < LOCKSTEP_FEATURES; d++)\n"
    "            for (size_t t = 0; t < LOCKSTEP_BITS; t++)\n"
    "                in[d * LOCKSTEP_BITS + t] |= (uint64_t)(x[j * LOCKSTEP_FEATURES + d] > lockstep_thr[t]) << j;\n"
    "}\n"
    "\n"
    "void lockstep_classify(uint8_t *pred, uint32_t *counts, const uint64_t *in)\n"
    "{\n"
    "    uint64_t out[LOCKSTEP_OUTPUTS], plane[LOCKSTEP_PLANES];\n"
    "    uint32_t best[64] = { 0 };\n"
    "    lockstep_eval(out, in);\n"
    "    for (size_t c = 0; c < LOCKSTEP_CLASSES; c++) {\n"
    "        /* 64 bit-sliced counters: counter j is the sum of bit j of plane[k] * 2^k */\n"
    "        for (size_t k = 0; k < LOCKSTEP_PLANES; k++)\n"
    "            plane[k] = 0;\n"
    "        for (size_t i = c * LOCKSTEP_GROUP; i < (c + 1) * LOCKSTEP_GROUP; i++) {\n"
    "            uint64_t w = out[i];\n"
    "            for (size_t k = 0; w != 0 && k < LOCKSTEP_PLANES; k++) {\n"
    "                const uint64_t carry = plane[k] & w;\n"
    "                plane[k] ^= w;\n"
    "                w = carry;\n"
    "            }\n"
    "        }\n"
    "        for (size_t j = 0; j < 64; j++) {\n"
    "            uint32_t n = 0;\n"
    "            for (size_t k = 0; k < LOCKSTEP_PLANES; k++)\n"
    "                n |= (uint32_t)((plane[k] >> j) & 1) << k;\n"
    "            if (counts != NULL)\n"
    "                counts[c * 64 + j] = n;\n"
    "            if (c == 0 || n > best[j]) {\n"
    "                best[j] = n;\n"
    "                pred[j] = (uint8_t)c;\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n"
    "#ifdef LOCKSTEP_CIRCUIT_MAIN\n"
    "/* Throughput: cc -O2 -std=c11 -DLOCKSTEP_CIRCUIT_MAIN FILE.c && ./a.out [WORDS] */\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <time.h>\n"
    "\n"
    "static double lockstep_now(void)\n"
    "{\n"
    "    struct timespec ts;\n"
    "    timespec_get(&ts, TIME_UTC);\n"
    "    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;\n"
    "}\n"
    "\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    const size_t words = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 4096;\n"
    "    uint64_t *in = malloc(LOCKSTEP_INPUTS * sizeof(uint64_t)), s = 1, check = 0;\n"
    "    uint8_t pred[64];\n"
    "    if (in == NULL || words == 0)\n"
    "        return 2;\n"
    "    double t0 = lockstep_now();\n"
    "    for (size_t w = 0; w < words; w++) {\n"
    "        for (size_t i = 0; i < LOCKSTEP_INPUTS; i++) {\n"
    "            uint64_t z = (s += 0x9e3779b97f4a7c15u);\n"
    "            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;\n"
    "            z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;\n"
    "            in[i] = z ^ (z >> 31);\n"
    "        }\n"
    "        lockstep_classify(pred, NULL, in);\n"
    "        for (size_t j = 0; j < 64; j++)\n"
    "            check = check * 31 + pred[j];\n"
    "    }\n"
    "    double t1 = lockstep_now();\n"
    "    printf(\"lockstep_classify: %.4g samples/s (%d active gates, 64 samples per word)\\n\",\n"
    "           (double)words * 64.0 / (t1 - t0), LOCKSTEP_ACTIVE_GATES);\n"
    "    printf(\"checksum %016llx\\n\", (unsigned long long)check);\n"
    "    free(in);\n"
    "    return 0;\n"
    "}\n"
    "#endif\n";

static void write_c_net(FILE *o, const export_ctx *x)
{
    const flat_circuit *f = x->f;
    int planes = 0;
    while (planes < 32 && (f->group >> planes) != 0)
        planes++;
    fputs("/* lockstep circuit - generated by `lockstep export --circuit`; do not edit.\n *\n", o);
    write_header(o, x, " * ");
    fputs(" *\n"
          " * The run's classifier as its hard circuit (argmax gate of every trained gate),\n"
          " * 64 samples per 64-bit word. Self-contained C99: only <stdint.h> and <stddef.h>.\n"
          " *\n"
          " *   lockstep_binarize(in, x, n): in[i] (i = feature*LOCKSTEP_BITS + t) gets bit t\n"
          " *     of every feature of samples j < n <= 64 (x [n][LOCKSTEP_FEATURES], floats\n"
          " *     in [0,1], e.g. pixel / 255.0f): x > lockstep_thr[t], at bit j of the word.\n"
          " *   lockstep_eval(out, in): out[i] = the word of output gate i; outputs\n"
          " *     [c*LOCKSTEP_GROUP, (c+1)*LOCKSTEP_GROUP) vote for class c.\n"
          " *   lockstep_classify(pred, counts, in): pred[j] = the class of sample j (the most\n"
          " *     votes, the lowest class on ties); counts [LOCKSTEP_CLASSES][64] or NULL.\n"
          " *   Compiled with -DLOCKSTEP_CIRCUIT_MAIN the file is a program that prints the\n"
          " *     throughput in samples per second ([WORDS] of 64 random samples, default 4096).\n"
          " * Gate gN is the engine's gate N (layers in order, gates in order).\n"
          " */\n"
          "#include <stddef.h>\n"
          "#include <stdint.h>\n\n",
          o);
    fprintf(o,
            "#define LOCKSTEP_FEATURES %zu\n"
            "#define LOCKSTEP_BITS %zu\n"
            "#define LOCKSTEP_INPUTS %zu\n"
            "#define LOCKSTEP_OUTPUTS %zu\n"
            "#define LOCKSTEP_CLASSES %zu\n"
            "#define LOCKSTEP_GROUP %zu\n"
            "#define LOCKSTEP_PLANES %d\n"
            "#define LOCKSTEP_ACTIVE_GATES %zu\n"
            "#define LOCKSTEP_GATES %zu\n\n",
            f->dim, f->bits, f->n_in, f->n_out, f->classes, f->group, planes, f->active, f->n_gates);
    fputs("/* (float)(t + 1) / (float)(LOCKSTEP_BITS + 1), exactly */\n"
          "static const float lockstep_thr[LOCKSTEP_BITS] = {", o);
    for (size_t t = 0; t < f->bits; t++)
        fprintf(o, "%s%af", t ? ", " : " ", (double)f->thr[t]);
    fputs(" };\n\n"
          "void lockstep_binarize(uint64_t *in, const float *x, size_t n);\n"
          "void lockstep_eval(uint64_t *out, const uint64_t *in);\n"
          "void lockstep_classify(uint8_t *pred, uint32_t *counts, const uint64_t *in);\n"
          "\n",
          o);
    write_gates(o, x, "void lockstep_eval(uint64_t *out, const uint64_t *in)", "in");
    fputs(NET_TAIL_C, o);
}

/* ---- weights ----------------------------------------------------------------------------------- */

/* A growing text buffer; oom set once an allocation failed. */
typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} text_buf;

static void tb_add(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tb_add(text_buf *b, const char *fmt, ...)
{
    for (;;) {
        if (b->oom)
            return;
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->p != NULL ? b->p + b->len : NULL, b->p != NULL ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            b->oom = 1;
            return;
        }
        if (b->p != NULL && b->len + (size_t)w < b->cap) {
            b->len += (size_t)w;
            return;
        }
        size_t cap = b->cap ? 2 * b->cap : 4096;
        while (cap <= b->len + (size_t)w)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (q == NULL) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

/* A tensor name as a JSON string. */
static void tb_json_string(text_buf *b, const char *s)
{
    tb_add(b, "\"");
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            tb_add(b, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            tb_add(b, "\\u%04x", c);
        else
            tb_add(b, "%c", c);
    }
    tb_add(b, "\"");
}

/* The model's tensors, or the one tensor "params"; checked to tile θ in
 * order with distinct names (a model that breaks this is a lockstep bug:
 * LS_EMISMATCH, nothing is written). */
static ls_status weight_tensors(const ls_model *m, ls_tensor *one, const ls_tensor **out, size_t *n, ls_err *err)
{
    const ls_model_info *mi = &m->info;
    if (mi->tensors == NULL || mi->n_tensors == 0) {
        *one = (ls_tensor){ "params", 0, 1, { mi->n_params, 0, 0, 0 } };
        *out = one;
        *n = 1;
        return LS_OK;
    }
    size_t at = 0;
    for (size_t i = 0; i < mi->n_tensors; i++) {
        const ls_tensor *t = &mi->tensors[i];
        size_t count = 1;
        int over = t->ndim > 4;
        for (size_t k = 0; k < t->ndim && !over; k++) {
            over = t->shape[k] != 0 && count > SIZE_MAX / t->shape[k];
            count *= t->shape[k];
        }
        if (t->name == NULL || t->name[0] == '\0' || strcmp(t->name, "__metadata__") == 0 || over ||
            t->offset != at || count > mi->n_params - at)
            return ls_fail(err, LS_EMISMATCH, "model %s: tensor %zu ('%s') does not continue θ at float %zu "
                           "(a lockstep bug; nothing written)", m->name, i, t->name != NULL ? t->name : "", at);
        for (size_t j = 0; j < i; j++)
            if (strcmp(mi->tensors[j].name, t->name) == 0)
                return ls_fail(err, LS_EMISMATCH, "model %s: two tensors are named '%s' (a lockstep bug; nothing "
                               "written)", m->name, t->name);
        at += count;
    }
    if (at != mi->n_params)
        return ls_fail(err, LS_EMISMATCH, "model %s: its tensors cover %zu of θ's %zu floats (a lockstep bug; "
                       "nothing written)", m->name, at, mi->n_params);
    *out = mi->tensors;
    *n = mi->n_tensors;
    return LS_OK;
}

/* The safetensors header: JSON, padded with spaces to a multiple of 8. */
static ls_status safetensors_header(text_buf *b, const ls_tensor *ts, size_t n, const runlog_run *run,
                                    const ls_session_state *info, ls_err *err)
{
    tb_add(b, "{");
    for (size_t i = 0; i < n; i++) {
        const ls_tensor *t = &ts[i];
        size_t count = 1;
        tb_json_string(b, t->name);
        tb_add(b, ":{\"dtype\":\"F32\",\"shape\":[");
        for (size_t k = 0; k < t->ndim; k++) {
            tb_add(b, "%s%zu", k ? "," : "", t->shape[k]);
            count *= t->shape[k];
        }
        tb_add(b, "],\"data_offsets\":[%zu,%zu]},", t->offset * sizeof(float), (t->offset + count) * sizeof(float));
    }
    tb_add(b, "\"__metadata__\":{\"lockstep_run\":\"%lld\",\"step\":\"%lld\",\"config_hash\":\"%016llx\","
           "\"param_hash\":\"%016llx\",\"format\":\"pt\"}}", (long long)run->id, (long long)info->step,
           (unsigned long long)info->config_hash, (unsigned long long)info->param_hash);
    while (!b->oom && b->len % 8 != 0)
        tb_add(b, " ");
    if (b->oom)
        return ls_fail(err, LS_ENOMEM, "out of memory for the safetensors header");
    return LS_OK;
}

static int has_suffix(const char *s, const char *sfx)
{
    const size_t n = strlen(s), k = strlen(sfx);
    return n > k && strcasecmp(s + n - k, sfx) == 0;
}

/* export --weights: the restored run's θ as .safetensors or .npy. */
static int export_weights(const cli_args *a, const char *path)
{
    ls_err err = { "" };
    const int npy = has_suffix(path, ".npy");
    if (!npy && !has_suffix(path, ".safetensors")) {
        fprintf(stderr, "lockstep export: --weights %s: name the file FILE.safetensors or FILE.npy (the format "
                "follows the name)\n", path);
        return EXIT_USAGE;
    }
    runlog *db;
    runlog_run run;
    int code = cli_open_run("export", a->db, a->positional[0], &db, &run);
    if (code != EXIT_OK)
        return code;
    cli_out out;
    ls_status st = cli_out_open(&out, "--weights", path, a->db, db, &err);
    if (st != LS_OK) {
        cli_error("export", &err, st);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    run_install_signals();
    ls_session *session = NULL;
    ls_session_state info;
    st = run_restore(a->db, run.id, a->threads[0], a->progress, &session, &info, &err);
    int bad_input = st != LS_OK && st != LS_EMISMATCH && st != LS_EINTR;
    trainer *t = session != NULL ? session_trainer(session) : NULL;
    if (st == LS_OK && t == NULL)
        st = ls_fail(&err, LS_EMISMATCH, "run %lld: the restored session has no trainer", (long long)run.id);
    ls_tensor one;
    const ls_tensor *ts = NULL;
    size_t n_ts = 0, n_params = 0;
    const float *params = NULL;
    if (st == LS_OK) {
        params = trainer_params(t);
        n_params = trainer_n_params(t);
        st = weight_tensors(trainer_model(t), &one, &ts, &n_ts, &err);
    }
    /* What is written is what the record proves: the hash of these very
     * floats is the recorded one. */
    uint64_t ph = 0;
    if (st == LS_OK && (ph = hash_params(params, n_params)) != info.param_hash)
        st = ls_fail(&err, LS_EMISMATCH, "run %lld: the restored parameters hash to %016llx, the record says "
                     "%016llx", (long long)run.id, (unsigned long long)ph, (unsigned long long)info.param_hash);
    if (st == LS_OK) {
        if (npy) {
            cli_npy_header(out.f, "<f4", &n_params, 1);
        } else {
            text_buf hb = { NULL, 0, 0, 0 };
            st = safetensors_header(&hb, ts, n_ts, &run, &info, &err);
            if (st == LS_OK) {
                unsigned char len8[8];
                for (int k = 0; k < 8; k++)
                    len8[k] = (unsigned char)((uint64_t)hb.len >> (8 * k));
                fwrite(len8, 1, sizeof len8, out.f);
                fwrite(hb.p, 1, hb.len, out.f);
            }
            free(hb.p);
        }
        if (st == LS_OK) {
            cli_write_f32le(out.f, params, n_params);
            st = cli_out_commit(&out, &err);
            bad_input = st != LS_OK;
        }
    }
    if (st != LS_OK) {
        cli_out_abort(&out);
        cli_error("export", &err, st);
        code = bad_input ? EXIT_USAGE : cli_exit_code(st);
    } else {
        char what[64];
        if (npy)
            snprintf(what, sizeof what, "one float32 array");
        else
            snprintf(what, sizeof what, "%zu F32 tensor%s", n_ts, n_ts == 1 ? "" : "s");
        printf("export: run %lld '%s' at step %lld (recomputed %lld recorded steps from step %lld: identical), "
               "wrote %s: %s, %zu floats, param hash %016llx (the record's)\n", (long long)run.id, run.name,
               (long long)info.step, (long long)info.replayed, (long long)info.resumed_from, path, what, n_params,
               (unsigned long long)info.param_hash);
    }
    ls_session_close(session, LS_OK, NULL);
    runlog_run_free(&run);
    runlog_close(db);
    return code;
}

/* ---- the command ------------------------------------------------------------------------------- */

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
    flat_circuit f;
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
                st = flat_from_ca(&f, h, &err);
            if (st == LS_OK)
                st = check_ca(&f, h, &err);
        } else {
            st = trainer_load_data(&cfg, &data, &err);
            if (st == LS_OK)
                st = flat_from_net(&f, &cfg, data, trainer_params(t), &err);
            if (st == LS_OK)
                st = check_net(&f, t, data, &err);
        }
    }
    if (st == LS_OK) {
        export_ctx x = { &run, &info, &cfg, &f, ca, ef.split,
                         ef.split < EXPORT_PART_GATES ? ef.split : EXPORT_PART_GATES, NULL, 0 };
        if (!netlist && f.active > ef.split)
            st = plan_slots(&x, &err);
        if (st == LS_OK) {
            if (netlist)
                write_netlist(out.f, &x);
            else if (ca)
                write_c_ca(out.f, &x);
            else
                write_c_net(out.f, &x);
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
    flat_free(&f);
    dataset_destroy(data);
    logic_ca_hard_destroy(h);
    ls_session_close(session, LS_OK, NULL);
    runlog_run_free(&run);
    runlog_close(db);
    return code;
}
