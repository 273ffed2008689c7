/* export_circuit.h — `lockstep export RUN --circuit`: a flat hard circuit
 * (engine/models/logic/circuit.h) written as one self-contained C file that
 * evaluates 64 cells (logic-ca) or 64 samples (logic) per 64-bit word, or as
 * a text netlist. The C file and the netlist list exactly the active gates.
 *
 * C forms. Up to --split N active gates (default 4096) the gate function is
 * one straight-line function of locals, g<N> = expression: values live in
 * registers, the fastest code. Beyond, compilers take minutes on one such
 * function, so the gates go into external functions of EXPORT_PART_GATES
 * statements on a value array whose slots are reused once dead (export_plan_slots,
 * which proves its own plan before anything is written).
 */
#ifndef LS_EXPORT_CIRCUIT_H
#define LS_EXPORT_CIRCUIT_H

#include <stdio.h>

#include "engine/models/logic/circuit.h"
#include "tools/tools.h"

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
    const circuit_flat *f;
    int ca;
    size_t split;             /* most gates in the one-function form (the split form beyond it) */
    size_t part_gates;        /* split form: gates per part function */
    uint32_t *slot;           /* split form: [n_gates] the v[] slot of each active gate */
    size_t n_slots;
} export_ctx;

/* The slots of the split form into x->slot (malloc'ed; the caller frees it)
 * and x->n_slots, proved before anything is written. */
ls_status export_plan_slots(export_ctx *x, ls_err *err);
void export_write_netlist(FILE *o, const export_ctx *x);
void export_write_c_ca(FILE *o, const export_ctx *x);
void export_write_c_net(FILE *o, const export_ctx *x);

#endif
