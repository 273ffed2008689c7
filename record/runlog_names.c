/* runlog_names.c — run names and run ids as a person types them.
 *
 * A name must print as itself and parse as a name (the rule is in runlog.h);
 * a string of digits is a run id, never a name. An error line shows a
 * refused name escaped, so that it prints safely whatever it holds.
 */
#include "record/runlog_impl.h"

#include <stdio.h>
#include <string.h>

int rl_all_digits(const char *s)
{
    if (s == NULL || s[0] == 0)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

long runlog_utf8_next(const unsigned char *s, size_t *len)
{
    unsigned c = s[0];
    *len = 1;
    if (c < 0x80)
        return (long)c;
    size_t n;
    unsigned long cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2; cp = c & 0x1f; min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3; cp = c & 0x0f; min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4; cp = c & 0x07; min = 0x10000;
    } else {
        return -1;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = n;
    return (long)cp;
}

int runlog_char_forbidden(long cp)
{
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
           cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The name for an error line: printable ASCII as is (backslash and quote
 * escaped), every other byte of a refused name as \xNN, valid non-ASCII
 * characters as is unless forbidden (\u{NNNN}); at most cap - 1 bytes,
 * "..." when cut. */
void rl_escape_name(const char *name, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)name;
    size_t o = 0;
    while (*p) {
        char piece[16];
        size_t len;
        long cp = runlog_utf8_next(p, &len);
        if (cp < 0)
            snprintf(piece, sizeof piece, "\\x%02x", p[0]);
        else if (cp == '\\' || cp == '\'')
            snprintf(piece, sizeof piece, "\\%c", (char)cp);
        else if (runlog_char_forbidden(cp))
            snprintf(piece, sizeof piece, cp < 0x80 ? "\\x%02lx" : "\\u{%04lx}", (unsigned long)cp);
        else {
            memcpy(piece, p, len);
            piece[len] = 0;
        }
        size_t pl = strlen(piece);
        if (o + pl + 4 > cap) {
            snprintf(out + o, cap - o, "...");
            return;
        }
        memcpy(out + o, piece, pl);
        o += pl;
        p += len;
    }
    out[o] = 0;
}

ls_status runlog_check_name(const char *name, ls_err *err)
{
    if (name == NULL || name[0] == 0)
        return ls_fail(err, LS_EINVAL, "run name is empty");
    char shown[200];
    rl_escape_name(name, shown, sizeof shown);
    if (name[0] == '-')
        return ls_fail(err, LS_EINVAL, "run name '%s' starts with '-': it would read as a flag", shown);
    if (rl_all_digits(name))
        return ls_fail(err, LS_EINVAL, "run name '%s' is all digits: it would read as a run id", shown);
    const unsigned char *p = (const unsigned char *)name;
    size_t chars = 0;
    while (*p) {
        size_t len;
        long cp = runlog_utf8_next(p, &len);
        chars++;
        if (cp < 0)
            return ls_fail(err, LS_EINVAL, "run name '%s' is not valid UTF-8 (byte 0x%02x at byte %zu)", shown,
                           p[0], (size_t)(p - (const unsigned char *)name) + 1);
        if (runlog_char_forbidden(cp))
            return ls_fail(err, LS_EINVAL, "run name '%s' has a control or invisible character (U+%04lX) at "
                           "character %zu: names must print as themselves", shown, (unsigned long)cp, chars);
        p += len;
    }
    if (chars > RUNLOG_NAME_MAX)
        return ls_fail(err, LS_EINVAL, "run name '%s' is %zu characters long; at most %d are allowed", shown,
                       chars, RUNLOG_NAME_MAX);
    return LS_OK;
}
