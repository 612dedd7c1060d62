/* tests/lib/test.h: assertions for memwall's test programs.
 *
 * A failed check prints file, line, the expression and both values, counts the failure and
 * carries on, so one run shows every broken check. A test program ends with
 * `return t_done();`, which exits 1 if anything failed. A test that cannot run here calls
 * t_skip("why"), which prints the reason and exits 77: meson reports it as skipped, never as
 * passed.
 *
 * tests/lib is one static library (testlib, tests/meson.build) that every test program links:
 * test.c (this tally), files.h (files and scratch folders), run.h (running a program and
 * capturing it), record.h (a short `memwall run`, a record's fields and its edits), values.h
 * (argmax, medians, key=value figures), sim_tree.h (recorded sysfs trees and the simulated
 * PMU's environment), verify_sim.h and sim_series.h (the scripts of the verify and series
 * tests). Every name it exports starts t_ (T_ for macros), then the module where it has one
 * (t_vs_, t_series_, t_fx_, t_id_, t_pg_); its headers hold declarations, no state. Three
 * stay header-only, static inline and stateless: fixture_result.h (tests/fuzz's seeds use
 * it too, and link no test library), identity.h and pg_server.h. The reference forward
 * pass (ref_forward.h, ref_check.h: ref_) is a library of its own.
 */
#ifndef MEMWALL_TEST_H
#define MEMWALL_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "files.h"

/* The program's tally of checks and failed checks (tests/lib/test.c): one pair for the
 * program and the helpers of tests/lib it calls. */
extern int t_failures;
extern int t_checks;

#define T_FAIL_AT(file, line, ...)                                                              \
	do {                                                                                       \
		fprintf(stderr, "%s:%d: FAIL: ", file, line);                                      \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		t_failures++;                                                                      \
	} while (0)

#define T_ASSERT(cond)                                                                          \
	do {                                                                                       \
		t_checks++;                                                                        \
		if (!(cond))                                                                       \
			T_FAIL_AT(__FILE__, __LINE__, "%s", #cond);                                \
	} while (0)

#define T_EQ_INT(a, b)                                                                          \
	do {                                                                                       \
		long long t_a_ = (long long)(a), t_b_ = (long long)(b);                            \
		t_checks++;                                                                        \
		if (t_a_ != t_b_)                                                                  \
			T_FAIL_AT(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, t_a_,      \
				  t_b_);                                                           \
	} while (0)

#define T_EQ_U64(a, b)                                                                          \
	do {                                                                                       \
		uint64_t t_a_ = (uint64_t)(a), t_b_ = (uint64_t)(b);                               \
		t_checks++;                                                                        \
		if (t_a_ != t_b_)                                                                  \
			T_FAIL_AT(__FILE__, __LINE__, "%s == %s: %" PRIu64 " (0x%" PRIx64          \
				  ") != %" PRIu64 " (0x%" PRIx64 ")",                              \
				  #a, #b, t_a_, t_a_, t_b_, t_b_);                                 \
	} while (0)

#define T_EQ_STR(a, b)                                                                          \
	do {                                                                                       \
		const char *t_a_ = (a), *t_b_ = (b);                                               \
		t_checks++;                                                                        \
		if (!t_a_ || !t_b_ || strcmp(t_a_, t_b_))                                          \
			T_FAIL_AT(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,        \
				  t_a_ ? t_a_ : "(null)", t_b_ ? t_b_ : "(null)");                 \
	} while (0)

/* Checks that haystack contains needle: for error messages that must name a field. */
#define T_CONTAINS(haystack, needle)                                                            \
	do {                                                                                       \
		const char *t_h_ = (haystack), *t_n_ = (needle);                                   \
		t_checks++;                                                                        \
		if (!t_h_ || !strstr(t_h_, t_n_))                                                  \
			T_FAIL_AT(__FILE__, __LINE__, "%s contains \"%s\": got \"%s\"", #haystack, \
				  t_n_, t_h_ ? t_h_ : "(null)");                                   \
	} while (0)

/* |a - b| <= tol; NaN never passes. */
#define T_NEAR(a, b, tol)                                                                       \
	do {                                                                                       \
		double t_a_ = (double)(a), t_b_ = (double)(b), t_t_ = (double)(tol);               \
		t_checks++;                                                                        \
		if (!(fabs(t_a_ - t_b_) <= t_t_))                                                  \
			T_FAIL_AT(__FILE__, __LINE__, "%s ~= %s: %.9g vs %.9g (|diff| %.3g > %.3g)",  \
				  #a, #b, t_a_, t_b_, fabs(t_a_ - t_b_), t_t_);                    \
	} while (0)

/* Prints "SKIP: " and the reason, exits 77. */
void t_skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Prints the tally; 1 if any check failed, else 0: `return t_done();` ends main. */
int t_done(void);

/* Path of a file under ../shared (MEMWALL_SHARED overrides). Skips the test, naming the file,
 * when it is absent: shared/ holds third-party data that a clone of memwall may not have.
 * Returns static storage, overwritten by the next call. */
const char *t_shared(const char *rel);

/* Path of a file under ../shared into path (n bytes), as t_shared; where it is absent, says
 * "skipped a part" and returns false, for a test that checks the rest without it. */
bool t_have_shared(const char *rel, char *path, size_t n);

/* The models of ../shared every engine test runs where they are present (t_have_shared):
 * llama2.c's stories260K and the tiny llama and falcon GGUF fixtures. */
#define T_SHARED_MODELS 3
extern const char *const t_shared_models[T_SHARED_MODELS];

/* Writes text to root + rel (rel starting with '/'), making root (whose parent must exist)
 * and the folders below it on the way: a file of a recorded tree (/proc, /sys) written by a
 * test into its scratch root. A file that cannot be written is a failed check. */
void t_put(const char *root, const char *rel, const char *text);

/* A cgroup v2 tree under root, as a container with its own cgroup namespace sees it, whose
 * cpu.max holds cpu_max ("150000 100000", "max 100000"): read by src/base/cgroup.c where
 * $MEMWALL_CGROUP_ROOT names root. */
void t_cgroup_tree(const char *root, const char *cpu_max);

/* Path of rel in the source tree ($MEMWALL_SOURCE_ROOT, "." where it is unset), in path. */
void t_source(char *path, size_t n, const char *rel);

/* Path of a file under tests/data/ in the source tree; static storage, overwritten by the
 * next call. */
const char *t_data(const char *rel);

#endif
