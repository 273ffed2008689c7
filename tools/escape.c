/* escape.c — names, paths and recorded strings printed safely (escape.h). */
#include "tools/escape.h"

#include <string.h>

#include "record/runlog.h"

/* One piece of esc_text's form of the character at p (length *len) into
 * piece (at least 16 bytes). */
static void esc_piece(const unsigned char *p, size_t *len, char piece[16])
{
    const long cp = runlog_utf8_next(p, len);
    if (cp < 0)
        snprintf(piece, 16, "\\x%02x", p[0]);
    else if (cp == '\\')
        snprintf(piece, 16, "\\\\");
    else if (runlog_char_forbidden(cp))
        snprintf(piece, 16, cp < 0x80 ? "\\x%02lx" : "\\u{%04lx}", (unsigned long)cp);
    else {
        memcpy(piece, p, *len);
        piece[*len] = 0;
    }
}

void esc_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s != NULL ? s : ""); *p;) {
        char piece[16];
        size_t len;
        esc_piece(p, &len, piece);
        fputs(piece, f);
        p += len;
    }
}

const char *esc_str(char *buf, size_t cap, const char *s)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)(s != NULL ? s : ""); *p;) {
        char piece[16];
        size_t len;
        esc_piece(p, &len, piece);
        const size_t pl = strlen(piece);
        if (o + pl + 4 > cap) {
            snprintf(buf + o, cap - o, "...");
            return buf;
        }
        memcpy(buf + o, piece, pl);
        o += pl;
        p += len;
    }
    buf[o] = 0;
    return buf;
}

void esc_json(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s != NULL ? s : ""); *p;) {
        size_t len;
        const long cp = runlog_utf8_next(p, &len);
        if (cp < 0)
            fputs("\xef\xbf\xbd", f);   /* U+FFFD as UTF-8: every JSON reader takes it as is */
        else if (cp == '"' || cp == '\\')
            fprintf(f, "\\%c", (char)cp);
        else if (cp == '\n')
            fputs("\\n", f);
        else if (cp == '\r')
            fputs("\\r", f);
        else if (cp == '\t')
            fputs("\\t", f);
        else if (cp < 0x20 || cp == 0x7f)
            fprintf(f, "\\u%04lx", (unsigned long)cp);
        else
            fwrite(p, 1, len, f);
        p += len;
    }
    fputc('"', f);
}

/* 1 when s, read as esc_csv writes it, needs quotes. */
static int esc_csv_quoted(const unsigned char *p)
{
    for (; *p; p++)
        if (*p == ',' || *p == '"' || *p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

void esc_csv(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    const int quoted = esc_csv_quoted(p);
    if (quoted)
        fputc('"', f);
    while (*p) {
        size_t len;
        const long cp = runlog_utf8_next(p, &len);
        if (cp < 0)
            fputs("\xef\xbf\xbd", f);   /* U+FFFD in UTF-8 */
        else if (cp == '"')
            fputs("\"\"", f);
        else
            fwrite(p, 1, len, f);
        p += len;
    }
    if (quoted)
        fputc('"', f);
}
