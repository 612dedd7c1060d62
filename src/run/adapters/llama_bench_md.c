/* src/run/adapters/llama_bench_md.c: the llama-bench-md row (`llama-bench -o md`). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters.h"
#include "internal.h"

/* Markdown: "| model | size | ... | test | t/s |", a rule, then rows such as
 * "| ... | pp512 | 1234.56 ± 7.89 |"; test labels are pp<N>, tg<N> or pp<N>+tg<N>, with
 * " @ d<D>" (or "@d<D>") when a depth was set (llama-bench's markdown_printer). The table
 * carries no times, only t/s. */
bool mw_ad_detect_bench_md(const char *buf, size_t len)
{
	size_t n = mw_ad_first_line_len(buf, len);
	return mw_ad_detect_first_byte(buf, len, '|') && memmem(buf, n, " test ", 6) &&
	       memmem(buf, n, " t/s ", 5);
}

/* Splits "| a | b |" into trimmed cells in place; returns the count, or -1 when the row is
 * not closed by '|'. */
static int md_split(char *line, char **cells, int max)
{
	char *p = line;
	int n = 0;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '|')
		return -1;
	p++;
	for (;;) {
		char *bar = strchr(p, '|');
		if (!bar)
			return mw_ad_all_blank(p) ? n : -1;
		if (n == max)
			return max + 1;
		*bar = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		char *e = p + strlen(p);
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		cells[n++] = p;
		p = bar + 1;
	}
}

static const char *md_label(const char *s, struct bench_test *t)
{
	const char *p = s, *why;
	if (mw_ad_eat(&p, "pp")) {
		if ((why = mw_ad_read_count(&p, COUNT_MAX, &t->n_prompt)))
			return why;
		if (mw_ad_eat(&p, "+tg") && (why = mw_ad_read_count(&p, COUNT_MAX, &t->n_gen)))
			return why;
	} else if (mw_ad_eat(&p, "tg")) {
		if ((why = mw_ad_read_count(&p, COUNT_MAX, &t->n_gen)))
			return why;
	} else {
		return "is not a test label (ppN, tgN, ppN+tgN)";
	}
	p = mw_ad_skip_blanks(p);
	if (mw_ad_eat(&p, "@")) {
		p = mw_ad_skip_blanks(p);
		if (!mw_ad_eat(&p, "d") || (why = mw_ad_read_count(&p, COUNT_MAX, &t->n_depth)))
			return "has a depth that is not '@ dN'";
	}
	return *mw_ad_skip_blanks(p) ? "has unexpected text after the test label" : NULL;
}

/* "12086.39 ± 742.55", or a bare mean. */
static const char *md_rate(const char *s, struct bench_test *t)
{
	const char *p = s, *why;
	if ((why = mw_ad_read_number(&p, &t->avg_ts)))
		return why;
	p = mw_ad_skip_blanks(p);
	if (!*p)
		return NULL;
	if (!mw_ad_eat(&p, "\xc2\xb1") && !mw_ad_eat(&p, "+-"))
		return "is not 'mean \xc2\xb1 sd'";
	if ((why = mw_ad_read_number(&p, &t->stddev_ts)))
		return why;
	t->has_stddev_ts = true;
	return *mw_ad_skip_blanks(p) ? "is not 'mean \xc2\xb1 sd'" : NULL;
}

int mw_ad_parse_bench_md(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		   const char *source, struct mw_adapter_result *res, struct mw_error *err)
{
	struct lines l = { 0 };
	struct bench *b = NULL;
	char *cells[CSV_MAX_CELLS], *line;
	int test_col = -1, ts_col = -1, n_header = 0, rc;
	(void)opts;

	if (!(b = calloc(1, sizeof(*b))) || mw_ad_lines_open(&l, buf, len)) {
		rc = -ENOMEM;
		goto out;
	}
	while ((line = mw_ad_lines_next(&l))) {
		if (*mw_ad_skip_blanks(line) != '|')
			continue; /* blank lines and the "build: ..." footer */
		int n = md_split(line, cells, CSV_MAX_CELLS);
		if (n < 0 || n > CSV_MAX_CELLS) {
			rc = mw_ad_fail(err, -EINVAL, source, l.lineno, "",
				  "a table row that does not end with '|' (the line is cut short)");
			goto out;
		}
		if (!n_header) {
			for (int i = 0; i < n; i++) {
				if (!strcmp(cells[i], "test"))
					test_col = i;
				if (!strcmp(cells[i], "t/s"))
					ts_col = i;
			}
			if (test_col < 0 || ts_col < 0) {
				rc = mw_ad_fail(err, -EINVAL, source, l.lineno,
					  test_col < 0 ? "test" : "t/s",
					  "no such column in the table header: not llama-bench "
					  "-o md output?");
				goto out;
			}
			n_header = n;
			continue;
		}
		if (n && cells[0][0] == '-')
			continue; /* the rule under the header */
		if (n != n_header) {
			rc = mw_ad_fail(err, -EINVAL, source, l.lineno, "",
				  "%d cells for %d columns (the line is cut short or garbled)", n,
				  n_header);
			goto out;
		}
		struct bench_test *t = mw_ad_bench_add(b, source, l.lineno, err);
		const char *why;
		if (!t) {
			rc = -EINVAL;
			goto out;
		}
		snprintf(t->label, sizeof(t->label), "%s", cells[test_col]);
		if ((why = md_label(cells[test_col], t))) {
			rc = mw_ad_fail(err, -EINVAL, source, l.lineno, "test", "'%s' %s",
				  cells[test_col], why);
			goto out;
		}
		if ((why = md_rate(cells[ts_col], t))) {
			rc = mw_ad_fail(err, -EINVAL, source, l.lineno, "t/s", "'%s' %s", cells[ts_col],
				  why);
			goto out;
		}
	}
	if (!n_header) {
		rc = mw_ad_fail(err, -EINVAL, source, 0, "", "no markdown table: not llama-bench -o md "
						    "output?");
		goto out;
	}
	rc = mw_ad_bench_finish(b, source, res, err);
out:
	mw_ad_lines_close(&l);
	free(b);
	return rc;
}
