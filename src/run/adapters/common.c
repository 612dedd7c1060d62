/* src/run/adapters/common.c: what every adapter needs: errors that name the line and the
 * field, number readers that say what was wrong, and the output as lines.
 *
 * Every adapter works on a private, NUL-terminated copy of the output, split into lines in
 * place, so it never reads past len whatever bytes it is given.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters.h"
#include "internal.h"

/* ---- Errors and small parsers ------------------------------------------------------------- */

int mw_ad_fail(struct mw_error *err, int code, const char *source, int line, const char *field,
	 const char *fmt, ...)
{
	char text[sizeof(err->text)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	mw_error_set(err, code, source, field, "%s", text);
	if (err)
		err->line = line;
	return code;
}

void mw_ad_set_unknown(struct mw_adapter_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->why_unknown, sizeof(res->why_unknown), fmt, ap);
	va_end(ap);
	res->decode_tokens.known = false;
}

const char *mw_ad_skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Reads a whole number in [0, max] at *p (after blanks) and advances *p past it. Returns NULL
 * on success or what was wrong with the text, for the caller's message. */
const char *mw_ad_read_count(const char **p, int64_t max, int64_t *out)
{
	const char *s = mw_ad_skip_blanks(*p);
	char *end = NULL;
	if (*s == '-' && isdigit((unsigned char)s[1]))
		return "is negative";
	if (!isdigit((unsigned char)*s))
		return *s ? "is not a number" : "is missing (the line is cut short)";
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno == ERANGE || v > max)
		return "is out of range";
	if (*end == '.' || *end == 'e' || *end == 'E')
		return "is not a whole number";
	*out = v;
	*p = end;
	return NULL;
}

/* Reads a finite, non-negative decimal number at *p (after blanks); see mw_ad_read_count. */
const char *mw_ad_read_number(const char **p, double *out)
{
	const char *s = mw_ad_skip_blanks(*p);
	char *end = NULL;
	if (*s == '-' && (isdigit((unsigned char)s[1]) || s[1] == '.'))
		return "is negative";
	if (!isdigit((unsigned char)*s) && *s != '.')
		return *s ? "is not a number" : "is missing (the line is cut short)";
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return "is not a decimal number";
	errno = 0;
	double v = strtod(s, &end);
	if (end == s)
		return "is not a number";
	if (errno == ERANGE || !isfinite(v))
		return "is out of range";
	*out = v;
	*p = end;
	return NULL;
}

/* Whole-string variants, for CSV and markdown cells. */
const char *mw_ad_cell_count(const char *s, int64_t max, int64_t *out)
{
	const char *why = mw_ad_read_count(&s, max, out);
	if (!why && *mw_ad_skip_blanks(s))
		why = "is not a whole number";
	return why;
}

const char *mw_ad_cell_number(const char *s, double *out)
{
	const char *why = mw_ad_read_number(&s, out);
	if (!why && *mw_ad_skip_blanks(s))
		why = "is not a number";
	return why;
}

/* Advances *p past word (and returns true) when the text at *p starts with it. */
bool mw_ad_eat(const char **p, const char *word)
{
	size_t n = strlen(word);
	if (strncmp(*p, word, n))
		return false;
	*p += n;
	return true;
}

/* ---- The output as lines ------------------------------------------------------------------ */

/* An embedded NUL ends a line, like a newline: output is text, and a NUL must not hide the
 * rest of the buffer from the string functions. */
int mw_ad_lines_open(struct lines *l, const char *buf, size_t len)
{
	l->text = malloc(len + 1);
	if (!l->text)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		l->text[i] = buf[i] ? buf[i] : '\n';
	l->text[len] = '\0';
	l->next = l->text;
	l->end = l->text + len;
	l->lineno = 0;
	return 0;
}

void mw_ad_lines_close(struct lines *l)
{
	free(l->text);
	l->text = l->next = l->end = NULL;
}

/* The next line without its newline (and without a trailing CR), or NULL at the end. */
char *mw_ad_lines_next(struct lines *l)
{
	char *line = l->next, *nl;
	if (line == l->end)
		return NULL;
	nl = memchr(line, '\n', (size_t)(l->end - line));
	if (nl) {
		*nl = '\0';
		l->next = nl + 1;
	} else {
		l->next = l->end;
	}
	size_t n = strlen(line);
	if (n && line[n - 1] == '\r')
		line[n - 1] = '\0';
	l->lineno++;
	return line;
}

bool mw_ad_all_blank(const char *s)
{
	return !*mw_ad_skip_blanks(s);
}

bool mw_ad_all_blank_n(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isspace((unsigned char)buf[i]))
			return false;
	return true;
}

bool mw_ad_detect_first_byte(const char *buf, size_t len, char c)
{
	size_t i = 0;
	while (i < len && isspace((unsigned char)buf[i]))
		i++;
	return i < len && buf[i] == c;
}

/* Length of the first line of buf. */
size_t mw_ad_first_line_len(const char *buf, size_t len)
{
	size_t n = 0;
	while (n < len && buf[n] != '\n')
		n++;
	return n;
}
