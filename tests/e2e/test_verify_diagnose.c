/* tests/e2e/test_verify_diagnose.c: each diagnosis of a failed `memwall verify`
 * (src/run/verify_diagnose.c) built from its signature on the simulated PMU, and a near case
 * that must not trigger it (tests/lib/verify_sim.h says how the scripts follow verify's
 * windows). missing-instance and numa-local on a two-socket machine are in
 * test_verify_numa.c; their other cases are here.
 *
 * arrow-lake: two instances, one placement; each instance's share of a pass is ws / 2 bytes,
 * s = ws / 2 / 64 counts (data_read / data_write are 64 bytes per count). granite-rapids:
 * twelve instances (uncore_imc_0..11, cpumask 0), each counting reads and writes with two
 * events per direction, one per command scheduler (cas_count_*_sch0: event 0x05, _sch1: event
 * 0x06; umask 0xcf reads, 0xf0 writes): a share is ws / 12 bytes.
 */
#include <sys/stat.h>

#include "run.h"
#include "test.h"
#include "sim_tree.h"
#include "verify_sim.h"

#define AL "arrow-lake"
#define GNR "granite-rapids"
#define SPR "sapphire-rapids"
#define SIZE "0.001"

static char scratch[256], script[512];
static uint64_t ws, s;
static int run_no;

static void use_tree(const char *tree)
{
	char root[4200];
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), tree);
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
}

/* arrow-lake: per instance, the read pass's reads and writes and the write pass's reads and
 * writes, in counts net of the background. */
struct al_counts {
	uint64_t rp_rd[2], rp_wr[2], wp_rd[2], wp_wr[2];
};

static void fill_al(int i, struct t_vs_steps *rd, struct t_vs_steps *wr, const void *arg)
{
	const struct al_counts *c = arg;
	t_vs_target(rd, c->rp_rd[i], c->wp_rd[i]);
	t_vs_target(wr, c->rp_wr[i], c->wp_wr[i]);
}

static void write_al(const struct al_counts *c)
{
	t_vs_write_al(script, fill_al, c);
}

/* Runs verify (extra: one more argument or NULL); returns the record (NULL on no record). */
static json_t *run(int want_status, const char *extra1, const char *extra2)
{
	char out[700];
	snprintf(out, sizeof(out), "%s/r%d.json", scratch, ++run_no);
	struct t_output o = t_vs_verify(SIZE, out, extra1, extra2, NULL);
	if (o.status != want_status)
		fprintf(stderr, "verify exited %d, not %d:\n%s\n", o.status, want_status, o.err);
	T_EQ_INT(o.status, want_status);
	t_output_free(&o);
	return t_vs_load(out);
}

static const char *field(const json_t *d, const char *k)
{
	const char *v = d ? json_string_value(json_object_get(d, k)) : NULL;
	return v ? v : "(none)";
}

static void expect_only(const json_t *r, const char *id)
{
	size_t i;
	const json_t *d;
	json_array_foreach(json_object_get(r, "diagnoses"), i, d)
		if (strcmp(field(d, "id"), id))
			T_FAIL_AT(__FILE__, __LINE__, "diagnosis %s beside %s: %s", field(d, "id"), id,
				  field(d, "evidence"));
	T_ASSERT(t_vs_diagnosis(r, id) != NULL);
}

/* None of the diagnoses ids (T_LIST) is in the record r. */
static void expect_none(const json_t *r, const char *const ids[])
{
	for (size_t i = 0; ids[i]; i++) {
		const json_t *d = t_vs_diagnosis(r, ids[i]);
		if (d)
			T_FAIL_AT(__FILE__, __LINE__, "%s diagnosed: %s", ids[i],
				  field(d, "evidence"));
	}
}

/* half-counting: instance 1 silent in both passes, the sum half the canary (the client part
 * read through uncore_imc_free_running_0 alone) */
static void test_half_counting(void)
{
	use_tree(AL);
	struct al_counts c = { .rp_rd = { s, 0 }, .wp_wr = { s, 0 } };
	write_al(&c);
	json_t *r = run(1, NULL, NULL);
	if (r) {
		expect_only(r, "half-counting");
		const json_t *d = t_vs_diagnosis(r, "half-counting");
		T_CONTAINS(field(d, "evidence"), "the read pass counted 0.50x the canary");
		T_CONTAINS(field(d, "evidence"), "1 of 2 controller instances counted nothing "
						 "(uncore_imc_free_running_1)");
		T_CONTAINS(field(d, "fix"), "uncore_imc_free_running_0 and _1");
		json_decref(r);
	}
	/* not: both instances at 3/4 of their share, the sum 0.75x */
	struct al_counts q = { .rp_rd = { s * 3 / 4, s * 3 / 4 }, .wp_wr = { s * 3 / 4, s * 3 / 4 } };
	write_al(&q);
	r = run(1, NULL, NULL);
	if (r) {
		expect_none(r, T_LIST("half-counting", "missing-instance"));
		json_decref(r);
	}
}

/* Granite Rapids counting one scheduler of two: sch0 counts each instance's whole share's
 * half, sch1 nothing; every instance at 0.5x in both directions. */
static void write_gnr(uint64_t sch0, uint64_t sch1)
{
	FILE *f = t_vs_open(script);
	for (int p = 0; p < 12; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_%d", p);
		uint32_t type = t_pmu_type(GNR, pmu);
		for (int sch = 0; sch < 2; sch++) {
			uint64_t n = sch ? sch1 : sch0;
			struct t_vs_steps rd, wr;
			t_vs_begin(&rd);
			t_vs_begin(&wr);
			t_vs_target(&rd, n, 0);
			t_vs_target(&wr, 0, n);
			t_vs_rule(f, type, 0xcf05 + (uint64_t)sch, "cpu=*", &rd);
			t_vs_rule(f, type, 0xf005 + (uint64_t)sch, "cpu=*", &wr);
		}
	}
	fclose(f);
}

static void test_half_counting_scheduler(void)
{
	use_tree(GNR);
	T_NEAR(t_alias_bytes(GNR, "uncore_imc_0", "cas_count_read_sch1"), 64.0, 1e-9);
	uint64_t share = ws / 12 / 64; /* an instance's share, in counts */
	T_EQ_U64(share * 12 * 64, ws);
	T_EQ_U64(share % 2, 0);
	write_gnr(share / 2, 0);
	json_t *r = run(1, NULL, NULL);
	if (r) {
		expect_only(r, "half-counting");
		const json_t *d = t_vs_diagnosis(r, "half-counting");
		T_CONTAINS(field(d, "evidence"), "every instance counted 0.50x its share");
		T_CONTAINS(field(d, "fix"), "6a8a48644c4b");
		T_CONTAINS(field(d, "fix"), "cas_count_{read,write}_sch0 and _sch1");
		json_decref(r);
	}
	/* both schedulers counted: a pass */
	write_gnr(share / 2, share / 2);
	r = run(0, NULL, NULL);
	if (r) {
		T_EQ_INT(json_array_size(json_object_get(r, "diagnoses")), 0);
		json_decref(r);
	}
	use_tree(AL);
}

/* scale-2x: both instances at 2x in both passes; the same 0.5x on a backend that is not the
 * CAS one (arrow-lake's data_read) is a scale error too, not a scheduler */
static void test_scale(void)
{
	use_tree(AL);
	struct al_counts c = { .rp_rd = { 2 * s, 2 * s }, .wp_wr = { 2 * s, 2 * s } };
	write_al(&c);
	json_t *r = run(1, NULL, NULL);
	if (r) {
		expect_only(r, "scale-2x");
		T_CONTAINS(field(t_vs_diagnosis(r, "scale-2x"), "evidence"),
			   "every instance counted 2.00x its share");
		T_CONTAINS(field(t_vs_diagnosis(r, "scale-2x"), "fix"), ".scale");
		json_decref(r);
	}
	struct al_counts h = { .rp_rd = { s / 2, s / 2 }, .wp_wr = { s / 2, s / 2 } };
	write_al(&h);
	r = run(1, NULL, NULL);
	if (r) {
		expect_only(r, "scale-2x");
		json_decref(r);
	}
	/* not: both at 1.10x (the sum +10 %: it fails, but no factor of 2) */
	struct al_counts n = { .rp_rd = { s * 11 / 10, s * 11 / 10 },
			       .wp_wr = { s * 11 / 10, s * 11 / 10 } };
	write_al(&n);
	r = run(1, NULL, NULL);
	if (r) {
		expect_none(r, T_LIST("scale-2x", "mib-as-mb"));
		json_decref(r);
	}
}

/* mib-as-mb: every count 10^6 / 2^20 of what it should be (-4.6 %) */
static void test_mib_as_mb(void)
{
	uint64_t m = (uint64_t)llround((double)s * 1e6 / 1048576.0);
	double q = (double)m / (double)s;
	T_NEAR(q, 0.9537, 0.001);
	struct al_counts c = { .rp_rd = { m, m }, .wp_wr = { m, m } };
	write_al(&c);
	json_t *r = run(1, NULL, NULL);
	if (r) {
		expect_only(r, "mib-as-mb");
		char want[80];
		snprintf(want, sizeof(want), "the sums are %.3fx the canary (%+.1f %%)", q,
			 (q - 1) * 100);
		T_CONTAINS(field(t_vs_diagnosis(r, "mib-as-mb"), "evidence"), want);
		json_decref(r);
	}
	/* not: -8 % */
	uint64_t k = s * 92 / 100;
	struct al_counts n = { .rp_rd = { k, k }, .wp_wr = { k, k } };
	write_al(&n);
	r = run(1, NULL, NULL);
	if (r) {
		expect_none(r, T_LIST("mib-as-mb"));
		json_decref(r);
	}
}

/* read-write-swapped against write-allocate-in-reads: each the other's near case */
static void test_directions(void)
{
	/* swapped: the read pass counted as writes, the write pass as reads */
	struct al_counts sw = { .rp_wr = { s, s }, .wp_rd = { s, s } };
	write_al(&sw);
	json_t *r = run(1, NULL, NULL);
	if (r) {
		expect_only(r, "read-write-swapped");
		T_EQ_STR(t_vs_verdict(r, "read pass: writes"), "fail");
		json_decref(r);
	}
	/* a "read" event that also counts writes: the read pass is right, the non-temporal
	 * write pass reads as much as it writes; the default verify must fail it */
	struct al_counts rw = { .rp_rd = { s, s }, .wp_rd = { s, s }, .wp_wr = { s, s } };
	write_al(&rw);
	r = run(1, NULL, NULL);
	if (r) {
		expect_only(r, "write-allocate-in-reads");
		T_EQ_STR(t_vs_verdict(r, "read pass: sum"), "pass");
		T_EQ_STR(t_vs_verdict(r, "write pass: sum"), "pass");
		T_EQ_STR(t_vs_verdict(r, "write pass: reads"), "fail");
		T_CONTAINS(field(t_vs_diagnosis(r, "write-allocate-in-reads"), "evidence"),
			   "the non-temporal write pass counted 1.00x its written bytes as reads");
		json_decref(r);
	}
}

/* missing-instance's near case: one instance 10 % high fails its check, nothing is missing */
static void test_not_missing(void)
{
	struct al_counts c = { .rp_rd = { s, s * 11 / 10 }, .wp_wr = { s, s } };
	write_al(&c);
	json_t *r = run(1, NULL, NULL);
	if (r) {
		expect_none(r, T_LIST("missing-instance", "half-counting"));
		json_decref(r);
	}
}

/* numa-local's near case, on the two-socket tree unplaced: one controller silent on node 1
 * and its twin on node 0 at 2x; the sum is right and the nodes' means are not node-local: a
 * missing instance whose share the others carried (an unpopulated channel), not numa-local. */
static void test_not_numa_local(void)
{
	use_tree(SPR);
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	uint64_t sh = ws / 32 / 64; /* unplaced: 32 instances share the canary */
	T_EQ_U64(sh * 32 * 64, ws);
	for (int p = 0; p < 16; p++) {
		char pmu[64], match[16];
		snprintf(pmu, sizeof(pmu), "uncore_imc_%d", p);
		uint32_t type = t_pmu_type(SPR, pmu);
		for (int node = 0; node < 2; node++) {
			uint64_t n = p != 5 ? sh : node == 0 ? 2 * sh : 0;
			struct t_vs_steps rd, wr;
			t_vs_begin(&rd);
			t_vs_begin(&wr);
			t_vs_target(&rd, n, 0);
			t_vs_target(&wr, 0, n);
			snprintf(match, sizeof(match), "node=%d", node);
			t_vs_rule(f, type, 0xcf05, match, &rd);
			t_vs_rule(f, type, 0xf005, match, &wr);
		}
	}
	fclose(f);
	json_t *r = run(1, "--numa", "off");
	if (r) {
		expect_none(r, T_LIST("numa-local"));
		const json_t *d = t_vs_diagnosis(r, "missing-instance");
		T_ASSERT(d != NULL);
		T_CONTAINS(field(d, "evidence"), "uncore_imc_5@cpu56 (node 1) counted nothing");
		T_CONTAINS(field(d, "fix"), "the others carried its share");
		json_decref(r);
	}
	use_tree(AL);
}

int main(void)
{
	t_vs_setup(scratch, sizeof(scratch), "verify-diagnose", script, sizeof(script));
	t_sim_env(NULL, script);
	T_NEAR(t_alias_bytes(AL, "uncore_imc_free_running_0", "data_read"), 64.0, 1e-9);
	ws = t_vs_bytes(0.001);
	s = ws / 2 / 64;
	T_EQ_U64(s * 2 * 64, ws);

	test_half_counting();
	test_half_counting_scheduler();
	test_scale();
	test_mib_as_mb();
	test_directions();
	test_not_missing();
	test_not_numa_local();

	return t_done_rm(scratch, 1);
}
