/* tests/src/test_perf_line.c: the pasteable `perf stat -a -e ...` command (src/record/perf_line.c)
 * for what a backend opens on recorded sysfs trees, and its quoting and notes.
 *
 * The events the line must name are derived here from the tree's own files, never from the
 * probes: an alias's text (events/data_read = "event=0xff,umask=0x20") encoded through the
 * PMU's format files (format/umask = "config:8-15,32-55": the value's low bits fill the first
 * range, the next bits the next, as perf's pmu_format_value() does), and bytes per count from
 * the alias's .scale and .unit. The trees: arrow-lake (intel_imc_free, two free-running
 * instances), sapphire-rapids (intel_imc_cas, 16 PMUs on two sockets: each event once),
 * granite-rapids (intel_imc_cas with both schedulers' events) and nvidia-grace (nvidia_scf,
 * whose events count different bytes: the note lists each).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "counters.h"
#include "perf_line.h"
#include "test.h"
#include "sim_tree.h"

/* The config an alias (or "k=v,..." terms) of pmu encodes to, from the tree's format files. */
static uint64_t encode(const char *tree, const char *pmu, const char *terms_or_alias)
{
	char terms[256], name[128];
	if (!strchr(terms_or_alias, '=')) {
		snprintf(name, sizeof(name), "events/%s", terms_or_alias);
		T_ASSERT(t_read_text(t_tree_file(tree, pmu, name), terms, sizeof(terms)));
	} else {
		snprintf(terms, sizeof(terms), "%s", terms_or_alias);
	}
	uint64_t config = 0;
	for (char *save = NULL, *t = strtok_r(terms, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		uint64_t v = eq ? strtoull(eq + 1, NULL, 0) : 1;
		if (eq)
			*eq = '\0';
		char fmt[128], path[64];
		snprintf(path, sizeof(path), "format/%s", t);
		T_ASSERT(t_read_text(t_tree_file(tree, pmu, path), fmt, sizeof(fmt)));
		T_ASSERT(!strncmp(fmt, "config:", 7)); /* every field here lives in config */
		unsigned used = 0;
		for (char *s2 = NULL, *r = strtok_r(fmt + 7, ",", &s2); r; r = strtok_r(NULL, ",", &s2)) {
			unsigned lo = 0, hi = 0;
			if (sscanf(r, "%u-%u", &lo, &hi) != 2)
				hi = lo = (unsigned)strtoul(r, NULL, 10);
			for (unsigned b = lo; b <= hi; b++, used++)
				if (v >> used & 1)
					config |= 1ull << b;
		}
	}
	return config;
}

/* The line for tree's default backend, through the run's own record block. */
static int line_for(const char *tree, const json_t *command, struct mw_perf_line *pl)
{
	char root[4096];
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), tree);
	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	struct prb_dram_status *st = calloc(1, sizeof(*st));
	T_ASSERT(st != NULL);
	T_EQ_INT(prb_system_open(&sys, root, &err), 0);
	T_EQ_INT(prb_dram_probe(sys, NULL, st), 0);
	json_t *opened = mw_dram_opened_json(st);
	int rc = mw_perf_line(opened, command, pl);
	json_decref(opened);
	prb_system_close(sys);
	free(st);
	return rc;
}

/* "PMU/config=0x.../" appears in the -e list, exactly once. */
static void names_once(const char *line, const char *pmu, uint64_t config)
{
	char ev[160];
	snprintf(ev, sizeof(ev), "%s/config=0x%" PRIx64 "/", pmu, config);
	const char *at = strstr(line, ev);
	if (!at)
		T_FAIL_AT(__FILE__, __LINE__, "%s is not in: %s", ev, line);
	else
		T_ASSERT(strstr(at + 1, ev) == NULL);
}

/* Each of the n PMUs "<prefix><i>" (i from 0) has each of the tree's aliases once in the line. */
static void pmus_once(const char *line, const char *tree, const char *prefix, int n,
		      const char *const *aliases, int n_aliases)
{
	for (int p = 0; p < n; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "%s%d", prefix, p);
		for (int a = 0; a < n_aliases; a++)
			names_once(line, pmu, encode(tree, pmu, aliases[a]));
	}
}

static size_t count_events(const char *line)
{
	const char *e = strstr(line, " -e ");
	size_t n = e ? 1 : 0;
	for (e = e ? e + 4 : ""; *e && *e != ' '; e++)
		n += *e == ',' && e[-1] == '/';
	return n;
}

static void test_arrow_lake(void)
{
	json_t *cmd = json_pack("[s, s]", "sleep", "0.3");
	struct mw_perf_line pl;
	T_EQ_INT(line_for("arrow-lake", cmd, &pl), 0);
	T_ASSERT(!strncmp(pl.command, "perf stat -a -e ", 16));
	for (int i = 0; i < 2; i++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", i);
		names_once(pl.command, pmu, encode("arrow-lake", pmu, "data_read"));
		names_once(pl.command, pmu, encode("arrow-lake", pmu, "data_write"));
		T_NEAR(t_alias_bytes("arrow-lake", pmu, "data_read"), 64.0, 1e-9);
	}
	T_EQ_INT(pl.n_events, 4);
	T_EQ_INT(count_events(pl.command), 4);
	const char *tail = strstr(pl.command, " -- ");
	T_ASSERT(tail && !strcmp(tail, " -- sleep 0.3"));
	/* the scale: the tree's .scale x .unit is 64 bytes, for every event */
	T_CONTAINS(pl.note, "bytes = count x 64 for every event");
	T_CONTAINS(pl.note, "no .scale");
	json_decref(cmd);
}

static void test_sapphire_rapids(void)
{
	struct mw_perf_line pl;
	T_EQ_INT(line_for("sapphire-rapids", NULL, &pl), 0);
	/* 16 PMUs, each on CPUs 0 and 56 (two instances): each event once, perf sums sockets */
	pmus_once(pl.command, "sapphire-rapids", "uncore_imc_", 16,
		  (const char *const[]){ "cas_count_read", "cas_count_write" }, 2);
	T_EQ_INT(pl.n_events, 32);
	T_EQ_INT(count_events(pl.command), 32);
	T_ASSERT(strstr(pl.command, " -- sleep 10") != NULL); /* no command: a time */
	T_NEAR(t_alias_bytes("sapphire-rapids", "uncore_imc_0", "cas_count_read"), 64.0, 1e-9);
	T_CONTAINS(pl.note, "bytes = count x 64 for every event");
	T_CONTAINS(pl.note, "one per socket");
}

static void test_granite_rapids(void)
{
	struct mw_perf_line pl;
	static const char *const aliases[] = { "cas_count_read_sch0", "cas_count_write_sch0",
					       "cas_count_read_sch1", "cas_count_write_sch1" };
	T_EQ_INT(line_for("granite-rapids", NULL, &pl), 0);
	pmus_once(pl.command, "granite-rapids", "uncore_imc_", 12, aliases, 4);
	T_EQ_INT(pl.n_events, 48);
}

static void test_nvidia_grace(void)
{
	struct mw_perf_line pl;
	T_EQ_INT(line_for("nvidia-grace", NULL, &pl), 0);
	pmus_once(pl.command, "nvidia-grace", "nvidia_scf_pmu_", 2,
		  (const char *const[]){ "cmem_rd_data", "cmem_wr_total_bytes" }, 2);
	/* two sizes of count: each event with its own (32-byte beats, bytes) */
	char want[160];
	snprintf(want, sizeof(want), "32 for nvidia_scf_pmu_0/config=0x%" PRIx64 "/",
		 encode("nvidia-grace", "nvidia_scf_pmu_0", "cmem_rd_data"));
	T_CONTAINS(pl.note, want);
	snprintf(want, sizeof(want), "1 for nvidia_scf_pmu_1/config=0x%" PRIx64 "/",
		 encode("nvidia-grace", "nvidia_scf_pmu_1", "cmem_wr_total_bytes"));
	T_CONTAINS(pl.note, want);
}

/* Words a shell would split or expand are quoted; plain ones are not. */
static void test_quoting(void)
{
	json_t *opened = json_pack("[{s:s, s:i, s:[{s:s, s:i, s:s, s:s, s:f}]}]", "pmu", "pmu_0",
				   "cpu", 0, "events", "dir", "total", "type", 9, "config", "0x1",
				   "config1", "0x2", "bytes_per_count", 64.0);
	json_t *cmd = json_pack("[s, s, s, s]", "sh", "-c", "echo 'hi' $HOME; true", "");
	struct mw_perf_line pl;
	T_EQ_INT(mw_perf_line(opened, cmd, &pl), 0);
	T_EQ_STR(pl.command, "perf stat -a -e pmu_0/config=0x1,config1=0x2/ -- sh -c "
			     "'echo '\\''hi'\\'' $HOME; true' ''");
	char joined[64];
	T_EQ_INT(mw_shell_join(cmd, joined, sizeof(joined)), 0);
	T_EQ_STR(joined, "sh -c 'echo '\\''hi'\\'' $HOME; true' ''");
	T_EQ_INT(mw_shell_join(cmd, joined, 12), -ENAMETOOLONG);
	T_ASSERT(strlen(joined) < 12);
	json_decref(cmd);

	/* a record without bytes_per_count (older) says so rather than guessing */
	json_object_del(json_array_get(json_object_get(json_array_get(opened, 0), "events"), 0),
			"bytes_per_count");
	T_EQ_INT(mw_perf_line(opened, NULL, &pl), 0);
	T_CONTAINS(pl.note, "Bytes per count were not recorded");
	json_decref(opened);

	/* resctrl's files: nothing perf reads */
	opened = json_pack("[{s:s, s:i, s:[]}]", "pmu", "mon_L3_00", "cpu", -1, "events");
	T_EQ_INT(mw_perf_line(opened, NULL, &pl), -ENOENT);
	T_CONTAINS(pl.note, "resctrl");
	json_decref(opened);
	/* malformed: no config */
	opened = json_pack("[{s:s, s:[{s:s}]}]", "pmu", "x", "events", "dir", "read");
	T_EQ_INT(mw_perf_line(opened, NULL, &pl), -EINVAL);
	T_CONTAINS(pl.note, "counters.dram.opened[0].events[0]");
	json_decref(opened);
}

int main(void)
{
	test_arrow_lake();
	test_sapphire_rapids();
	test_granite_rapids();
	test_nvidia_grace();
	test_quoting();
	return t_done();
}
