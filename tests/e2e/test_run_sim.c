/* tests/e2e/test_run_sim.c: `memwall run` end to end on the simulated PMU, for every DRAM backend.
 *
 * test_counter_sim.c checks the probes' reads; this test drives the memwall binary, so what it
 * checks is the record: every figure of the run pipeline (src/run/) and of the derivation
 * (src/record/result.c) from counters whose counts are known. Each case scripts per-instance
 * steps (tests/data/sim/README.md) on a recorded sysfs tree, runs a short protocol on the
 * synthetic stories260K model and checks, against arithmetic done here, every per-token figure,
 * each window's totals, the per-instance decode bytes, each run's MB/token (net of the idle
 * rate, recomputed from the record's raw ns) and the summary; then that `memwall validate`
 * accepts the record and `memwall report` shows the figures. Bytes per count come from the
 * tree's .scale and .unit files or the documented 64 bytes per CAS or request, never from
 * memwall's code.
 *
 * The builtin runner reads the counters once at open (read k = 0), then per run: twice for the
 * idle window, once at prefill start, once after each chunk of the prompt (engine.h's
 * eng_session_prefill: one token hook per chunk; the P tokens are one chunk), once after each
 * decode token. So run r (warm-up included, from 0) reads k = R r + 1 ... R (r + 1),
 * R = 3 + PRE + D.
 * A figure that was not measured must be null with its state, never 0.
 *
 * Backends with more than one event per instance are read as one group per instance unless
 * the script says "nogroups" or the backend multiplexes (amd_df): a group runs all or
 * nothing, so its leader's notrun and any member's failure are every member's.
 */
#include <math.h>
#include <stdbool.h>
#include <unistd.h>

#include <jansson.h>

#include "record.h"
#include "run.h"
#include "test.h"
#include "sim_tree.h"

#define P 3                 /* prompt tokens */
#define D 8                 /* decode tokens */
#define PRE 1               /* prefill chunks: P tokens within ENG_PREFILL_CHUNK */
#define R (3 + PRE + D)     /* counter reads per run */
#define RUNS 3
#define WARMUP 1
#define NRUNS (RUNS + WARMUP)

enum dir { RD, WR, TOT };
enum fig { F_READ, F_WRITE, F_TOTAL, N_FIG };
static const char *const fig_name[N_FIG] = { "read", "write", "total" };

struct sim_event {
	uint32_t type;
	uint64_t config;
	int cpu;
	enum dir dir;
	double bytes_per_count;
	uint64_t start, step;
	unsigned bits;        /* 0: not given (64) */
	bool notrun;
	int fail_after;       /* -1: never */
	int config1;          /* -1: not given (the rule matches any config1) */
	bool solo;            /* the driver refuses a group with another hardware event */
	double scaled;        /* 0: runs all the time it is enabled; else multiplexed (scaled=) */
};

struct sim_instance {
	char pmu[64];         /* what the record's dram_instances[].pmu must name */
	int n;
	struct sim_event ev[8];
	const char *file;     /* resctrl: the path suffix, NULL for perf */
	uint64_t start, step;
	int unavailable_after; /* -1: never */
};

struct sim_case {
	char name[64];
	const char *tree, *backend;
	bool split;           /* read and write provided; else the total only */
	bool nogroups;        /* the script says "nogroups": event by event */
	bool no_group;        /* the backend multiplexes (amd_df.c's no_group): never grouped */
	int n;
	struct sim_instance in[64];
};

static char scratch[256];
static char last_record[1024]; /* the record run_case last wrote */
static struct sim_case the_case;

/* ---- what the tree says, read here (not through memwall) */

/* ---- building cases (the encodings are test_counter_sim.c's, with their sources) */

static struct sim_case *case_new(const char *name, const char *tree, const char *backend,
				 bool split)
{
	struct sim_case *c = &the_case;
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->tree = tree;
	c->backend = backend;
	c->split = split;
	return c;
}

static struct sim_instance *inst_new(struct sim_case *c, const char *pmu)
{
	struct sim_instance *in = &c->in[c->n++];
	snprintf(in->pmu, sizeof(in->pmu), "%s", pmu);
	in->unavailable_after = -1;
	return in;
}

/* Steps differ per instance and per event, so that counts landing on the wrong instance or
 * the wrong direction show. */
static void add_event(struct sim_case *c, struct sim_instance *in, uint32_t type, uint64_t config,
		      int cpu, enum dir dir, double bytes_per_count)
{
	struct sim_event *e = &in->ev[in->n];
	*e = (struct sim_event){ .type = type, .config = config, .cpu = cpu, .dir = dir,
				 .bytes_per_count = bytes_per_count, .fail_after = -1,
				 .config1 = -1, .start = 7000u * (unsigned)c->n,
				 .step = 100u * (unsigned)c->n + 37u * (unsigned)in->n + 3 };
	in->n++;
}

static struct sim_case *arrow_lake(const char *name)
{
	struct sim_case *c = case_new(name, "arrow-lake", "intel_imc_free", true);
	for (int p = 0; p < 2; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", p);
		struct sim_instance *in = inst_new(c, pmu);
		/* data_read event=0xff,umask=0x20 -> 0x20ff; data_write umask=0x30 -> 0x30ff */
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x20ff, 0, RD,
			  t_alias_bytes(c->tree, pmu, "data_read"));
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x30ff, 0, WR,
			  t_alias_bytes(c->tree, pmu, "data_write"));
	}
	return c;
}

static struct sim_case *sapphire_rapids(const char *name)
{
	struct sim_case *c = case_new(name, "sapphire-rapids", "intel_imc_cas", true);
	static const int cpus[] = { 0, 56 }; /* the cpumask: one CPU per socket */
	for (int p = 0; p < 16; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_%d", p);
		for (int s = 0; s < 2; s++) {
			struct sim_instance *in = inst_new(c, pmu);
			/* cas_count_read event=0x05,umask=0xcf -> 0xcf05; write umask=0xf0 */
			add_event(c, in, t_pmu_type(c->tree, pmu), 0xcf05, cpus[s], RD,
				  t_alias_bytes(c->tree, pmu, "cas_count_read"));
			add_event(c, in, t_pmu_type(c->tree, pmu), 0xf005, cpus[s], WR,
				  t_alias_bytes(c->tree, pmu, "cas_count_write"));
		}
	}
	return c;
}

static struct sim_case *granite_rapids(const char *name)
{
	struct sim_case *c = case_new(name, "granite-rapids", "intel_imc_cas", true);
	for (int p = 0; p < 12; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_%d", p);
		struct sim_instance *in = inst_new(c, pmu);
		uint32_t type = t_pmu_type(c->tree, pmu);
		/* both schedulers: sch0 event 0x05, sch1 event 0x06, umask 0xcf read, 0xf0 write */
		static const struct {
			uint64_t config;
			enum dir dir;
			const char *alias;
		} evs[] = { { 0xcf05, RD, "cas_count_read_sch0" },
			    { 0xf005, WR, "cas_count_write_sch0" },
			    { 0xcf06, RD, "cas_count_read_sch1" },
			    { 0xf006, WR, "cas_count_write_sch1" } };
		for (int j = 0; j < 4; j++)
			add_event(c, in, type, evs[j].config, 0, evs[j].dir,
				  t_alias_bytes(c->tree, pmu, evs[j].alias));
	}
	return c;
}

static struct sim_case *zen4(const char *name)
{
	struct sim_case *c = case_new(name, "amd-epyc-zen4", "amd_umc", true);
	for (int p = 0; p < 12; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "amd_umc_%d", p);
		struct sim_instance *in = inst_new(c, pmu);
		/* umc_cas_cmd.rd event=0x0a,rdwrmask=1 -> 0x10a; .wr -> 0x20a; a CAS moves one
		 * 64-byte line (the PMU has no .scale) */
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x10a, 0, RD, 64.0);
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x20a, 0, WR, 64.0);
	}
	return c;
}

static struct sim_case *zen3(const char *name)
{
	struct sim_case *c = case_new(name, "zen3", "amd_df", false);
	c->no_group = true;
	struct sim_instance *in = inst_new(c, "amd_df");
	for (unsigned ch = 0; ch < 8; ch++) {
		/* event 0x07 + 0x40 ch in config:0-7,32-35; umask 0x38 in config:8-15; one
		 * 64-byte request per count */
		uint64_t ev = 0x07 + 0x40 * ch;
		uint64_t config = (ev & 0xff) | 0x38 << 8 | (ev >> 8) << 32;
		add_event(c, in, t_pmu_type(c->tree, "amd_df"), config, 0, TOT, 64.0);
	}
	return c;
}

static struct sim_case *resctrl(const char *name)
{
	struct sim_case *c = case_new(name, "sapphire-rapids", "resctrl", false);
	static const char *const files[] = { "mon_L3_00/mbm_total_bytes",
					     "mon_L3_01/mbm_total_bytes" };
	static const char *const pmus[] = { "mon_L3_00", "mon_L3_01" };
	for (int i = 0; i < 2; i++) {
		struct sim_instance *in = inst_new(c, pmus[i]);
		in->file = files[i];
		in->start = 123456789u * (uint64_t)(i + 1);
		in->step = 4096u * (uint64_t)(i + 1) + 64;
	}
	return c;
}

static struct sim_case *ampere_altra(const char *name)
{
	static const char *const channels[] = { "10008c000", "10008c400", "10008c800",
						"10008cc00", "10008d000", "10008d400",
						"10008d800", "10008dc00" };
	struct sim_case *c = case_new(name, "ampere-altra", "arm_dmc620", true);
	for (int p = 0; p < 8; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "arm_dmc620_%s", channels[p]);
		struct sim_instance *in = inst_new(c, pmu);
		/* clkdiv2_rdwr with mask=1 -> config 0x1, the direction in config1; 64 bytes a
		 * count. The simulated PMU matches type and config only, so both directions
		 * replay the first rule: scripted alike (test_dram.c checks config1) */
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x1, 0, RD, 64.0);
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x1, 0, WR, 64.0);
		/* each direction its own rule (config1 = match: 0 read, 1 write) and steps;
		 * "solo": the driver refuses a group, so a grouped open would fail the run */
		in->ev[0].config1 = 0;
		in->ev[1].config1 = 1;
		in->ev[0].solo = in->ev[1].solo = true;
	}
	return c;
}

static struct sim_case *graviton3(const char *name)
{
	struct sim_case *c = case_new(name, "graviton3", "arm_cmn", false);
	struct sim_instance *in = inst_new(c, "arm_cmn_0");
	/* hnf_mc_reqs = type=0x5 (config:0-15), eventid=0xd (config:16-26); 64 bytes each */
	add_event(c, in, t_pmu_type(c->tree, "arm_cmn_0"), 0x5 | 0xd << 16, 0, TOT, 64.0);
	return c;
}

static struct sim_case *nvidia_grace(const char *name)
{
	struct sim_case *c = case_new(name, "nvidia-grace", "nvidia_scf", true);
	static const int cpus[] = { 0, 72 };
	for (int s = 0; s < 2; s++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "nvidia_scf_pmu_%d", s);
		struct sim_instance *in = inst_new(c, pmu);
		/* cmem_rd_data (0x1a5) in 32-byte beats, cmem_wr_total_bytes (0x1db) in bytes */
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x1a5, cpus[s], RD, 32.0);
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x1db, cpus[s], WR, 1.0);
	}
	return c;
}

/* ---- the script and the protocol */

static const char *write_script(const struct sim_case *c)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s.script", scratch, c->name);
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "# %s: written by tests/e2e/test_run_sim.c\n", c->name);
	if (c->nogroups)
		fprintf(f, "nogroups\n");
	for (int i = 0; i < c->n; i++) {
		const struct sim_instance *in = &c->in[i];
		if (in->file) {
			fprintf(f, "file path=%s start=%" PRIu64 " step=%" PRIu64, in->file,
				in->start, in->step);
			if (in->unavailable_after >= 0)
				fprintf(f, " unavailable_after=%d", in->unavailable_after);
			fputc('\n', f);
			continue;
		}
		for (int j = 0; j < in->n; j++) {
			const struct sim_event *e = &in->ev[j];
			fprintf(f, "perf type=%u config=0x%" PRIx64 " cpu=%d start=%" PRIu64
				" step=%" PRIu64, e->type, e->config, e->cpu, e->start, e->step);
			if (e->bits)
				fprintf(f, " bits=%u", e->bits);
			if (e->notrun)
				fprintf(f, " notrun");
			if (e->fail_after >= 0)
				fprintf(f, " fail_after=%d", e->fail_after);
			if (e->config1 >= 0)
				fprintf(f, " config1=%d", e->config1);
			if (e->solo)
				fprintf(f, " solo");
			if (e->scaled > 0)
				fprintf(f, " scaled=%g", e->scaled);
			fputc('\n', f);
		}
	}
	fclose(f);
	return path;
}

/* Points the environment at c's tree and script; memwall inherits it. */
static void use_case(const struct sim_case *c)
{
	char root[4096];
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), c->tree);
	setenv("MEMWALL_COUNTERS", "sim", 1);
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
	setenv("MEMWALL_SIM_SCRIPT", write_script(c), 1);
}

/* Runs `memwall run` on a protocol body; the record's path into path ("" if none). */
static struct t_output run_protocol(const char *name, const char *body, char *path, size_t n)
{
	char proto[512], dir[512];
	snprintf(proto, sizeof(proto), "%s/%s.json", scratch, name);
	snprintf(dir, sizeof(dir), "%s/out-%s", scratch, name);
	t_write_file(proto, body);
	const char *bin = getenv("MEMWALL_BIN");
	const char *argv[] = { "memwall", "run", proto, "-o", dir, "--llama-bin", bin, NULL };
	struct t_output o = t_run(argv);
	t_written_path(o.err, path, n);
	return o;
}

/* ---- what each window must hold, computed here */

struct want {
	const char *state; /* "measured", "not-run", "read-failed", "not-provided" */
	uint64_t bytes;
};

static bool measured(const struct want *w)
{
	return !strcmp(w->state, "measured");
}

/* A sum takes the first state that is not measured. */
static void fold(struct want *w, const char *state, uint64_t bytes)
{
	if (!measured(w))
		return;
	if (strcmp(state, "measured"))
		*w = (struct want){ state, 0 };
	else
		w->bytes += bytes;
}

/* time_running / time_enabled at read k of a scaled= rule: the sim's times are (k + 1) ms
 * enabled and scaled times that (truncated to whole ns) running, so a count over reads a < b
 * is the raw difference times enabled / running over that window. 1 for a rule without. */
static double extrapolation(const struct sim_event *e, int a, int b)
{
	if (!(e->scaled > 0))
		return 1;
	uint64_t ena_a = (uint64_t)(a + 1) * 1000000u, ena_b = (uint64_t)(b + 1) * 1000000u;
	uint64_t run_a = (uint64_t)(e->scaled * (double)ena_a);
	uint64_t run_b = (uint64_t)(e->scaled * (double)ena_b);
	return (double)(ena_b - ena_a) / (double)(run_b - run_a);
}

/* The multiplexing share instance in must show over any window: its least counted event's
 * time running / time enabled (a group's are its leader's); NaN where a read fails (not
 * checked then). */
static double want_share(const struct sim_case *c, const struct sim_instance *in)
{
	if (in->file)
		return in->unavailable_after >= 0 ? NAN : 1.0;
	bool grouped = !c->nogroups && !c->no_group && in->n > 1;
	double share = 1.0;
	for (int j = 0; j < in->n; j++) {
		const struct sim_event *e = grouped ? &in->ev[0] : &in->ev[j];
		if (in->ev[j].fail_after >= 0)
			return NAN;
		double sh = e->notrun ? 0.0 : e->scaled > 0 ? e->scaled : 1.0;
		share = sh < share ? sh : share;
	}
	return share;
}

/* Figure f of instance in between its reads a < b (k counted from the open's read, 0). A
 * counter's difference modulo 2^bits is (b - a) step as long as that stays below 2^bits:
 * wrapping never shows. */
static struct want want_window(const struct sim_case *c, const struct sim_instance *in,
			       enum fig f, int a, int b)
{
	struct want w = { "measured", 0 };
	if (!c->split && f != F_TOTAL)
		return (struct want){ "not-provided", 0 };
	if (in->file) {
		if (in->unavailable_after >= 0 && b > in->unavailable_after)
			return (struct want){ "read-failed", 0 };
		return (struct want){ "measured", (uint64_t)(b - a) * in->step };
	}
	bool grouped = !c->nogroups && !c->no_group && in->n > 1, group_failed = false;
	for (int j = 0; grouped && j < in->n; j++)
		group_failed |= in->ev[j].fail_after >= 0 && b > in->ev[j].fail_after;
	for (int j = 0; j < in->n; j++) {
		const struct sim_event *e = &in->ev[j];
		if ((f == F_READ && e->dir != RD) || (f == F_WRITE && e->dir != WR))
			continue;
		uint64_t bytes = (uint64_t)llround((double)(b - a) * (double)e->step *
						   extrapolation(grouped ? &in->ev[0] : e, a, b) *
						   e->bytes_per_count);
		if (grouped ? group_failed : e->fail_after >= 0 && b > e->fail_after)
			fold(&w, "read-failed", 0);
		else if (grouped ? in->ev[0].notrun : e->notrun)
			fold(&w, "not-run", 0);
		else
			fold(&w, "measured", bytes);
	}
	return w;
}

static struct want want_sum(const struct sim_case *c, enum fig f, int a, int b)
{
	struct want w = { "measured", 0 };
	for (int i = 0; i < c->n; i++) {
		struct want x = want_window(c, &c->in[i], f, a, b);
		fold(&w, x.state, x.bytes);
	}
	return w;
}

/* ---- checking the record */

static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* One figure against its wanted value: a number when measured, null otherwise. */
static void check_value(const char *what, const json_t *v, const struct want *w)
{
	t_checks++;
	if (measured(w) ? !json_is_integer(v) || (uint64_t)json_integer_value(v) != w->bytes
			: !json_is_null(v))
		T_FAIL_AT(__FILE__, __LINE__, "%s: got %s%" PRIu64 ", want %s %" PRIu64, what,
			  json_is_null(v) ? "null " : json_is_integer(v) ? "" : "absent ",
			  json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0, w->state,
			  w->bytes);
}

/* A window's dram_<f>_bytes and dram_state.<f>, for every figure. */
static void check_window(const char *what, const json_t *win, const struct want w[N_FIG])
{
	char key[64], label[160];
	for (int f = 0; f < N_FIG; f++) {
		snprintf(key, sizeof(key), "dram_%s_bytes", fig_name[f]);
		snprintf(label, sizeof(label), "%s.%s", what, key);
		check_value(label, json_object_get(win, key), &w[f]);
		const char *st =
		    json_string_value(t_json_get(win, "dram_state", fig_name[f], NULL));
		t_checks++;
		if (!st || strcmp(st, w[f].state))
			T_FAIL_AT(__FILE__, __LINE__, "%s.dram_state.%s: \"%s\", want \"%s\"", what,
				  fig_name[f], st ? st : "(none)", w[f].state);
	}
}

/* Nowhere a measured 0: every DRAM figure of the record is a positive count or null (the
 * steps are all positive, so a 0 can only be a figure that was not measured). */
static void check_no_zero(json_t *o, const char *key, const char *where)
{
	bool dram = key && (!strncmp(key, "dram_", 5) || !strcmp(key, "read_bytes") ||
			    !strcmp(key, "write_bytes") || !strcmp(key, "total_bytes"));
	const char *k;
	json_t *v;
	size_t i;
	if (json_is_object(o)) {
		if (key && !strcmp(key, "protocol"))
			return;
		json_object_foreach(o, k, v)
			check_no_zero(v, k, where);
	} else if (json_is_array(o)) {
		json_array_foreach(o, i, v)
			check_no_zero(v, json_is_number(v) ? key : NULL, where);
	} else if (dram && json_is_number(o) && strcmp(key, "dram_running_share")) {
		/* (a running share is a time ratio, not a figure: 0 for a counter that never
		 * ran is what it read, and its bytes are null) */
		t_checks++;
		if (json_number_value(o) == 0)
			T_FAIL_AT(__FILE__, __LINE__, "%s: %s is a measured 0", where, key);
	}
}

/* What a case expects of the summary's DRAM metrics beyond the arithmetic. */
struct expect {
	const char *reason[N_FIG]; /* a text the reason must contain where a figure is absent */
	int n_mb;                  /* runs dram_MB_per_token counts: -1 for RUNS */
};

/* Checks every DRAM figure of c's record at path. */
static void check_record(const struct sim_case *c, const char *path, const struct expect *x)
{
	json_t *doc = json_load_file(path, 0, NULL);
	T_ASSERT(doc != NULL);
	if (!doc)
		return;
	const json_t *dram = t_json_get(doc, "counters", "dram", NULL);
	T_ASSERT(json_is_true(json_object_get(dram, "measured")));
	T_EQ_STR(json_string_value(json_object_get(dram, "backend")), c->backend);
	T_EQ_STR(json_string_value(json_object_get(dram, "layer")), "sim");
	T_EQ_STR(json_string_value(json_object_get(dram, "mb_per_token_basis")),
		 c->split ? "read" : "total");
	T_EQ_INT(json_array_size(json_object_get(dram, "provides")), c->split ? 3 : 1);
	T_EQ_INT(json_array_size(json_object_get(dram, "instances")), c->n);
	const json_t *runs = json_object_get(doc, "runs");
	T_EQ_INT(json_array_size(runs), NRUNS);
	enum fig basis = c->split ? F_READ : F_TOTAL;

	double mux_share = NAN; /* the share the report must say, when below 1 */
	/* per run: MB/token of each figure, NAN where absent; [N_FIG] is the basis */
	double mb[NRUNS][N_FIG + 1];
	char what[256];
	for (int r = 0; r < NRUNS && r < (int)json_array_size(runs); r++) {
		const json_t *run = json_array_get(runs, (size_t)r);
		const json_t *idle = json_object_get(run, "idle");
		const json_t *dec = json_object_get(run, "decode");
		const json_t *tok = json_object_get(run, "tokens");
		T_ASSERT(json_is_true(json_object_get(run, "complete")));
		T_EQ_INT(json_integer_value(json_object_get(dec, "tokens")), D);
		int base = R * r, pre0 = base + 3, pre1 = base + 3 + PRE;
		struct want wi[N_FIG], wp[N_FIG], wd[N_FIG], series[N_FIG];
		for (int f = 0; f < N_FIG; f++) {
			wi[f] = want_sum(c, (enum fig)f, base + 1, base + 2);
			wp[f] = want_sum(c, (enum fig)f, pre0, pre1);
			wd[f] = want_sum(c, (enum fig)f, pre1, pre1 + D);
			series[f] = (struct want){ "measured", 0 };
			for (int t = 1; t <= D; t++) {
				struct want w = want_sum(c, (enum fig)f, pre1 + t - 1, pre1 + t);
				fold(&series[f], w.state, 0);
			}
		}
		snprintf(what, sizeof(what), "%s runs[%d].idle", c->name, r);
		check_window(what, idle, wi);
		snprintf(what, sizeof(what), "%s runs[%d].prefill", c->name, r);
		check_window(what, json_object_get(run, "prefill"), wp);
		/* a figure not measured at one token is not measured for the run */
		for (int f = 0; f < N_FIG; f++)
			if (!measured(&series[f]))
				wd[f] = series[f];
		snprintf(what, sizeof(what), "%s runs[%d].decode", c->name, r);
		check_window(what, dec, wd);

		/* every token's figure: one step of every instance */
		for (int f = 0; f < N_FIG; f++) {
			char key[64];
			snprintf(key, sizeof(key), "dram_%s_bytes", fig_name[f]);
			const json_t *arr = json_object_get(tok, key);
			if (!measured(&series[f])) {
				snprintf(what, sizeof(what), "%s runs[%d].tokens.%s", c->name, r, key);
				t_checks++;
				if (!json_is_null(arr))
					T_FAIL_AT(__FILE__, __LINE__, "%s: not null (%s)", what,
						  series[f].state);
				continue;
			}
			T_EQ_INT(json_array_size(arr), D);
			for (int t = 1; t <= D; t++) {
				struct want w = want_sum(c, (enum fig)f, pre1 + t - 1, pre1 + t);
				snprintf(what, sizeof(what), "%s runs[%d].tokens.%s[%d]", c->name, r,
					 key, t - 1);
				check_value(what, json_array_get(arr, (size_t)t - 1), &w);
			}
		}

		/* each instance's decode bytes: D steps times bytes per count */
		const json_t *split = json_object_get(dec, "dram_instances");
		double min_share = 1.0;
		bool any_failed = false;
		for (int i = 0; i < c->n; i++)
			any_failed |= isnan(want_share(c, &c->in[i]));
		T_EQ_INT(json_array_size(split), c->n);
		for (int i = 0; i < c->n && i < (int)json_array_size(split); i++) {
			const json_t *e = json_array_get(split, (size_t)i);
			T_CONTAINS(json_string_value(json_object_get(e, "pmu")), c->in[i].pmu);
			double sh = want_share(c, &c->in[i]);
			if (!isnan(sh))
				T_NEAR(num(e, "running_share"), sh, 1e-9);
			if (sh == 1.0)
				T_EQ_U64((uint64_t)num(e, "time_running_ns"),
					 (uint64_t)num(e, "time_enabled_ns"));
			if (!isnan(sh) && sh < min_share)
				min_share = sh;
			for (int f = 0; f < N_FIG; f++) {
				char key[64];
				snprintf(key, sizeof(key), "%s_bytes", fig_name[f]);
				struct want w = want_window(c, &c->in[i], (enum fig)f, pre1, pre1 + D);
				snprintf(what, sizeof(what), "%s runs[%d].decode.dram_instances[%d].%s",
					 c->name, r, i, key);
				check_value(what, json_object_get(e, key), &w);
			}
		}

		/* the windows' share: the least counted instance's */
		if (!any_failed) {
			T_NEAR(num(dec, "dram_running_share"), min_share, 1e-9);
			T_NEAR(num(idle, "dram_running_share"), min_share, 1e-9);
			T_NEAR(num(json_object_get(run, "prefill"), "dram_running_share"), min_share,
			       1e-9);
		}
		if (!any_failed && min_share < 1.0)
			mux_share = min_share;

		/* MB/token: (decode bytes - idle rate x decode seconds) / tokens, from the raw ns;
		 * null below zero (an idle rate larger than the traffic is not a measurement). The
		 * sim counts per read, not per second, so the sign depends on the wall times: the
		 * figure is positive while the D decode reads take less than D idle windows. */
		double idle_s = num(idle, "window_ns") * 1e-9, dec_s = num(dec, "ns") * 1e-9;
		T_ASSERT(idle_s > 0 && dec_s > 0);
		const json_t *figs = json_object_get(run, "figures");
		for (int f = 0; f < N_FIG; f++) {
			char key[64];
			mb[r][f] = NAN;
			if (measured(&wd[f]) && measured(&wi[f]))
				mb[r][f] = ((double)wd[f].bytes -
					    (double)wi[f].bytes / idle_s * dec_s) / D / 1e6;
			if (mb[r][f] < 0)
				mb[r][f] = NAN;
			snprintf(key, sizeof(key), "dram_%s_MB_per_token", fig_name[f]);
			if (isnan(mb[r][f]))
				T_ASSERT(json_is_null(json_object_get(figs, key)));
			else
				T_NEAR(num(figs, key), mb[r][f], 1e-9 * fabs(mb[r][f]) + 1e-15);
		}
		mb[r][N_FIG] = mb[r][basis];
		if (isnan(mb[r][N_FIG]))
			T_ASSERT(json_is_null(json_object_get(figs, "dram_MB_per_token")));
		else
			T_NEAR(num(figs, "dram_MB_per_token"), mb[r][N_FIG],
			       1e-9 * fabs(mb[r][N_FIG]) + 1e-15);
	}

	/* the summary: over the measured runs (not the warm-up) that have the figure */
	const json_t *m = t_json_get(doc, "summary", "metrics", NULL);
	static const char *const metric[N_FIG + 1] = { "dram_read_MB_per_token",
						       "dram_write_MB_per_token",
						       "dram_total_MB_per_token",
						       "dram_MB_per_token" };
	for (int f = 0; f <= N_FIG; f++) {
		double sum = 0;
		int n = 0;
		for (int r = WARMUP; r < NRUNS; r++)
			if (!isnan(mb[r][f])) {
				sum += mb[r][f];
				n++;
			}
		const json_t *s = json_object_get(m, metric[f]);
		if (f == N_FIG && x->n_mb >= 0)
			T_EQ_INT(n, x->n_mb);
		if (!n) {
			T_ASSERT(json_is_false(json_object_get(s, "measured")));
			const char *want = x->reason[f == N_FIG ? (int)basis : f];
			if (!want)
				want = "not provided: the ";
			T_CONTAINS(json_string_value(json_object_get(s, "reason")), want);
			continue;
		}
		T_ASSERT(json_is_true(json_object_get(s, "measured")));
		T_EQ_INT(json_integer_value(json_object_get(s, "n")), n);
		T_NEAR(num(s, "mean"), sum / n, 1e-9 * fabs(sum / n) + 1e-15);
	}
	T_EQ_INT(json_integer_value(t_json_get(doc, "summary", "runs_measured", NULL)), RUNS);
	/* the CV of MB/token: over the runs with a figure, or not measured and why */
	const json_t *crit = json_array_get(t_json_get(doc, "acceptance", "criteria", NULL), 0);
	T_EQ_STR(json_string_value(json_object_get(crit, "criterion")), "max_cv_mb_per_token_pct");
	int n_mb = x->n_mb >= 0 ? x->n_mb : RUNS;
	T_EQ_STR(json_string_value(json_object_get(crit, "status")),
		 n_mb >= 2 ? "pass" : "not-measured");
	if (n_mb == 1)
		T_CONTAINS(json_string_value(json_object_get(crit, "reason")),
			   "a CV needs at least 2 measured runs");
	if (n_mb == 0)
		T_CONTAINS(json_string_value(json_object_get(crit, "reason")), x->reason[basis]);
	check_no_zero(doc, NULL, c->name);

	/* validate re-derives every figure; report shows them */
	t_validates(path, c->name);
	const char *rargv[] = { "memwall", "report", path, "--format", "md", NULL };
	struct t_output o = t_run(rargv);
	T_EQ_INT(o.status, 0);
	static const char *const row[N_FIG + 1] = {
		"| DRAM read [SIMULATED] | MB/token (MB = 10^6 bytes) | ",
		"| DRAM written [SIMULATED] | MB/token (MB = 10^6 bytes) | ",
		"| DRAM read + written [SIMULATED] | MB/token (MB = 10^6 bytes; read + write) | ",
		"| DRAM (MB/token) [SIMULATED] | MB/token (MB = 10^6 bytes) | ",
	};
	/* A simulated record says so where a reader cannot miss it: the heading, the first
	 * provenance line and every DRAM row (the rows above). */
	T_CONTAINS(o.out, "[SIMULATED PMU: no DRAM byte counted by hardware]");
	T_CONTAINS(o.out, "- **SIMULATED**: DRAM counts: the simulated PMU");
	for (int f = 0; f <= N_FIG; f++) {
		const json_t *s = json_object_get(m, metric[f]);
		char line[256];
		if (json_is_true(json_object_get(s, "measured")))
			snprintf(line, sizeof(line), "%s%lld | %.6g |", row[f],
				 (long long)json_integer_value(json_object_get(s, "n")),
				 num(s, "mean"));
		else
			snprintf(line, sizeof(line), "%s0 | not measured [", row[f]);
		T_CONTAINS(o.out, line);
	}
	if (!c->split) {
		char line[256];
		snprintf(line, sizeof(line), "] not provided: the %s backend has no read/write split",
			 c->backend);
		T_CONTAINS(o.out, line);
	}
	/* the share, said when a counter was multiplexed (and only then) */
	if (!isnan(mux_share) && mux_share > 0) {
		char line[160];
		snprintf(line, sizeof(line), "- **Multiplexed:** the DRAM counters ran %.1f %% of "
			 "the time they were enabled in runs[", mux_share * 100.0);
		T_CONTAINS(o.out, line);
	} else if (!isnan(mux_share)) {
		T_CONTAINS(o.out, "- **Not counted:** a DRAM counter was enabled but never ran in "
				  "runs[");
	} else {
		T_ASSERT(!strstr(o.out, "**Multiplexed:**"));
	}
	/* the perf command: the first perf instance's events, as this case encodes them */
	if (!c->in[0].file) {
		char ev[200];
		snprintf(ev, sizeof(ev), "%s/config=0x%" PRIx64, c->in[0].pmu, c->in[0].ev[0].config);
		T_CONTAINS(o.out, "\n    perf stat -a -e ");
		T_CONTAINS(o.out, ev);
		T_CONTAINS(o.out, " -- memwall run ");
	} else {
		T_CONTAINS(o.out, "Check with perf: no command (no perf event was opened");
	}
	t_output_free(&o);

	/* The charts, where gnuplot exists: the per-controller split is drawn for every backend,
	 * with only the total where there is no read/write split (gnuplot refuses a histogram of
	 * a column that is NaN throughout). */
	if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
		char plots[1100], png[1200];
		snprintf(plots, sizeof(plots), "%s.plots", path);
		const char *pargv[] = { "memwall", "report", path, "--plot", plots, NULL };
		T_RUN_EXPECT(pargv, 0, NULL, NULL);
		/* drawn when some controller has a figure in some run; never from NaN alone */
		bool any = false;
		size_t ri, ii;
		json_t *r, *e;
		json_array_foreach(json_object_get(doc, "runs"), ri, r)
			json_array_foreach(json_object_get(json_object_get(r, "decode"),
							   "dram_instances"), ii, e)
				any |= json_is_number(json_object_get(e, "read_bytes")) ||
				       json_is_number(json_object_get(e, "total_bytes"));
		snprintf(png, sizeof(png), "%s/dram_split.png", plots);
		struct stat st;
		T_EQ_INT(stat(png, &st) == 0 && st.st_size > 0, any);
	}
	json_decref(doc);
}

/* A protocol on the synthetic stories260K: D tokens, RUNS runs after WARMUP, DRAM required
 * from c's backend. The CV limits are loose: timing on a shared machine is not under test.
 * The idle window is long (50 ms) because the sim counts per read: MB/token is net of
 * (one idle read's bytes / idle wall) x decode wall, so it is positive only while the D decode
 * reads take less than D idle windows (400 ms here; about 1 ms on a quiet machine, up to
 * 29 ms for 4 tokens at load 10 when the process was preempted). With 5 ms a preempted
 * decode made it negative, so null, and the run (DRAM required) exited 1. */
static void run_case(const struct sim_case *c, const struct expect *x)
{
	char body[2048], path[1024];
	snprintf(body, sizeof(body),
		 "{\"name\": \"sim-%s\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		 "{\"shape\": \"stories260K\", \"seed\": 42}}, \"tokenizer\": null,\n"
		 " \"engine\": {\"kind\": \"builtin\", \"threads\": 1, \"kernels\": \"auto\"},\n"
		 " \"prompt_tokens\": [1, 5, 9], \"decode_tokens\": %d, \"runs\": %d, "
		 "\"warmup_runs\": %d,\n"
		 " \"sampling\": {\"temperature\": 0, \"seed\": 42},\n"
		 " \"counters\": {\"dram\": \"required\", \"backend\": \"%s\", \"energy\": \"off\"},\n"
		 " \"idle_baseline_ms\": 50,\n"
		 " \"acceptance\": {\"max_cv_mb_per_token_pct\": 1000, \"min_tokens\": %d},\n"
		 " \"drift\": {\"max_bandwidth_change_pct\": 50, \"probe_ms\": 0}}\n",
		 c->name, D, RUNS, WARMUP, c->backend, D);
	use_case(c);
	struct t_output o = run_protocol(c->name, body, path, sizeof(path));
	/* DRAM is required here, so a CV of MB/token from fewer than 2 runs (a counter that did
	 * not run, a read that failed) leaves a required figure unmeasured: exit 1, saying so. */
	int n_mb = x->n_mb < 0 ? RUNS : x->n_mb, want = n_mb < 2 ? 1 : 0;
	if (o.status != want || !path[0])
		fprintf(stderr, "%s: memwall run exited %d:\n%s\n%s\n", c->name, o.status, o.out,
			o.err);
	T_EQ_INT(o.status, want);
	/* A backend whose driver takes no groups (no_group) never asks for one. */
	T_ASSERT(!strstr(o.err, "a solo event refused a group"));
	if (want) {
		T_CONTAINS(o.out, "memwall run: acceptance: max_cv_mb_per_token_pct not measured, "
				  "and the protocol requires it: ");
		/* RUNS runs were measured: the advice names the counter, not "add runs" */
		T_CONTAINS(o.out, "the counter behind the figure gave no value in enough of the ");
		T_ASSERT(!strstr(o.out, "--runs 2 or more"));
	}
	T_ASSERT(path[0]);
	t_output_free(&o);
	snprintf(last_record, sizeof(last_record), "%s", path);
	if (path[0])
		check_record(c, path, x);
}

/* ---- the cases */

static const struct expect all_measured = { { NULL, NULL, NULL }, -1 };

static void test_every_backend(void)
{
	struct sim_case *(*const builders[])(const char *) = { arrow_lake, sapphire_rapids,
							       granite_rapids, zen4, zen3, resctrl,
							       ampere_altra, graviton3,
							       nvidia_grace };
	static const char *const names[] = { "arrow-lake", "sapphire-rapids", "granite-rapids",
					     "zen4", "zen3", "resctrl", "ampere-altra",
					     "graviton3", "nvidia-grace" };
	for (size_t b = 0; b < sizeof(builders) / sizeof(builders[0]); b++)
		run_case(builders[b](names[b]), &all_measured);
}

static void test_not_run(void)
{
	/* read event by event: controller 1's read counter is never scheduled: read and total
	 * are not-run in every window, writes are still measured, and MB/token (on reads) is
	 * not measured */
	struct sim_case *c = arrow_lake("notrun-arrow-lake");
	c->nogroups = true;
	c->in[1].ev[0].notrun = true;
	struct expect x = { { "not-run", NULL, "not-run" }, 0 };
	run_case(c, &x);

	/* a data-fabric channel that never runs: the total, MB/token's basis there, is gone */
	c = zen3("notrun-zen3");
	c->in[0].ev[3].notrun = true;
	x = (struct expect){ { NULL, NULL, "not-run" }, 0 };
	run_case(c, &x);
}

static void test_multiplexed(void)
{
	/* controller 1's group ran half the time it was enabled: its counts are extrapolated
	 * (x2), every window's share is 0.5, and the report says so */
	struct sim_case *c = arrow_lake("mux-arrow-lake");
	c->in[1].ev[0].scaled = 0.5;
	run_case(c, &all_measured);
	/* validate holds each share to its times and the window's to its least instance */
	static const struct {
		const char *at[4];
		double value;
		const char *field;
	} edits[] = {
		{ { "decode", "dram_running_share", NULL }, 1.0, "runs[1].decode.dram_running_share" },
		{ { "decode", "dram_instances", "1", "running_share" }, 0.75,
		  "runs[1].decode.dram_instances[1].running_share" },
	};
	for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]) && last_record[0]; e++) {
		json_t *doc = json_load_file(last_record, 0, NULL);
		T_ASSERT(doc != NULL);
		if (!doc)
			break;
		json_t *at = json_object_get(json_array_get(json_object_get(doc, "runs"), 1),
					     edits[e].at[0]);
		if (edits[e].at[2])
			at = json_array_get(json_object_get(at, edits[e].at[1]),
					    (size_t)atoi(edits[e].at[2]));
		json_object_set_new(at, edits[e].at[2] ? edits[e].at[3] : edits[e].at[1],
				    json_real(edits[e].value));
		char edited[1100];
		snprintf(edited, sizeof(edited), "%s/edited-share.json", scratch);
		T_EQ_INT(json_dump_file(doc, edited, JSON_INDENT(1)), 0);
		json_decref(doc);
		const char *vargv[] = { "memwall", "validate", edited, NULL };
		T_RUN_EXPECT(vargv, 1, NULL, T_LIST(edits[e].field, "the record was edited"));
	}
	/* event by event, one data-fabric channel of eight at a quarter */
	c = zen3("mux-zen3");
	c->in[0].ev[5].scaled = 0.25;
	run_case(c, &all_measured);
}

static void test_wrap(void)
{
	/* controller 0's read counter passes 2^64 and controller 1's, 48 bits wide, passes 2^48,
	 * in the middle of the first measured run's decode */
	struct sim_case *c = arrow_lake("wrap");
	int k = R + 3 + PRE + D / 2;
	c->in[0].ev[0].start = UINT64_MAX - (uint64_t)k * c->in[0].ev[0].step + 1;
	c->in[1].ev[0].bits = 48;
	c->in[1].ev[0].start = (1ull << 48) - (uint64_t)k * c->in[1].ev[0].step + 1;
	c->in[1].ev[1].bits = 48;
	c->in[1].ev[1].start = (1ull << 48) - 1;
	run_case(c, &all_measured);
}

/* Reads after this one fail: the middle of the second measured run's decode. */
#define FAIL_AFTER (R * (WARMUP + 1) + 3 + PRE + D / 2)

static void test_fail_mid_run(void)
{
	/* controller 2 on socket 1 stops reading its read counter: the warm-up and the first
	 * measured run keep every figure; the second has no read or total for its decode, the
	 * third none anywhere; writes go on. MB/token counts the one run with a figure. */
	struct sim_case *c = sapphire_rapids("fail-mid-run");
	c->nogroups = true;
	c->in[5].ev[0].fail_after = FAIL_AFTER;
	struct expect x = { { "read-failed", NULL, "read-failed" }, 1 };
	run_case(c, &x);

	/* the same, read as groups: the controller's group read fails as a whole, so its writes
	 * stop with its reads */
	c = sapphire_rapids("fail-mid-run-grouped");
	c->in[5].ev[0].fail_after = FAIL_AFTER;
	x = (struct expect){ { "read-failed", "read-failed", "read-failed" }, 1 };
	run_case(c, &x);
}

static void test_resctrl_unavailable(void)
{
	/* domain 1 reads "Unavailable" from the middle of the second measured run */
	struct sim_case *c = resctrl("resctrl-unavailable");
	c->in[1].unavailable_after = FAIL_AFTER;
	struct expect x = { { NULL, NULL, "read-failed" }, 1 };
	run_case(c, &x);
}

/* An external engine (`memwall generate`, as tests/e2e/test_external.c runs it) under the resctrl
 * sim. Per process the external runner reads the counters six times: an idle window before
 * (2 reads), the process's start and end, an idle window after (2 reads); so each process
 * moves one step of every domain, and its idle windows two. */
static void test_external(void)
{
	struct sim_case *c = resctrl("external");
	uint64_t step = 0;
	for (int i = 0; i < c->n; i++)
		step += c->in[i].step;
	char body[2048], path[1024];
	snprintf(body, sizeof(body),
		 "{\"name\": \"sim-external\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		 "{\"shape\": \"stories260K\", \"seed\": 42}},\n"
		 " \"engine\": {\"kind\": \"external\", \"threads\": 1, \"command\": [\"memwall\", "
		 "\"generate\", \"-m\", \"{model}\", \"-n\", \"{n}\", \"-t\", \"{threads}\", "
		 "\"--seed\", \"{seed}\", \"--temperature\", \"0\", \"--ids\"],\n"
		 "  \"adapter\": {\"name\": \"memwall-tokens\", \"stream\": \"stderr\", \"pattern\": "
		 "\"memwall generate: {decode} tokens ({prompt} prompt)\"}},\n"
		 " \"decode_tokens\": 40, \"differential\": {\"short_tokens\": 10}, \"runs\": 2, "
		 "\"warmup_runs\": 1, \"idle_baseline_ms\": 5,\n"
		 " \"counters\": {\"dram\": \"required\", \"backend\": \"resctrl\", "
		 "\"energy\": \"off\"},\n"
		 " \"drift\": {\"max_bandwidth_change_pct\": 50, \"probe_ms\": 0}}\n");
	use_case(c);
	struct t_output o = run_protocol(c->name, body, path, sizeof(path));
	if (o.status != 0 || !path[0])
		fprintf(stderr, "external: memwall run exited %d:\n%s\n%s\n", o.status, o.out, o.err);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
	json_t *doc = path[0] ? json_load_file(path, 0, NULL) : NULL;
	T_ASSERT(doc != NULL);
	if (!doc)
		return;
	T_EQ_STR(json_string_value(t_json_get(doc, "counters", "dram", "mb_per_token_basis")),
		 "total");
	const json_t *reps = t_json_get(doc, "external", "repetitions", NULL), *rep;
	T_EQ_INT(json_array_size(reps), 3);
	double sum = 0;
	int n = 0;
	size_t i;
	json_array_foreach(reps, i, rep) {
		double net[2], tokens[2];
		for (int k = 0; k < 2; k++) {
			const json_t *proc = json_object_get(rep, k ? "long" : "short");
			const json_t *idle = json_object_get(proc, "idle");
			struct want one = { "measured", step }, two = { "measured", 2 * step };
			struct want none = { "not-provided", 0 };
			check_value("external process dram_total_bytes",
				    json_object_get(proc, "dram_total_bytes"), &one);
			check_value("external process dram_read_bytes",
				    json_object_get(proc, "dram_read_bytes"), &none);
			check_value("external idle dram_total_bytes",
				    json_object_get(idle, "dram_total_bytes"), &two);
			T_EQ_STR(json_string_value(t_json_get(proc, "dram_state", "total", NULL)),
				 "measured");
			T_EQ_STR(json_string_value(t_json_get(proc, "dram_state", "read", NULL)),
				 "not-provided");
			/* resctrl's files run all the time: one clock for both times */
			T_NEAR(num(proc, "dram_running_share"), 1.0, 0);
			/* net of the idle rate over both idle windows, times the process's wall */
			double idle_s = (num(idle, "before_ns") + num(idle, "after_ns")) * 1e-9;
			T_ASSERT(idle_s > 0);
			net[k] = (double)step - 2.0 * (double)step / idle_s *
				 num(proc, "wall_ns") * 1e-9;
			tokens[k] = num(json_object_get(proc, "adapter"), "decode_tokens");
		}
		T_EQ_INT(tokens[0], 10);
		T_EQ_INT(tokens[1], 40);
		double want = (net[1] - net[0]) / (tokens[1] - tokens[0]) / 1e6;
		const json_t *figs = json_object_get(rep, "figures");
		T_NEAR(num(figs, "dram_MB_per_token"), want, 1e-9 * fabs(want) + 1e-15);
		T_NEAR(num(figs, "dram_total_MB_per_token"), want, 1e-9 * fabs(want) + 1e-15);
		T_NEAR(num(figs, "dram_MB_per_token_whole_process"), net[1] / tokens[1] / 1e6,
		       1e-9 * fabs(net[1] / tokens[1] / 1e6) + 1e-15);
		T_ASSERT(json_is_null(json_object_get(figs, "dram_read_MB_per_token")));
		if (!json_is_true(json_object_get(rep, "warmup"))) {
			sum += want;
			n++;
		}
	}
	const json_t *m = t_json_get(doc, "summary", "metrics", "dram_MB_per_token");
	T_EQ_INT(n, 2);
	T_EQ_INT(json_integer_value(json_object_get(m, "n")), n);
	T_NEAR(num(m, "mean"), sum / n, 1e-9 * fabs(sum / n) + 1e-15);
	const char *why = json_string_value(json_object_get(
		t_json_get(doc, "summary", "metrics", "dram_read_MB_per_token"), "reason"));
	T_CONTAINS(why, "not provided: the resctrl backend has no read/write split");
	check_no_zero(doc, NULL, "external");
	t_validates(path, "external");
	json_decref(doc);
}

int main(void)
{
	t_need_memwall();
	t_scratch(scratch, sizeof(scratch), "runsim");
	t_setenv_in("MEMWALL_CACHE_DIR", scratch, "cache");

	test_every_backend();
	test_not_run();
	test_multiplexed();
	test_wrap();
	test_fail_mid_run();
	test_resctrl_unavailable();
	test_external();

	return t_done_rm(scratch, 1);
}
