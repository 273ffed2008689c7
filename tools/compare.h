/* compare.h — two runs' step rows compared bit for bit, wherever the rows
 * came from: the rule of the record (runlog_first_divergence: parameter hash
 * at every step, loss bits from step 1, over the steps both runs have) and
 * the verdict's wording of `lockstep verify`. Used by verify for runs in two
 * databases (which it compares without merging them) and by report.
 */
#ifndef LS_COMPARE_H
#define LS_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "record/hash.h"
#include "record/runlog.h"
#include "tools/tools.h"
#include "tools/runref.h"

typedef struct {
    size_t common;          /* steps both runs have; 0: nothing to compare, so not equal */
    int64_t lo, hi;         /* first and last common step (-1 when none) */
    int64_t first;          /* first differing step, -1 when none */
    int equal;              /* common > 0 and first < 0 */
    uint64_t last_traj;     /* run a's trajectory hash at hi */
    uint64_t last_traj_b;   /* run b's there: another when the configs differ, though every step is equal */
    char span[96];          /* "steps 0..50" or "48 common steps from 0 to 50" */
    char detail[512];       /* verify's detail: "identical over ..." or "step N: loss ... vs ...; param hash ..." */
} compare_result;

/* The row of step `step` in rows[n] (in step order), or NULL. */
const ls_step *compare_find_step(const ls_step *rows, size_t n, int64_t step);

/* The value of key (kl bytes) in a canonical config text ("key=value"
 * lines), or NULL; *len its length. */
const char *compare_config_value(const char *text, const char *key, size_t kl, size_t *len);

/* As verify says it, for the keys whose values differ or that only one
 * config text has: "lr 0x1.47ae14p-7 vs 0x1.47ae14p-6, seed only in run B"
 * (la, lb: how the two runs are named). */
void compare_config_diff(const char *a, const char *b, const char *la, const char *lb, char *out, size_t cap);

/* a[na], b[nb]: step rows in step order. */
void compare_rows(const ls_step *a, size_t na, const ls_step *b, size_t nb, compare_result *r);
/* compare_rows in two halves, for a caller whose first difference comes
 * from elsewhere (verify takes it from the record's SQL): compare_span
 * fills common, lo, hi, span and last_traj (first = -1); compare_describe
 * fills equal and detail from r->first, and returns -1 when a or b has no
 * row at r->first. */
void compare_span(const ls_step *a, size_t na, const ls_step *b, size_t nb, compare_result *r);
int compare_describe(const ls_step *a, size_t na, const ls_step *b, size_t nb, compare_result *r);

/* verify's line for runs whose steps are equal (r->equal), on f: "runs LA
 * and LB are bit-identical over SPAN (trajectory T)", or, when their
 * trajectory hashes differ (the hash covers the config, so a config that
 * differs in its text but trains the same steps gives another one: an lr
 * schedule with gamma 1, an --init file of the same tensors in other
 * bytes), "(trajectories TA and TB: the configs differ)" — never one run's
 * hash as if it were both's. configs_differ: the config texts differ. */
void compare_print_equal(FILE *f, const char *la, const char *lb, const compare_result *r, int configs_differ);

/* What verify says after its verdict line, for runs a (in da, rows ra[na])
 * and b (in db_b, rows rb[nb]) whose comparison is r:
 *   "first differing tensor at step N: NAME (in name order)" when the
 *   parameters differ at r->first and both runs have per-tensor hashes there
 *   (also appended to r->detail as "; first tensor NAME", which the stored
 *   verdict keeps);
 *   with tol->on, "losses within rtol R, atol A at every common step" or
 *   "loss leaves rtol R, atol A first at step N: A vs B".
 * Returns 0, or 2 after printing the error of a failed read. */
int compare_extra(const char *cmd, runlog *da, int64_t a, const ls_step *ra, size_t na, runlog *db_b, int64_t b,
                  const ls_step *rb, size_t nb, compare_result *r, const compare_tol *tol);

/* `lockstep verify DB_A:RUN_A DB_B:RUN_B` for two different database files:
 * the lines and exit status of verify (0 equal, 1 differ or nothing in
 * common, 2 bad input). Both databases are only read: no verdict is stored. */
int compare_verify_across(const runref *a, const runref *b, const compare_tol *tol);

#endif
