/* tests/lib/test.h: assertions for memwall's test programs.
 *
 * A failed check prints file, line, the expression and both values, counts the failure and
 * carries on, so one run shows every broken check. A test program ends with
 * `return t_done();`, which exits 1 if anything failed. A test that cannot run here calls
 * t_skip("why"), which prints the reason and exits 77: meson reports it as skipped, never as
 * passed.
 */
#ifndef MEMWALL_TEST_H
#define MEMWALL_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int t_failures;
static int t_checks;

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

static inline void t_skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void t_skip(const char *fmt, ...)
{
	va_list ap;
	fputs("SKIP: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	exit(77);
}

static inline int t_done(void)
{
	if (t_failures) {
		fprintf(stderr, "%d of %d checks failed\n", t_failures, t_checks);
		return 1;
	}
	printf("all %d checks passed\n", t_checks);
	return 0;
}

/* Path of a file under ../shared (MEMWALL_SHARED overrides). Skips the test, naming the file,
 * when it is absent: shared/ holds third-party data that a clone of memwall may not have.
 * Returns static storage, overwritten by the next call. */
static inline const char *t_shared(const char *rel)
{
	static char path[4096];
	const char *root = getenv("MEMWALL_SHARED");
	struct stat st;
	if (!root || !*root)
		t_skip("MEMWALL_SHARED is not set (meson sets it to the source tree's ../shared)");
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (stat(path, &st) != 0)
		t_skip("%s is absent: this test needs the shared data folder beside the checkout",
		       path);
	return path;
}

/* Writes text to root + rel (rel starting with '/'), making root (whose parent must exist)
 * and the folders below it on the way: a file of a recorded tree (/proc, /sys) written by a
 * test into its scratch root. A file that cannot be written is a failed check. */
static inline void t_put(const char *root, const char *rel, const char *text)
{
	char path[4096];
	size_t skip = strlen(root) + 1;
	mkdir(root, 0755);
	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (char *p = path + (skip < strlen(path) ? skip : strlen(path)); *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	FILE *f = fopen(path, "w");
	t_checks++;
	if (!f) {
		t_failures++;
		fprintf(stderr, "FAIL: cannot write %s\n", path);
		return;
	}
	fputs(text, f);
	fclose(f);
}

/* A cgroup v2 tree under root, as a container with its own cgroup namespace sees it, whose
 * cpu.max holds cpu_max ("150000 100000", "max 100000"): read by src/base/cgroup.c where
 * $MEMWALL_CGROUP_ROOT names root. */
static inline void t_cgroup_tree(const char *root, const char *cpu_max)
{
	t_put(root, "/proc/self/cgroup", "0::/\n");
	t_put(root, "/proc/self/mountinfo",
	      "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
	t_put(root, "/sys/fs/cgroup/cpu.max", cpu_max);
}

/* Path of a file under tests/data/ in the source tree. */
static inline const char *t_data(const char *rel)
{
	static char path[4096];
	const char *root = getenv("MEMWALL_TEST_DATA");
	snprintf(path, sizeof(path), "%s/%s", root ? root : "tests/data", rel);
	return path;
}

#endif
