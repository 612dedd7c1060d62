/* src/cli/cmd_doctor.c: `memwall doctor`, what this machine can measure, and why not when it can't.
 *
 * Every availability it reports comes from trying the open (prb_dram_open, prb_set_add) and
 * classifying the errno (prb_explain); nothing is predicted from the uid or the paranoid level.
 * It is a report: it exits 0 whatever it finds, unless --require-dram asks it to fail (3) when
 * the machine has no usable DRAM counters. --fix turns the same report into the commands that
 * would fix what is missing, and prints nothing for what opened; it runs none of them.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cgroup.h"
#include "counters.h"
#include "mw.h"
#include "opt.h"
#include "perf_line.h"
#include "probes.h"
#include "text.h"
#include "topology.h"
#include "verbs.h"

#define VERB "doctor"

struct options {
	bool json;
	bool require_dram;
	bool fix;
	const char *sysfs;
	const char *backend;
};

/* Core events for the engine's own threads and software events; RAPL is "power/..." */
static const char *const core_events[] = { "cycles", "instructions", "cache-misses",
					   "stalled-cycles-backend" };
static const char *const software_events[] = { "task-clock", "page-faults", "context-switches" };
static const char *const rapl_events[] = { "power/energy-pkg/", "power/energy-ram/" };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall doctor [--json | --fix] [--require-dram] [--sysfs ROOT] [--backend NAME]\n\n"
		"Reports what this machine can measure: the CPU, the kernel, perf_event_paranoid,\n"
		"the PMUs, which DRAM counter backend memwall would use and on which memory-controller\n"
		"instances (or why there is none), and whether RAPL energy and core events open.\n"
		"Every answer comes from trying the open, not from guessing.\n\n"
		"  --json          print the report as one JSON object\n"
		"  --fix           print, instead of the report, the commands that would enable what\n"
		"                  is missing (sysctl kernel.perf_event_paranoid, setcap cap_perfmon on\n"
		"                  this binary, mounting resctrl, loading the uncore driver), each after\n"
		"                  a comment saying why; nothing for what already works. Runs nothing\n"
		"  --require-dram  exit 3 when there are no usable DRAM counters (default: always 0)\n"
		"  --sysfs ROOT    read PMUs from ROOT/bus/event_source/devices (default\n"
		"                  $MEMWALL_SYSFS_ROOT, else /sys)\n"
		"  --backend NAME  check one DRAM backend: intel_imc_free, intel_imc_cas, amd_umc,\n"
		"                  amd_df, arm_dmc620, nvidia_scf, arm_cmn, resctrl\n\n"
		"exit codes: 0 the report was printed; 2 bad usage; 3 --require-dram and no DRAM counters\n");
}

static int parse_args(int argc, char **argv, struct options *o, bool *help)
{
	enum { OPT_JSON = 256, OPT_REQUIRE, OPT_SYSFS, OPT_BACKEND, OPT_FIX };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "fix", no_argument, NULL, OPT_FIX },
		{ "require-dram", no_argument, NULL, OPT_REQUIRE },
		{ "sysfs", required_argument, NULL, OPT_SYSFS },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "h", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_REQUIRE:
			o->require_dram = true;
			break;
		case OPT_FIX:
			o->fix = true;
			break;
		case OPT_SYSFS:
			o->sysfs = optarg;
			break;
		case OPT_BACKEND:
			o->backend = optarg;
			break;
		case 'h':
			*help = true;
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (o->json && o->fix)
		return mw_fail(MW_EXIT_USAGE, VERB, "--json and --fix are two outputs: give one");
	return mw_opt_none_left(&op);
}

/* "key : value" from the first processor block of /proc/cpuinfo (proc(5)); "" if absent. */
static void cpuinfo(const char *key, char *out, size_t n)
{
	char line[1024];
	FILE *f = fopen("/proc/cpuinfo", "r");
	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '\n')
			break; /* end of the first processor */
		size_t klen = strcspn(line, "\t:");
		if (klen != strlen(key) || strncmp(line, key, klen))
			continue;
		const char *v = strchr(line, ':');
		if (!v)
			continue;
		v++;
		v += strspn(v, " \t");
		snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
		break;
	}
	fclose(f);
}

static bool cpu_has_flag(const char *flag)
{
	char flags[8192];
	cpuinfo("flags", flags, sizeof(flags));
	for (char *tok = strtok(flags, " "); tok; tok = strtok(NULL, " "))
		if (!strcmp(tok, flag))
			return true;
	return false;
}

static int read_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = 0;
	bool ok = f && fscanf(f, "%d", &v) == 1;
	if (f)
		fclose(f);
	return ok ? v : -1000;
}

/* Text read from a sysfs tree (a PMU's directory name, a file's contents in a problem's text)
 * as a JSON string: bytes that are not UTF-8 become U+FFFD, so that the PMU is listed rather
 * than dropped (jansson refuses invalid UTF-8). */
static json_t *jtext(const char *s)
{
	char *fixed = mw_utf8_fix(s ? s : "");
	json_t *j = fixed ? json_string(fixed) : NULL;
	free(fixed);
	return j;
}

/* Tries each event in its own set; records available/reason in obj. */
static void try_events(const struct prb_system *sys, const char *const *names, size_t n,
		       const struct prb_set_options *opt, json_t *obj)
{
	for (size_t i = 0; i < n; i++) {
		struct prb_set *s = NULL;
		struct prb_error err = { 0 };
		int idx = -1, rc = prb_set_new(&s, sys, opt);
		if (rc == 0)
			rc = prb_set_add(s, names[i], &idx, &err);
		json_t *e = json_object();
		json_object_set_new(e, "available", json_boolean(rc == 0));
		if (rc != 0)
			json_object_set_new(e, "reason", json_string(err.text[0] ? err.text :
								      prb_explain(rc, names[i])));
		json_object_set_new(obj, names[i], e);
		prb_set_free(s);
	}
}

/* The DRAM backend's report, and into *topo the machine's topology with its instances
 * (src/base/topology.h). */
static json_t *dram_report(const struct prb_system *sys, const struct options *o, bool *available,
			   const char *vendor, json_t **topo)
{
	struct prb_dram_status *st = calloc(1, sizeof(*st));
	struct prb_dram_options dopt = { .backend = o->backend };
	struct prb_dram *d = NULL;
	json_t *j = json_object(), *inst = json_array(), *on = json_array();
	if (!st)
		return j;
	prb_dram_open(&d, sys, &dopt, st);
	prb_dram_close(d);
	*available = st->available;
	json_object_set_new(j, "available", json_boolean(st->available));
	json_object_set_new(j, "backend", st->backend[0] ? json_string(st->backend) : json_null());
	for (int i = 0; i < st->n_instances; i++) {
		/* one name per PMU; the CPUs (one per socket) it is opened on go in "opened_on" */
		bool seen = false;
		for (int k = 0; k < i; k++)
			seen |= !strcmp(st->instances[k].pmu, st->instances[i].pmu);
		if (!seen)
			json_array_append_new(inst, json_string(st->instances[i].pmu));
		json_array_append_new(on, json_pack("{s:s, s:i}", "pmu", st->instances[i].pmu, "cpu",
						    st->instances[i].cpu));
	}
	json_object_set_new(j, "instances", inst);
	json_object_set_new(j, "opened_on", on);
	json_object_set_new(j, "description",
			    st->description[0] ? json_string(st->description) : json_null());
	json_t *prov = json_array();
	static const struct {
		unsigned bit;
		const char *name;
	} figures[] = { { PRB_DRAM_READ, "read" }, { PRB_DRAM_WRITE, "write" },
			{ PRB_DRAM_TOTAL, "total" } };
	for (size_t k = 0; k < sizeof(figures) / sizeof(figures[0]); k++)
		if (st->provides & figures[k].bit)
			json_array_append_new(prov, json_string(figures[k].name));
	json_object_set_new(j, "provides", prov);
	json_object_set_new(j, "read_write_split",
			    json_boolean((st->provides & (PRB_DRAM_READ | PRB_DRAM_WRITE)) ==
					 (PRB_DRAM_READ | PRB_DRAM_WRITE)));
	json_object_set_new(j, "caveat", st->caveat[0] ? json_string(st->caveat) : json_null());
	json_object_set_new(j, "reason", jtext(st->available ? "every instance opened" : st->reason));
	json_object_set_new(j, "missing", jtext(st->missing));
	/* the kernel's perf on the same events, found or not: a second opinion on bare metal */
	struct mw_perf_line pl;
	json_t *opened = mw_dram_opened_json(st);
	bool have = st->n_instances > 0 && mw_perf_line(opened, NULL, &pl) == 0;
	json_decref(opened);
	json_object_set_new(j, "perf_command", have ? json_string(pl.command) : json_null());
	json_object_set_new(j, "perf_note", have ? json_string(pl.note) : json_null());
	*topo = mw_topology_describe(prb_system_root(sys), vendor, st);
	free(st);
	return j;
}

static json_t *build_report(const struct prb_system *sys, const struct options *o,
			    bool *dram_available)
{
	char vendor[64], family[16], model[16], name[256];
	struct utsname u;
	json_t *r = json_object();

	cpuinfo("vendor_id", vendor, sizeof(vendor));
	cpuinfo("cpu family", family, sizeof(family));
	cpuinfo("model", model, sizeof(model));
	cpuinfo("model name", name, sizeof(name));
	json_object_set_new(r, "cpu", json_pack("{s:s?, s:o, s:o, s:s?, s:b}",
		"vendor", vendor[0] ? vendor : NULL,
		"family", family[0] ? json_integer(atoi(family)) : json_null(),
		"model", model[0] ? json_integer(atoi(model)) : json_null(),
		"name", name[0] ? name : NULL,
		"hypervisor", cpu_has_flag("hypervisor")));
	if (uname(&u) == 0)
		json_object_set_new(r, "kernel", json_pack("{s:s, s:s, s:s}", "sysname", u.sysname,
							    "release", u.release, "machine", u.machine));
	/* The CPUs a run gets by default: the affinity mask, capped by a cgroup's CPU quota,
	 * which a container's `--cpus` sets and the mask does not show (src/base/cgroup.h). */
	struct mw_cpu_quota q;
	int qrc = mw_cpu_quota(NULL, &q);
	/* The cgroup's path and a quota file's text are the machine's bytes: UTF-8 for JSON
	 * (json_pack refuses anything else, and the whole "cpus" would vanish). */
	char *qsrc = mw_utf8_fix(qrc == 1 ? q.file : q.why);
	json_object_set_new(r, "cpus", json_pack("{s:i, s:o, s:s, s:i}", "affinity",
		mw_cpus_allowed(), "quota", qrc == 1 ? json_real(q.cpus) : json_null(),
		"quota_source", qsrc ? qsrc : "(not shown: out of memory)", "default_threads",
		mw_cpus_default(NULL, 0)));
	free(qsrc);
	int paranoid = read_paranoid();
	json_object_set_new(r, "perf_event_paranoid",
			    paranoid == -1000 ? json_null() : json_integer(paranoid));
	json_object_set_new(r, "counter_layer", json_string(prb_counter_backend()));
	json_object_set_new(r, "sysfs_root", jtext(prb_system_root(sys)));

	json_t *pmus = json_array();
	for (size_t i = 0; i < prb_system_pmu_count(sys); i++) {
		const struct prb_pmu *p = prb_system_pmu(sys, i);
		json_t *pj = json_pack("{s:o, s:i}", "name", jtext(p->name), "type", (int)p->type);
		if (p->n_cpus) {
			json_t *cpus = json_array();
			for (int c = 0; c < p->n_cpus; c++)
				json_array_append_new(cpus, json_integer(p->cpus[c]));
			json_object_set_new(pj, "cpumask", cpus);
		}
		if (p->problem.text[0])
			json_object_set_new(pj, "problem", json_pack("{s:o, s:o}", "file",
				jtext(p->problem.source), "text", jtext(p->problem.text)));
		json_array_append_new(pmus, pj);
	}
	json_object_set_new(r, "pmus", pmus);
	json_t *topo = NULL;
	json_object_set_new(r, "dram", dram_report(sys, o, dram_available, vendor, &topo));
	json_object_set_new(r, "topology", topo ? topo : json_null());

	json_t *rapl = json_object(), *core = json_object(), *sw = json_object();
	try_events(sys, rapl_events, sizeof(rapl_events) / sizeof(rapl_events[0]), NULL, rapl);
	try_events(sys, core_events, sizeof(core_events) / sizeof(core_events[0]), NULL, core);
	try_events(sys, software_events, sizeof(software_events) / sizeof(software_events[0]), NULL,
		   sw);
	json_object_set_new(r, "rapl", rapl);
	json_object_set_new(r, "core_events", core);
	json_object_set_new(r, "software_events", sw);
	return r;
}

static void print_events(const char *title, json_t *obj)
{
	const char *key;
	json_t *v;
	printf("%-12s", title);
	bool first = true;
	json_object_foreach(obj, key, v) {
		if (json_is_true(json_object_get(v, "available")))
			printf("%s%s ok", first ? "" : ", ", key);
		else
			printf("%s%s NOT AVAILABLE", first ? "" : ", ", key);
		first = false;
	}
	printf("\n");
	/* each distinct reason once: the events it applies to have their names in it or before */
	const char *seen[16];
	size_t n_seen = 0;
	json_object_foreach(obj, key, v) {
		const char *why = json_string_value(json_object_get(v, "reason"));
		const char *colon = why ? strchr(why, ':') : NULL;
		bool dup = false;
		if (!why)
			continue;
		for (size_t i = 0; i < n_seen; i++)
			dup |= !strcmp(strchr(seen[i], ':'), colon ? colon : why);
		if (!dup && colon && n_seen < 16) {
			seen[n_seen++] = why;
			printf("  %s\n", why);
		} else if (!colon) {
			printf("  %s\n", why);
		}
	}
}

/* What the backend counts, and so what it cannot see: a total-only backend has no split. */
static void print_provides(json_t *dram)
{
	json_t *p;
	size_t i;
	printf("  counts:");
	json_array_foreach(json_object_get(dram, "provides"), i, p)
		printf("%s%s", i ? ", " : " ", json_string_value(p));
	printf("%s\n", json_is_true(json_object_get(dram, "read_write_split")) ? "" :
	       " (no read/write split: MB/token counts read + written bytes)");
}

/* A backend that was found but did not open: its instances still say what it would count. */
static void print_found(json_t *dram)
{
	json_t *inst = json_object_get(dram, "instances"), *p;
	size_t i;
	if (!json_array_size(inst))
		return;
	printf("  found %zu instances:", json_array_size(inst));
	json_array_foreach(inst, i, p)
		printf(" %s", mw_esc(json_string_value(p)));
	printf("\n");
	print_provides(dram);
	const char *caveat = json_string_value(json_object_get(dram, "caveat"));
	if (caveat)
		printf("  caveat: %s\n", mw_esc(caveat));
}

static void print_text(json_t *r)
{
	json_t *cpu = json_object_get(r, "cpu"), *k = json_object_get(r, "kernel");
	json_t *dram = json_object_get(r, "dram"), *pmus = json_object_get(r, "pmus");
	json_t *p;
	size_t i;
	const char *vendor = json_string_value(json_object_get(cpu, "vendor"));
	const char *name = json_string_value(json_object_get(cpu, "name"));
	printf("cpu:         %s, family %lld, model %lld: %s%s\n", vendor ? vendor : "unknown vendor",
	       json_integer_value(json_object_get(cpu, "family")),
	       json_integer_value(json_object_get(cpu, "model")), name ? name : "unknown name",
	       json_is_true(json_object_get(cpu, "hypervisor")) ? " (virtual machine)" : "");
	printf("kernel:      %s %s %s\n", json_string_value(json_object_get(k, "sysname")),
	       json_string_value(json_object_get(k, "release")),
	       json_string_value(json_object_get(k, "machine")));
	json_t *cpus = json_object_get(r, "cpus");
	const char *qsrc = json_string_value(json_object_get(cpus, "quota_source"));
	json_int_t dflt = json_integer_value(json_object_get(cpus, "default_threads"));
	/* The cgroup's path and its quota file's text, escaped: a terminal obeys what they may
	 * hold (a container names its own cgroup). */
	if (json_is_number(json_object_get(cpus, "quota")))
		printf("cpus:        %lld in the affinity mask, a cgroup CPU quota of %.2f (%s): runs "
		       "default to %lld thread%s\n",
		       json_integer_value(json_object_get(cpus, "affinity")),
		       json_number_value(json_object_get(cpus, "quota")),
		       qsrc ? mw_esc(qsrc) : "unknown", dflt,
		       dflt == 1 ? "" : "s");
	else
		printf("cpus:        %lld in the affinity mask (%s)\n",
		       json_integer_value(json_object_get(cpus, "affinity")),
		       qsrc ? mw_esc(qsrc) : "unknown");
	json_t *par = json_object_get(r, "perf_event_paranoid");
	if (json_is_integer(par))
		printf("perf_event_paranoid: %lld (availability below is from trying each open)\n",
		       json_integer_value(par));
	else
		printf("perf_event_paranoid: unreadable\n");
	/* The simulated PMU in the provenance words every surface uses: SIMULATED, never a
	 * "layer" a reader could take for hardware's. */
	const char *layer = json_string_value(json_object_get(r, "counter_layer"));
	bool sim = layer && !strcmp(layer, "sim");
	if (sim)
		printf("counters:    SIMULATED: memwall's simulated PMU (MEMWALL_COUNTERS=sim) replays "
		       "counts a script gives; nothing below is counted by hardware\n");
	else
		printf("counters:    %s layer (the kernel's perf events)\n",
		       layer ? mw_esc(layer) : "?");
	/* Every name and text below comes from a sysfs tree (--sysfs, $MEMWALL_SYSFS_ROOT: a
	 * recording anyone may have made): escaped, so none acts on the terminal (text.h). */
	printf("PMUs:        %zu under %s/bus/event_source/devices:", json_array_size(pmus),
	       mw_esc(json_string_value(json_object_get(r, "sysfs_root"))));
	json_array_foreach(pmus, i, p)
		printf(" %s", mw_esc(json_string_value(json_object_get(p, "name"))));
	printf("\n");
	json_array_foreach(pmus, i, p) {
		json_t *prob = json_object_get(p, "problem");
		if (prob)
			printf("  %s: %s\n", mw_esc(json_string_value(json_object_get(prob, "file"))),
			       mw_esc(json_string_value(json_object_get(prob, "text"))));
	}
	const char *backend = json_string_value(json_object_get(dram, "backend"));
	if (json_is_true(json_object_get(dram, "available"))) {
		json_t *inst = json_object_get(dram, "opened_on");
		printf("DRAM:        %s%s: %s, %zu instances, all opened:\n", sim ? "SIMULATED " : "",
		       mw_esc(backend), mw_esc(json_string_value(json_object_get(dram, "description"))),
		       json_array_size(inst));
		json_array_foreach(inst, i, p)
			printf("  %s on cpu %lld\n",
			       mw_esc(json_string_value(json_object_get(p, "pmu"))),
			       json_integer_value(json_object_get(p, "cpu")));
		const char *caveat = json_string_value(json_object_get(dram, "caveat"));
		if (caveat)
			printf("  caveat: %s\n", mw_esc(caveat));
		print_provides(dram);
	} else {
		printf("DRAM:        NOT AVAILABLE%s%s: %s\n", backend ? " with " : "",
		       backend ? mw_esc(backend) : "",
		       mw_esc(json_string_value(json_object_get(dram, "reason"))));
		print_found(dram);
		if (json_is_true(json_object_get(cpu, "hypervisor")))
			printf("  this is a virtual machine (/proc/cpuinfo has the 'hypervisor' flag): "
			       "memwall can run the engine here but not count its DRAM traffic\n");
	}
	const char *missing = json_string_value(json_object_get(dram, "missing"));
	if (missing && *missing)
		printf("  looked for: %s\n", mw_esc(missing));
	const char *perf = json_string_value(json_object_get(dram, "perf_command"));
	if (perf)
		printf("  check with perf: %s\n    (%s)\n", mw_esc(perf),
		       mw_esc(json_string_value(json_object_get(dram, "perf_note"))));
	const char *tsrc = json_string_value(json_object_get(json_object_get(r, "topology"),
							      "source"));
	printf("topology:    %s\n", tsrc ? mw_esc(tsrc) : "unreadable");
	mw_topology_print(stdout, json_object_get(r, "topology"));
	print_events("RAPL:", json_object_get(r, "rapl"));
	print_events("core:", json_object_get(r, "core_events"));
	print_events("software:", json_object_get(r, "software_events"));
}

/* True when any open in the report was refused for permission: its reason ends "(EACCES)" or
 * "(EPERM)" (prb_explain). What failed decides, not the uid or the paranoid level. */
static bool refused(json_t *r)
{
	static const char *const groups[] = { "rapl", "core_events", "software_events" };
	const char *why = json_string_value(json_object_get(json_object_get(r, "dram"), "reason"));
	const char *key;
	json_t *v;
	bool any = why && (strstr(why, "(EACCES)") || strstr(why, "(EPERM)"));
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		json_object_foreach(json_object_get(r, groups[i]), key, v) {
			why = json_string_value(json_object_get(v, "reason"));
			any = any || (why && (strstr(why, "(EACCES)") || strstr(why, "(EPERM)")));
		}
	return any;
}

/* CAP_PERFMON exists from Linux 5.8 (capabilities(7)); before it, perf needs CAP_SYS_ADMIN. */
static const char *perf_capability(json_t *r)
{
	const char *rel = json_string_value(json_object_get(json_object_get(r, "kernel"), "release"));
	int major = 0, minor = 0;
	if (rel && sscanf(rel, "%d.%d", &major, &minor) == 2 && (major < 5 || (major == 5 && minor < 8)))
		return "cap_sys_admin";
	return "cap_perfmon";
}

static void fix_permissions(json_t *r)
{
	json_t *par = json_object_get(r, "perf_event_paranoid");
	char exe[4096];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[k > 0 ? k : 0] = '\0';
	char level[32] = "unreadable";
	if (json_is_integer(par))
		snprintf(level, sizeof(level), "%lld", json_integer_value(par));
	printf("# Counters were refused for permission (perf_event_paranoid %s). Either lower the\n"
	       "# paranoid level for everyone (system-wide and uncore events need <= 0):\n", level);
	if (!json_is_integer(par) || json_integer_value(par) > 0)
		printf("sudo sysctl -w kernel.perf_event_paranoid=0\n"
		       "# (to keep it after a reboot: echo kernel.perf_event_paranoid=0 | "
		       "sudo tee /etc/sysctl.d/60-memwall.conf)\n");
	else
		printf("# (it is %lld already: a security module or a container refuses instead)\n",
		       json_integer_value(par));
	printf("# or give this memwall binary the capability, leaving the sysctl alone:\n"
	       "sudo setcap %s=ep %s\n", perf_capability(r), exe[0] ? exe : MW_BIN_DIR "/memwall");
	size_t r_len = strlen(MW_BUILD_ROOT);
	if (!strncmp(exe, MW_BUILD_ROOT, r_len) && exe[r_len] == '/')
		printf("# (a rebuild replaces this file and drops the capability; after `meson "
		       "install`, set it on %s/memwall)\n", MW_BIN_DIR);
}

static bool pmu_present(json_t *r, const char *prefix)
{
	json_t *p;
	size_t i;
	json_array_foreach(json_object_get(r, "pmus"), i, p) {
		const char *n = json_string_value(json_object_get(p, "name"));
		if (n && !strncmp(n, prefix, strlen(prefix)))
			return true;
	}
	return false;
}

/* DRAM counters absent (not refused): the uncore driver not loaded, or resctrl not mounted. */
static int fix_dram(json_t *r)
{
	json_t *cpu = json_object_get(r, "cpu");
	const char *vendor = json_string_value(json_object_get(cpu, "vendor"));
	const char *root = json_string_value(json_object_get(r, "sysfs_root"));
	char path[4200];
	struct stat st;
	int n = 0;

	if (json_is_true(json_object_get(cpu, "hypervisor"))) {
		printf("# DRAM counters: this is a virtual machine; no command here exposes its memory "
		       "controllers' PMUs: measure on bare metal\n");
		return 0;
	}
	bool intel = vendor && !strcmp(vendor, "GenuineIntel");
	bool amd = vendor && !strcmp(vendor, "AuthenticAMD");
	const char *machine = json_string_value(json_object_get(json_object_get(r, "kernel"),
								"machine"));
	bool arm64 = machine && !strcmp(machine, "aarch64");
	if (intel && !pmu_present(r, "uncore_imc")) {
		printf("# DRAM counters: no uncore_imc PMU: load Intel's uncore driver\n"
		       "sudo modprobe intel_uncore\n");
		n++;
	} else if (amd && !pmu_present(r, "amd_umc") && !pmu_present(r, "amd_df")) {
		printf("# DRAM counters: no amd_umc or amd_df PMU: load AMD's uncore driver "
		       "(amd_umc needs Linux 6.6+)\n"
		       "sudo modprobe amd_uncore\n");
		n++;
	} else if (arm64 && !pmu_present(r, "arm_dmc620_") && !pmu_present(r, "nvidia_scf_pmu_") &&
		   !pmu_present(r, "arm_cmn_")) {
		/* module names from drivers/perf/Makefile and drivers/perf/arm_cspmu/Makefile;
		 * each loads only where its hardware is (ACPI ARMHD620, ARMHC600/650/700, the
		 * CoreSight PMU table), so a missing one is not an error */
		printf("# DRAM counters: no arm_dmc620_*, nvidia_scf_pmu_* or arm_cmn_* PMU: load "
		       "the drivers for this server's memory controllers or mesh\n"
		       "sudo modprobe arm_dmc620_pmu   # Ampere Altra (DMC-620)\n"
		       "sudo modprobe -a arm_cspmu_module nvidia_cspmu   # NVIDIA Grace\n"
		       "sudo modprobe arm-cmn   # Arm CMN mesh (Altra, Graviton)\n");
		n++;
	}
	/* resctrl's memory-bandwidth monitoring, where the CPU has it (Intel RDT, AMD PQoS). */
	snprintf(path, sizeof(path), "%s/fs/resctrl/mon_data", root ? root : "/sys");
	if (cpu_has_flag("cqm_mbm_total") && stat(path, &st) != 0) {
		printf("# resctrl memory-bandwidth monitoring: the CPU has it, the filesystem is not "
		       "mounted\nsudo mount -t resctrl resctrl %s/fs/resctrl\n", root ? root : "/sys");
		n++;
	}
	return n;
}

/* `doctor --fix`: a command for each thing that is missing and fixable, a comment for what
 * no command can fix, and nothing for what opened. */
static void print_fixes(json_t *r)
{
	int n = 0;
	if (refused(r)) {
		fix_permissions(r);
		n++;
	}
	if (!json_is_true(json_object_get(json_object_get(r, "dram"), "available")) &&
	    !refused(r))
		n += fix_dram(r);
	if (!n)
		printf("# memwall doctor --fix: nothing to run (what is not available here, no "
		       "command can enable)\n");
}

int mw_cmd_doctor(int argc, char **argv)
{
	struct options o = { 0 };
	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	bool help = false, dram = false;
	json_t *report = NULL;
	int rc = parse_args(argc, argv, &o, &help);
	if (rc != MW_EXIT_OK || help) {
		if (help)
			usage(stdout);
		return rc;
	}
	if (prb_system_open(&sys, o.sysfs, &err) < 0)
		return mw_fail(o.require_dram ? MW_EXIT_ENV : MW_EXIT_OK, VERB, "%s: %s", err.source,
			       err.text);
	report = build_report(sys, &o, &dram);
	if (o.fix) {
		print_fixes(report);
	} else if (o.json) {
		json_dumpf(report, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
	} else {
		print_text(report);
	}
	json_decref(report);
	prb_system_close(sys);
	return o.require_dram && !dram ? MW_EXIT_ENV : MW_EXIT_OK;
}
