/* escape.h — every name, path and recorded string the command line prints,
 * in the one form each output allows.
 *
 * A database may hold names and paths written before the name rule
 * (record/runlog.h) existed, or by another program: control characters,
 * invisible ones, bytes that are not UTF-8. Printed raw they forge lines of a
 * listing, move a terminal's cursor, or make a strict JSON or CSV reader
 * refuse the whole output. So every command prints such strings through
 * these functions: esc_text for terminals and error lines, esc_json for
 * every JSON document (listings, show, certificates), esc_csv for CSV
 * fields. The rules are written down in docs/formats.md. Each reads the text
 * with the name rule's own UTF-8 decoder (runlog_utf8_next), so what a name
 * may not hold is exactly what is escaped. */
#ifndef LS_TOOLS_ESCAPE_H
#define LS_TOOLS_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* s (NULL: "") as a JSON string (RFC 8259), quotes included: '"' and '\\'
 * escaped, \n \r \t as such, every other C0 control and DEL as \u00XX,
 * each byte that is not part of valid UTF-8 as U+FFFD (written as UTF-8,
 * not escaped, so the certificate reader, which takes \u escapes below
 * U+0080 only, reads it back), every other character as its UTF-8 bytes.
 * The output is always valid UTF-8 JSON. */
void esc_json(FILE *f, const char *s);

/* s (NULL: "") as one CSV field (RFC 4180): each byte that is not part of
 * valid UTF-8 becomes U+FFFD; the field is quoted, inner quotes doubled,
 * when it holds a comma, a quote, or any control character (CR and LF
 * included), and written as is otherwise. */
void esc_csv(FILE *f, const char *s);

/* s (NULL: "") for a terminal or an error line: printable characters as
 * they are, a backslash as \\, a control or invisible character as \xNN
 * (below U+0080) or \u{NNNN}, each byte that is not UTF-8 as \xNN. One line
 * whatever s holds. */
void esc_text(FILE *f, const char *s);

/* esc_text's form of s into buf (cap > 4 bytes), cut with "..." when it
 * does not fit; returns buf, for printf arguments. */
const char *esc_str(char *buf, size_t cap, const char *s);

/* esc_str of a run name into a buffer of its own that lives until the end
 * of the enclosing block: for one printf argument. Room for a name of 256
 * four-byte characters, each escaped (\u{NNNN} is at most 8 bytes; a
 * name the rule allows is at most RUNLOG_NAME_MAX = 100 characters); a
 * longer name from an older record is cut with "...". */
#define ESC_NAME_CAP (4 * 4 * 256 + 1)
#define ESC_NAME(s) esc_str((char[ESC_NAME_CAP]){ 0 }, ESC_NAME_CAP, (s))

#endif
