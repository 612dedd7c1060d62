/* src/base/text.h: text from records and files, made safe to print (issue 28, class 5).
 *
 * A record, a protocol, a bundle member's name or a database row can carry bytes a terminal
 * obeys (ESC [ ... sequences, BEL, OSC 8 links, a bidi override), a newline that splits a
 * markdown table, or a cell a spreadsheet runs as a formula (=HYPERLINK(...)). Every place
 * that prints such text to a terminal, a markdown table, a CSV file or an HTML page passes it
 * through here: one helper, called at the print site. */
#ifndef MEMWALL_TEXT_H
#define MEMWALL_TEXT_H

#include <stdbool.h>
#include <stdio.h>

/* s with every control character (C0, DEL, C1), every bidi control and line separator and
 * every byte that is not valid UTF-8 written as an escape (\n, \t, \r, \e, \xNN, \u202e):
 * what a terminal shows without obeying, on one line. s itself when nothing needs escaping;
 * else a buffer that stays valid for the next 15 calls (one print statement's worth),
 * so it can be passed straight to printf. NULL gives NULL. */
const char *mw_esc(const char *s);
/* mw_esc, and '|' as "\|": one markdown table cell. */
const char *mw_esc_md(const char *s);
/* mw_esc, but newlines and tabs are kept: messages (mw_fail, mw_error_print) that span lines
 * on purpose. */
const char *mw_esc_lines(const char *s);
/* Writes s as one CSV cell, quoted ("" for "), mw_esc'd, and with a leading ' when it starts
 * with =, +, -, @, a tab or a carriage return, which spreadsheets run as a formula (OWASP's
 * "CSV injection"). A number-looking text such as "-5" is kept as it is. */
void mw_csv_put(FILE *f, const char *s);
/* Writes s (NULL: nothing) as HTML text, safe in an element and in a quoted attribute value:
 * mw_esc'd (controls, bidi controls and bytes that are not UTF-8 shown as escapes, on one
 * line), then &, <, >, " and ' as character references. Every string a page memwall writes
 * did not come from memwall itself goes through here (`db site`). */
void mw_html_put(FILE *f, const char *s);
/* A copy of s in which every byte that is not part of valid UTF-8 is U+FFFD (malloc'd; NULL
 * when out of memory): for JSON and XML, which must never carry invalid UTF-8 (a path, a
 * record's text). */
char *mw_utf8_fix(const char *s);
/* JSON text (a writer's: valid UTF-8, C0 controls already escaped) with the code points JSON
 * leaves raw but mw_esc escapes (DEL, the C1 controls such as U+009B, CSI, the bidi controls,
 * the line and paragraph separators) written as \uXXXX: the same JSON value, which a terminal
 * shows without obeying. Malloc'd; NULL when out of memory. */
char *mw_json_esc(const char *json);
/* Drops a UTF-8 sequence cut off at the end of s (what a fixed buffer's snprintf leaves). */
void mw_utf8_trim(char *s);
#endif
