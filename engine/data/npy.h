/* npy.h — NumPy .npy files: the reader behind the `arrays` task, and the
 * writer of the files the command line writes.
 *
 * The format (numpy.lib.format): the magic "\x93NUMPY", a major and minor
 * version byte (1.0, 2.0 or 3.0), the header length (uint16 LE for 1.0,
 * uint32 LE for 2.0 and 3.0), then the header — a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), }
 * padded with spaces and ending in '\n' — then the raw data, C order.
 *
 * Accepted: descr of one of '<' '>' '|' '=' followed by a kind and size
 * among f4 f8 (floats), i1 i2 i4 i8 u1 u2 u4 u8 (integers), b1 (bool);
 * fortran_order False; a shape of 0 to NPY_MAX_DIMS entries. Refused with
 * LS_EFORMAT naming the file and the field: a bad magic, an unknown version,
 * a header that is not such a dict, a missing or repeated key, an object or
 * structured dtype, Fortran order, a shape whose element count overflows, a
 * data section shorter or longer than the shape says. '=' (native) reads as
 * little-endian: numpy writes '<' or '>' for multi-byte types itself.
 */
#ifndef LS_NPY_H
#define LS_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "include/lockstep.h"

#define NPY_MAX_DIMS 8

typedef struct {
    char kind;                  /* 'f' float, 'i' signed, 'u' unsigned, 'b' bool */
    size_t size;                /* bytes per element: 1, 2, 4 or 8 */
    int big_endian;
    size_t ndim;
    size_t shape[NPY_MAX_DIMS];
    size_t count;               /* elements: the product of the shape (1 for shape ()) */
    const uint8_t *data;        /* count·size bytes inside the parsed buffer */
} npy_array;

/* Parse a whole .npy file held in buf[0, len); `what` names it in errors. */
ls_status npy_parse(const uint8_t *buf, size_t len, npy_array *out, const char *what, ls_err *err);

/* Read a regular file whole (a FIFO, directory or device is refused without
 * blocking); *buf malloc'ed; *hash = XXH3_64bits of its bytes. */
ls_status npy_read_file(const char *path, uint8_t **buf, size_t *len, uint64_t *hash, ls_err *err);

/* Element i as a float (floats rounded once to binary32; integers
 * converted exactly when they fit in 24 bits). */
float npy_float(const npy_array *a, size_t i);
/* Refuses (LS_EFORMAT) a float array with an element that is NaN or
 * infinite as npy_float gives it (a float64 beyond binary32's range
 * included), naming `what`, the sample and the feature of the first one,
 * with dim features a sample: "x.npy: sample 3 feature 1 is NaN; features
 * must be finite". Such a feature would train a NaN model: a ReLU hides the
 * NaN from the loss, not from the gradient. Other kinds pass. */
ls_status npy_check_finite(const npy_array *a, size_t dim, const char *what, ls_err *err);
/* Element i of an integer or bool array as int64 (u8 beyond INT64_MAX
 * saturates; callers check the range they need). */
int64_t npy_int(const npy_array *a, size_t i);
/* Element i of an unsigned array as uint64, exactly (for naming a u8 value
 * that npy_int saturates). */
uint64_t npy_uint(const npy_array *a, size_t i);

/* The writer, for the files the command line hands back (predictions,
 * weights): the header of a format 1.0 file as numpy.save writes it, the
 * dict {'descr': DESCR, 'fortran_order': False, 'shape': (...), } padded
 * with spaces and a final '\n' so the data start at a multiple of 64 bytes.
 * descr e.g. "<f4", "<i8"; shape[ndim] (ndim 1 writes "(n,)"). Write errors
 * are left on f's error flag for the caller's final flush to report. */
void npy_write_header(FILE *f, const char *descr, const size_t *shape, size_t ndim);
/* n floats as binary32 little-endian, their bits unchanged. */
void npy_write_f32le(FILE *f, const float *x, size_t n);

#endif
