/* src/base/mw.h: what every part of the memwall command shares. */
#ifndef MEMWALL_MW_H
#define MEMWALL_MW_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes: the contract with scripts and CI jobs. */
enum mw_exit {
	MW_EXIT_OK = 0,       /* did what was asked */
	MW_EXIT_CHECK = 1,    /* a check failed: a regression, an acceptance criterion not met */
	MW_EXIT_USAGE = 2,    /* bad usage or bad input (a file, a field, an option) */
	MW_EXIT_ENV = 3,      /* this environment cannot do what was asked (e.g. no DRAM counters) */
};

/* The most threads any verb or protocol may ask for (run --threads, engine.threads, generate,
 * roofline, calibrate, bandwidth): checked where the option or the protocol is read, before
 * anything runs. protocols/protocol.schema.json's engine.threads maximum is the same number
 * (tests/e2e/test_security.c checks that). */
#define MW_THREADS_MAX 1024

/* Where bad input was and what was wrong with it (jansson's json_error_t is the model). */
struct mw_error {
	char source[512]; /* the file or option at fault, "" if none */
	int line;         /* 1-based line in source, 0 if not applicable */
	char field[128];  /* the field or key at fault, "" if none */
	char text[768];   /* what was wrong, and where possible how to fix it */
};

void mw_error_clear(struct mw_error *err);
/* Fills err; always returns -EINVAL-style code passed in, so callers can write
 * `return mw_error_set(err, -EINVAL, path, "model.path", "...")`. */
int mw_error_set(struct mw_error *err, int code, const char *source, const char *field,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Prints "memwall: source: field: text" to stderr. */
void mw_error_print(const struct mw_error *err);

/* Prints "memwall VERB: message" to stderr; returns the exit code given. */
int mw_fail(int exit_code, const char *verb, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Drops a folder argument's trailing slashes in place ("plots/" -> "plots"; "/" stays), so the
 * paths printed under it read "plots/x.png", not "plots//x.png". Returns path. */
char *mw_path_trim(char *path);

/* Option-value parsers: 0 on success, -EINVAL when the text is not a whole number in range. */
int mw_parse_long(const char *text, long min, long max, long *out);
int mw_parse_double(const char *text, double min, double max, double *out);

/* bytes as MB (10^6 bytes) with at least three significant digits and one decimal: "0.477",
 * "12.1", "5063.2" ("nan" for NaN). Returns buf. */
char *mw_mb_text(double bytes, char *buf, size_t n);

/* CLOCK_MONOTONIC, in nanoseconds and in seconds. */
uint64_t mw_now_ns(void);
double mw_now_s(void);

/* The current UTC time in ISO 8601 into buf: "2026-11-21T07:36:00Z", or "20261121T073600Z"
 * when compact (for file names). Returns buf. */
char *mw_utc_now(char *buf, size_t n, bool compact);
/* Seconds since the epoch of a UTC time as mw_utc_now writes it (not compact), or with RFC
 * 3339's fractional seconds ("2026-12-06T21:07:35.001Z": the whole seconds), with every field
 * in range ("2026-02-30T10:00:00Z" and "9999-99-99T99:99:99Z" are none) into *out. 0, or
 * -EINVAL. */
int mw_utc_parse(const char *s, int64_t *out);
/* Whether t is an ISO 8601 date or UTC time as records write them: YYYY-MM-DD, optionally
 * THH:MM, :SS and Z, every field in range (--since and --until of `memwall db`). */
bool mw_iso_date(const char *t);

/* CPUs this process may run on (sched_getaffinity); 1 when that cannot be read. */
int mw_cpus_allowed(void);

/* A long context's tokens (generate --context, protocol engine.context): out[0] = bos, then
 * n - 1 ids uniform over [0, vocab) drawn from seed with splitmix64 (Steele et al. 2014):
 * deterministic, and with no repetition for prompt-lookup to find. */
void mw_context_tokens(int *out, int n, int bos, int vocab, uint64_t seed);

/* The version string, e.g. "0.1.0 (git 1a2b3c4d5e6f+dirty)"; static storage. */
const char *mw_version(void);

#endif
