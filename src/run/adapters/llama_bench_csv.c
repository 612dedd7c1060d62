/* src/run/adapters/llama_bench_csv.c: the llama-bench-csv row (`llama-bench -o csv`). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters.h"
#include "internal.h"

/* CSV: a header of field names, then one row per test; every value is quoted, and a quote
 * inside a value is doubled (llama-bench's csv_printer::escape_csv). Splits line in place into
 * at most max cells; returns the cell count, or -1 on an unterminated quote. */
static int csv_split(char *line, char **cells, int max)
{
	int n = 0;
	char *r = line, *w = line;
	for (;;) {
		if (n == max)
			return max + 1;
		cells[n++] = w;
		if (*r == '"') {
			r++;
			for (;;) {
				if (!*r)
					return -1;
				if (*r == '"' && r[1] == '"') {
					*w++ = '"';
					r += 2;
				} else if (*r == '"') {
					r++;
					break;
				} else {
					*w++ = *r++;
				}
			}
		} else {
			while (*r && *r != ',')
				*w++ = *r++;
		}
		if (*r != ',' && *r)
			return -1;
		bool more = *r == ',';
		*w++ = '\0';
		if (!more)
			return n;
		r++;
	}
}

enum csv_col { CSV_N_PROMPT, CSV_N_GEN, CSV_N_DEPTH, CSV_AVG_NS, CSV_STDDEV_NS, CSV_AVG_TS,
	       CSV_STDDEV_TS, CSV_COLS };
static const struct { const char *name; bool required; } csv_cols[CSV_COLS] = {
	[CSV_N_PROMPT] = { "n_prompt", true },   [CSV_N_GEN] = { "n_gen", true },
	[CSV_N_DEPTH] = { "n_depth", false },    [CSV_AVG_NS] = { "avg_ns", true },
	[CSV_STDDEV_NS] = { "stddev_ns", false }, [CSV_AVG_TS] = { "avg_ts", true },
	[CSV_STDDEV_TS] = { "stddev_ts", false },
};

bool mw_ad_detect_bench_csv(const char *buf, size_t len)
{
	size_t n = buf ? mw_ad_first_line_len(buf, len) : 0;
	return n > 0 && memmem(buf, n, "n_prompt", 8) && memmem(buf, n, "n_gen", 5) &&
	       memchr(buf, ',', n) && buf[0] != '|' && buf[0] != '{' && buf[0] != '[';
}

static int csv_row(char **cells, const int *col, struct bench_test *t, const char *source,
		   int line, struct mw_error *err)
{
	int64_t ns = 0;
	const char *why;
	for (int c = 0; c < CSV_COLS; c++) {
		if (col[c] < 0)
			continue;
		const char *s = cells[col[c]];
		switch (c) {
		case CSV_N_PROMPT: why = mw_ad_cell_count(s, COUNT_MAX, &t->n_prompt); break;
		case CSV_N_GEN: why = mw_ad_cell_count(s, COUNT_MAX, &t->n_gen); break;
		case CSV_N_DEPTH: why = mw_ad_cell_count(s, COUNT_MAX, &t->n_depth); break;
		case CSV_AVG_NS: why = mw_ad_cell_count(s, NS_MAX, &ns); break;
		case CSV_STDDEV_NS: why = mw_ad_cell_number(s, &t->stddev_ns); break;
		case CSV_AVG_TS: why = mw_ad_cell_number(s, &t->avg_ts); break;
		default: why = mw_ad_cell_number(s, &t->stddev_ts); break;
		}
		if (why)
			return mw_ad_fail(err, -EINVAL, source, line, csv_cols[c].name, "'%s' %s", s,
				    why);
	}
	t->avg_ns = (double)ns;
	t->has_ns = true;
	t->has_stddev_ns = col[CSV_STDDEV_NS] >= 0;
	t->has_stddev_ts = col[CSV_STDDEV_TS] >= 0;
	return 0;
}

int mw_ad_parse_bench_csv(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		    const char *source, struct mw_adapter_result *res,
		    struct mw_error *err)
{
	struct lines l = { 0 };
	struct bench *b = NULL;
	char **cells = NULL, *line;
	int col[CSV_COLS], n_header = 0, rc;
	(void)opts;

	if (!(b = calloc(1, sizeof(*b))) || !(cells = calloc(CSV_MAX_CELLS, sizeof(*cells))) ||
	    mw_ad_lines_open(&l, buf, len)) {
		rc = -ENOMEM;
		goto out;
	}
	while ((line = mw_ad_lines_next(&l))) {
		if (mw_ad_all_blank(line))
			continue;
		int n = csv_split(line, cells, CSV_MAX_CELLS);
		if (n < 0 || n > CSV_MAX_CELLS) {
			rc = mw_ad_fail(err, -EINVAL, source, l.lineno, "",
				  n < 0 ? "a quoted value is not closed (the line is cut short)"
					: "more than %d columns", CSV_MAX_CELLS);
			goto out;
		}
		if (!n_header) {
			for (int c = 0; c < CSV_COLS; c++) {
				col[c] = -1;
				for (int i = 0; i < n; i++)
					if (!strcmp(cells[i], csv_cols[c].name))
						col[c] = i;
				if (col[c] < 0 && csv_cols[c].required) {
					rc = mw_ad_fail(err, -EINVAL, source, l.lineno, csv_cols[c].name,
						  "no such column in the header: not llama-bench "
						  "-o csv output?");
					goto out;
				}
			}
			n_header = n;
			continue;
		}
		if (n != n_header) {
			rc = mw_ad_fail(err, -EINVAL, source, l.lineno, "",
				  "%d values for %d columns (the line is cut short or garbled)", n,
				  n_header);
			goto out;
		}
		struct bench_test *t = mw_ad_bench_add(b, source, l.lineno, err);
		if (!t || (rc = csv_row(cells, col, t, source, l.lineno, err))) {
			rc = -EINVAL;
			goto out;
		}
	}
	rc = mw_ad_bench_finish(b, source, res, err);
out:
	mw_ad_lines_close(&l);
	free(cells);
	free(b);
	return rc;
}
