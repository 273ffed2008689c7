/* safetensors.h — a strict reader of .safetensors files, for a run's
 * starting weights (--init).
 *
 * The format (huggingface/safetensors): an 8-byte little-endian header
 * length N, N bytes of JSON — an object whose keys are tensor names, each
 * {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]}, and
 * an optional "__metadata__" object of strings — then the data: tensor t's
 * bytes are [8 + N + begin, 8 + N + end), row-major, little-endian.
 *
 * Refused with LS_EFORMAT naming the file and what is wrong: a file shorter
 * than its header says, a header that is not such an object (strict JSON:
 * no trailing commas, no comments, numbers only as non-negative integers
 * where the format has them), a key repeated, a tensor without one of the
 * three fields, offsets out of order or past the data, a byte count that
 * is not the shape's element count times the dtype's size.
 */
#ifndef LS_SAFETENSORS_H
#define LS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

#define SAFETENSORS_MAX_DIMS 8
#define SAFETENSORS_MAX_BYTES ((size_t)1 << 36)   /* 64 GiB: more than any θ the engine holds */

typedef struct {
    char name[128];
    char dtype[16];             /* "F32", "F16", "BF16", "I64", ... */
    size_t ndim;
    size_t shape[SAFETENSORS_MAX_DIMS];
    const uint8_t *data;        /* its bytes inside the parsed buffer */
    size_t bytes;
} safetensors_tensor;

typedef struct {
    safetensors_tensor *tensors;   /* in the header's order */
    size_t n;
} safetensors_file;

/* Parse a whole file held in buf[0, len) (kept by the caller while *out is
 * used); `what` names it in errors. safetensors_free releases *out. */
ls_status safetensors_parse(const uint8_t *buf, size_t len, const char *what, safetensors_file *out, ls_err *err);
void safetensors_free(safetensors_file *f);

/* The starting weights: the file at path read whole, its XXH3_64 in *hash,
 * its tensors matched by name with the model's (ts[0, n_ts); NULL: one
 * tensor "params" of [n_params]) and copied into params. LS_EINVAL naming
 * the tensor when one is missing, one is extra, a shape differs (both
 * shapes), a dtype is not F32 or an element is NaN or infinite (naming
 * the tensor and the element's index); LS_EIO when the file cannot be read or is
 * not a regular file (base/file.h: a FIFO or a device is refused without
 * blocking), LS_EFORMAT when it is malformed. */
ls_status safetensors_load_params(const char *path, const ls_tensor *ts, size_t n_ts, size_t n_params, float *params,
                                  uint64_t *hash, ls_err *err);

#endif
