/* wiring.c — the logic CA's circuit shape and wiring (logic_ca.h, "Random
 * numbers": wiring). Kernel layer 1 reads each neighbour against the
 * centre in an order drawn once (LOGIC_CA_PERM_ADDR); later kernel layers
 * and the update network use logic_wire_unique at their frozen addresses.
 * All kernels share the wiring: kernel 0's copy is drawn, the others are
 * offset copies of it.
 */
#include "engine/models/logic_ca/logic_ca_impl.h"

#include <string.h>

#include "engine/num/rng.h"

/* Patch positions read as input a by kernel layer 1 (the centre, 4, is b). */
static const uint32_t CA_NB[8] = { 0, 1, 2, 3, 5, 6, 7, 8 };

/* Fill net's shape (widths, offsets, layers pointing into a/b) from cfg and
 * wire it; a and b must hold net->gates entries. */
ls_status ca_wire_net(logic_ca_hard *net, const ca_config *cfg, ls_err *err)
{
    const size_t C = cfg->channels, K = cfg->kernels, np = cfg->n_perception, nu = cfg->n_layers;
    const size_t S = cfg->perception[np - 1];
    const uint64_t seed = cfg->seed;
    uint32_t perm[8];
    rng_permutation(perm, 8, seed, RNG_WIRING, LOGIC_CA_PERM_ADDR);
    for (size_t l = 0; l < np + nu; l++) {
        logic_layer *L = &net->layer[l];
        const size_t off = net->gate_off[l];
        uint32_t *a = net->a + off, *b = net->b + off;
        L->a = a;
        L->b = b;
        if (l == 0) {
            L->in = 9;
            L->out = K * 8;
            for (size_t k = 0; k < K; k++)
                for (size_t g = 0; g < 8; g++) {
                    a[k * 8 + g] = CA_NB[perm[g]];
                    b[k * 8 + g] = 4;
                }
        } else if (l < np) {
            const size_t win = cfg->perception[l - 1], w = cfg->perception[l];
            L->in = K * win;
            L->out = K * w;
            ls_err e = { { 0 } };
            ls_status st = logic_wire_unique(a, b, win, w, seed, l, &e);
            if (st != LS_OK)
                return ls_fail(err, st, "perception: kernel layer %zu (%zu -> %zu): %s", l + 1, win, w, e.msg);
            /* Kernel k reads its own block of the previous layer; kernel 0's
             * copy (offset 0) is already in place, so fill the others from it. */
            for (size_t k = K; k-- > 1;)
                for (size_t g = 0; g < w; g++) {
                    a[k * w + g] = a[g] + (uint32_t)(k * win);
                    b[k * w + g] = b[g] + (uint32_t)(k * win);
                }
        } else {
            const size_t j = l - np;
            const size_t in = j == 0 ? C + C * S * K : cfg->layers[j - 1];
            L->in = in;
            L->out = cfg->layers[j];
            ls_err e = { { 0 } };
            ls_status st = logic_wire_unique(a, b, in, cfg->layers[j], seed, LOGIC_CA_MAX_PERCEPTION + j, &e);
            if (st != LS_OK)
                return ls_fail(err, st, "layers: update layer %zu (%zu -> %zu): %s", j + 1, in, cfg->layers[j],
                               e.msg);
        }
    }
    return LS_OK;
}

/* Shape of the circuit: widths and gate offsets. */
void ca_net_shape(logic_ca_hard *net, const ca_config *cfg)
{
    memset(net, 0, sizeof *net);
    net->channels = cfg->channels;
    net->kernels = cfg->kernels;
    net->n_perception = cfg->n_perception;
    net->n_update = cfg->n_layers;
    net->n_layers = cfg->n_perception + cfg->n_layers;
    size_t g = 0;
    for (size_t l = 0; l < net->n_layers; l++) {
        net->gate_off[l] = g;
        if (l < net->n_perception) {
            net->width[l] = cfg->perception[l];
            g += cfg->kernels * cfg->perception[l];
        } else {
            net->width[l] = cfg->layers[l - net->n_perception];
            g += net->width[l];
        }
    }
    net->gate_off[net->n_layers] = g;
    net->gates = g;
}
