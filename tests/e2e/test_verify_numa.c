/* tests/e2e/test_verify_numa.c: `memwall verify` on a two-socket machine, on the simulated PMU
 * (tests/lib/verify_sim.h says how the scripts follow verify's windows).
 *
 * The sapphire-rapids tree (tests/data/sysfs/README.md): uncore_imc_0..15, each with cpumask
 * "0,56", so 32 instances, 16 on node 0 (CPU 0) and 16 on node 1 (CPU 56); two NUMA nodes,
 * one per socket. verify places the canary on node 0, then on node 1 (two targets), and each
 * node's 16 instances share it while the other 16 stay at the idle rate. The counts are
 * scripted per node with the sim's node=N, which matches the CPU an instance opens on against
 * the tree's nodeN/cpulist. This machine has one node, so the placement on node 1 fails here
 * and the record says so (SIMULATED): the counts are the script's either way.
 *
 * The arithmetic: cas_count_read / _write are 64 bytes per count (the tree's .scale and .unit,
 * read by alias_bytes); each node's instance gets ws / 16 bytes of the pass that streams on
 * its node: ws / 16 / 64 counts, a whole number (checked).
 */
#include <sys/stat.h>

#include "run.h"
#include "test.h"
#include "sim_tree.h"
#include "verify_sim.h"

#define SPR "sapphire-rapids"
#define SIZE "0.001"

static char scratch[256], script[512];
static uint64_t ws, share; /* the canary; one instance's share of a pass, in counts */

/* resctrl's two domains (the tree's fs/resctrl), so that its check agrees: over the canary's
 * windows (node 0's read pass to node 1's write pass: windows 1 to 5 of verify_sim.h's) they
 * count the controllers' bytes, imc, half each; the idle window and set-ups as the events. */
static void resctrl_rules(FILE *f, uint64_t imc)
{
	uint64_t x = imc / 8; /* per domain and pass; node 1's set-up takes the rest */
	for (int d = 0; d < 2; d++)
		fprintf(f,
			"file path=mon_L3_0%d/mbm_total_bytes start=77 steps=%d,%d,%d,%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
			d, T_VS_GAP, T_VS_IDLE, T_VS_GAP, x, x, imc / 2 - 4 * x, x, x);
}

/* silent_pmu, silent_node: an instance that counts nothing of the canary (-1: none) */
static void write_script(int silent_pmu, int silent_node)
{
	FILE *f = t_vs_open(script);
	uint64_t imc = 0; /* the controllers' bytes over the canary's windows */
	for (int p = 0; p < 16; p++) {
		char pmu[64], match[16];
		snprintf(pmu, sizeof(pmu), "uncore_imc_%d", p);
		uint32_t type = t_pmu_type(SPR, pmu);
		for (int node = 0; node < 2; node++) {
			bool silent = p == silent_pmu && node == silent_node;
			struct t_vs_steps rd, wr;
			t_vs_begin(&rd);
			t_vs_begin(&wr);
			/* target t places the canary on node t */
			for (int t = 0; t < 2; t++) {
				uint64_t mine = t == node && !silent ? share : 0;
				t_vs_target(&rd, mine, 0);
				t_vs_target(&wr, 0, mine);
			}
			snprintf(match, sizeof(match), "node=%d", node);
			/* cas_count_read event=0x05,umask=0xcf; write umask=0xf0 */
			t_vs_rule(f, type, 0xcf05, match, &rd);
			t_vs_rule(f, type, 0xf005, match, &wr);
			imc += (t_vs_sum(&rd, 1, 5) + t_vs_sum(&wr, 1, 5)) * 64;
		}
	}
	resctrl_rules(f, imc);
	fclose(f);
}

static void test_pass(void)
{
	char out[700];
	snprintf(out, sizeof(out), "%s/pass.json", scratch);
	write_script(-1, -1);
	json_t *r = T_VS_EXPECT(0, SIZE, out, NULL, NULL, T_LIST("on 2 placements (node 0)"));
	if (!r)
		return;
	T_EQ_STR(json_string_value(json_object_get(r, "verdict")), "pass");
	T_EQ_STR(json_string_value(json_object_get(r, "schema")), "memwall-verification/2");
	const json_t *targets = json_object_get(r, "targets");
	T_EQ_INT(json_array_size(targets), 2);
	T_ASSERT(json_object_get(r, "passes") == NULL); /* /1's layout only for one target */
	for (int t = 0; t < 2; t++) {
		const json_t *tg = json_array_get(targets, (size_t)t);
		char label[16];
		snprintf(label, sizeof(label), "node %d", t);
		T_EQ_STR(json_string_value(json_object_get(tg, "label")), label);
		T_EQ_INT(json_integer_value(json_object_get(tg, "node")), t);
		T_EQ_INT(json_integer_value(json_object_get(tg, "members")), 16);
		const json_t *pl = json_object_get(tg, "placement");
		T_EQ_STR(json_string_value(json_object_get(pl, "policy")), "bind");
		T_EQ_INT(json_integer_value(json_array_get(json_object_get(pl, "nodes"), 0)), t);
		/* node 1 is not this machine's: the placement fails, said, and the simulated
		 * counts go on (node 0 may fail too where a container forbids set_mempolicy) */
		if (!json_is_true(json_object_get(pl, "applied")))
			T_CONTAINS(json_string_value(json_object_get(pl, "reason")), "SIMULATED");
		if (t == 1)
			T_ASSERT(json_is_false(json_object_get(pl, "applied")));
		const json_t *rp = json_object_get(json_object_get(tg, "passes"), "read");
		T_EQ_U64((uint64_t)json_integer_value(json_object_get(rp, "expected_bytes")), ws);
		T_NEAR(json_number_value(json_object_get(rp, "counted_bytes")), (double)ws, 1e-6);
		/* an instance of the node gets ws / 16; one of the other node 0 */
		const json_t *i0 = json_array_get(json_object_get(rp, "instances"), 0); /* cpu0 */
		const json_t *i1 = json_array_get(json_object_get(rp, "instances"), 1); /* cpu56 */
		const json_t *mine = t == 0 ? i0 : i1, *other = t == 0 ? i1 : i0;
		T_NEAR(json_number_value(json_object_get(mine, "expected_bytes")), (double)ws / 16,
		       1e-9);
		T_ASSERT(json_is_true(json_object_get(mine, "member")));
		T_ASSERT(json_is_false(json_object_get(other, "member")));
		T_NEAR(json_number_value(json_object_get(other, "counted_bytes")), 0, 1e-9);
	}
	T_EQ_STR(t_vs_verdict(r, "node 1: read pass: uncore_imc_3@cpu56"), "pass");
	T_EQ_STR(t_vs_verdict(r, "node 0: write pass: other instances"), "pass");
	T_EQ_STR(t_vs_verdict(r, "node 1: write pass: reads"), "pass");
	T_ASSERT(t_vs_check(r, "node 0: read pass: uncore_imc_3@cpu56") == NULL); /* not a member */
	T_EQ_INT(json_array_size(json_object_get(r, "diagnoses")), 0);
	/* the record's topology: two nodes, 16 instances each */
	const json_t *per = json_object_get(json_object_get(json_object_get(r, "topology"),
							    "controllers"), "per_node");
	T_EQ_INT(json_integer_value(json_object_get(json_array_get(per, 1), "instances")), 16);
	json_decref(r);
}

/* One controller of node 1 silent: verify fails naming it, and diagnoses missing-instance on
 * node 1; node 0's checks pass. */
static void test_silent_on_node1(void)
{
	char out[700], want[300];
	snprintf(out, sizeof(out), "%s/silent.json", scratch);
	write_script(3, 1);
	snprintf(want, sizeof(want), "memwall verify: uncore_imc_3@cpu56 (node 1, read pass, read): "
		 "counted nothing (0 bytes, against %.0f)", (double)ws / 16);
	json_t *r = T_VS_EXPECT(1, SIZE, out, NULL, NULL,
			       T_LIST(want, "memwall verify: diagnosis missing-instance on node 1: "
					    "uncore_imc_3@cpu56 (node 1)"));
	if (!r)
		return;
	T_EQ_STR(json_string_value(json_object_get(r, "verdict")), "fail");
	T_EQ_STR(t_vs_verdict(r, "node 1: read pass: uncore_imc_3@cpu56"), "fail");
	T_EQ_STR(t_vs_verdict(r, "node 0: read pass: uncore_imc_3@cpu0"), "pass");
	/* node 1's sum: 15 of 16 shares, -6.25 %: beyond the sum's 3 % */
	T_EQ_STR(t_vs_verdict(r, "node 1: read pass: sum"), "fail");
	T_EQ_STR(t_vs_verdict(r, "node 0: read pass: sum"), "pass");
	const json_t *d = t_vs_diagnosis(r, "missing-instance");
	T_ASSERT(d != NULL);
	T_EQ_STR(json_string_value(json_object_get(d, "where")), "node 1");
	T_CONTAINS(json_string_value(json_object_get(d, "evidence")), "uncore_imc_3@cpu56 (node 1)");
	T_CONTAINS(json_string_value(json_object_get(d, "fix")), "perf stat -a -e");
	T_ASSERT(t_vs_diagnosis(r, "half-counting") == NULL);
	T_ASSERT(t_vs_diagnosis(r, "numa-local") == NULL);
	json_decref(r);
}

/* --numa off on the same machine: the canary is not placed, every instance's share is
 * ws / 32; a script that puts the whole canary on node 0 (as first touch would) fails node 1's
 * instances and diagnoses numa-local: the audit's two-socket failure, named. */
static void test_unplaced(void)
{
	char out[700];
	snprintf(out, sizeof(out), "%s/off.json", scratch);
	FILE *f = t_vs_open(script);
	for (int p = 0; p < 16; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_%d", p);
		uint32_t type = t_pmu_type(SPR, pmu);
		for (int node = 0; node < 2; node++) {
			struct t_vs_steps rd, wr;
			t_vs_begin(&rd);
			t_vs_begin(&wr);
			t_vs_target(&rd, node == 0 ? share : 0, 0); /* 2 x ws / 32 on node 0 */
			t_vs_target(&wr, 0, node == 0 ? share : 0);
			char match[16];
			snprintf(match, sizeof(match), "node=%d", node);
			t_vs_rule(f, type, 0xcf05, match, &rd);
			t_vs_rule(f, type, 0xf005, match, &wr);
		}
	}
	fclose(f);
	/* resctrl, read at the same boundaries, is left to the tree's files: its check fails
	 * here, as the counters' do, and is not what this case is about */
	json_t *r = T_VS_EXPECT(1, SIZE, out, "--numa", "off",
			       T_LIST("memwall verify: uncore_imc_0@cpu56 (read pass, read): counted "
				      "nothing",
				      "memwall verify: uncore_imc_0@cpu0 (read pass, read): counted "
				      "2.00x"));
	if (!r)
		return;
	T_EQ_INT(json_array_size(json_object_get(r, "targets")), 1);
	T_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(r, "targets"), 0),
						   "label")), "unplaced");
	T_EQ_STR(t_vs_verdict(r, "read pass: sum"), "pass"); /* every byte was counted */
	const json_t *d = t_vs_diagnosis(r, "numa-local");
	T_ASSERT(d != NULL);
	T_CONTAINS(json_string_value(json_object_get(d, "evidence")), "node 0 counted 2.00x");
	T_CONTAINS(json_string_value(json_object_get(d, "fix")), "--numa");
	T_ASSERT(t_vs_diagnosis(r, "missing-instance") == NULL);
	json_decref(r);
}

/* EPYC 9654 in NPS4 (amd-epyc-zen4: four nodes, one package; amd_umc_0..11 with cpumask 0):
 * sysfs cannot say which node each UMC serves, so the canary is interleaved over the
 * package's four nodes and all twelve share it, said in the record's assumption. umc_cas_cmd
 * is event 0x0a with rdwrmask 1 (reads) or 2 (writes): config 0x10a and 0x20a (format event
 * config:0-7, rdwrmask config:8-9), 64 bytes per CAS (probes/pmu/amd_umc.c's sources). */
static void test_nps4(void)
{
	char out[700], root[4200];
	snprintf(out, sizeof(out), "%s/nps4.json", scratch);
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), "amd-epyc-zen4");
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
	uint64_t sh = ws / 12 / 64;
	T_EQ_U64(sh * 12 * 64, ws);
	FILE *f = t_vs_open(script);
	for (int p = 0; p < 12; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "amd_umc_%d", p);
		uint32_t type = t_pmu_type("amd-epyc-zen4", pmu);
		struct t_vs_steps rd, wr;
		t_vs_begin(&rd);
		t_vs_begin(&wr);
		t_vs_target(&rd, sh, 0);
		t_vs_target(&wr, 0, sh);
		t_vs_rule(f, type, 0x10a, "cpu=*", &rd);
		t_vs_rule(f, type, 0x20a, "cpu=*", &wr);
	}
	fclose(f);
	json_t *r = T_VS_EXPECT(0, SIZE, out, NULL, NULL, NULL);
	if (r) {
		const json_t *tg = json_array_get(json_object_get(r, "targets"), 0);
		T_EQ_INT(json_array_size(json_object_get(r, "targets")), 1);
		T_EQ_STR(json_string_value(json_object_get(tg, "label")), "package 0");
		const json_t *pl = json_object_get(tg, "placement");
		T_EQ_STR(json_string_value(json_object_get(pl, "policy")), "interleave");
		T_EQ_INT(json_array_size(json_object_get(pl, "nodes")), 4);
		T_CONTAINS(json_string_value(json_object_get(r, "assumption")),
			   "unknown, because package 0 holds 4 nodes");
		T_EQ_STR(json_string_value(json_object_get(json_object_get(json_object_get(r,
			"topology"), "numa_mode"), "name")), "NPS4");
		json_decref(r);
	}
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), SPR);
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
}

int main(void)
{
	t_vs_setup(scratch, sizeof(scratch), "verify-numa", script, sizeof(script));
	t_sim_env(SPR, script);
	ws = t_vs_bytes(0.001);
	T_NEAR(t_alias_bytes(SPR, "uncore_imc_0", "cas_count_read"), 64.0, 1e-9);
	T_NEAR(t_alias_bytes(SPR, "uncore_imc_15", "cas_count_write"), 64.0, 1e-9);
	share = ws / 16 / 64;
	T_EQ_U64(share * 16 * 64, ws); /* whole counts */

	test_pass();
	test_silent_on_node1();
	test_unplaced();
	test_nps4();

	return t_done_rm(scratch, 1);
}
