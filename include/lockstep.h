/* lockstep.h — the public API of lockstep: training whose bits do not depend
 * on the thread count, recorded step by step in SQLite.
 *
 * One header, two libraries (liblockstep.a, liblockstep.so.1: the soname
 * carries LS_VERSION_MAJOR). It gives:
 *   - status codes (fixed numbers) and one-line error texts the caller owns;
 *   - the config: typed keys declared by the engine, the model and the task,
 *     and its canonical text (one key=value a line, keys sorted);
 *   - the session: one run — config, data, model, worker pool, reducer,
 *     optimiser and (optionally) its record — opened new, or reopened from
 *     the record to resume it or to restore it to its last recorded step;
 *   - the model and task descriptors the built-in models and tasks use, and
 *     ls_register_model / ls_register_task to add one's own;
 *   - what a model written outside the library needs to keep the contract:
 *     the engine's addressed random numbers (ls_rng_*) and its exp and log
 *     (ls_exp, ls_log, ...), whose bits are the same on every build;
 *   - a session's model applied to samples (ls_session_predict), θ as named
 *     tensors (ls_session_tensor), and ls_equiv, one config trained at
 *     several thread counts and compared bit for bit;
 *   - (1.1) runs of other frameworks recorded step by step (ls_record_*)
 *     with the canonical tensor hash (ls_tensor_hash), verify naming the
 *     first differing tensor and a loss tolerance (ls_verify_ex), and golden
 *     files of recorded runs (ls_golden_save, ls_golden_compare);
 *   - (1.2) labels beyond a byte: a data set of up to 2^31 - 1 classes keeps
 *     int32 labels (ls_dataset_labels, ls_dataset_label,
 *     ls_dataset_gather_labels).
 *
 * The contract. For a config C the parameters after step t are a function of
 * C alone: not of the thread count, the schedule, a resume, the compiler, the
 * optimisation level or the SIMD path taken. A model added with
 * ls_register_model keeps the contract as the built-in ones do, provided its
 * functions are pure (each result a function of the parameters, the batch
 * and addressed random numbers) and every sum inside them has an order fixed
 * in its code. Every sum over a batch's samples runs over atoms: LS_ATOM
 * consecutive samples from slot 0 (the last atom shorter when LS_ATOM does
 * not divide the batch), each atom summed in sample order, and the atoms
 * added along one fixed binary tree over their indices:
 *     sum(l, n) = atom(l)                       if n == 1
 *               = sum(l, k) + sum(l + k, n - k) otherwise, k = largest power of two < n.
 * A leaf (the unit of work: a speed and memory setting, not part of the
 * config) is LS_ATOM·2^m samples, so it is a subtree, and so is every block
 * of leaves a thread or a rank sums: the bits depend on no leaf size.
 *
 * Frozen (a change needs a new version number of that format and readers of
 * the old one):
 *   - the hash definitions (LS_HASH_FORMAT): param_hash_t = XXH3_64bits of
 *     θ_t's binary32 values, little-endian, NaNs canonicalised; traj_0 =
 *     XXH3_64bits(canonical config text ‖ param_hash_0 as 8 bytes LE); traj_t =
 *     XXH3_64bits(traj_{t−1} ‖ param_hash_t ‖ binary64 bits of the loss of step
 *     t), each 8 bytes LE;
 *   - the canonical config text (LS_CONFIG_FORMAT, the key format=1);
 *   - the tensor hash (LS_TENSOR_HASH_FORMAT, ls_tensor_hash) and the
 *     parameter hash of an external run's step (ls_tensor_set_hash);
 *   - the record's schema version (LS_RECORD_SCHEMA, SQLite user_version;
 *     version 2 added per-tensor hashes and external runs, and a writer
 *     upgrades a version-1 file in place when it opens it);
 *   - the golden file formats (LS_GOLDEN_FORMAT: "# lockstep golden v1", a
 *     config re-run by `golden check`, still read and written; "v2", a
 *     recorded run of any framework with its per-tensor hashes, ls_golden_*);
 *   - the numbers of ls_status.
 * Versions. Everything else here may change, but only as follows: a new
 * LS_VERSION_MAJOR whenever a public struct's layout or a function's
 * signature changes (an ABI break: the soname liblockstep.so.MAJOR follows
 * it, so a program built against another major version does not load this
 * library), a new LS_VERSION_MINOR when functions or constants are added, a
 * new LS_VERSION_PATCH for fixes. Major version 1 added the size field:
 * every descriptor and option struct (ls_model_desc, ls_task_desc,
 * ls_session_opts, ls_equiv_opts, and since 1.1 ls_verify_opts) opens with
 *     size_t size;   = sizeof(the struct) as the caller compiled it
 * which registration, ls_session_open / ls_session_reopen and ls_equiv
 * check: 0, or a size this library does not know, is LS_EINVAL naming the
 * struct and both sizes (a descriptor or options built for another layout is
 * refused, not misread). A later version that appends fields at the end of
 * such a struct keeps accepting the sizes it knows from earlier ones.
 *
 * Threads: a session is driven by one thread at a time; several sessions may
 * live in one process. Register models and tasks before opening sessions.
 * The library never prints and never exits.
 */
#ifndef LOCKSTEP_H
#define LOCKSTEP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_VERSION_MAJOR 1
#define LS_VERSION_MINOR 2
#define LS_VERSION_PATCH 0
#define LS_VERSION_STRING "1.2.0"

#define LS_HASH_FORMAT 1
#define LS_CONFIG_FORMAT 2
/* Samples per atom (above): part of the contract, the same for every model. */
#define LS_ATOM 16
#define LS_RECORD_SCHEMA 2
#define LS_GOLDEN_FORMAT 2
#define LS_TENSOR_HASH_FORMAT 1

/* "1.2.0": the version of the library actually linked. */
const char *ls_version(void);

/* ---- status ------------------------------------------------------------- */

/* Never renumbered, only appended to. */
typedef enum {
    LS_OK = 0,
    LS_ENOMEM = 1,     /* an allocation failed */
    LS_EINVAL = 2,     /* a bad argument or configuration value */
    LS_EIO = 3,        /* reading or writing a file failed */
    LS_EFORMAT = 4,    /* a file's contents are malformed */
    LS_EDB = 5,        /* the SQLite record failed */
    LS_ENOTFOUND = 6,  /* a run, file or key does not exist */
    LS_EDIVERGED = 7,  /* the loss or a parameter became NaN or infinite */
    LS_EFPENV = 8,     /* the floating-point environment breaks the contract */
    LS_EMISMATCH = 9,  /* recomputed bits differ from recorded bits */
    LS_EINTR = 10,     /* interrupted by a signal */
    LS_EEXIST = 11     /* a name or file already exists */
} ls_status;

/* One line of detail for the user, naming the file, field or value at fault;
 * msg[0] == 0 when nothing was said. The caller owns it. */
typedef struct {
    char msg[512];
} ls_err;

/* Short fixed text for a status ("out of memory", ...). Never NULL. */
const char *ls_strerror(ls_status st);

/* Fill err (if not NULL) with a printf-formatted line and return st, so a
 * failure reads: return ls_fail(err, LS_EINVAL, "--batch: %s is not ...", v); */
ls_status ls_fail(ls_err *err, ls_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- config keys -------------------------------------------------------- */

typedef enum {
    LS_KEY_TEXT = 0,    /* a word; `choices` lists the allowed ones (NULL: any non-empty text) */
    LS_KEY_INT = 1,     /* an integer in [lo, hi], written in decimal (read as size_t) */
    LS_KEY_U64 = 2,     /* any unsigned 64-bit integer, decimal */
    LS_KEY_FLOAT = 3,   /* a binary32 in [lo, hi], written in C's %a form */
    LS_KEY_SWITCH = 4,  /* 0 or 1; on the command line "--key" alone means 1 */
    LS_KEY_LIST = 5     /* up to LS_LIST_MAX integers in [lo, hi]: "256,256" or "128x17,64" */
} ls_key_type;

#define LS_LIST_MAX 64
#define LS_TEXT_MAX 256   /* a TEXT value, its terminating NUL included (a declared model's layers) */

/* A config key declared by a model, a task or the engine. The flag is
 * "--name" with '-' for '_'. A key is in a run's config (and its canonical
 * text) when its model or task is the run's, and, with only_if set, while
 * its condition holds. */
typedef struct {
    const char *name;      /* [a-z0-9_], at most 31 characters */
    ls_key_type type;
    const char *def;       /* the default, as text (parsed like a user's value) */
    double lo, hi;         /* range of INT, FLOAT and each LIST entry, inclusive */
    const char *choices;   /* TEXT: space-separated allowed values, or NULL */
    const char *only_if;   /* NULL; a switch key that must be 1 ("async"); or key=value,
                              a text key that must have that value ("optimizer=sgd") */
    const char *help;      /* one line for --help */
    int list_runs;         /* LIST: write runs of equal entries as WxN ("8000x6") */
} ls_key;

/* ---- the config ---------------------------------------------------------- */

/* Every setting that can change some θ_t: the task and model, the engine's
 * keys (seed, batch, optimizer, lr, momentum, beta1, beta2, eps,
 * weight_decay, clip, reduce, data_hash, format) and the keys of the model
 * and the task. Settings that cannot (threads, database, name, step count)
 * are not in it. */
typedef struct ls_config ls_config;

/* A config with the defaults of task and model (NULL: the task's default
 * model): engine defaults, then the model's, then the task's settings for
 * that model. Unknown names and pairs that do not go together: LS_EINVAL. */
ls_status ls_config_create(ls_config **out, const char *task, const char *model, ls_err *err);
/* Parse a canonical text (key=value lines; keys absent take their defaults). */
ls_status ls_config_parse(ls_config **out, const char *text, ls_err *err);
void ls_config_destroy(ls_config *cfg);   /* accepts NULL */

/* Set one key from text; "task" and "model" may not be set this way. Unknown
 * keys and bad values: LS_EINVAL naming the key and the value. A text key
 * is checked here for its length only; what its text must say (a declared
 * model's `layers`, docs/models.md) is the model's check, which
 * ls_config_check and ls_session_open run. */
ls_status ls_config_set(ls_config *cfg, const char *key, const char *value, ls_err *err);
/* Cross-field checks; LS_EINVAL naming the field. */
ls_status ls_config_check(const ls_config *cfg, ls_err *err);

/* The canonical text into buf (always terminated when len > 0); returns its
 * full length. */
size_t ls_config_text(const ls_config *cfg, char *buf, size_t len);
uint64_t ls_config_hash(const ls_config *cfg);   /* XXH3_64bits of the canonical text */

/* Typed values of keys that apply (others: 0, "" or an empty list). INT and
 * SWITCH keys read with ls_config_int, U64 with ls_config_u64. */
int64_t ls_config_int(const ls_config *cfg, const char *key);
uint64_t ls_config_u64(const ls_config *cfg, const char *key);
float ls_config_float(const ls_config *cfg, const char *key);
const char *ls_config_str(const ls_config *cfg, const char *key);
size_t ls_config_list(const ls_config *cfg, const char *key, const size_t **values);
/* The value of a task's source key, or of the engine's "init" (the
 * starting weights, --init; 1.1) ("" when not given). */
#define LS_MAX_SOURCES 4
#define LS_SOURCE_MAX 4096
const char *ls_config_source(const ls_config *cfg, const char *key);

/* ---- data ---------------------------------------------------------------- */

/* n samples of dim features with labels below n_classes. Features are bytes
 * 0..255 (x8, read as v/255.0f) or floats (xf). Labels are bytes (y) when
 * the data set has at most 256 classes; with more, y is NULL and the labels
 * are int32 (ls_dataset's train_labels and test_labels, 1.2). */
typedef struct {
    size_t n;
    size_t dim;
    const uint8_t *x8;   /* [n][dim], or NULL */
    const float *xf;     /* [n][dim], or NULL */
    const uint8_t *y;    /* [n]; NULL when the labels are int32 (over 256 classes) */
} ls_split;

/* Made by the library (ls_dataset_create, ls_arrays_dataset, a task's
 * loader). 1.2 appended train_labels and test_labels at the end; the library
 * reads them only when train.y is NULL (int32 labels, over 256 classes), so
 * a data set of byte labels laid out by 1.1's header still reads right. */
typedef struct ls_dataset {
    char name[32];
    size_t n_classes;
    uint64_t hash;       /* the data's identity: part of the config (data_hash) */
    ls_split train, test;
    void *mem;           /* owns what the splits point to */
    /* Added in 1.2: the labels as int32, 0 .. n_classes - 1 (n_classes at
     * most 2^31 - 1), when train.y is NULL; else both NULL. ls_dataset_label
     * reads a label in either form. */
    const int32_t *train_labels;   /* [train.n] */
    const int32_t *test_labels;    /* [test.n] */
} ls_dataset;

/* A data set of float features, zeroed, for a task's loader to fill through
 * ls_dataset_x and, for at most 256 classes, ls_dataset_y (bytes), for more
 * (1.2, up to 2^31 - 1) ls_dataset_labels (int32); then ls_dataset_seal
 * checks every label is in 0 .. n_classes - 1 and every feature finite
 * (LS_EINVAL naming the first that is not: the data set's name, the split,
 * sample and feature) and computes the identity: XXH3_64bits over train x
 * (binary32 LE), train y, test x, test y, a label one byte when n_classes <=
 * 256, else four (int32 LE). */
ls_status ls_dataset_create(ls_dataset **out, const char *name, size_t n_classes, size_t dim, size_t n_train,
                            size_t n_test, ls_err *err);
float *ls_dataset_x(ls_dataset *d, int test);
uint8_t *ls_dataset_y(ls_dataset *d, int test);   /* NULL when the labels are int32 */
ls_status ls_dataset_seal(ls_dataset *d, ls_err *err);
void ls_dataset_destroy(ls_dataset *d);   /* accepts NULL */
/* (1.2) The int32 labels of a data set of more than 256 classes (for its
 * loader to fill before ls_dataset_seal); NULL when its labels are bytes. */
int32_t *ls_dataset_labels(ls_dataset *d, int test);
/* (1.2) The label of sample i of the train (test = 0) or test split, in
 * either form. */
int32_t ls_dataset_label(const ls_dataset *d, int test, size_t i);

/* x[i][.] = features of sample ids[i] as floats; y[i] its label (y may be
 * NULL). Byte labels only: for a split whose y is NULL (int32 labels) y is
 * left unwritten; ls_dataset_gather_labels takes both forms. */
void ls_dataset_gather(const ls_split *s, const uint32_t *ids, size_t count, float *x, uint8_t *y);
/* (1.2) The same from the train (test = 0) or test split of d, the labels
 * as int32 whichever form d keeps them in (y may be NULL). */
void ls_dataset_gather_labels(const ls_dataset *d, int test, const uint32_t *ids, size_t count, float *x,
                              int32_t *y);

/* ---- arithmetic for models: random numbers, exp and log ------------------- */

/* The engine's own addressed random numbers and transcendental functions,
 * for models and tasks written outside the library: a model's result must be
 * a function of the parameters, the batch and addressed random numbers, and
 * libm's exp and log differ in the last bit between versions and machines.
 * These are the very functions the built-in models call (same code, same
 * bits); their results are the same on every build, compiler, optimisation
 * level and thread count, and are frozen: known-answer tests pin them, and
 * a changed bit would change every golden file. Pure functions of their
 * arguments, safe on any thread.
 *
 * An addressed random number is a function of (seed, purpose, a, b, c)
 * alone, so no generator state exists to share between threads or to carry
 * across steps. With mix(z) = SplitMix64's finaliser
 *     z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
 *     z *= 0x94d049bb133111eb; z ^= z >> 31
 * and all arithmetic modulo 2^64:
 *     h0 = mix(seed ^ 0x6a09e667f3bcc909)
 *     h1 = mix(h0 + (purpose + 1) * 0x9e3779b97f4a7c15)
 *     h2 = mix(h1 + (a + 1) * 0xbb67ae8584caa73b)
 *     h3 = mix(h2 + (b + 1) * 0x3c6ef372fe94f82b)
 *     ls_rng_u64 = mix(h3 + (c + 1) * 0xa54ff53a5f1d36f1)
 * purpose says what the number is for, so two uses never share numbers: the
 * engine's own purposes are below LS_RNG_USER (a model's initial weights use
 * LS_RNG_INIT with a = the tensor, b = the element, as the built-in models
 * do); a model's or task's other draws take LS_RNG_USER + k. */
enum {
    LS_RNG_INIT = 1,          /* initial parameters: a = tensor index, b = element index */
    LS_RNG_DATA = 4,          /* synthetic inputs of a task */
    LS_RNG_EVAL = 8,          /* evaluation inputs */
    LS_RNG_USER = 0x10000     /* and above: never used by the engine */
};
uint64_t ls_rng_u64(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c);
/* (float)(ls_rng_u64 >> 40) · 2^-24: uniform in [0, 1), 24 bits, every value exact. */
float ls_rng_uniformf(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c);
/* (double)(ls_rng_u64 >> 11) · 2^-53: uniform in [0, 1), 53 bits. */
double ls_rng_uniform(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c);
/* A standard normal: Box-Muller's cosine branch in binary64, rounded once,
 * (float)(sqrt(2 · (0 − ls_log(1 − u1))) · cos(2π u2)) with the engine's
 * cosine, u1 and u2 the 53-bit uniforms of the address with purpose + 2^32
 * and purpose + 2^33 (64-bit purposes no ls_rng_u64 call can reach). */
float ls_rng_normalf(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c);
/* An integer in [0, bound): the high 64 bits of ls_rng_u64 · bound (a
 * 128-bit product; no rejection, so the bias is below bound / 2^64). */
uint64_t ls_rng_below(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c, uint64_t bound);
/* perm = a permutation of 0..n−1 by Fisher-Yates from the top: for k = n−1
 * down to 1, swap perm[k] and perm[ls_rng_below(seed, purpose, a, k, 0, k + 1)]. */
void ls_rng_permutation(uint32_t *perm, size_t n, uint64_t seed, uint32_t purpose, uint64_t a);

/* e^x in binary64, below 0.8 ulp: +inf above 709.8, 0 below −745.2, NaN
 * for NaN. x = k·ln2 + r with k = x·log2(e) rounded half away from zero, ln2
 * split in two parts so that k·ln2_hi is exact, e^r − 1 − r by its Taylor
 * polynomial to degree 13 (Horner, coefficients 1/n! rounded once), the sum
 * 1 + r formed exactly, and the result scaled by 2^k through the exponent
 * bits. Only + − * / and bit operations, in an order fixed in the code. */
double ls_exp(double x);
/* ln x in binary64, below 0.8 ulp: −inf at 0, NaN below 0 and for NaN, +inf
 * at +inf. x = m·2^e with m in [√½, √2), s = (m − 1)/(m + 1), ln m = 2
 * atanh s by its series to s^23, e·ln2 added in two parts. */
double ls_log(double x);
/* (float) of ls_exp((double)x) and ls_log((double)x): one rounding. */
float ls_expf(float x);
float ls_logf(float x);
/* 1/(1 + ls_exp(−x)) for x >= 0, e/(1 + e) with e = ls_exp(x) otherwise, in
 * binary64, rounded once to binary32. */
float ls_sigmoidf(float x);
/* tanh in binary64, rounded once: (e − 1)/(e + 1) with e = ls_exp(2|x|),
 * |x| − |x|³/3 for |x| < 2^−12, 1 for |x| > 22, the sign restored last. */
float ls_tanhf(float x);

/* ---- models -------------------------------------------------------------- */

/* A model needs no C when it is a declaration: the built-in model "seq"
 * takes its layers as text, e.g. ls_config_create(&cfg, "arrays", "seq"),
 * ls_config_set(cfg, "layers", "conv3x3:16,relu,maxpool2,dense:10") and
 * ls_config_set(cfg, "image", "28,28,1"); its backward is derived from the
 * layers' own (the grammar, the layers and their tensors' names:
 * docs/models.md, seq). "cnn" and "gpt" are such declarations with their
 * own defaults. A model written in C is an ls_model_desc (below), added
 * with ls_register_model. */

/* Leaf modes: write the leaf's statistics into buf, or add them to buf
 * (buf = buf + leaf, the leaf summed on its own first, element by element),
 * as the tree asks. Either way the bits are those of the tree's node. A
 * model is asked for LS_LEAF_ADD only when it says it adds itself
 * (ls_model_desc.leaf_adds); for any other the engine writes the leaf into
 * a buffer of its own and adds that to buf, which is the same sum. */
enum { LS_LEAF_WRITE = 0, LS_LEAF_ADD = 1 };

/* One step's batch: B samples in slot order. Slot j of step t takes stream
 * position q = (t−1)·B + j, epoch q div N, sample perm_e[q mod N]. */
typedef struct {
    const ls_dataset *data;   /* the task's data, or NULL for generated samples */
    const uint32_t *ids;      /* [batch] train sample ids, or NULL without data */
    size_t batch;
    int64_t step;             /* 1-based */
    uint64_t seed;
} ls_batch;

/* A named part of θ, for exporting weights: floats [offset, offset +
 * product of shape), row-major. */
typedef struct {
    const char *name;         /* "W1", "b1", ... */
    size_t offset;
    size_t ndim;
    size_t shape[4];
} ls_tensor;

/* Promises a model may make that only make its steps faster: the engine
 * takes a shorter path when it is given one, with the same bits as without
 * it. None can change what is computed, but none can be checked either:
 * a promise that does not hold changes the bits with the thread count. So
 * the environment variable LOCKSTEP_HINTS=off makes the engine ignore
 * every one of them (and ls_model_desc.leaf_held and leaf_adds), which is
 * the check: a run with and without them, at several thread counts, must
 * give the same trajectory (tests/test_plan.c does so for every built-in
 * model). All zero: no promise. */
typedef struct {
    int finish_mean;          /* 1: finish is exactly grad[i] = sum[i] / (float)batch for every i (finish_units =
                                 n_params <= leaf_len): the engine then folds that division into the
                                 optimiser's update and skips finish, the same bits with one pass less */
    size_t finish_span;       /* 0, or: finish of units [lo, hi) reads only sum[lo·finish_span, hi·finish_span):
                                 the engine then lets each finish thread combine the tree's last pass over
                                 just those coordinates, the same bits with one pass and one barrier less.
                                 A span too small for what finish reads is not caught: at one thread
                                 (one block) the bits still agree, at more they change with the thread
                                 count; compare with the model declaring 0 at several thread counts */
    size_t phase_group;       /* 0, or: unit u of phase k+1 reads and overwrites only what phase k's units
                                 near u read and wrote: those of u's group (phase_group consecutive units,
                                 which must divide units) at distance at most phase_reach (less than
                                 phase_group) from u, u included, the distance taken around the group
                                 when phase_wrap is 1 (a part and its neighbouring parts of one sample,
                                 say). The engine then starts each unit as soon as those are done
                                 instead of after a barrier: the same bits, without the wait for the
                                 slowest unit of each phase. Like finish_span, a promise the engine
                                 cannot check: compare with the model declaring 0 at several thread
                                 counts */
    size_t phase_reach;
    int phase_wrap;
} ls_model_hints;

/* What a model instance needs from the engine, filled by create. A step runs
 * `phases` phases of `units` work units each (units of a phase in parallel,
 * a barrier between phases unless hints.phase_group says less), then computes
 * `leaves` leaves, which the tree sums; finish maps the sum to the gradient
 * in ranges of [0, finish_units). */
typedef struct {
    size_t n_params;          /* floats in θ */
    size_t leaf_len;          /* floats in one leaf buffer */
    size_t leaves;            /* leaves of one step */
    size_t phases;            /* 0 for a model whose leaves need no earlier phase */
    size_t units;             /* work units of each phase */
    size_t finish_units;
    size_t scratch_bytes;     /* per worker, 64-byte aligned, for phases, leaves and eval */
    size_t eval_chunk;        /* most test samples one eval call takes (0: no eval) */
    int mean_loss;            /* 1: train on the batch mean (sums divided by B after the tree) */
    double flops_per_sample;  /* floating-point operations of one sample's step, for benchmarks; 0: unknown */
    const ls_tensor *tensors; /* θ as named tensors in order, covering [0, n_params) (owned by the
                                 instance); NULL: one tensor "params" */
    size_t n_tensors;
    size_t inputs, outputs;   /* scores: features per sample in, scores per sample out (0: none) */
    size_t prepare_parts;     /* parts of prepare_part (0: none) */
    ls_model_hints hints;     /* speed-only promises (ls_model_hints); all 0: none */
    /* Added in 1.1 (the engine zeroes info before create, so a model built
     * against 1.0 leaves it NULL): [n_tensors], 1 where tensor i takes no
     * weight decay under decay_groups=weights (biases, norms, embeddings);
     * NULL: every tensor decays. Owned by the instance. */
    const unsigned char *no_decay;
} ls_model_info;

/* One evaluation figure, recorded under its name. */
typedef struct {
    char name[32];            /* "test_acc", "hard_acc", ... */
    double value;
} ls_metric;
#define LS_MAX_METRICS 8

/* A model: one constant descriptor. `self` is the instance create made.
 * Every function that can run in parallel (phase, leaf, finish, eval) must
 * write only its own outputs and keep its sums in a fixed order. */
typedef struct ls_model_desc {
    size_t size;              /* sizeof(ls_model_desc) as the caller compiled it */
    const char *name;         /* [a-z0-9-], at most 15 characters */
    const char *summary;      /* one line for --help */
    const char *tasks;        /* space-separated tasks it trains besides those whose
                                 descriptors name it (NULL: none) */
    const ls_key *keys;
    size_t n_keys;

    ls_status (*create)(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                        ls_err *err);
    void (*destroy)(void *self);
    /* Optional: cross-field checks of the model's keys before anything is
     * built (LS_EINVAL naming the key). */
    ls_status (*check)(const ls_config *cfg, ls_err *err);
    /* θ_0 from addressed random numbers of seed. */
    void (*init)(const void *self, float *params, uint64_t seed);
    /* Once per step on one thread, before the phases and leaves (and
     * before prepare_part); b is NULL when it prepares an evaluation. May
     * be NULL. */
    ls_status (*prepare)(void *self, const float *params, const ls_batch *b, ls_err *err);
    /* Work unit `unit` of phase `phase`; NULL when info.phases == 0. */
    void (*phase)(void *self, const float *params, const ls_batch *b, size_t phase, size_t unit, void *scratch);
    /* Leaf `leaf`'s statistics into buf as mode says (LS_LEAF_WRITE unless
     * leaf_adds); returns its summed loss. */
    double (*leaf)(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
                   void *scratch);
    /* grad[lo, hi) (in finish units) from the tree sum over a batch of `batch` samples. */
    void (*finish)(const void *self, const float *sum, size_t batch, float *grad, size_t lo, size_t hi);
    /* Optional: correct predictions on test samples [first, first + count). */
    size_t (*eval)(const void *self, const float *params, const ls_dataset *data, size_t first, size_t count,
                   void *scratch);
    /* Optional: scores (class logits, or what the model predicts) of count
     * samples x [count][inputs] into out [count][outputs]; the predicted
     * class is the highest score, the lowest index on ties. */
    void (*scores)(const void *self, const float *params, const float *x, size_t count, float *out, void *scratch);
    /* Optional: figures of the current parameters instead of test_acc. */
    ls_status (*metrics)(void *self, const float *params, const ls_dataset *data, ls_metric *out, size_t *n_out,
                         ls_err *err);
    /* Optional, with metrics: per-sample work the engine spreads over its
     * threads just before it calls metrics — metric_part for every test
     * sample, in any order, on any thread. It may write only what belongs to
     * that sample (a slot of its own in the model's instance), so metrics,
     * combining the slots in sample order, gives the same figures at any
     * thread count. scratch: scratch_bytes, as for leaf. */
    void (*metric_part)(void *self, const float *params, const ls_dataset *data, size_t sample, void *scratch);
    /* Optional, with info.prepare_parts: the share of the once-per-step
     * preparation that splits (softmaxes of gate logits, transposed
     * weights), part 0 .. prepare_parts − 1 run on the engine's threads in
     * any order right after prepare, for a step and for an evaluation alike.
     * A part may write only what belongs to it. */
    void (*prepare_part)(void *self, const float *params, size_t part);
    /* Optional, for a model whose phases leave every leaf in a buffer of
     * its own: leaf `leaf` as `leaf` would write it (leaf_len floats, read
     * only, valid until the next step's phases), its loss in *loss. With
     * finish_span, the engine then sums the leaves along the canonical tree
     * inside the finish, each thread over the coordinates its finish reads,
     * reading the leaves where they are: the same bits, with no pass that
     * copies them into the tree's buffers and one barrier less. `leaf`
     * stays required: the engine calls it instead under --reduce unordered,
     * across MPI ranks, in a sweep's staged steps, with finish_mean, and
     * when the finish has fewer than 16 units per thread. A hint like those
     * of ls_model_hints: ignored under LOCKSTEP_HINTS=off. */
    const float *(*leaf_held)(const void *self, size_t leaf, double *loss);
    /* 1: leaf computes LS_LEAF_ADD itself (adding into buf as it goes saves
     * the engine's separate pass over a leaf buffer); 0: leaf is only ever
     * asked to write, and the engine does the add. The sum must be the
     * same either way: LOCKSTEP_HINTS=off has the engine add for every model. */
    int leaf_adds;
    /* Added in 1.1 (a descriptor of 1.0's size reads it as 0). 1: the
     * model's leaf key ("leaf", samples per leaf) may be any LS_ATOM·2^m,
     * and leaf sums its leaf's samples as the canonical tree over the
     * leaf's atoms (the subtree: include/lockstep.h, the contract). 0: the
     * engine creates the model with leaf = LS_ATOM, so each of its leaves
     * is one atom, summed in sample order, and the engine's tree does the
     * rest; --leaf then changes nothing. A model without a leaf key is
     * unaffected. */
    int leaf_atoms;
} ls_model_desc;
/* The size of a 1.0 ls_model_desc (before leaf_atoms), also accepted. */
#define LS_MODEL_DESC_SIZE_1_0 offsetof(ls_model_desc, leaf_atoms)

/* ---- tasks --------------------------------------------------------------- */

/* Settings a task gives one of its models over the model's defaults:
 * "key=value" lines, each ending with '\n' (ls_register_task refuses two
 * on one line; the keys are checked when a config is made). model "*"
 * applies to every model. A line "steps=N"
 * (1.1) is that model's default number of steps instead of the task's
 * default_steps: a run's target, not part of the config. */
typedef struct {
    const char *model;
    const char *settings;
} ls_task_defaults;

typedef struct ls_task_desc {
    size_t size;              /* sizeof(ls_task_desc) as the caller compiled it */
    const char *name;         /* [a-z0-9-], at most 15 characters */
    const char *summary;      /* one line for --help */
    const char *models;       /* space-separated models that train it, the default first
                                 (a model may also name the task: ls_model_desc.tasks) */
    int64_t default_steps;
    const ls_key *keys;       /* the task's own keys (may be none) */
    size_t n_keys;
    const ls_task_defaults *defaults;   /* terminated by a NULL model; may be NULL */
    /* Where the data are (LS_KEY_TEXT keys, e.g. file paths; at most
     * LS_MAX_SOURCES): set like config keys (--train-x FILE), read by load
     * with ls_config_source, recorded with the run so it can be reopened,
     * but not part of the config: the data's identity (data_hash) is. */
    const ls_key *sources;
    size_t n_sources;
    /* A variant: when switch_key turns on, switch_settings apply first. */
    const char *switch_key;
    const char *switch_settings;
    /* The data: *out NULL for a task whose samples the model generates. */
    ls_status (*load)(const ls_config *cfg, ls_dataset **out, ls_err *err);
    /* Optional: what the task gives one of its models besides the data —
     * how to start and score its samples — in a struct that model defines
     * and documents (the logic CA's: logic_ca_task), or NULL when the task
     * gives that model nothing. `model` is the model's name. A model reads
     * what differs between its tasks here, never from the task's name. */
    const void *(*model_hooks)(const char *model);
    /* Added in 1.1 (a descriptor of 1.0's size reads it as NULL). Optional:
     * the task's say in its evaluation figures. Called after the model's
     * evaluation with the figures it gave (m[0 .. *n), test_acc, test_loss,
     * ...), it may reorder them and add figures computed from them alone,
     * up to LS_MAX_METRICS (the first is the run's figure that tables
     * show). A pure function of them, so the figures' bits stay a function
     * of θ and the data (the text task: test_loss first, then its bits per
     * byte). */
    void (*figures)(const ls_config *cfg, ls_metric *m, size_t *n);
} ls_task_desc;
/* The size of a 1.0 ls_task_desc (before figures), also accepted. */
#define LS_TASK_DESC_SIZE_1_0 offsetof(ls_task_desc, figures)

/* Add a model or task defined outside the library (descriptors must outlive
 * every use). A size field that is not this library's sizeof of the struct
 * (0 included), a name already taken, a bad key table or a missing function:
 * LS_EINVAL / LS_EEXIST naming it. Not thread-safe with sessions opening. */
ls_status ls_register_model(const ls_model_desc *d, ls_err *err);
ls_status ls_register_task(const ls_task_desc *d, ls_err *err);
/* Built-in and registered ones, by name (NULL when unknown) or index
 * (NULL past the end). */
const ls_model_desc *ls_model_find(const char *name);
const ls_task_desc *ls_task_find(const char *name);
const ls_model_desc *ls_model_at(size_t i);
const ls_task_desc *ls_task_at(size_t i);

/* ---- the session: one run ----------------------------------------------- */

typedef struct ls_session ls_session;
typedef struct ls_session_state ls_session_state;

typedef struct {
    size_t size;                /* sizeof(ls_session_opts) as the caller compiled it */
    int threads;                /* workers; 0: online CPUs. Never changes the bits */
    const char *db;             /* SQLite record; NULL: nothing recorded */
    const char *name;           /* unique run name; NULL: "run-<id>" */
    int64_t steps;              /* target steps kept with the run; 0: the task's default */
    int64_t checkpoint_every;   /* write a checkpoint after every K-th step; 0: none
                                   (reopen: 0 keeps the run's own) */
    const char *checkpoint_dir; /* NULL: "<db>.ckpt" (reopen: the run's own) */
    const ls_dataset *data;     /* NULL: the task loads its data; else the caller's (ls_dataset_create,
                                 * ls_arrays_dataset), kept alive */
    int64_t eval_every;         /* ls_session_train evaluates every K steps; recorded with the run
                                   (reopen: 0 keeps the run's own) */
    int no_final_checkpoint;    /* 1: a run that ends done gets no checkpoint of its last step (a
                                   throwaway record, as a benchmark's) */
    /* Called after every step the session computes (replayed ones
     * included: replay 1); NULL for none. For a progress line. */
    void (*progress)(void *ctx, const ls_session_state *state, int replay);
    void *progress_ctx;
    int64_t keep_checkpoints;   /* checkpoints a run keeps, the newest; 0: LS_KEEP_CHECKPOINTS
                                   (reopen: the run's own); -1: every one, so an audit can
                                   replay the segments between them concurrently */
} ls_session_opts;

/* What a session has done; filled by ls_session_state_get. */
struct ls_session_state {
    int64_t run_id;             /* -1 when not recorded */
    int64_t step;               /* steps applied */
    int64_t target;             /* the run's target step count */
    double loss;                /* the loss of the last step (0 before the first) */
    uint64_t config_hash, param_hash, traj_hash;
    int64_t resumed_from;       /* reopened: the checkpoint's step (0: none) */
    int64_t replayed;           /* recorded steps recomputed and found identical */
    int64_t checkpoints;        /* checkpoints written by this session */
    int threads;
    int busy_workers;           /* workers that computed leaves, units or update pieces in the last step */
    double flops_per_sample;    /* the model's count (ls_model_info), 0 when it gives none */
    double train_seconds;       /* inside the engine's steps; of which (a sweep's staged steps run their
                                   finish and update outside it, and count them below all the same): */
    double prepare_seconds;     /*   the model's prepare and its parts */
    double phase_seconds;       /*   the model's phases */
    double leaf_seconds;        /*   the leaves and the tree's blocks */
    double finish_seconds;      /*   the finish (with its share of the tree's last pass) */
    double update_seconds;      /*   the optimiser (with its share of the tree's last pass and of the hash) */
    double hash_seconds;        /* hashing parameters and trajectory */
    double record_seconds;      /* writing the record */
    int done_already;           /* reopened to resume a run that was done: nothing to do */
    char checkpoint_path[4096]; /* reopened: the checkpoint loaded, "" when none */
    char checkpoint_note[1024]; /* reopened: checkpoints passed over (missing, damaged, another
                                   database's) and what was used instead; "" when none was */
};

/* The checkpoints of a run a session keeps: the newest, and one before it
 * should the newest be damaged later. */
#define LS_KEEP_CHECKPOINTS 2

/* A new run of cfg (copied): validates it, checks the floating-point
 * environment, loads the data, builds everything, initialises θ_0 and, with
 * a database, records the run and step 0. opts: NULL for every default, else
 * with its size field set (see Versions above). */
ls_status ls_session_open(ls_session **out, const ls_config *cfg, const ls_session_opts *opts, ls_err *err);

/* Reopen recorded run `run` (an id or a name) of database `db`. The newest
 * registered checkpoint is loaded and checked (its state hash as
 * registered, its parameter hash as recorded), step 0 is recomputed and
 * checked. LS_REOPEN_RESUME claims the run: steps already recorded after the
 * checkpoint are recomputed by ls_session_step and compared with the record
 * (LS_EMISMATCH at the first difference), later ones recorded. A done run
 * is resumed only when opts->steps goes beyond it (else LS_EEXIST is not
 * returned: the session opens with nothing to do, state.step == target).
 * LS_REOPEN_RESTORE recomputes and checks now every recorded step after
 * the checkpoint it loads (every step when there is none: steps before it
 * are the checkpoint's, proved only by LS_REOPEN_AUDIT) and records
 * nothing; the session then holds the run's last parameters.
 * Any mode needs the run's task and model in this process: a task or
 * model a program registered (ls_register_task, ls_register_model) must be
 * registered again before reopening, else LS_ENOTFOUND naming it; a run fed
 * from memory (opts->data) needs the same data in opts->data again.
 * Inputs that changed since the run are LS_EMISMATCH whose message starts
 * with the key: "data_hash: ..." (ending, for a run read from files, "the
 * files now at KEY=PATH, ... are not the run's data") or "init_hash: ..."
 * naming the --init file; the command line tells them from a recomputed
 * step that differs by that prefix. */
/* LS_REOPEN_AUDIT proves the record from the beginning: it checks the
 * config, the data (data_hash) and step 0 as the others do, loads no
 * checkpoint and records nothing; the session stands at θ_0 with
 * state.target the last recorded step. Each ls_session_step then recomputes
 * the next recorded step and compares it (LS_EMISMATCH naming the step and
 * both values), and at a step with registered checkpoints checks each file:
 * sound, its state hash as registered, and the state hash the recomputed
 * parameters and optimiser state give (a missing or altered file is
 * LS_EMISMATCH naming it and the step). */
enum { LS_REOPEN_RESUME = 0, LS_REOPEN_RESTORE = 1, LS_REOPEN_AUDIT = 2 };
ls_status ls_session_reopen(ls_session **out, const char *db, const char *run, int how,
                            const ls_session_opts *opts, ls_err *err);

/* One step: its loss with θ_{t−1}, the update, the hashes, the record (or
 * the check against it), and a checkpoint when one is due. A NaN or infinite
 * loss is LS_EDIVERGED and changes nothing; so is a parameter the update made
 * NaN or infinite (nothing recorded; θ may hold the update). *loss may be NULL. */
ls_status ls_session_step(ls_session *s, double *loss, ls_err *err);
/* Steps until the run's target (or `until` when > 0), evaluating every
 * eval_every steps (0: the session's, from its options or its record; none:
 * only at the end) and after the last step, and
 * stopping between steps with LS_EINTR once *stop (may be NULL) is nonzero.
 * out/n_out (may be NULL) receive the last evaluation. */
ls_status ls_session_train(ls_session *s, int64_t until, int64_t eval_every, const volatile int *stop,
                           ls_metric *out, size_t *n_out, ls_err *err);
/* Write a checkpoint of the current step now (needs a database). */
ls_status ls_session_checkpoint(ls_session *s, ls_err *err);
/* The evaluation figures of the current parameters, recorded at the current
 * step when recording. *n_out <= LS_MAX_METRICS. */
ls_status ls_session_evaluate(ls_session *s, ls_metric *out, size_t *n_out, ls_err *err);
/* End the run: its status from how (LS_OK done, LS_EINTR interrupted,
 * LS_EDIVERGED diverged, anything else failed), flush the record, free
 * everything. A recorded run that ends done gets a checkpoint of its last
 * step, so reopening it replays nothing. Accepts NULL. A recorded run not closed (the process died)
 * reads as interrupted. */
ls_status ls_session_close(ls_session *s, ls_status how, ls_err *err);

void ls_session_state_get(const ls_session *s, ls_session_state *out);
const ls_config *ls_session_config(const ls_session *s);
/* θ after the last step (n floats). Valid until the next step or close:
 * with more than one thread a step writes θ into another buffer. */
const float *ls_session_params(const ls_session *s, size_t *n);

/* Features a sample takes and scores it gives (ls_model_info.inputs and
 * .outputs of the session's model instance). LS_EINVAL naming the model when
 * it gives no scores (no ls_model_desc.scores), or when the session holds no
 * model (reopened to resume a run that was done already). */
ls_status ls_session_predict_shape(ls_session *s, size_t *inputs, size_t *outputs, ls_err *err);
/* The scores of count samples x [count][inputs] into out [count][outputs],
 * from θ after the last step: the model's prepare for an evaluation (no
 * batch) and its prepare parts, then its scores over all count samples, all
 * on the calling thread, with one scratch block of scratch_bytes the library
 * allocates. The session's thread count does not enter, and a sample's
 * scores are a function of θ and its features alone: not of count, the
 * other samples or the thread count, so predicting in chunks gives the same
 * bits. count 0 writes nothing. The predicted class is the highest score,
 * the lowest index on ties (as the model's evaluation counts). LS_EINVAL as
 * ls_session_predict_shape, and naming the first sample whose features are
 * all finite but whose scores are NaN (features the model does not read: a
 * token network's byte outside its vocabulary, or 0..255 where it reads
 * v/255); LS_ENOMEM. Between steps only: a step may change
 * what prepare left in the model's instance, and prepares again itself. */
ls_status ls_session_predict(ls_session *s, const float *x, size_t count, float *out, ls_err *err);

/* θ's named tensors (ls_model_info.tensors; a model that declares none has
 * one, "params", of shape [n_params]). */
typedef struct {
    const char *name;           /* "W1", "b1", ...; owned by the session's model */
    size_t ndim;
    size_t shape[4];            /* [ndim] used */
    size_t offset;              /* its first float in θ */
    size_t count;               /* floats: the product of shape */
    const float *data;          /* θ now + offset: valid as ls_session_params' pointer, until
                                   the next step or close */
} ls_tensor_view;
/* How many tensors θ has (0 when the session holds no model). */
size_t ls_session_tensor_count(ls_session *s);
/* Tensor i (in θ's order) into *out; LS_ENOTFOUND past the end. */
ls_status ls_session_tensor(ls_session *s, size_t i, ls_tensor_view *out, ls_err *err);
/* The tensor called name into *out; LS_ENOTFOUND naming it when θ has none. */
ls_status ls_session_tensor_find(ls_session *s, const char *name, ls_tensor_view *out, ls_err *err);

/* ---- the record ---------------------------------------------------------- */

/* Two recorded runs compared bit for bit: parameter hashes from step 0,
 * loss bits from step 1, over the steps both have. */
typedef struct {
    int equal;                  /* 1: identical over the common steps */
    int64_t steps;              /* common steps compared: 0..steps-1 */
    int64_t first_diff;         /* the first step that differs, -1 when equal */
    int64_t steps_a, steps_b;   /* step rows of each run */
    int same_config;            /* 1: equal config hashes */
} ls_verdict;
/* LS_ENOTFOUND naming a run or database that does not exist. */
ls_status ls_verify(const char *db, const char *run_a, const char *run_b, ls_verdict *out, ls_err *err);

/* ---- equivalence: one config at several thread counts -------------------- */

#define LS_EQUIV_MAX 32

/* One run of ls_equiv, as it ended. */
typedef struct {
    int threads;
    ls_status status;           /* LS_OK: trained to its target and evaluated */
    int64_t run_id;             /* -1 when not recorded */
    int64_t steps;              /* steps applied */
    double loss;                /* of the last step */
    uint64_t config_hash, param_hash, traj_hash;
    double train_seconds;       /* inside the engine's steps (ls_session_state) */
    ls_metric metrics[LS_MAX_METRICS];   /* the evaluation after the last step */
    size_t n_metrics;
    int same;                   /* 1: bit-identical to the first run (the first run: 1) */
    ls_verdict verdict;         /* with a database, ls_verify of the first run and this one
                                   (the first run: zeroed) */
} ls_equiv_run;

typedef struct {
    int equal;                  /* 1: every run is bit-identical to the first */
    size_t n_runs;              /* runs trained, in the order of opts->threads; fewer than asked
                                   when one failed (runs[n_runs - 1] is the one) or stop was set */
    ls_equiv_run runs[LS_EQUIV_MAX];
    /* Added in 1.1, written only for an ls_equiv_opts of 1.1's size: the
     * leaf size of each run (0: the config's). */
    int leaf[LS_EQUIV_MAX];
} ls_equiv_result;

typedef struct {
    size_t size;                /* sizeof(ls_equiv_opts) as the caller compiled it */
    const int *threads;         /* [n_threads] thread counts, each once, the first the reference */
    size_t n_threads;           /* 1..LS_EQUIV_MAX */
    /* Every run's options (session.size set as for ls_session_open): threads
     * is each count in turn; with a database and a name, run i is named
     * "<name>-t<threads[i]>"; data NULL: the task's data, loaded once and
     * shared by the runs; eval_every as ls_session_train's. */
    ls_session_opts session;
    const volatile int *stop;   /* nonzero: stop between steps with LS_EINTR; may be NULL */
    /* Called after each run ends (failed ones included), for a table row;
     * may be NULL. */
    void (*on_run)(void *ctx, const ls_equiv_run *run);
    void *ctx;
    /* Added in 1.1 (an ls_equiv_opts of 1.0's size has none): leaf sizes
     * (each LS_ATOM·2^m, each once; NULL or 0 of them: the config's leaf).
     * Every thread count is trained at every leaf size, leaf by leaf, the
     * first pair the reference; at most LS_EQUIV_MAX runs in all; with a
     * name, run names end in "-l<leaf>". */
    const int *leaves;
    size_t n_leaves;
} ls_equiv_opts;
#define LS_EQUIV_OPTS_SIZE_1_0 offsetof(ls_equiv_opts, leaves)

/* The equivalence check: cfg trained at each thread count (and leaf size) in turn (opened,
 * trained to its target with ls_session_train, evaluated after the last
 * step, closed), and every run compared with the first. A run is the same
 * when its config hash, step count and trajectory hash equal the first run's
 * (the trajectory hash chains every step's parameter hash and loss bits), and,
 * with a database, ls_verify finds the two identical at every step 0..steps.
 * Everything is checked before the first run is trained, so a refused call
 * records nothing: the sizes, the thread counts (LS_EINVAL naming one given
 * twice), the data (loaded first, so that a refused call creates no
 * database), and with a database and a name, that no run name is taken
 * (LS_EEXIST naming it). A run that fails ends the call with its status
 * (LS_EDIVERGED, LS_EINTR, ...) and err; the runs before it are in *out.
 * Differing runs are not an error: LS_OK with out->equal 0. */
ls_status ls_equiv(const ls_config *cfg, const ls_equiv_opts *opts, ls_equiv_result *out, ls_err *err);

/* ---- tensors of any framework: the canonical tensor hash (1.1) ------------ */

/* One tensor as another framework holds it (a PyTorch parameter, a numpy
 * array): a name, a dtype, a shape and its bytes in C order. data points to
 * nbytes bytes, each element in the host's byte order (little-endian on
 * every platform lockstep builds for); bfloat16 and float16 elements are
 * their 2-byte patterns, never converted. bool elements are one byte, 0 or
 * 1. Nothing is copied: the caller keeps the memory alive during the call. */
typedef struct {
    const char *name;           /* non-empty, at most LS_TENSOR_NAME_MAX bytes, no newline */
    const char *dtype;          /* "float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "int16", "int8", "uint8", "bool" */
    size_t ndim;                /* 0 (a scalar) .. LS_TENSOR_NDIM_MAX */
    const size_t *shape;        /* [ndim]; may be NULL when ndim is 0 */
    const void *data;           /* nbytes bytes; may be NULL when nbytes is 0 */
    size_t nbytes;              /* = product of shape x the dtype's size */
} ls_tensor_data;

#define LS_TENSOR_NAME_MAX 255
#define LS_TENSOR_NDIM_MAX 32

/* The size in bytes of one element of dtype, 0 when it is not one of the
 * names above. */
size_t ls_dtype_size(const char *dtype);
/* LS_EINVAL naming the tensor (and what is wrong: an empty or too long
 * name, an unknown dtype, too many dimensions, nbytes not equal to the
 * shape's product times the dtype's size, NULL data with nbytes > 0). */
ls_status ls_tensor_check(const ls_tensor_data *t, ls_err *err);
/* The canonical tensor hash (LS_TENSOR_HASH_FORMAT 1, frozen):
 * XXH3_64bits (seed 0) over
 *     name bytes, 0x00, dtype name bytes, 0x00, ndim as u64 LE,
 *     each dim as u64 LE, then the nbytes data bytes (C order, little-endian)
 * — no NaN canonicalisation: the bytes are the bytes. Call ls_tensor_check
 * first: the hash of a tensor it refuses is meaningless (0 for NULL). */
uint64_t ls_tensor_hash(const ls_tensor_data *t);
/* A tensor of a lockstep session (float32, its shape) as an ls_tensor_data; the
 * view must outlive *out, whose shape points into the view. */
void ls_tensor_from_view(const ls_tensor_view *v, ls_tensor_data *out);
/* The parameter hash of one step of an external run (frozen with
 * LS_TENSOR_HASH_FORMAT): with the tensors sorted by name (strcmp order),
 * XXH3_64bits over, for each tensor, its name bytes, 0x00 and its
 * ls_tensor_hash as u64 LE. names[n] and hashes[n] need not be sorted. A
 * lockstep run keeps its own param_hash (LS_HASH_FORMAT), not this one. */
uint64_t ls_tensor_set_hash(const char *const *names, const uint64_t *hashes, size_t n);

/* ---- recording a run of any framework (1.1) ------------------------------ */

/* A run trained by another framework (PyTorch, JAX, numpy), recorded step
 * by step in the same SQLite record as lockstep's own runs: `lockstep runs`,
 * `show`, `verify`, `report` and `golden save/compare` read it; `audit` and
 * `resume` refuse it (there is nothing lockstep could re-execute). Its run
 * row has model and task "external"; its config text (free "key=value"
 * lines, stored as given) and framework are kept with it.
 *
 * Each step stores the loss (binary64 bits), one hash per tensor (in name
 * order: the run's tensor list is fixed by its first step) and the step's
 * parameter hash ls_tensor_set_hash; the trajectory chains them as for
 * lockstep's runs, from traj_0 = XXH3_64bits(config text ‖ 8 zero bytes):
 * traj_t = XXH3_64bits(traj_{t−1} ‖ param_hash_t ‖ loss bits_t). There is no
 * step-0 row. Every step is committed before ls_record_step returns, so a
 * crash keeps every earlier step; a run never closed reads as interrupted.
 *
 * One recorder is driven by one thread at a time. */
typedef struct ls_recorder ls_recorder;

/* Opens (or creates) the database db and starts a run: name as for
 * ls_session_opts.name (NULL: "run-<id>"; taken: LS_EEXIST), config_text
 * any text ("" allowed, NULL as ""), framework a short free text such as
 * "pytorch 1.13.1" (NULL or "": "unknown"). */
ls_status ls_record_open(ls_recorder **out, const char *db, const char *name, const char *config_text,
                         const char *framework, ls_err *err);
/* Records step `step` (1 for the first, then consecutive: anything else is
 * LS_EINVAL) with its loss (any binary64: a NaN is recorded as the
 * canonical NaN) and the parameters after it, tensors[n] in any order. Each
 * tensor is checked (ls_tensor_check); two with one name, or a set of names
 * that is not the first hashed step's, is LS_EINVAL naming the tensor;
 * nothing is recorded then and the step may be given again. tensors NULL
 * (n 0): a step whose parameters are not hashed (a caller hashing every K-th
 * step only, e.g. tensors copied from a GPU): its loss is recorded with
 * parameter hash 0 and no per-tensor hashes. tensors not NULL with n 0: a
 * step of no tensors (the empty set). */
ls_status ls_record_step(ls_recorder *rec, int64_t step, double loss, const ls_tensor_data *tensors, size_t n,
                         ls_err *err);
/* What has been recorded: the run's id, the last step (0 before the
 * first), its parameter hash and trajectory hash. Any pointer may be NULL. */
void ls_record_state(const ls_recorder *rec, int64_t *run_id, int64_t *step, uint64_t *param_hash,
                     uint64_t *traj_hash);
/* Ends the run: status "done" for LS_OK, "interrupted" for LS_EINTR,
 * "diverged" for LS_EDIVERGED, else "failed"; frees rec (NULL accepted). */
ls_status ls_record_close(ls_recorder *rec, ls_status how, ls_err *err);

/* ---- verify, with the first tensor and a loss tolerance (1.1) ----------- */

typedef struct {
    size_t size;                /* sizeof(ls_verify_opts) as the caller compiled it */
    int loss_tolerance;         /* 1: also find the first step whose loss leaves the tolerance */
    double loss_rtol, loss_atol;  /* |a − b| <= atol + rtol·|b| (a: run_a's loss, b: run_b's) */
} ls_verify_opts;

typedef struct {
    ls_verdict verdict;         /* as ls_verify's */
    /* At verdict.first_diff: the first tensor in name (strcmp) order whose
     * hash differs or that one run lacks there; "" when the parameters are
     * equal there (only the loss differs) or a run has no per-tensor hashes
     * at that step (recorded before schema version 2). */
    char first_tensor[LS_TENSOR_NAME_MAX + 1];
    double loss_a, loss_b;      /* both runs' losses at verdict.first_diff (0 at step 0 or when equal) */
    /* With opts->loss_tolerance: the first common step (from 1) whose losses
     * a, b fail |a − b| <= atol + rtol·|b| (a NaN fails unless both bit
     * patterns are equal), −1 when none; tol_loss_a, tol_loss_b its losses. */
    int64_t tol_first;
    double tol_loss_a, tol_loss_b;
} ls_verify_result;

/* ls_verify and more: the first differing tensor and the loss tolerance.
 * opts NULL: no tolerance. A size that is not sizeof(ls_verify_opts),
 * a negative or NaN rtol or atol: LS_EINVAL. */
ls_status ls_verify_ex(const char *db, const char *run_a, const char *run_b, const ls_verify_opts *opts,
                       ls_verify_result *out, ls_err *err);

/* ---- golden files of recorded runs (1.1) ------------------------------------ */

/* A golden file of format v2 pins a recorded run — lockstep's own or an
 * external one — with its losses, parameter hashes and per-tensor hashes
 * (docs/formats.md); a later recorded run is compared with it. This is the
 * golden check of a training test that another framework runs (the pytest
 * plugin); `lockstep golden save` and `golden compare` are the same calls. */
typedef struct {
    int equal;                  /* 1: the run has exactly the file's steps, with the same loss bits and
                                   parameter hashes */
    int64_t steps;              /* steps the file pins */
    int64_t first_diff;         /* the first step that differs or that only one side has; -1 when equal */
    char first_tensor[LS_TENSOR_NAME_MAX + 1];   /* at first_diff, in name order; "" as ls_verify_result's */
    int has_loss;               /* 1: loss_file and loss_run are both losses at first_diff */
    double loss_file, loss_run;
    int config_differs;         /* 1: the run's config text is not the file's (a note: not part of equal) */
    char detail[1024];          /* one line: "step 3: loss ... in the file, ... in the run; ...; first tensor w" */
} ls_golden_result;

/* Writes recorded run `run` of database db as a v2 golden file at path
 * (a temporary file, fsync, rename). A run without steps, a config line
 * starting with '#' or holding a control character: LS_EINVAL. */
ls_status ls_golden_save(const char *db, const char *run, const char *path, ls_err *err);
/* Compares recorded run `run` of db with the golden file at path (v2, or a
 * v1 file, whose steps carry no per-tensor hashes). Differing is not an
 * error: LS_OK with out->equal 0. A malformed file: LS_EFORMAT naming its
 * line. */
ls_status ls_golden_compare(const char *db, const char *run, const char *path, ls_golden_result *out,
                            ls_err *err);

/* ---- in-memory data (since 1.1) ------------------------------------------ */

/* The `arrays` task's data set from .npy images held in memory, for
 * ls_session_opts.data: npy[0..3] = train_x, train_y, test_x, test_y, each
 * the bytes numpy.save writes (NULL for test_x and test_y together: no test
 * split), len[i] their sizes. The same checks, samples and identity (hash,
 * the config's data_hash) as the task's loader gives for the same bytes read
 * from .npy files, so a run fed from memory and one fed from those files
 * have one config and one trajectory. A malformed image: LS_EFORMAT naming
 * it by its key (train_x, ...). Free with ls_dataset_destroy; the images may
 * be freed once it returns. */
ls_status ls_arrays_dataset(ls_dataset **out, const void *const npy[4], const size_t len[4], ls_err *err);

#ifdef __cplusplus
}
#endif

#endif
