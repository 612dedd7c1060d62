/* src/base/text.c: escaping text for terminals, markdown and CSV (text.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

enum mode { ONE_LINE, MD_CELL, LINES };

/* Length of the valid UTF-8 sequence at p (1..4), 0 when it is not one (RFC 3629: no
 * overlongs, no surrogates, nothing past U+10FFFF). *cp receives the code point. */
static int utf8_len(const unsigned char *p, uint32_t *cp)
{
	int n;
	uint32_t c = p[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
	} else {
		return 0;
	}
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	*cp = c;
	return n;
}

/* Code points a terminal or a text renderer acts on rather than shows: C1 controls, the
 * bidi embeddings, overrides and isolates (Unicode TR 9), line and paragraph separators. */
static bool hidden_control(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
	       (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

/* Writes s escaped into out (NULL: only counts); returns the length. */
static size_t escape(const char *s, enum mode m, char *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k = 0;
	char tmp[12];
	while (*p) {
		uint32_t c;
		int n = utf8_len(p, &c);
		const char *rep = NULL;
		if (n == 0) {
			snprintf(tmp, sizeof(tmp), "\\x%02x", *p);
			rep = tmp;
			n = 1;
		} else if (c == '\n' || c == '\t') {
			rep = m == LINES ? NULL : c == '\n' ? "\\n" : "\\t";
		} else if (c == '\r') {
			rep = "\\r";
		} else if (c == 0x1b) {
			rep = "\\e";
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\x%02x", c);
			rep = tmp;
		} else if (hidden_control(c)) {
			snprintf(tmp, sizeof(tmp), "\\u%04x", c);
			rep = tmp;
		} else if (c == '|' && m == MD_CELL) {
			rep = "\\|";
		}
		if (rep) {
			size_t l = strlen(rep);
			if (out)
				memcpy(out + k, rep, l);
			k += l;
		} else {
			if (out)
				memcpy(out + k, p, (size_t)n);
			k += (size_t)n;
		}
		p += n;
	}
	if (out)
		out[k] = '\0';
	return k;
}

static const char *esc(const char *s, enum mode m)
{
	static char *slots[16];
	static unsigned next;
	if (!s)
		return NULL;
	size_t need = escape(s, m, NULL);
	if (need == strlen(s) && !(m == MD_CELL && strchr(s, '|'))) {
		/* The same length can still hide a change only where a byte was replaced by an
		 * escape of one byte, which none is: s needs nothing. */
		return s;
	}
	char *buf = malloc(need + 1);
	if (!buf)
		return "(text not shown: out of memory)";
	escape(s, m, buf);
	free(slots[next % 16]);
	slots[next++ % 16] = buf;
	return buf;
}

const char *mw_esc(const char *s)
{
	return esc(s, ONE_LINE);
}

const char *mw_esc_md(const char *s)
{
	return esc(s, MD_CELL);
}

const char *mw_esc_lines(const char *s)
{
	return esc(s, LINES);
}

void mw_csv_put(FILE *f, const char *s)
{
	const char *e = mw_esc(s ? s : "");
	char *end = NULL;
	bool formula = strchr("=+-@\t\r", e[0]) && e[0];
	/* "-5" and "+1.5e3" are numbers, not formulas: a spreadsheet reads them as such. */
	if (formula && (e[0] == '-' || e[0] == '+')) {
		strtod(e, &end);
		formula = !(end && end != e && !*end);
	}
	fputc('"', f);
	if (formula)
		fputc('\'', f);
	for (; *e; e++) {
		if (*e == '"')
			fputc('"', f);
		fputc(*e, f);
	}
	fputc('"', f);
}

void mw_html_put(FILE *f, const char *s)
{
	/* The five characters HTML gives a meaning in text and in quoted attribute values (the
	 * HTML standard's "escaping a string"; ' too, for attributes a writer quotes with it). */
	for (const char *e = mw_esc(s ? s : ""); *e; e++) {
		switch (*e) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*e, f);
		}
	}
}

char *mw_utf8_fix(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out = malloc(3 * strlen(s) + 1), *o = out;
	if (!out)
		return NULL;
	while (*p) {
		uint32_t c;
		int n = utf8_len(p, &c);
		if (n == 0) {
			memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD REPLACEMENT CHARACTER */
			o += 3;
			p++;
		} else {
			memcpy(o, p, (size_t)n);
			o += n;
			p += n;
		}
	}
	*o = '\0';
	return out;
}

void mw_utf8_trim(char *s)
{
	size_t n = strlen(s), k = n;
	/* back over continuation bytes to the last lead byte, at most 3 */
	while (k > 0 && n - k < 4 && ((unsigned char)s[k - 1] & 0xc0) == 0x80)
		k--;
	if (k > 0 && (unsigned char)s[k - 1] >= 0xc0) {
		uint32_t c;
		unsigned char tmp[5] = { 0 };
		memcpy(tmp, s + k - 1, n - k + 1 < 4 ? n - k + 1 : 4);
		if (utf8_len(tmp, &c) == 0)
			s[k - 1] = '\0';
	}
}

char *mw_json_esc(const char *json)
{
	const unsigned char *p = (const unsigned char *)json;
	/* at most 6 bytes ("\u007f") for one byte of input */
	char *out = malloc(6 * strlen(json) + 1), *o = out;
	if (!out)
		return NULL;
	while (*p) {
		uint32_t c;
		int n = utf8_len(p, &c);
		if (n > 0 && (c == 0x7f || hidden_control(c))) {
			o += sprintf(o, "\\u%04x", c);
		} else {
			n = n > 0 ? n : 1; /* (not from a JSON writer: copied as it is) */
			memcpy(o, p, (size_t)n);
			o += n;
		}
		p += n;
	}
	*o = '\0';
	return out;
}
