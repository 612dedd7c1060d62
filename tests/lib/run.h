/* tests/lib/run.h: run the memwall binary (or any program) and capture its output, for tests
 * that check the command line: exit codes, messages, files written. */
#ifndef MEMWALL_TEST_RUN_H
#define MEMWALL_TEST_RUN_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "test.h"

struct t_output {
	int status;   /* exit code, or 128 + signal */
	char *out;    /* stdout, NUL-terminated, malloc'd */
	char *err;    /* stderr, NUL-terminated, malloc'd */
};

/* Runs argv (argv[0] "memwall" is $MEMWALL_BIN; else a path) with stdin from stdin_path,
 * capturing its exit status, stdout and stderr. */
struct t_output t_run_in(const char *const argv[], const char *stdin_path);

/* t_run_in with stdin from /dev/null. */
struct t_output t_run(const char *const argv[]);

/* The shipped smoke protocol (protocols/stories260k-smoke.json) without its bandwidth drift
 * probe, written to path: the same runs, the same name, "drift": {"probe_ms": 0}. The probe
 * streams 8x the LLC in fresh 2 MiB pages before and after the runs: about a second of CPU a
 * run where the runs themselves take 20 ms, which a test that does not look at drift need not
 * spend (issue 44: the suite's CPU budget). Exits 1 when the file cannot be read or no
 * longer has the one probe_ms it replaces. */
void t_smoke_protocol(const char *path);

/* The start of a test of `memwall run` on the smoke protocol: skips (exit 77) where
 * MEMWALL_SOURCE_ROOT or MEMWALL_BIN is not set; makes the scratch folder (t_scratch, name),
 * writes t_smoke_protocol's file to scratch/stories260k-smoke.json (its path into proto) and
 * points MEMWALL_CACHE_DIR at scratch/cache (its path into cache). */
void t_smoke_scratch(const char *name, char *scratch, size_t sn, char *proto, size_t pn,
		     char *cache, size_t cn);

void t_output_free(struct t_output *o);

/* A check, counted as T_EQ_INT(o.status, 0) would be, that a run exited 0; where it did not,
 * the failure names what ran, its exit code, its stdout and its stderr. */
#define T_OK(o, what) t_ok_at(__FILE__, __LINE__, &(o), what)
void t_ok_at(const char *file, int line, const struct t_output *o, const char *what);

/* A NULL-terminated list of strings, for T_RUN_EXPECT: T_LIST("a", "b"). */
#define T_LIST(...) ((const char *const[]){__VA_ARGS__, NULL})

/* One check per string of has (T_LIST, or NULL for none), as T_CONTAINS counts them, that
 * text contains it; a failure names the stream (what text is) and the caller's line. */
#define T_CONTAINS_ALL(text, has) t_contains_all_at(__FILE__, __LINE__, #text, text, has)
void t_contains_all_at(const char *file, int line, const char *stream, const char *text,
		       const char *const has[]);

/* Runs argv (as t_run does), checks that it exits with status, that its stdout contains each
 * string of out_has and its stderr each of err_has (T_LIST, or NULL for none): one check
 * each, as T_EQ_INT and T_CONTAINS count them, reported at the caller's line. */
#define T_RUN_EXPECT(argv, status, out_has, err_has)                                               \
	t_run_expect_at(__FILE__, __LINE__, argv, status, out_has, err_has)
void t_run_expect_at(const char *file, int line, const char *const argv[], int status,
		     const char *const out_has[], const char *const err_has[]);

/* Starts argv (argv[0] "memwall" is $MEMWALL_BIN, as for t_run) with in, out and err as its
 * stdin, stdout and stderr; its pid, without waiting. */
pid_t t_spawn(const char *const argv[], int in, int out, int err);

/* Starts argv (argv[0] "memwall" is $MEMWALL_BIN, as for t_run) with stdin, stdout and stderr
 * on /dev/null and returns its pid without waiting: for a test that signals it. */
pid_t t_start(const char *const argv[]);

/* Seconds on the monotonic clock. */
double t_now(void);

#endif
