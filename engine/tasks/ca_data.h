/* ca_data.h — the data of the logic CA's tasks (engine/tasks/gol.c and
 * engine/tasks/checkerboard.c): the Game of Life boards and rule, the
 * checkerboard pattern and its random start states. The model
 * (engine/models/logic_ca/logic_ca.h) knows none of them: each task hands
 * its samples, targets and figures to the model through its hooks
 * (logic_ca_task); the functions here are what those hooks, the tests and
 * the tools share.
 *
 * gol: the 512 3×3 boards (board b: cell j = bit j of b, j row-major),
 * grid 3, target = the board after ca_steps Game of Life (B3/S23) steps on
 * the same borders; a batch takes boards by the engine's data order.
 * checkerboard: random start states, target on channel 0:
 * ((x/2)+(y/2)) % 2, x = column, y = row. Its start state of batch slot s
 * at training step t: channel c of cell n = 1 when rng_uniformf(seed,
 * RNG_CA_START, t, s, n·C + c) < 0.5.
 */
#ifndef LS_CA_DATA_H
#define LS_CA_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/config.h"
#include "include/lockstep.h"

#define LOGIC_CA_GOL_BOARDS 512

/* The 512 boards as a data set (train = test, dim 9, x8 bytes 0/1 — not
 * pixels —, y all 0, n_classes 0, name "gol", hash = XXH3_64bits of the
 * 4608 board bytes). */
ls_status logic_ca_gol_data(ls_dataset **out, ls_err *err);

/* The data set of cfg's task, as its loader makes it: gol's boards; for
 * checkerboard *out = NULL (start states are generated). For tests. */
ls_status logic_ca_make_data(const ls_config *cfg, ls_dataset **out, ls_err *err);

/* next = one B3/S23 step of cur, both [height][width] bytes 0/1. */
void logic_ca_life_step(uint8_t *next, const uint8_t *cur, size_t width, size_t height, int periodic);
/* out = board after `steps` life steps on a 3×3 grid. */
void logic_ca_life_target(uint8_t out[9], const uint8_t board[9], size_t steps, int periodic);
int logic_ca_checkerboard_target(size_t x, size_t y);
/* state [C][G²] floats 0/1: the checkerboard start state of slot `sample`. */
void logic_ca_start_state(float *state, size_t channels, size_t cells, uint64_t seed, int64_t step, size_t sample);

#endif
