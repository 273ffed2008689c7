/* ca_data.c — the data of the logic CA's tasks (ca_data.h): the Game of
 * Life rule and boards, the checkerboard pattern and start states.
 */
#include "engine/tasks/ca_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/num/rng.h"

void logic_ca_life_step(uint8_t *next, const uint8_t *cur, size_t width, size_t height, int periodic)
{
    for (size_t y = 0; y < height; y++)
        for (size_t x = 0; x < width; x++) {
            int n = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    if (dy == 0 && dx == 0)
                        continue;
                    long ny = (long)y + dy, nx = (long)x + dx;
                    if (periodic) {
                        ny = (ny + (long)height) % (long)height;
                        nx = (nx + (long)width) % (long)width;
                    } else if (ny < 0 || nx < 0 || ny >= (long)height || nx >= (long)width) {
                        continue;
                    }
                    n += cur[(size_t)ny * width + (size_t)nx] != 0;
                }
            const int alive = cur[y * width + x] != 0;
            next[y * width + x] = (uint8_t)(n == 3 || (alive && n == 2));
        }
}

int logic_ca_checkerboard_target(size_t x, size_t y)
{
    return (int)((x / 2 + y / 2) % 2);
}

void logic_ca_start_state(float *state, size_t channels, size_t cells, uint64_t seed, int64_t step, size_t sample)
{
    for (size_t c = 0; c < channels; c++)
        for (size_t n = 0; n < cells; n++)
            state[c * cells + n] =
                rng_uniformf(seed, RNG_CA_START, (uint64_t)step, sample, n * channels + c) < 0.5f ? 1.0f : 0.0f;
}

void logic_ca_life_target(uint8_t out[9], const uint8_t board[9], size_t steps, int periodic)
{
    uint8_t a[9], b[9];
    for (int j = 0; j < 9; j++)
        a[j] = board[j] != 0;
    for (size_t u = 0; u < steps; u++) {
        logic_ca_life_step(b, a, 3, 3, periodic);
        memcpy(a, b, sizeof a);
    }
    memcpy(out, a, 9);
}

ls_status logic_ca_make_data(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    *out = NULL;
    if (cfg->task_desc == NULL || cfg->task_desc->load == NULL)
        return ls_fail(err, LS_EINVAL, "logic-ca: task '%s' has no loader", cfg->task);
    return cfg->task_desc->load(cfg, out, err);
}

ls_status logic_ca_gol_data(ls_dataset **out, ls_err *err)
{
    *out = NULL;
    const size_t n = LOGIC_CA_GOL_BOARDS, dim = 9;
    ls_dataset *d = calloc(1, sizeof *d);
    uint8_t *mem = d != NULL ? malloc(n * dim + n) : NULL;
    if (mem == NULL) {
        free(d);
        return ls_fail(err, LS_ENOMEM, "gol data set: out of memory");
    }
    uint8_t *x = mem, *y = mem + n * dim;
    for (size_t b = 0; b < n; b++)
        for (size_t j = 0; j < dim; j++)
            x[b * dim + j] = (uint8_t)((b >> j) & 1);
    memset(y, 0, n);
    snprintf(d->name, sizeof d->name, "%s", "gol");
    d->n_classes = 0;
    d->hash = XXH3_64bits(x, n * dim);
    d->train = (ls_split){ .n = n, .dim = dim, .x8 = x, .xf = NULL, .y = y };
    d->test = d->train;
    d->mem = mem;
    *out = d;
    return LS_OK;
}
