/* export_circuit.c — the C and netlist writers of `lockstep export
 * --circuit`, and the gate counts `lockstep report` shows (export_circuit.h). */
#include "tools/export_circuit.h"

#include <stdlib.h>
#include <string.h>

ls_status export_gate_counts(trainer *t, export_gates *g, ls_err *err)
{
    memset(g, 0, sizeof *g);
    const ls_config *cfg = trainer_config(t);
    const int ca = strcmp(cfg->model, "logic-ca") == 0;
    circuit_flat f;
    memset(&f, 0, sizeof f);
    logic_ca_hard *h = NULL;
    ls_dataset *data = NULL;
    ls_status st;
    if (ca) {
        st = logic_ca_hard_create(&h, trainer_model(t), trainer_params(t), err);
        if (st == LS_OK)
            st = circuit_from_ca(&f, h, err);
    } else {
        ls_config c = *cfg;
        const ls_dataset *have = trainer_data(t);
        st = have != NULL ? LS_OK : trainer_load_data(&c, &data, err);
        if (st == LS_OK)
            st = circuit_from_net(&f, &c, have != NULL ? have : data, trainer_params(t), err);
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
            g->op_names[k] = circuit_op_names[k];
    }
    circuit_free(&f);
    dataset_destroy(data);
    logic_ca_hard_destroy(h);
    return st;
}

static void node_name(const export_ctx *x, uint32_t node, int c_syntax, char *buf, size_t len)
{
    const circuit_flat *f = x->f;
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

void export_write_netlist(FILE *o, const export_ctx *x)
{
    const circuit_flat *f = x->f;
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
        if (circuit_op_reads(f->op[g], 0))
            node_name(x, f->a[g], 0, na, sizeof na);
        if (circuit_op_reads(f->op[g], 1))
            node_name(x, f->b[g], 0, nb, sizeof nb);
        fprintf(o, "g%zu = %s(%s, %s)\n", g, circuit_op_names[f->op[g]], na, nb);
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
ls_status export_plan_slots(export_ctx *x, ls_err *err)
{
    const circuit_flat *f = x->f;
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
            if (circuit_op_reads(f->op[g], k) && node >= f->n_in)
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
            if (!circuit_op_reads(f->op[g], k) || node < f->n_in || last[node - f->n_in] != g)
                continue;
            if (k == 1 && circuit_op_reads(f->op[g], 0) && f->a[g] == node)
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
            if (circuit_op_reads(f->op[g], k) && node >= f->n_in && owner[x->slot[node - f->n_in]] != node - f->n_in)
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
 * x->split gates each, on a value array v[] (slots reused, export_plan_slots),
 * every statement tagged with its gate, so no compiler meets one function of
 * tens of thousands of statements (gcc -O2 takes minutes on those). */
static void write_gates(FILE *o, const export_ctx *x, const char *sig, const char *in_name)
{
    const circuit_flat *f = x->f;
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

void export_write_c_ca(FILE *o, const export_ctx *x)
{
    const circuit_flat *f = x->f;
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

void export_write_c_net(FILE *o, const export_ctx *x)
{
    const circuit_flat *f = x->f;
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
