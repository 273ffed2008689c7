/* flags.c — the one flag parser of the command line (flags.h). */
#include "tools/flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void flags_init(flags_iter *it, int argc, char **argv, const flag_spec *specs, size_t n_specs)
{
    memset(it, 0, sizeof *it);
    it->argc = argc;
    it->argv = argv;
    it->specs = specs;
    it->n_specs = n_specs;
}

const flag_spec *flags_find(const flag_spec *specs, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(specs[k].name, name) == 0 || (specs[k].alias != NULL && strcmp(specs[k].alias, name) == 0))
            return &specs[k];
    return NULL;
}

ls_status flags_take_value(flags_iter *it, const char **value, ls_err *err)
{
    if (it->eq != NULL) {
        *value = it->eq;
        return LS_OK;
    }
    if (it->i >= it->argc)
        return ls_fail(err, LS_EINVAL, "%s: needs a value", it->name);
    *value = it->argv[it->i++];
    return LS_OK;
}

/* Edit distance of a and b, capped: suggestions are for typos, not guesses. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 62 || lb > 62)
        return 99;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Keeps cand (its "--" given apart, as config keys come without it) when
 * it is nearer to name than *best_d. */
static void consider(const char *name, const char *dashes, const char *cand, char *best, size_t cap, size_t *best_d)
{
    char full[80];
    int w = snprintf(full, sizeof full, "%s%s", dashes, cand);
    if (w < 0 || (size_t)w >= sizeof full)
        return;
    size_t d = distance(name, full);
    if (d < *best_d) {
        *best_d = d;
        snprintf(best, cap, "%s", full);
    }
}

ls_status flags_unknown(const flags_iter *it, const char *name, ls_err *err)
{
    if (strlen(name) > 40)
        return ls_fail(err, LS_EINVAL, "%.40s...: unknown flag", name);
    char best[80] = "";
    size_t best_d = 99;
    for (size_t k = 0; k < it->n_specs; k++) {
        consider(name, "", it->specs[k].name, best, sizeof best, &best_d);
        if (it->specs[k].alias != NULL)
            consider(name, "", it->specs[k].alias, best, sizeof best, &best_d);
    }
    for (size_t k = 0; it->more_names != NULL; k++) {
        const char *m = it->more_names(it->ctx, k);
        if (m == NULL)
            break;
        consider(name, "--", m, best, sizeof best, &best_d);
    }
    /* Close enough to be a typo: two edits, or one for a short name. */
    const size_t len = strlen(name), limit = len <= 4 ? 1 : 2;
    if (best[0] != '\0' && best_d <= limit)
        return ls_fail(err, LS_EINVAL, "%s: unknown flag (did you mean %s?)", name, best);
    return ls_fail(err, LS_EINVAL, "%s: unknown flag", name);
}

int flags_next(flags_iter *it, const char **value, ls_err *err, ls_status *st)
{
    *value = NULL;
    it->name[0] = '\0';
    it->eq = NULL;
    if (it->i >= it->argc)
        return FLAGS_END;
    char *s = it->argv[it->i++];
    if (!it->ended && strcmp(s, "--") == 0) {
        it->ended = 1;
        if (it->i >= it->argc)
            return FLAGS_END;
        s = it->argv[it->i++];
    }
    if (it->ended || s[0] != '-' || s[1] == '\0') {
        *value = s;
        return FLAGS_ARG;
    }
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0)
        return FLAGS_HELP;
    /* "--k=v": only two-dash flags split at '='. */
    const char *eq = s[1] == '-' ? strchr(s, '=') : NULL;
    size_t nl = eq != NULL ? (size_t)(eq - s) : strlen(s);
    if (nl >= sizeof it->name) {
        *st = ls_fail(err, LS_EINVAL, "%.40s...: unknown flag", s);
        return FLAGS_ERROR;
    }
    memcpy(it->name, s, nl);
    it->name[nl] = '\0';
    it->eq = eq != NULL ? eq + 1 : NULL;
    const flag_spec *f = flags_find(it->specs, it->n_specs, it->name);
    if (f == NULL) {
        if (it->open && s[1] == '-')
            return FLAGS_OTHER;
        *st = flags_unknown(it, it->name, err);
        return FLAGS_ERROR;
    }
    if (f->arg == NULL) {
        if (it->eq != NULL) {
            *st = ls_fail(err, LS_EINVAL, "%s: takes no value", it->name);
            return FLAGS_ERROR;
        }
        return (int)(f - it->specs);
    }
    if (it->eq == NULL && it->i >= it->argc) {
        *st = ls_fail(err, LS_EINVAL, "%s: needs %s", it->name, f->needs != NULL ? f->needs : "a value");
        return FLAGS_ERROR;
    }
    *value = it->eq != NULL ? it->eq : it->argv[it->i++];
    if (**value == '\0' && f->needs != NULL) {
        *st = ls_fail(err, LS_EINVAL, "%s: needs %s", it->name, f->needs);
        return FLAGS_ERROR;
    }
    return (int)(f - it->specs);
}

/* A bound for the message: decimal, or 2^k / 2^k-1 from 2^20 up, which read
 * better than 1099511627776 or 18446744073709551615. */
static void bound_text(char *buf, size_t cap, int neg, uint64_t mag)
{
    for (int k = 20; k <= 64; k++) {
        const uint64_t p = k < 64 ? UINT64_C(1) << k : 0;   /* 2^64 wraps to 0 */
        if (k < 64 && mag == p) {
            snprintf(buf, cap, "%s2^%d", neg ? "-" : "", k);
            return;
        }
        if (!neg && mag == p - 1) {
            snprintf(buf, cap, "2^%d-1", k);
            return;
        }
    }
    snprintf(buf, cap, "%s%llu", neg ? "-" : "", (unsigned long long)mag);
}

/* "FLAG: 'V' is not an integer in LO..HI", the one message of both parsers
 * (with " (in 'LIST')" for an item of a longer list). */
static ls_status not_integer(const char *flag, const char *list, const char *v, size_t len, int lo_neg, uint64_t lo,
                             uint64_t hi, ls_err *err)
{
    char a[32], b[32];
    bound_text(a, sizeof a, lo_neg, lo);
    bound_text(b, sizeof b, 0, hi);
    const int in_list = list != NULL && strlen(list) != len;
    return ls_fail(err, LS_EINVAL, "%s: '%.*s%s' is not an integer in %s..%s%s%.100s%s", flag,
                   (int)(len > 40 ? 40 : len), v, len > 40 ? "..." : "", a, b, in_list ? " (in '" : "",
                   in_list ? list : "", in_list ? "')" : "");
}

/* v[0, len) as an optional '-' and decimal digits: its sign and magnitude,
 * or -1 (no digits, another character, beyond 2^64-1). */
static int parse_decimal(const char *v, size_t len, int *neg, uint64_t *mag)
{
    size_t i = 0;
    *neg = len > 0 && v[0] == '-';
    i += (size_t)*neg;
    if (i == len)
        return -1;
    uint64_t x = 0;
    for (; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        const uint64_t d = (uint64_t)(v[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *mag = x;
    return 0;
}

ls_status flags_u64(const char *flag, const char *list, const char *v, size_t len, uint64_t lo, uint64_t hi,
                    uint64_t *out, ls_err *err)
{
    int neg;
    uint64_t x;
    if (parse_decimal(v, len, &neg, &x) != 0 || (neg && x != 0) || x < lo || x > hi)
        return not_integer(flag, list, v, len, 0, lo, hi, err);
    *out = x;
    return LS_OK;
}

ls_status flags_int(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out, ls_err *err)
{
    const size_t len = strlen(v);
    /* |lo| as a magnitude: -INT64_MIN does not fit in int64_t. */
    const int lo_neg = lo < 0;
    const uint64_t lo_mag = lo_neg ? (uint64_t)(-(lo + 1)) + 1 : (uint64_t)lo;
    int neg;
    uint64_t x;
    if (parse_decimal(v, len, &neg, &x) != 0 || (neg && !lo_neg && x != 0))
        return not_integer(flag, NULL, v, len, lo_neg, lo_mag, (uint64_t)hi, err);
    int64_t s;
    if (neg) {
        if (x > lo_mag)
            return not_integer(flag, NULL, v, len, lo_neg, lo_mag, (uint64_t)hi, err);
        s = x == 0 ? 0 : -(int64_t)(x - 1) - 1;
    } else {
        if (x > (uint64_t)INT64_MAX)
            return not_integer(flag, NULL, v, len, lo_neg, lo_mag, (uint64_t)hi, err);
        s = (int64_t)x;
    }
    if (s < lo || s > hi)
        return not_integer(flag, NULL, v, len, lo_neg, lo_mag, (uint64_t)hi, err);
    *out = s;
    return LS_OK;
}
