/* logic_net.h — the `logic` classification model: a difflogic network of
 * two-input gate layers with a GroupSum head (docs/models.md).
 *
 * Input: each feature v (a float in [0,1] from dataset_gather) becomes `bits`
 * binary inputs, bit i = (v > (float)(i+1) / (float)(bits+1)), at input row
 * feature·bits + i. Layers of gates of widths cfg->layers; layer l is wired
 * by logic_wire_random or logic_wire_unique (cfg->wiring) with
 * (cfg->seed, addr = l). Head: the last layer's width W must be a multiple
 * of the class count k; logit_c = (Σ y_i over gates i in [c·W/k, (c+1)·W/k),
 * increasing i, from 0.0f) / tau, softmax cross-entropy in binary64.
 *
 * Parameters: the 16 logits of every gate, layer by layer, gate by gate
 * ([total gates][16]; the order of the parameter hash). Leaf buffer: the four
 * gate statistics ([total gates][4], logic.h). Finish units are gates. The
 * model trains on the batch mean: finish expands the summed statistics with
 * logic_expand, then divides each logit gradient by (float)B (one float
 * division per element). Evaluation is hard: argmax ops, 64 samples per
 * machine word, predicted class = argmax of the group bit counts (lowest
 * index on ties).
 */
#ifndef LS_LOGIC_NET_H
#define LS_LOGIC_NET_H

#include <stddef.h>

#include "engine/core/config.h"
#include "engine/data/dataset.h"
#include "engine/core/model.h"
#include "include/lockstep.h"

/* The model's descriptor (keys bits, layers, leaf, residual, tau, wiring;
 * a leaf model: info.phases = 0, leaves of `leaf` samples). Its create
 * needs a data set (input width, class count); LS_EINVAL naming the field
 * for a bad shape, LS_ENOMEM. */
extern const ls_model_desc logic_model;

#endif
