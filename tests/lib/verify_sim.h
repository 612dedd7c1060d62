/* tests/lib/verify_sim.h: what the `memwall verify` tests on the simulated PMU share
 * (test_verify_numa.c, test_verify_matrix.c, test_verify_diagnose.c). Include after test.h,
 * run.h and sim_tree.h.
 *
 * The canary: --size S GiB is S * 2^30 bytes (truncated), rounded up to 6 whole pages for
 * the one worker (engine.h, eng_stream_options.bytes): vs_bytes(S). The read pass reads it
 * (ENG_STREAM_READ), the write pass writes it (ENG_STREAM_WRITE, non-temporal: nothing read).
 *
 * The windows, in the order verify reads its meters (src/run/verify_run.c): a rule's steps
 * list one count per window, read 1 first. verify reads at the open (k = 0, no step), the
 * idle window's start (its step: GAP) and end (IDLE), then per placement target the set-up
 * (GAP), the read pass and the write pass; with --matrix, per size the set-up (GAP) and the
 * five patterns. Every window lasts one ns_per_read, so the background verify subtracts from
 * each window is the idle window's count, IDLE: a window's count is its net bytes / 64 plus
 * IDLE. A script names the node of a rule (node=N) or any CPU (cpu=*).
 */
#ifndef MEMWALL_TEST_VERIFY_SIM_H
#define MEMWALL_TEST_VERIFY_SIM_H

#include <inttypes.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define VS_IDLE 7 /* counts per event over the idle window, and the background of every window */
#define VS_GAP 3  /* counts in the windows nobody checks (set-up) */
#define VS_MAX 64 /* windows */

/* One event's windows: net counts per window, the idle count added by vs_rule. */
struct vs_steps {
	int n;
	uint64_t net[VS_MAX];
};

static inline uint64_t vs_bytes(double gib)
{
	uint64_t unit = 6 * (uint64_t)sysconf(_SC_PAGESIZE), asked = (uint64_t)(gib * 1073741824.0);
	return (asked + unit - 1) / unit * unit;
}

/* The first windows: idle start, idle. */
static inline void vs_begin(struct vs_steps *s)
{
	s->n = 0;
}

static inline void vs_add(struct vs_steps *s, uint64_t net)
{
	if (s->n < VS_MAX)
		s->net[s->n++] = net;
}

/* One placement's three windows: set-up, read pass, write pass (net counts). */
static inline void vs_target(struct vs_steps *s, uint64_t rd, uint64_t wr)
{
	vs_add(s, UINT64_MAX); /* set-up: GAP */
	vs_add(s, rd);
	vs_add(s, wr);
}

/* The count of window i (0: the first after the idle window) as vs_rule writes it. */
static inline uint64_t vs_count(const struct vs_steps *s, int i)
{
	return s->net[i] == UINT64_MAX ? (uint64_t)VS_GAP : s->net[i] + VS_IDLE;
}

/* Counts over windows [from, to] (vs_count's indices). */
static inline uint64_t vs_sum(const struct vs_steps *s, int from, int to)
{
	uint64_t n = 0;
	for (int i = from; i <= to && i < s->n; i++)
		n += vs_count(s, i);
	return n;
}

/* Writes the rule of an event: match is "cpu=*" or "node=N". */
static inline void vs_rule(FILE *f, uint32_t type, uint64_t config, const char *match,
			   const struct vs_steps *s)
{
	fprintf(f, "perf type=%u config=0x%" PRIx64 " %s start=1000 ns_per_read=2000000 steps=%d,%d",
		type, config, match, VS_GAP, VS_IDLE);
	for (int i = 0; i < s->n; i++)
		fprintf(f, ",%" PRIu64, vs_count(s, i));
	fputc('\n', f);
}

/* `memwall verify --json --size SIZE --idle-ms 1 --no-perf -o out` and up to 3 more
 * arguments (NULL ends them). */
static inline struct t_output vs_verify(const char *size, const char *out, const char *a1,
					const char *a2, const char *a3)
{
	const char *argv[] = { "memwall", "verify", "--json", "--size", size, "--idle-ms", "1",
			       "--no-perf", "-o", out, a1, a2, a3, NULL };
	return t_run(argv);
}

static inline json_t *vs_load(const char *path)
{
	json_t *doc = json_load_file(path, 0, NULL);
	T_ASSERT(doc != NULL);
	return doc;
}

static inline const json_t *vs_check(const json_t *rec, const char *name)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(rec, "checks"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	return NULL;
}

static inline const char *vs_verdict(const json_t *rec, const char *name)
{
	const json_t *c = vs_check(rec, name);
	if (!c)
		fprintf(stderr, "no check named \"%s\"\n", name);
	T_ASSERT(c != NULL);
	return c ? json_string_value(json_object_get(c, "verdict")) : "(absent)";
}

/* The diagnosis of id in a record, or NULL. */
static inline const json_t *vs_diagnosis(const json_t *rec, const char *id)
{
	size_t i;
	const json_t *d;
	json_array_foreach(json_object_get(rec, "diagnoses"), i, d)
		if (!strcmp(json_string_value(json_object_get(d, "id")), id))
			return d;
	return NULL;
}

#endif
