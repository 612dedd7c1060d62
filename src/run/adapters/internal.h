/* src/run/adapters/internal.h: what the adapter files of this folder share, one file per
 * adapter (see adapters.h for the table of adapters and what each one reads).
 *
 * Only the adapter files and registry.c include this header. It takes the types of adapters.h
 * by pointer and so does not include it: each file includes adapters.h itself.
 */
#ifndef MEMWALL_ADAPTERS_INTERNAL_H
#define MEMWALL_ADAPTERS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mw_adapter_opts;
struct mw_adapter_result;
struct mw_error;

/* llama.cpp prints counts with %d; anything past int32 is corruption, not a long run. */
#define COUNT_MAX INT32_MAX
/* llama-bench's avg_ns: up to ~11 days per repetition. */
#define NS_MAX INT64_C(1000000000000000)
/* More tests than this in one llama-bench output is not a single configuration anyway. */
#define BENCH_MAX_TESTS 64
/* Cells in one row of llama-bench's csv or markdown table. */
#define CSV_MAX_CELLS 128

/* ---- Errors and small parsers (common.c) --------------------------------------------------- */

/* Fills err (which may be NULL) with source, line and field; returns code. */
int mw_ad_fail(struct mw_error *err, int code, const char *source, int line, const char *field,
	 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Marks the decode count unknown, with why (and which flag to change) in res->why_unknown. */
void mw_ad_set_unknown(struct mw_adapter_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

const char *mw_ad_skip_blanks(const char *p);
/* Number readers: NULL on success, else what was wrong with the text ("is negative", ...). */
const char *mw_ad_read_count(const char **p, int64_t max, int64_t *out);
const char *mw_ad_read_number(const char **p, double *out);
const char *mw_ad_cell_count(const char *s, int64_t max, int64_t *out);
const char *mw_ad_cell_number(const char *s, double *out);
bool mw_ad_eat(const char **p, const char *word);
bool mw_ad_all_blank(const char *s);
bool mw_ad_all_blank_n(const char *buf, size_t len);
/* True when the first non-blank byte of buf is c. */
bool mw_ad_detect_first_byte(const char *buf, size_t len, char c);
size_t mw_ad_first_line_len(const char *buf, size_t len);

/* ---- The output as lines (common.c) -------------------------------------------------------- */

struct lines {
	char *text;  /* private copy, NUL-terminated; lines are cut in place */
	char *next;  /* start of the next line */
	char *end;   /* text + len */
	int lineno;  /* 1-based number of the line last returned */
};

int mw_ad_lines_open(struct lines *l, const char *buf, size_t len);
void mw_ad_lines_close(struct lines *l);
char *mw_ad_lines_next(struct lines *l);

/* ---- llama-bench's tests, whatever the format (llama_bench.c) ------------------------------ */

/* One llama-bench test: a row of its table. Field names are llama-bench's own
 * (test::get_fields). */
struct bench_test {
	int line;            /* the line it was read from, 0 for an element of a JSON array */
	char where[32];      /* "line 3" or "element [1]", for messages */
	int64_t n_prompt, n_gen, n_depth;
	double avg_ns, stddev_ns;
	bool has_ns, has_stddev_ns;
	double avg_ts, stddev_ts;
	bool has_stddev_ts;
	int64_t reps;        /* samples_ns entries, 0 when not printed */
	char label[64];      /* markdown: the test column as printed */
};

struct bench {
	struct bench_test t[BENCH_MAX_TESTS];
	int n;
};

/* A cleared test at the end of b, or NULL (err set) when b is full. */
struct bench_test *mw_ad_bench_add(struct bench *b, const char *source, int line,
			     struct mw_error *err);
/* The one pp and one tg test of b as res's figures. */
int mw_ad_bench_finish(const struct bench *b, const char *source, struct mw_adapter_result *res,
		 struct mw_error *err);

/* ---- The rows: one file each (registry.c holds the table) ---------------------------------- */

/* Each row's detect and parse (mw_adapter_detect_fn, mw_adapter_parse_fn). */
/* memwall_tokens.c */
bool mw_ad_detect_generic(const char *buf, size_t len);
int mw_ad_parse_generic(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		  const char *source, struct mw_adapter_result *res, struct mw_error *err);
/* llama_completion.c */
bool mw_ad_detect_completion(const char *buf, size_t len);
int mw_ad_parse_completion(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		     const char *source, struct mw_adapter_result *res, struct mw_error *err);
/* llama_bench_json.c */
bool mw_ad_detect_bench_json(const char *buf, size_t len);
int mw_ad_parse_bench_json(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		     const char *source, struct mw_adapter_result *res, struct mw_error *err);
bool mw_ad_detect_bench_jsonl(const char *buf, size_t len);
int mw_ad_parse_bench_jsonl(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		      const char *source, struct mw_adapter_result *res, struct mw_error *err);
/* llama_bench_csv.c */
bool mw_ad_detect_bench_csv(const char *buf, size_t len);
int mw_ad_parse_bench_csv(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		    const char *source, struct mw_adapter_result *res, struct mw_error *err);
/* llama_bench_md.c */
bool mw_ad_detect_bench_md(const char *buf, size_t len);
int mw_ad_parse_bench_md(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		   const char *source, struct mw_adapter_result *res, struct mw_error *err);

#endif
