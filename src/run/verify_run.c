/* src/run/verify_run.c: `memwall verify`'s measurement and its record (dram_verify.h).
 *
 * The order of the readings (tests/e2e/test_verify*.c script the simulated PMU by it):
 * prb_dram_open's own (k = 0); the idle window's start and end (k = 1, 2); for each placement
 * target (verify_numa.c: one, or each NUMA node in turn) the start, the end of the read pass
 * and the end of the write pass (3 readings: k = 3 + 3t, 4 + 3t, 5 + 3t); perf's window where
 * a perf tool runs (2); the matrix's (verify_matrix.c: 6 per size). Where the backend's events
 * take turns in counter groups (verify_meters.h), each phase (the idle window, a target's
 * passes, a matrix size) runs once per group and every group's counters read at the same k,
 * in that order: a script's rule per event still lists one step per reading.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dram_calibration.h"
#include "dram_verify.h"
#include "verify_checks.h"
#include "verify_diagnose.h"
#include "control.h"
#include "verify_matrix.h"
#include "verify_numa.h"
#include "machine.h"
#include "metrics.h"
#include "version.h"

/* Ends early on a stop (SIGINT or SIGTERM, caught by `memwall verify`: control.h), so that an
 * idle window of minutes does not outlive a Ctrl-C; in slices of 10 ms, since the signal may
 * land on another thread and leave this one's nanosleep uninterrupted. */
static void sleep_ms(int ms)
{
	uint64_t until = mw_now_ns() + (uint64_t)ms * 1000000ull;
	for (uint64_t now = mw_now_ns(); now < until && !mw_run_stopped(); now = mw_now_ns()) {
		uint64_t left = until - now < 10000000ull ? until - now : 10000000ull;
		struct timespec ts = { 0, (long)left };
		nanosleep(&ts, NULL);
	}
}

/* The canary: several times the last-level cache, so that it cannot be served from it, and
 * at least MW_DRAMVERIFY_MIN_BYTES; asked, when given. */
static uint64_t canary_bytes(uint64_t asked, bool llc_known, uint64_t llc)
{
	if (asked)
		return asked;
	uint64_t b = (llc_known ? llc : ENG_ROOF_LLC_FALLBACK) * ENG_ROOF_LLC_MULTIPLE;
	return b < MW_DRAMVERIFY_MIN_BYTES ? MW_DRAMVERIFY_MIN_BYTES : b;
}

/* The idle window per instance: its total and its time. */
static json_t *idle_json(const struct mw_verify_meters *m)
{
	json_t *a = json_array();
	for (int i = 0; a && i < m->st.n_instances; i++) {
		char label[96];
		const struct prb_dram_instance_sample *is = &m->idle->inst[i];
		mw_verify_label(&m->st, i, label, sizeof(label));
		json_array_append_new(a, json_pack("{s:s, s:o, s:I}", "name", label, "total_bytes",
			is->total.state == PRB_MEASURED ? json_integer((json_int_t)is->total.bytes) :
							  json_null(),
			"time_enabled_ns", (json_int_t)is->time_enabled));
	}
	return a;
}

static json_t *thresholds_json(void)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "sum_pct", MW_DRAMVERIFY_SUM_PCT,
			 "instance_pct", MW_DRAMVERIFY_INSTANCE_PCT, "perf_pct",
			 MW_DRAMVERIFY_PERF_PCT, "resctrl_pct", MW_DRAMVERIFY_RESCTRL_PCT,
			 "idle_pct", MW_DRAMVERIFY_IDLE_PCT, "write_allocate_pct",
			 MW_DRAMVERIFY_WA_PCT);
}

/* The instances with their node and the events each counts, as perf names them (and the
 * counter group of each, where they take turns). */
static json_t *instances_json(const struct mw_verify_meters *m)
{
	json_t *inst = json_array();
	for (int k = 0; inst && k < m->st.n_instances; k++) {
		struct prb_dram_event_desc d[PRB_DRAM_MAX_EVENTS];
		int grp[PRB_DRAM_MAX_EVENTS];
		int ne = mw_verify_events(m, k, d, grp, PRB_DRAM_MAX_EVENTS);
		json_t *ev = json_array();
		for (int j = 0; j < ne; j++) {
			json_t *e = json_pack("{s:s, s:s, s:s, s:f}", "perf", d[j].perf, "name",
				d[j].name, "figure", mw_verify_figure_name(d[j].figure),
				"bytes_per_count", d[j].bytes_per_count);
			if (e && m->n_groups > 1)
				json_object_set_new(e, "group", json_integer(grp[j] + 1));
			json_array_append_new(ev, e);
		}
		json_array_append_new(inst, json_pack("{s:s, s:i, s:o, s:s, s:o}", "pmu",
			m->st.instances[k].pmu, "cpu", m->st.instances[k].cpu, "node",
			m->topo[k].node >= 0 ? json_integer(m->topo[k].node) : json_null(),
			"attribution", mw_topo_level_name(m->topo[k].level), "events", ev));
	}
	return inst;
}

/* How the events took turns: null where they fit the counters together. */
static json_t *groups_json(const struct mw_verify_meters *m)
{
	if (m->n_groups == 1)
		return json_null();
	json_t *groups = json_array();
	for (int g = 0; groups && g < m->n_groups; g++) {
		struct prb_dram_event_desc d[PRB_DRAM_MAX_EVENTS];
		int ne = prb_dram_events(m->g[g], 0, d, PRB_DRAM_MAX_EVENTS);
		json_t *names = json_array();
		for (int j = 0; j < ne; j++)
			json_array_append_new(names, json_string(d[j].name));
		json_array_append_new(groups, json_pack("{s:i, s:o}", "group", g + 1, "events",
							names));
	}
	return json_pack("{s:i, s:o, s:s}", "counters", m->st.counters, "groups", groups,
			 "basis", "more events per instance than its PMU has counters: opened "
			 "together they are multiplexed and every count extrapolated, so each phase "
			 "(the idle window, each placement's passes, each matrix size) ran once per "
			 "group, that group's events alone enabled; an instance's count is the sum of "
			 "its groups', each counted over its own run, and each group is checked "
			 "against its part of the instance's share");
}

/* The target's placement as the record keeps it. */
static json_t *placement_json(const struct mw_verify_target *tg, int rc, const char *why,
			      bool sim)
{
	json_t *nodes = json_array();
	for (int b = 0; b < 16 * 64; b++)
		if (tg->mask[b / 64] >> (b % 64) & 1)
			json_array_append_new(nodes, json_integer(b));
	char cpus[4096], reason[800] = "";
	mw_cpulist_format(tg->cpus, tg->n_cpus, cpus, sizeof(cpus));
	if (rc < 0)
		snprintf(reason, sizeof(reason), "%s%s", why, sim ? "; SIMULATED: the counts are "
			 "the script's, so verify goes on with the pages where they fall" : "");
	return json_pack("{s:s, s:o, s:o, s:b, s:o}", "policy",
			 tg->policy == 2 ? "bind" : tg->policy == 3 ? "interleave" : "default",
			 "nodes", nodes, "cpus", tg->n_cpus ? json_string(cpus) : json_null(),
			 "applied", rc == 0, "reason", reason[0] ? json_string(reason) : json_null());
}

struct run_state {
	const struct mw_dramverify_options *o;
	struct mw_verify_meters *m;
	struct mw_verify_plan plan;
	struct eng_stream *es;  /* the last target's stream, kept for perf */
	uint64_t bytes;         /* the canary asked */
	json_t *targets, *checks;
};

/* A target's two passes, once per counter group: the readings that end them in ps, and what
 * the first run streamed (every run streams the same buffer). 0, or -errno with why. */
static int run_passes(struct run_state *rs, const struct mw_verify_target *tg,
		      struct mw_verify_passes *ps, char *why, size_t n)
{
	struct mw_verify_meters *m = rs->m;
	int rc = 0;
	for (int g = 0; rc == 0 && g < m->n_groups; g++) {
		struct eng_stream_sample r = { 0 }, w = { 0 };
		bool nt = ps->nt;
		mw_verify_group_begin(m, g);
		ps->start = mw_verify_take(m);
		rc = eng_stream_run(rs->es, ENG_STREAM_READ, false, &r);
		ps->after_read = mw_verify_take(m);
		if (rc == 0 && (rc = eng_stream_run(rs->es, ENG_STREAM_WRITE, nt, &w)) == -ENOTSUP)
			rc = eng_stream_run(rs->es, ENG_STREAM_WRITE, nt = false, &w);
		ps->after_write = mw_verify_take(m);
		if (mw_verify_group_end(m) < 0 && rc == 0)
			rc = -EIO;
		if (g == 0) {
			ps->rs = r;
			ps->ws = w;
			ps->nt = nt;
		}
	}
	if (rc < 0)
		snprintf(why, n, "the canary's passes failed (%s): %s", tg->label, strerror(-rc));
	return rc;
}

/* The idle window, once per counter group. */
static int idle_window(struct run_state *rs, char *why, size_t n)
{
	struct mw_verify_meters *m = rs->m;
	int i0 = -1, i1 = -1, rc = 0;
	for (int g = 0; g < m->n_groups; g++) {
		mw_verify_group_begin(m, g);
		i0 = mw_verify_take(m);
		sleep_ms(rs->o->idle_ms);
		i1 = mw_verify_take(m);
		if (mw_verify_group_end(m) < 0)
			rc = -EIO;
	}
	if (rc < 0)
		snprintf(why, n, "the idle window's counter groups read apart");
	else
		mw_verify_idle(m, i0, i1);
	return rc;
}

/* The idle window, then each target's two passes, each window ended by the next reading.
 * 0, or -errno with why. */
static int stream_targets(struct run_state *rs, char *why, size_t n)
{
	struct mw_verify_meters *m = rs->m;
	bool sim = !strcmp(prb_counter_backend(), "sim");
	int rc = idle_window(rs, why, n);
	if (rc < 0)
		return rc;
	m->canary_first = m->canary_last = -1;
	for (int k = 0; k < rs->plan.n && !mw_run_stopped(); k++) {
		const struct mw_verify_target *tg = &rs->plan.t[k];
		struct mw_verify_saved sv;
		struct mw_verify_passes ps = { .nt = true };
		char pwhy[600];
		struct eng_error eerr = { 0 };
		int prc = mw_verify_place(tg, &sv, pwhy, sizeof(pwhy));
		json_t *pl = placement_json(tg, prc, pwhy, sim);
		if (prc < 0 && !sim) {
			char name[120];
			snprintf(name, sizeof(name), "%s: placement", tg->label);
			json_array_append_new(rs->checks, json_pack("{s:s, s:s, s:n, s:n, s:n, s:n, "
				"s:s, s:s}", "name", name, "subject", tg->label, "expected_bytes",
				"measured_bytes", "error_pct", "threshold_pct", "verdict", "fail",
				"message", pwhy));
			json_array_append_new(rs->targets, json_pack("{s:s, s:o, s:n}", "label",
				tg->label, "placement", pl, "passes"));
			continue;
		}
		eng_stream_free(rs->es);
		struct eng_stream_options sopt = { .threads = rs->o->threads, .bytes = rs->bytes };
		rc = eng_stream_new(&rs->es, &sopt, &eerr);
		mw_verify_unplace(&sv);
		if (rc < 0) {
			json_decref(pl);
			snprintf(why, n, "cannot set up streaming for %s: %s%s%s", tg->label,
				 eerr.source, eerr.source[0] ? ": " : "", eerr.text);
			return rc;
		}
		if ((rc = run_passes(rs, tg, &ps, why, n)) < 0) {
			json_decref(pl);
			return rc;
		}
		if (m->canary_first < 0)
			m->canary_first = ps.start;
		m->canary_last = ps.after_write;
		if (m->n_canary < 64) {
			m->canary[m->n_canary][0] = ps.start;
			m->canary[m->n_canary++][1] = ps.after_write;
		}
		json_array_append_new(rs->targets,
				      mw_verify_target_check(m, &rs->plan, k, &ps, pl, rs->checks));
	}
	return 0;
}

/* Opens the backend, resctrl beside it and the topology; fills m. 0, -ENOENT (cannot verify
 * here), -EINVAL (an unknown backend), -ENOMEM, with why. */
static int open_meters(const struct mw_dramverify_options *o, struct prb_system **sys,
		       struct prb_topology **topo, struct mw_verify_meters *m, char *rwhy,
		       size_t rn, char *why, size_t n)
{
	struct prb_error perr = { 0 };
	char twhy[700];
	if (prb_system_open(sys, o->sysfs, &perr) < 0) {
		snprintf(why, n, "%s: %s", perr.source, perr.text);
		return -ENOENT;
	}
	struct prb_dram_options dopt = { .backend = o->backend };
	int rc = mw_verify_open(m, *sys, &dopt);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		snprintf(why, n, "%s", m->st.reason);
		return rc == -EINVAL && !m->st.backend[0] ? -EINVAL : -ENOENT;
	}
	/* a second meter: resctrl beside memory-controller counters */
	if (strcmp(m->st.backend, "resctrl")) {
		struct prb_dram_options ropt = { .backend = "resctrl" };
		/* Nobody asked for resctrl: verify looks for it as a second meter, so its reason
		 * is said as that, not as prb_dram_open's "was asked for" (issue 44). */
		if (prb_dram_open(&m->r, *sys, &ropt, &m->rst) < 0) {
			snprintf(rwhy, rn, "no second meter: verify reads resctrl beside the backend "
				 "where it exists, and here %.600s",
				 m->rst.missing[0] ? m->rst.missing : m->rst.reason);
			m->r = NULL;
		}
	} else {
		snprintf(rwhy, rn, "resctrl is the backend under test: no second meter");
	}
	m->split = (m->st.provides & (PRB_DRAM_READ | PRB_DRAM_WRITE)) ==
		   (PRB_DRAM_READ | PRB_DRAM_WRITE);
	if ((rc = prb_topology_new(topo, prb_system_root(*sys), &perr)) < 0) {
		snprintf(why, n, "%s: %s", perr.source, perr.text);
		return rc == -ENOMEM ? rc : -ENOENT;
	}
	if (!(m->topo = calloc((size_t)m->st.n_instances + 1, sizeof(*m->topo))))
		return -ENOMEM;
	(void)mw_topology_attribute(*topo, &m->st, m->topo, twhy, sizeof(twhy));
	json_t *t = mw_topology_describe(prb_system_root(*sys), NULL, &m->st);
	json_t *pop = json_object_get(json_object_get(t, "channels"), "populated");
	m->channels_populated = json_is_integer(pop) ? (int)json_integer_value(pop) : -1;
	json_decref(t);
	return 0;
}

static json_t *build_record(struct run_state *rs, const struct prb_system *sys, uint64_t llc,
			    bool llc_known, const char *llc_src, json_t *perf, json_t *resctrl,
			    json_t *matrix)
{
	struct mw_verify_meters *m = rs->m;
	char sha[65], now[32], vendor[128] = "";
	bool pass = true;
	size_t i;
	json_t *c, *fp = NULL, *rec = NULL;
	json_array_foreach(rs->checks, i, c)
		pass &= mw_verify_passed(c);
	json_t *machine = mw_machine_describe(NULL);
	if (!machine || !(fp = mw_dramcal_fingerprint(machine, &m->st, sha)))
		goto out;
	const char *v = json_string_value(json_object_get(machine, "cpu_vendor"));
	snprintf(vendor, sizeof(vendor), "%s", v ? v : "");
	mw_utc_now(now, sizeof(now), false);
	json_t *single = rs->plan.n == 1 ?
		json_object_get(json_array_get(rs->targets, 0), "passes") : NULL;
	rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O, s:s, s:s, s:o, s:o,"
			" s:{s:I, s:o, s:s, s:i, s:s},"
			" s:{s:i, s:o}, s:s, s:{s:s, s:i}, s:o, s:O*, s:O, s:o, s:o, s:o, s:o?,"
			" s:O, s:o}",
			"schema", MW_DRAMVERIFY_SCHEMA, "created_utc", now, "memwall_version",
			mw_version(), "verdict", pass ? "pass" : "fail", "layer",
			prb_counter_backend(), "fingerprint_sha256", sha, "fingerprint", fp,
			"backend", m->st.backend, "description", m->st.description, "caveat",
			m->st.caveat[0] ? json_string(m->st.caveat) : json_null(), "instances",
			instances_json(m), "canary", "bytes",
			(json_int_t)(rs->es ? eng_stream_bytes(rs->es) : rs->bytes), "llc_bytes",
			llc_known ? json_integer((json_int_t)llc) : json_null(), "llc_source",
			llc_known ? llc_src : "unknown: sysfs does not say", "threads",
			rs->o->threads, "stream_kernels", rs->es ? eng_stream_kernels(rs->es) : "",
			"idle", "ms", rs->o->idle_ms, "instances", idle_json(m), "assumption",
			rs->plan.assumption, "numa", "mode", rs->plan.mode, "targets", rs->plan.n,
			"thresholds", thresholds_json(), "passes", single, "targets", rs->targets,
			"perf", perf, "resctrl", resctrl, "matrix", matrix ? matrix : json_null(),
			"topology", mw_topology_describe(prb_system_root(sys), vendor, &m->st),
			"checks", rs->checks, "diagnoses", json_array());
	perf = resctrl = matrix = NULL;
	if (rec)
		json_object_set_new(rec, "counter_groups", groups_json(m));
	if (rec && !pass)
		json_object_set_new(rec, "diagnoses", mw_verify_diagnose(rec, prb_system_root(sys)));
out:
	json_decref(perf);
	json_decref(resctrl);
	json_decref(matrix);
	json_decref(fp);
	json_decref(machine);
	return rec;
}

int mw_dramverify_run(const struct mw_dramverify_options *o, json_t **record, char *why,
		      size_t n)
{
	struct prb_system *sys = NULL;
	struct prb_topology *topo = NULL;
	struct run_state rs = { .o = o, .m = mw_verify_meters_new() };
	char llc_src[512] = "", rwhy[800] = "";
	uint64_t llc = 0;
	int rc = -ENOMEM;

	*record = NULL;
	why[0] = '\0';
	if (!rs.m || (rc = open_meters(o, &sys, &topo, rs.m, rwhy, sizeof(rwhy), why, n)) < 0)
		goto out;
	if ((rc = mw_verify_plan_make(topo, &rs.m->st, rs.m->topo, o->numa, &rs.plan)) < 0)
		goto out;
	bool llc_known = eng_llc_size(&llc, llc_src, sizeof(llc_src)) == 0 && llc > 0;
	rs.bytes = canary_bytes(o->bytes, llc_known, llc);
	if (o->log)
		fprintf(o->log, "memwall verify: %s (%d instances) on the %s layer; canary %.1f MiB "
			"on %d placement%s (%s); idle window %d ms\n", rs.m->st.backend,
			rs.m->st.n_instances, prb_counter_backend(), (double)rs.bytes / 1048576.0,
			rs.plan.n, rs.plan.n == 1 ? "" : "s", rs.plan.t[0].label, o->idle_ms);
	rc = -ENOMEM;
	if (!(rs.targets = json_array()) || !(rs.checks = json_array()))
		goto out;
	if ((rc = stream_targets(&rs, why, n)) < 0)
		goto out;
	if (mw_run_stopped()) { /* nothing is kept of a stopped verify (cmd_verify.c) */
		snprintf(why, n, "stopped by %s", mw_run_stop_name());
		rc = -ECANCELED;
		goto out;
	}
	json_t *resctrl = rs.m->canary_first >= 0 ?
		mw_verify_resctrl_check(rs.m, rwhy, rs.checks) :
		json_pack("{s:b, s:s}", "available", 0, "reason", "no canary pass ran");
	/* perf reads every event at once beside memwall's own: every group enabled, as a run
	 * opens them (both tools' counts multiplexed alike where the events take turns) */
	mw_verify_group_begin(rs.m, -1);
	json_t *perf = rs.es ? mw_verify_perf_check(rs.m, rs.es, o, rs.checks) :
		json_pack("{s:b, s:s}", "available", 0, "reason", "no canary pass ran");
	(void)mw_verify_group_end(rs.m);
	json_t *matrix = NULL;
	if (o->matrix && !mw_run_stopped() &&
	    !(matrix = mw_verify_matrix(rs.m, o, llc, llc_known, rs.checks, why, n))) {
		json_decref(resctrl);
		json_decref(perf);
		rc = -EIO;
		goto out;
	}
	rc = -ENOMEM;
	if (!(*record = build_record(&rs, sys, llc, llc_known, llc_src, perf, resctrl, matrix)))
		goto out;
	rc = 0;
out:
	if (rc == -ENOMEM && !why[0])
		snprintf(why, n, "out of memory");
	json_decref(rs.targets);
	json_decref(rs.checks);
	eng_stream_free(rs.es);
	mw_verify_plan_free(&rs.plan);
	mw_verify_meters_free(rs.m);
	prb_topology_free(topo);
	prb_system_close(sys);
	return rc;
}
