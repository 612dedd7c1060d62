/* tests/lib/verify_sim.h: what the `memwall verify` tests on the simulated PMU share
 * (test_verify_numa.c, test_verify_matrix.c, test_verify_diagnose.c, test_verify_groups.c).
 *
 * The canary: --size S GiB is S * 2^30 bytes (truncated), rounded up to 6 whole pages for
 * the one worker (engine.h, eng_stream_options.bytes): t_vs_bytes(S). The read pass reads it
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

#include "run.h"

#define T_VS_IDLE 7 /* counts per event over the idle window, and the background of every window */
#define T_VS_GAP 3  /* counts in the windows nobody checks (set-up) */
#define T_VS_MAX 64 /* windows */

/* One event's windows: net counts per window, the idle count added by t_vs_rule. */
struct t_vs_steps {
	int n;
	uint64_t net[T_VS_MAX];
};

/* The start of a verify test's main: skips without memwall, makes the scratch folder
 * /tmp/mw-test-NAME-XXXXXX (into scratch, sn bytes), keeps memwall's state there and names the
 * sim script (into script, n bytes), which the test writes before each verify. */
void t_vs_setup(char *scratch, size_t sn, const char *name, char *script, size_t n);

/* The sim script at path, open for writing; exits 1, a failed check, when it cannot be. */
FILE *t_vs_open(const char *path);

/* The perf type of arrow-lake's uncore_imc_free_running_<i> (sim_tree.h). */
uint32_t t_vs_al_type(int i);

/* Writes the arrow-lake sim script at path: for each instance i (0, 1), the data_read
 * (0x20ff) and data_write (0x30ff) steps on every CPU that fill(i, &rd, &wr, arg) adds to
 * two begun (t_vs_begin) step lists. */
typedef void t_vs_fill(int i, struct t_vs_steps *rd, struct t_vs_steps *wr, const void *arg);
void t_vs_write_al(const char *path, t_vs_fill *fill, const void *arg);

uint64_t t_vs_bytes(double gib);

/* The first windows: idle start, idle. */
void t_vs_begin(struct t_vs_steps *s);

void t_vs_add(struct t_vs_steps *s, uint64_t net);

/* One placement's three windows: set-up, read pass, write pass (net counts). */
void t_vs_target(struct t_vs_steps *s, uint64_t rd, uint64_t wr);

/* The count of window i (0: the first after the idle window) as t_vs_rule writes it. */
uint64_t t_vs_count(const struct t_vs_steps *s, int i);

/* Counts over windows [from, to] (t_vs_count's indices). */
uint64_t t_vs_sum(const struct t_vs_steps *s, int from, int to);

/* Writes the rule of an event: match is "cpu=*" or "node=N". */
void t_vs_rule(FILE *f, uint32_t type, uint64_t config, const char *match,
	       const struct t_vs_steps *s);

/* `memwall verify --json --size SIZE --idle-ms 1 --no-perf -o out` and up to 3 more
 * arguments (NULL ends them). */
struct t_output t_vs_verify(const char *size, const char *out, const char *a1,
			  const char *a2, const char *a3);

/* Writes to path the protocol named name that the run-after-verify tests run (test_verify.c,
 * test_verify_hostile.c): stories260K (seed 42), one builtin thread, one prompt token, 2
 * decoded, one run, no warm-up, DRAM counters required from intel_imc_free, no energy, a
 * 2 ms idle baseline, no drift probe. */
void t_vs_run_protocol(const char *path, const char *name);

json_t *t_vs_load(const char *path);

/* Runs verify (t_vs_verify with a1 and a2) and checks that it exits with status and has each
 * string of err_has (T_LIST, or NULL for none) on stderr, reported at the caller's line; the
 * record it wrote (t_vs_load). */
#define T_VS_EXPECT(status, size, out, a1, a2, err_has)                                            \
	t_vs_expect_at(__FILE__, __LINE__, status, size, out, a1, a2, err_has)
json_t *t_vs_expect_at(const char *file, int line, int status, const char *size, const char *out,
		       const char *a1, const char *a2, const char *const err_has[]);

const json_t *t_vs_check(const json_t *rec, const char *name);

const char *t_vs_verdict(const json_t *rec, const char *name);

/* The diagnosis of id in a record, or NULL. */
const json_t *t_vs_diagnosis(const json_t *rec, const char *id);

#endif
