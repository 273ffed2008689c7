/* logic_ca_impl.h — what the files of the logic CA model share (private to
 * engine/models/logic_ca/): the model instance, its settings, and the
 * functions one file of the model calls in another.
 *
 *   logic_ca.c  the ls_model glue: the descriptor, create, check, the
 *               once-per-step preparation, metrics, the lanes and silent
 *               settings, the scratch and unit plans;
 *   wiring.c    the circuit's shape and its wiring from the seed;
 *   hard.c      the hard circuit: argmax ops, bit-sliced runs, evaluation;
 *   phase.c     training: one unit of one phase, the batch's start, leaves.
 */
#ifndef LS_LOGIC_CA_IMPL_H
#define LS_LOGIC_CA_IMPL_H

#include <stdlib.h>

#include "engine/models/logic_ca/logic_ca.h"

#define CA_ALIGN 64

/* The model's code calls its settings ca_config. */
typedef logic_ca_settings ca_config;

typedef struct {
    ca_config cfg;
    size_t C, K, S, G, N, R, T, B, np, nu;
    size_t uin;               /* update input rows: C + C·S·K */
    int periodic, async;
    float fire_rate;
    logic_ca_hard net;        /* shape and wiring (ops NULL) */
    /* scratch plan (per part, sized for the largest part) */
    size_t prow[LOGIC_CA_MAX_PERCEPTION];   /* first row of kernel layer l's output */
    size_t urow[LOGIC_MAX_LAYERS];       /* first row of update layer j's output */
    size_t prows, urows;      /* rows of each block */
    size_t max_nc;            /* most cells of a unit */
    int lanes;                /* lanes mode: a unit is a group of samples (header comment) */
    size_t units;             /* units of a phase: B·R, or the groups in lanes mode */
    size_t max_m;             /* most samples of a unit: 1, or the largest group */
    int skip_silent;          /* silent units skip their backward (logic_ca_set_silent) */
    int shared_in;            /* the update's input rows are the perception's output in place (choose_layout) */
    logic_layer in_layer;     /* update layer 0 wired to that layout's row numbers */
    size_t off_pa, off_ua, off_d0, off_d1, off_mask;   /* byte offsets in the scratch */

    uint32_t *wires;          /* [2][gates]: net.a, net.b; [2][update layer 0's gates]: in_layer's a, b;
                                 then [gates] bytes: each layer's first flags */
    size_t *row_lo;           /* [R + 1] first grid row of each part */
    int32_t *nbr;             /* [9][N]: the cell at patch position p of cell n, or −1 */
    const logic_ca_task *task;   /* what the task gives (logic_ca_task_of) */
    void *task_ctx;           /* its create's, or NULL */
    float *p, *coef;          /* [gates][16], [gates][4]: set by ca_prepare_part */
    /* per batch */
    float *state;             /* [T + 1][B][C][N] state_t of every sample */
    float *target;            /* [B][N] channel-0 target */
    float *dpatch;            /* [2][B][9][C][N] see the header comment */
    float *down;              /* [B][C][N] */
    float *dstate;            /* [B][C][N] d loss / d state_{t+1}, own cells */
    float *leaf_store;        /* [B·R][leaf_stride] each leaf's gate statistics */
    double *leaf_loss;        /* [B·R] each leaf's loss */
    size_t leaf_stride;       /* gates·4 rounded up to 16 floats */
    void *tables, *coefmem, *batchmem;
} logic_ca;

static inline size_t round16(size_t n) { return (n + 15) / 16 * 16; }
static inline size_t round_bytes(size_t n) { return (n + CA_ALIGN - 1) / CA_ALIGN * CA_ALIGN; }

static inline void *alloc_aligned(size_t bytes)
{
    return aligned_alloc(CA_ALIGN, round_bytes(bytes ? bytes : 1));
}

/* wiring.c */
/* Fill net's shape (widths, offsets, layers pointing into a/b) from cfg and
 * wire it; a and b must hold net->gates entries. */
ls_status ca_wire_net(logic_ca_hard *net, const ca_config *cfg, ls_err *err);
/* Shape of the circuit: widths and gate offsets. */
void ca_net_shape(logic_ca_hard *net, const ca_config *cfg);

/* hard.c */
/* The circuit of model instance ca with ops = argmax of params. */
ls_status ca_hard_create(logic_ca_hard **out, const logic_ca *ca, const float *params, ls_err *err);
/* Circuit h checked against cfg, then task's figures of it. */
ls_status ca_hard_metrics(const logic_ca_hard *h, const logic_ca_task *task, const ca_config *cfg, ls_metric *out,
                          size_t *n_out, ls_err *err);

/* phase.c */
/* The batch's start states and targets (one thread, before the phases). */
ls_status ca_start_batch(logic_ca *ca, const ls_batch *b, ls_err *err);
void ca_phase(void *self, const float *params, const ls_batch *b, size_t phase, size_t unit, void *scratch);
double ca_leaf(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
               void *scratch);
const float *ca_leaf_held(const void *self, size_t leaf, double *loss);

#endif
