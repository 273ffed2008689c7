/* circuit.h — the hard circuit of a trained logic or logic-ca network as one
 * flat list of two-input gates in evaluation order, with the dead gates
 * marked: what `lockstep export --circuit` writes as C or a netlist and what
 * `lockstep report` counts. It is model knowledge (how the layers are wired
 * and unrolled), so it lives with the logic models, not with the writers.
 *
 * Nodes 0 .. n_in−1 are the inputs, node n_in + i is gate i; a gate reads
 * only inputs and earlier gates.
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
 *
 * The checks evaluate the flat circuit against the engine's own hard
 * evaluation; a disagreement is a lockstep bug (LS_EMISMATCH), and callers
 * write nothing then.
 */
#ifndef LS_CIRCUIT_H
#define LS_CIRCUIT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/config.h"
#include "engine/core/train.h"
#include "engine/data/dataset.h"
#include "engine/models/logic/logic.h"
#include "engine/models/logic_ca/logic_ca.h"
#include "include/lockstep.h"

/* One allocation holds a, b, out, op and live; circuit_free releases it. */
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
} circuit_flat;

/* The op names of the netlist, by op index (logic.h's order). */
extern const char *const circuit_op_names[LOGIC_OPS];

/* Whether op's output depends on operand a (which = 0) or b (which = 1). */
int circuit_op_reads(int op, int which);

/* *f zeroed on entry is filled and pruned; circuit_free it (also after an
 * error, and on a zeroed f). */
ls_status circuit_from_ca(circuit_flat *f, const logic_ca_hard *h, ls_err *err);
/* The logic model's circuit rebuilt from its config, data set shape and
 * parameters (params: the model's θ). */
ls_status circuit_from_net(circuit_flat *f, const ls_config *cfg, const ls_dataset *data, const float *params,
                           ls_err *err);
void circuit_free(circuit_flat *f);

/* The pruned circuit against logic_ca_hard_step on a small random grid,
 * periodic and zero-bordered, every channel of every cell. */
ls_status circuit_check_ca(const circuit_flat *f, const logic_ca_hard *h, ls_err *err);
/* The pruned circuit's test accuracy against the trainer's hard evaluation
 * (data: the trainer's data set). */
ls_status circuit_check_net(const circuit_flat *f, trainer *t, const ls_dataset *data, ls_err *err);

#endif
