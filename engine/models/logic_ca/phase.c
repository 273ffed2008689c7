/* phase.c — training the logic CA: one unit of one phase (logic_ca.h,
 * "Parts"; the layout and the backward through neighbours are in
 * logic_ca.c's header comment), the batch's start, and the leaves.
 *
 * A unit gathers its cells' patches from the stored states, runs the
 * perception and the update network forward (logic_forward), and in the
 * backward phases recomputes that step's activations and runs the gate
 * backward, leaving its gradients w.r.t. the states in dpatch and down for
 * the units of the step before, and its gate statistics in its own leaf.
 * Start states and targets are the task's (its sample hook), written on
 * one thread before the phases.
 */
#include "engine/models/logic_ca/logic_ca_impl.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/num/rng.h"

enum { PH_FWD = 0, PH_LAST = 1, PH_BWD = 2 };

typedef struct {
    logic_ca *ca;
    const ls_batch *b;
    size_t t;
    int kind;
} phase_ctx;

/* A unit's view: its samples s .. s+m−1 (one per part; up to LOGIC_LANES
 * in lanes mode), their cells cell0 .. cell0+nc−1 and its scratch. Element
 * (virtual lane vl, sample j) of a row is vl·W + j, W = m in lanes mode. */
typedef struct {
    size_t s, m, W, r, cell0, nc, ldp, ldu;
    float *pa, *ua, *d0, *d1;
    uint8_t *mask;            /* [2][max_m][max_nc]: fire masks of CA steps t and t+1 */
} part_view;

static void fire_mask(const logic_ca *ca, const ls_batch *b, const part_view *v, size_t j, size_t u, uint8_t *m)
{
    if (!ca->async) {
        memset(m, 1, v->nc);
        return;
    }
    for (size_t i = 0; i < v->nc; i++)
        m[i] = rng_uniformf(b->seed, RNG_CA_MASK, (uint64_t)b->step, v->s + j, u * ca->N + v->cell0 + i) <
               ca->fire_rate;
}

/* State plane of sample s at CA step t, [C][N]. */
static float *state_at(const logic_ca *ca, size_t t, size_t s)
{
    return ca->state + (t * ca->B + s) * ca->C * ca->N;
}

/* The dpatch planes [9][C][N] of sample s that the backward of CA step t
 * writes (buffer t & 1: the phase of t − 1 reads them while writing its own). */
static float *dpatch_at(const logic_ca *ca, size_t t, size_t s)
{
    return ca->dpatch + ((t & 1) * ca->B + s) * 9 * ca->C * ca->N;
}

/* The grid row of offset dy from row y: 1 when it exists (wrapped with
 * periodic borders), else 0 (outside a grid with borders). */
static int shifted_row(const logic_ca *ca, size_t y, long dy, size_t *out)
{
    long yy = (long)y + dy;
    if (yy < 0 || yy >= (long)ca->G) {
        if (!ca->periodic)
            return 0;
        yy = (yy + (long)ca->G) % (long)ca->G;
    }
    *out = (size_t)yy;
    return 1;
}

/* dst[(y − y0)·G + x] = the cell at patch position p of cell (x, y) in
 * `plane` for the rows y0 .. y1 − 1, 0 where a grid with borders has none:
 * the nbr table's gather as row copies (per-part path; the same values). */
static void gather_patch(const logic_ca *ca, float *dst, const float *plane, size_t p, size_t y0, size_t y1)
{
    const size_t G = ca->G;
    const long dy = (long)(p / 3) - 1, dx = (long)(p % 3) - 1;
    for (size_t y = y0; y < y1; y++, dst += G) {
        size_t yy;
        if (!shifted_row(ca, y, dy, &yy)) {
            memset(dst, 0, G * sizeof(float));
            continue;
        }
        const float *row = plane + yy * G;
        if (dx == 0) {
            memcpy(dst, row, G * sizeof(float));
        } else if (dx < 0) {
            memmove(dst + 1, row, (G - 1) * sizeof(float));
            dst[0] = ca->periodic ? row[G - 1] : 0.0f;
        } else {
            memmove(dst, row + 1, (G - 1) * sizeof(float));
            dst[G - 1] = ca->periodic ? row[0] : 0.0f;
        }
    }
}

/* acc[(y − y0)·G + x] += the term of (x, y)'s neighbour at offset (dx, dy)
 * in `plane`, for the rows y0 .. y1 − 1, where that neighbour exists (no
 * addition where a grid with borders has none, as the nbr table's −1):
 * one addition per cell, element-wise, so each cell's sum keeps its order
 * whatever the vector width. */
static void add_shifted(const logic_ca *ca, float *restrict acc, const float *restrict plane, long dx, long dy,
                        size_t y0, size_t y1)
{
    const size_t G = ca->G;
    for (size_t y = y0; y < y1; y++, acc += G) {
        size_t yy;
        if (!shifted_row(ca, y, dy, &yy))
            continue;
        const float *row = plane + yy * G;
        if (dx == 0) {
            #pragma omp simd
            for (size_t x = 0; x < G; x++)
                acc[x] = acc[x] + row[x];
        } else if (dx < 0) {
            if (ca->periodic)
                acc[0] = acc[0] + row[G - 1];
            #pragma omp simd
            for (size_t x = 1; x < G; x++)
                acc[x] = acc[x] + row[x - 1];
        } else {
            #pragma omp simd
            for (size_t x = 0; x < G - 1; x++)
                acc[x] = acc[x] + row[x + 1];
            if (ca->periodic)
                acc[G - 1] = acc[G - 1] + row[0];
        }
    }
}

/* n consecutive elements of each of the unit's m samples (sample j's at
 * src + j·stride) into a lanes row: dst[i·W + j]. The per-part path
 * (W = 1, m = 1) is a plain copy. */
static void into_lanes(float *dst, const float *src, size_t stride, size_t n, const part_view *v)
{
    if (v->W == 1) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < v->m; j++)
            dst[i * v->W + j] = src[j * stride + i];
}

/* Sample j's n elements of a lanes row: dst[i] = src[i·W + j]. */
static void out_of_lanes(float *dst, const float *src, size_t n, size_t j, const part_view *v)
{
    if (v->W == 1) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i * v->W + j];
}

/* Gate layer l as the training kernels run it: update layer 0 renumbered
 * when the update's input rows are the perception's output (choose_layout). */
static const logic_layer *soft_layer(const logic_ca *ca, size_t l)
{
    return ca->shared_in && l == ca->np ? &ca->in_layer : &ca->net.layer[l];
}

/* Zeros in the tails of rows [r0, r1) of ld floats, past their n lanes:
 * the forward runs whole vectors, and a tail of stale scratch could hold
 * subnormals (slow) though nothing is ever read back from it. */
static void clear_tails(float *rows, size_t r0, size_t r1, size_t n, size_t ld)
{
    if (n < ld)
        for (size_t r = r0; r < r1; r++)
            memset(rows + r * ld + n, 0, (ld - n) * sizeof(float));
}

/* Activations of CA step t of the unit's cells from state_t; returns the
 * update network's output rows (C rows of ldu). The tails of the input
 * rows are zeros (clear_tails): they run through the gates like the
 * other lanes and are never read back. */
static const float *part_forward(const logic_ca *ca, const part_view *v, size_t t)
{
    const size_t C = ca->C, K = ca->K, S = ca->S, N = ca->N, nc = v->nc, W = v->W, ldp = v->ldp, ldu = v->ldu;
    const float *st = state_at(ca, t, v->s);   /* sample s + j at st + j·C·N */
    float *pa = v->pa, *ua = v->ua;
    /* The per-part path (W = 1) copies rows. */
    const size_t y0 = ca->row_lo[v->r], y1 = ca->row_lo[v->r + 1];
    for (size_t p = 0; p < 9; p++) {
        const int32_t *nb = ca->nbr + p * N + v->cell0;
        for (size_t c = 0; c < C; c++) {
            float *dst = pa + p * ldp + c * nc * W;
            const float *src = st + c * N;
            if (W == 1)
                gather_patch(ca, dst, src, p, y0, y1);
            else
                for (size_t i = 0; i < nc; i++)
                    for (size_t j = 0; j < W; j++)
                        dst[i * W + j] = nb[i] >= 0 ? src[j * C * N + (size_t)nb[i]] : 0.0f;
        }
    }
    clear_tails(pa, 0, 9, C * nc * W, ldp);
    for (size_t l = 0; l < ca->np; l++) {
        const size_t off = ca->net.gate_off[l];
        /* the last kernel layer straight into the update's input rows when they share a layout */
        float *y = ca->shared_in && l + 1 == ca->np ? ua + C * ldu : pa + ca->prow[l] * ldp;
        logic_forward(y, pa + (l == 0 ? 0 : ca->prow[l - 1]) * ldp, &ca->net.layer[l], ca->coef + 4 * off,
                      C * nc * W, ldp);
    }
    for (size_t c = 0; c < C; c++)
        into_lanes(ua + c * ldu, st + c * N + v->cell0, C * N, nc, v);
    if (!ca->shared_in) {
        const float *plast = pa + ca->prow[ca->np - 1] * ldp;
        for (size_t c = 0; c < C; c++)
            for (size_t s = 0; s < S; s++)
                for (size_t k = 0; k < K; k++)
                    memcpy(ua + (C + c * S * K + s * K + k) * ldu, plast + (k * S + s) * ldp + c * nc * W,
                           nc * W * sizeof(float));
        clear_tails(ua, C, ca->uin, nc * W, ldu);
    }
    clear_tails(ua, 0, C, nc * W, ldu);
    for (size_t j = 0; j < ca->nu; j++) {
        const size_t l = ca->np + j, off = ca->net.gate_off[l];
        logic_forward(ua + ca->urow[j] * ldu, ua + (j == 0 ? 0 : ca->urow[j - 1]) * ldu, soft_layer(ca, l),
                      ca->coef + 4 * off, nc * W, ldu);
    }
    return ua + ca->urow[ca->nu - 1] * ldu;
}

/* Backward of gate layer l on the unit: nvl virtual lanes of its m
 * samples, sample j's statistics at stats + j·stride (stats of the whole
 * network); dx (when not NULL) set on each row's first update
 * (LOGIC_DX_SET), never cleared. */
static void layer_backward(const logic_ca *ca, const part_view *v, size_t l, float *dx, float *stats, size_t stride,
                           const float *dy, const float *x, size_t nvl, size_t ld, int acc)
{
    const logic_layer *L = soft_layer(ca, l);
    const size_t off = ca->net.gate_off[l];
    const int flags = (acc ? LOGIC_STATS_ADD : 0) | LOGIC_DX_SET;
    if (v->W == 1)
        logic_backward(dx, stats + 4 * off, dy, x, L, ca->coef + 4 * off, nvl, ld, flags);
    else   /* rows of LOGIC_LANES_LD(nvl, m) floats (ld): ldp and ldu are round16(nvl·m) */
        logic_backward_lanes(dx, stats + 4 * off, stride, dy, x, L, ca->coef + 4 * off, nvl, v->m, flags);
}

/* Backward of CA step t from dY (C rows of ldu in v->d0), activations from
 * part_forward. Sample j's statistics into stats + j·stride (written when
 * acc == 0, else added); with write_d the gradients w.r.t. the step's input
 * states go to down and dpatch (buffer t & 1). */
static void part_backward(logic_ca *ca, const part_view *v, size_t t, float *stats, size_t stride, int acc,
                          int write_d)
{
    const size_t C = ca->C, K = ca->K, S = ca->S, N = ca->N, nc = v->nc, W = v->W, ldp = v->ldp, ldu = v->ldu;
    float *cur = v->d0, *oth = v->d1, *tmp;
    for (size_t j = ca->nu; j-- > 0;) {
        layer_backward(ca, v, ca->np + j, oth, stats, stride, cur, v->ua + (j == 0 ? 0 : ca->urow[j - 1]) * ldu,
                       nc, ldu, acc);
        tmp = cur, cur = oth, oth = tmp;
    }
    if (write_d)
        for (size_t j = 0; j < v->m; j++) {
            float *down = ca->down + (v->s + j) * C * N + v->cell0;
            for (size_t c = 0; c < C; c++)
                out_of_lanes(down + c * N, cur + c * ldu, nc, j, v);
        }
    /* The kernels' last layer's dy: the update's input rows past the state
     * rows, in place or copied to the kernels' layout. */
    const float *dy = cur + C * ldu;
    if (!ca->shared_in) {
        for (size_t c = 0; c < C; c++)
            for (size_t s = 0; s < S; s++)
                for (size_t k = 0; k < K; k++)
                    memcpy(oth + (k * S + s) * ldp + c * nc * W, cur + (C + c * S * K + s * K + k) * ldu,
                           nc * W * sizeof(float));
        clear_tails(oth, 0, K * S, C * nc * W, ldp);
        tmp = cur, cur = oth, oth = tmp;
        dy = cur;
    }
    for (size_t l = ca->np; l-- > 0;) {
        float *dx = l > 0 || write_d ? oth : NULL;
        layer_backward(ca, v, l, dx, stats, stride, dy, v->pa + (l == 0 ? 0 : ca->prow[l - 1]) * ldp, C * nc,
                       ldp, acc);
        tmp = cur, cur = oth, oth = tmp;
        dy = cur;
    }
    if (write_d)
        for (size_t j = 0; j < v->m; j++) {
            float *dp = dpatch_at(ca, t, v->s + j) + v->cell0;
            for (size_t p = 0; p < 9; p++)
                for (size_t c = 0; c < C; c++)
                    out_of_lanes(dp + (p * C + c) * N, cur + p * ldp + c * nc * W, nc, j, v);
        }
}

/* Unit `unit`'s samples and cells: part unit % R of sample unit / R, or in
 * lanes mode group `unit`, samples [unit·B/groups, (unit+1)·B/groups).
 * Returns 0 when none of its samples is in a batch of `batch`. */
static int unit_view(const logic_ca *ca, size_t unit, size_t batch, void *scratch, part_view *v)
{
    if (ca->lanes) {
        v->s = unit * ca->B / ca->units;
        const size_t end = (unit + 1) * ca->B / ca->units;
        v->m = (end < batch ? end : batch) - v->s;
        v->W = v->m;   /* packed (header comment) */
        v->r = 0;
    } else {
        v->s = unit / ca->R;
        v->m = 1;
        v->W = 1;
        v->r = unit % ca->R;
    }
    if (v->s >= batch)
        return 0;
    v->cell0 = ca->row_lo[v->r] * ca->G;
    v->nc = (ca->row_lo[v->r + 1] - ca->row_lo[v->r]) * ca->G;
    v->ldp = round16(ca->C * v->nc * v->W);
    v->ldu = round16(v->nc * v->W);
    v->pa = (float *)(void *)((char *)scratch + ca->off_pa);
    v->ua = (float *)(void *)((char *)scratch + ca->off_ua);
    v->d0 = (float *)(void *)((char *)scratch + ca->off_d0);
    v->d1 = (float *)(void *)((char *)scratch + ca->off_d1);
    v->mask = (uint8_t *)scratch + ca->off_mask;
    return 1;
}

/* Silent units (logic_ca.h, logic_ca_set_silent). The unit's dY (v->d0,
 * built from d_state_{t+1}) is silent when every lane the backward reads
 * (cells i < nc of samples j < m) is below the kernels' floor in magnitude:
 * the gate backward reads each of them as +0 (NaN is not below it). */
static int unit_silent(const logic_ca *ca, const part_view *v)
{
    for (size_t c = 0; c < ca->C; c++) {
        const float *d = v->d0 + c * v->ldu;
        for (size_t i = 0; i < v->nc; i++)
            for (size_t j = 0; j < v->m; j++)
                if (!(fabsf(d[i * v->W + j]) < LOGIC_GRAD_FLOOR))
                    return 0;
    }
    return 1;
}

static atomic_size_t silent_units;

size_t logic_ca_silent_units(void)
{
    return atomic_load(&silent_units);
}

/* What part_backward gives a silent unit whose activations and
 * coefficients are finite and at most 2^60 in magnitude, without them:
 * every gate's d is +0, so every dx row it sets is +0 (a first update adds
 * ±0 to 0.0f, later ones add ±0 to +0) and each statistic gains +0, layer
 * after layer. So down and dpatch are +0, and the statistics keep their
 * bits: stats + 0.0f differs from stats only for −0, and these never are −0
 * (written by this unit's last phase as sums that start at +0.0f, then sums
 * with them; in round to nearest a sum is −0 only when both terms are). The
 * model defines a silent unit's backward to be this, whatever its
 * activations (logic_ca.h). */
static void silent_unit(logic_ca *ca, const part_view *v, size_t t)
{
    const size_t C = ca->C, N = ca->N;
    if (t > 0)
        for (size_t j = 0; j < v->m; j++) {
            float *down = ca->down + (v->s + j) * C * N + v->cell0;
            float *dp = dpatch_at(ca, t, v->s + j) + v->cell0;
            for (size_t c = 0; c < C; c++)
                memset(down + c * N, 0, v->nc * sizeof(float));
            for (size_t p = 0; p < 9 * C; p++)
                memset(dp + p * N, 0, v->nc * sizeof(float));
        }
}

static void phase_part(void *ctx, size_t unit, void *scratch)
{
    const phase_ctx *ph = ctx;
    logic_ca *ca = ph->ca;
    const ls_batch *b = ph->b;
    const size_t C = ca->C, N = ca->N, R = ca->R, t = ph->t;
    part_view v;
    if (!unit_view(ca, unit, b->batch, scratch, &v))
        return;
    const size_t nc = v.nc, W = v.W, ldu = v.ldu;
    uint8_t *mask = v.mask, *mask1 = v.mask + ca->max_m * ca->max_nc;   /* sample j's at + j·nc */

    if (ph->kind == PH_BWD) {
        /* d_state_{t+1} of the unit's cells (see the header comment). */
        for (size_t j = 0; j < v.m; j++) {
            const size_t s = v.s + j;
            uint8_t *m1 = mask1 + j * nc;
            fire_mask(ca, b, &v, j, t + 1, m1);
            const float *down = ca->down + s * C * N;
            const float *dp = dpatch_at(ca, t + 1, s);
            float *dstate = ca->dstate + s * C * N;
            /* Term p of cell n comes from n's neighbour at patch position
             * 8 − p, added position by position over the unit's rows into
             * d0 (free until dY is built below). */
            float *acc = v.d0;
            const size_t y0 = v.cell0 / ca->G, y1 = y0 + nc / ca->G;   /* lanes mode: the whole grid */
            for (size_t c = 0; c < C; c++) {
                memcpy(acc, down + c * N + v.cell0, nc * sizeof(float));
                for (size_t p = 0; p < 9; p++)
                    add_shifted(ca, acc, dp + (p * C + c) * N, (long)((8 - p) % 3) - 1, (long)((8 - p) / 3) - 1, y0,
                                y1);
                for (size_t i = 0; i < nc; i++) {
                    const size_t n = v.cell0 + i;
                    float d = acc[i];
                    if (!m1[i])
                        d = d + dstate[c * N + n];
                    dstate[c * N + n] = d;
                }
            }
        }
    }

    for (size_t j = 0; j < v.m; j++)
        fire_mask(ca, b, &v, j, t, mask + j * nc);
    if (ph->kind == PH_FWD || ph->kind == PH_LAST) {
        const float *y = part_forward(ca, &v, t);
        for (size_t j = 0; j < v.m; j++) {
            const size_t s = v.s + j;
            const uint8_t *m = mask + j * nc;
            const float *st = state_at(ca, t, s);
            float *next = state_at(ca, t + 1, s);
            for (size_t c = 0; c < C; c++)
                for (size_t i = 0; i < nc; i++) {
                    const size_t n = v.cell0 + i;
                    next[c * N + n] = m[i] ? y[c * ldu + i * W + j] : st[c * N + n];
                }
            if (ph->kind == PH_FWD)
                continue;
            /* The loss on channel 0 after the last step, binary64 in cell order. */
            const float *tg = ca->target + s * N;
            float *dstate = ca->dstate + s * C * N;
            double loss = 0.0;
            for (size_t i = 0; i < nc; i++) {
                const size_t n = v.cell0 + i;
                const double e = (double)next[n] - (double)tg[n];
                loss = loss + e * e;
                dstate[n] = 2.0f * (next[n] - tg[n]);
            }
            for (size_t c = 1; c < C; c++)
                memset(dstate + c * N + v.cell0, 0, nc * sizeof(float));
            ca->leaf_loss[s * R + v.r] = loss;
        }
        if (ph->kind == PH_FWD)
            return;
    }
    for (size_t c = 0; c < C; c++) {
        if (W == 1) {
            const float *dstate = ca->dstate + v.s * C * N + c * N + v.cell0;
            for (size_t i = 0; i < nc; i++)
                v.d0[c * ldu + i] = mask[i] ? dstate[i] : 0.0f;
        } else {
            for (size_t i = 0; i < nc; i++)
                for (size_t j = 0; j < W; j++)
                    v.d0[c * ldu + i * W + j] =
                        mask[j * nc + i] ? ca->dstate[(v.s + j) * C * N + c * N + v.cell0 + i] : 0.0f;
        }
    }
    clear_tails(v.d0, 0, C, nc * W, ldu);   /* the kernels' dx tails then stay ±0 (logic.h) */
    float *stats = ca->leaf_store + (v.s * R + v.r) * ca->leaf_stride;
    if (ph->kind == PH_BWD) {
        if (unit_silent(ca, &v)) {
            atomic_fetch_add_explicit(&silent_units, 1, memory_order_relaxed);
            if (ca->skip_silent) {
                silent_unit(ca, &v, t);
                return;
            }
        }
        part_forward(ca, &v, t);
    }
    part_backward(ca, &v, t, stats, R * ca->leaf_stride, ph->kind == PH_BWD, t > 0);
}

/* The batch's start states and targets (one thread, before the phases):
 * the task's, slot by slot. */
ls_status ca_start_batch(logic_ca *ca, const ls_batch *b, ls_err *err)
{
    const size_t C = ca->C, N = ca->N;
    if (b->batch == 0 || b->batch > ca->B)
        return ls_fail(err, LS_EINVAL, "logic-ca: batch of %zu samples (the model holds %zu)", b->batch, ca->B);
    for (size_t s = 0; s < b->batch; s++) {
        float *st = ca->state + s * C * N;
        float *tg = ca->target + s * N;
        ls_status e = ca->task->sample(ca->task_ctx, &ca->cfg, b, s, st, tg, err);
        if (e != LS_OK)
            return e;
    }
    return LS_OK;
}

/* Phases 0 .. T−2 step forward, phase T−1 is the last step forward with the
 * loss and its backward, phases T .. 2T−2 step backward through CA steps
 * T−2 .. 0. Unit u is part u % R of sample u / R. A batch of B' <= B
 * samples keeps the arrays' layout for B; its units index samples below B'. */
void ca_phase(void *self, const float *params, const ls_batch *b, size_t phase, size_t unit, void *scratch)
{
    (void)params;   /* prepare derived the coefficients from params */
    logic_ca *ca = self;
    phase_ctx ph = { .ca = ca, .b = b };
    if (phase + 1 < ca->T) {
        ph.t = phase;
        ph.kind = PH_FWD;
    } else if (phase + 1 == ca->T) {
        ph.t = phase;
        ph.kind = PH_LAST;
    } else {
        ph.t = 2 * ca->T - 2 - phase;
        ph.kind = PH_BWD;
    }
    phase_part(&ph, unit, scratch);
}

/* Leaf s·R + r: the statistics part r of sample s gathered in the phases. */
double ca_leaf(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
               void *scratch)
{
    (void)params;
    (void)b;
    (void)scratch;
    const logic_ca *ca = self;
    const float *src = ca->leaf_store + leaf * ca->leaf_stride;
    const size_t n = ca->net.gates * 4;
    if (mode == LS_LEAF_ADD) {
        #pragma omp simd   /* element-wise: exact whatever the vector width */
        for (size_t i = 0; i < n; i++)
            buf[i] = buf[i] + src[i];
    } else {
        memcpy(buf, src, n * sizeof(float));
    }
    return ca->leaf_loss[leaf];
}

/* The same leaf where the phases left it (ls_model_desc.leaf_held). */
const float *ca_leaf_held(const void *self, size_t leaf, double *loss)
{
    const logic_ca *ca = self;
    *loss = ca->leaf_loss[leaf];
    return ca->leaf_store + leaf * ca->leaf_stride;
}
