/* tests/e2e/test_verify_matrix.c: `memwall verify --matrix` on the simulated PMU
 * (tests/lib/verify_sim.h says how the scripts follow verify's windows).
 *
 * The arrow-lake tree: two free-running controllers (uncore_imc_free_running_0/1, data_read
 * config 0x20ff and data_write 0x30ff, 64 bytes per count from .scale and .unit), one NUMA
 * node: one placement. With --size S the matrix streams S, 2S, 4S and 8S, each rounded up to
 * 6 whole pages like the canary (t_vs_bytes), and five patterns at each. What each pattern must
 * move, in bytes, for a working set ws (likwid's test/accuracy/TESTS/MEM.txt WA_FACTORs and
 * engine.h's stream kinds, computed here):
 *
 *   read      READ             reads ws              writes 0
 *   write     WRITE, plain     reads ws (allocate)   writes ws
 *   nt-write  WRITE, NT        reads 0               writes ws
 *   copy      COPY, plain      reads ws/2 + ws/2     writes ws/2
 *   triad     TRIAD, plain     reads 2ws/3 + ws/3    writes ws/3
 *
 * Each instance counts half of it.
 */
#include <sys/stat.h>

#include "run.h"
#include "test.h"
#include "sim_tree.h"
#include "verify_sim.h"

#define AL "arrow-lake"
#define SIZE "0.001"

static char scratch[256], script[512];
static uint64_t ws[5]; /* [0]: the canary; [1..4]: the matrix's sizes */

static const struct {
	const char *name;
	double rd, wr; /* expected bytes as multiples of ws */
} pat[5] = {
	{ "read", 1, 0 }, { "write", 1, 1 }, { "nt-write", 0, 1 },
	{ "copy", 1, 1.0 / 2 }, { "triad", 1, 1.0 / 3 },
};

static uint64_t expected(int size, int p, bool read)
{
	return (uint64_t)llround((read ? pat[p].rd : pat[p].wr) * (double)ws[size]);
}

/* skip_wa: the "write" pattern's write-allocate reads missing, as on a CPU that skips them */
static void fill_matrix(int i, struct t_vs_steps *rd, struct t_vs_steps *wr, const void *arg)
{
	bool skip_wa = *(const bool *)arg;
	(void)i; /* both instances count half of each figure */
	t_vs_target(rd, ws[0] / 2 / 64, 0);
	t_vs_target(wr, 0, ws[0] / 2 / 64);
	for (int k = 1; k <= 4; k++) {
		t_vs_add(rd, UINT64_MAX); /* the size's set-up */
		t_vs_add(wr, UINT64_MAX);
		for (int p = 0; p < 5; p++) {
			bool gone = skip_wa && p == 1;
			t_vs_add(rd, gone ? 0 : expected(k, p, true) / 2 / 64);
			t_vs_add(wr, expected(k, p, false) / 2 / 64);
		}
	}
}

static void write_script(bool skip_wa)
{
	t_vs_write_al(script, fill_matrix, &skip_wa);
}

static void test_matrix(void)
{
	char out[700];
	snprintf(out, sizeof(out), "%s/matrix.json", scratch);
	write_script(false);
	json_t *r = T_VS_EXPECT(0, SIZE, out, "--matrix", NULL, NULL);
	if (!r)
		return;
	const json_t *m = json_object_get(r, "matrix");
	const json_t *sizes = json_object_get(m, "sizes");
	T_EQ_INT(json_array_size(sizes), 4);
	for (int k = 1; k <= 4; k++)
		T_EQ_U64((uint64_t)json_integer_value(json_object_get(json_array_get(sizes,
			(size_t)k - 1), "bytes")), ws[k]);
	const json_t *pats = json_object_get(m, "patterns");
	T_EQ_INT(json_array_size(pats), 5);
	for (int p = 0; p < 5; p++) {
		const json_t *pj = json_array_get(pats, (size_t)p);
		T_EQ_STR(json_string_value(json_object_get(pj, "name")), pat[p].name);
		const json_t *cells = json_object_get(pj, "cells");
		T_EQ_INT(json_array_size(cells), 4);
		for (int k = 1; k <= 4; k++) {
			const json_t *c = json_array_get(cells, (size_t)k - 1);
			for (int d = 0; d < 2; d++) {
				const json_t *dj = json_object_get(c, d ? "write" : "read");
				double e = (double)expected(k, p, !d);
				T_NEAR(json_number_value(json_object_get(dj, "expected_bytes")), e, 1e-6);
				T_NEAR(json_number_value(json_object_get(dj, "counted_bytes")), e, 1e-6);
				T_EQ_STR(json_string_value(json_object_get(dj, "verdict")), "pass");
				if (e > 0)
					T_NEAR(json_number_value(json_object_get(dj, "ratio")), 1.0, 1e-9);
			}
		}
	}
	/* the thresholds, stated per pattern: write-allocate reads get the wider 10 % */
	const json_t *th = json_object_get(json_array_get(pats, 3), "threshold");
	T_NEAR(json_number_value(json_object_get(th, "read_pct")), 10, 1e-9);
	T_NEAR(json_number_value(json_object_get(th, "write_pct")), 3, 1e-9);
	T_EQ_STR(t_vs_verdict(r, "matrix: triad 8.2MiB: write"), "pass");
	json_decref(r);

	/* the text report: the table, labelled SIMULATED */
	const char *argv[] = { "memwall", "verify", "--matrix", "--size", SIZE, "--idle-ms", "1",
			       "--no-perf", NULL };
	T_RUN_EXPECT(argv, 0,
		     T_LIST("SIMULATED matrix: counted / expected bytes",
			    "nt-write  1.0MiB     idle (+0.0 MiB)", "copy      8.2MiB     1.000 ("),
		     NULL);
}

/* A CPU that skips the write-allocate read of the plain write pattern: that cell fails, the
 * rest pass. */
static void test_no_write_allocate(void)
{
	char out[700], want[400];
	snprintf(out, sizeof(out), "%s/nowa.json", scratch);
	write_script(true);
	snprintf(want, sizeof(want), "memwall verify: write at 1.0MiB (read, matrix): memwall "
		 "counted nothing (0 bytes, against %" PRIu64 ")", expected(1, 1, true));
	json_t *r = T_VS_EXPECT(1, SIZE, out, "--matrix", NULL, T_LIST(want));
	if (!r)
		return;
	T_EQ_STR(t_vs_verdict(r, "matrix: write 1.0MiB: read"), "fail");
	T_EQ_STR(t_vs_verdict(r, "matrix: write 1.0MiB: write"), "pass");
	T_EQ_STR(t_vs_verdict(r, "matrix: copy 1.0MiB: read"), "pass");
	T_EQ_STR(t_vs_verdict(r, "read pass: sum"), "pass");
	json_decref(r);
}

int main(void)
{
	t_vs_setup(scratch, sizeof(scratch), "verify-matrix", script, sizeof(script));
	t_sim_env(AL, script);
	T_NEAR(t_alias_bytes(AL, "uncore_imc_free_running_0", "data_read"), 64.0, 1e-9);
	T_NEAR(t_alias_bytes(AL, "uncore_imc_free_running_1", "data_write"), 64.0, 1e-9);
	ws[0] = t_vs_bytes(0.001);
	uint64_t unit = 6 * (uint64_t)sysconf(_SC_PAGESIZE), asked = (uint64_t)(0.001 * 1073741824.0);
	for (int k = 1; k <= 4; k++) {
		ws[k] = ((asked << (k - 1)) + unit - 1) / unit * unit;
		T_EQ_U64(ws[k] / 3 / 2 / 64 * 64 * 2 * 3, ws[k]); /* whole counts in every cell */
	}
	test_matrix();
	test_no_write_allocate();
	return t_done_rm(scratch, 1);
}
