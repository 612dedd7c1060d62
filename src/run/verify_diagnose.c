/* src/run/verify_diagnose.c: a failed verification matched against the failures this field
 * knows, each by its signature in the record's passes (verify_diagnose.h). Each diagnosis
 * names the likeliest cause and its fix:
 *
 *   missing-instance         an instance counts nothing of the canary its node holds
 *   half-counting            the sum is half the canary: every instance at half its share
 *                            (Granite Rapids' and Sierra Forest's cas_count_* counted SCH0
 *                            only, one command scheduler of two, until the kernel's commit
 *                            6a8a48644c4b "perf/x86/intel/uncore: Add per-scheduler IMC CAS
 *                            count events", February 2026, backported to 6.18 stable, added
 *                            cas_count_{read,write}_sch{0,1}), or half the instances silent (a
 *                            client part read through uncore_imc_free_running_0 of its two)
 *   scale-2x                 every instance at 2x (or 0.5x) its share: 64 against 32 bytes
 *                            per count, a wrong .scale
 *   mib-as-mb                the sum at 10^6 / 2^20 = 0.954 of the canary (-4.6 %), or its
 *                            inverse: MiB taken as 10^6 bytes
 *   read-write-swapped       the read pass counted as writes, the write pass as reads
 *   write-allocate-in-reads  the non-temporal write pass counted as many reads as writes
 *   numa-local               unplaced, one node's instances at n_nodes x their share and
 *                            the others' at nothing, the sum right: node-local memory
 *
 * Tolerances are wider than noise and narrower than the next signature: a silent instance is
 * under 10 % of its share; "about r" is within 10 % of r, except mib-as-mb (within 1 % of
 * 0.954: the sum's noise is about 1 %, probes/README.md, "verify").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes.h" /* PRB_DRAM_MAX_INSTANCES */
#include "verify_diagnose.h"
#include "verify_thresholds.h"

#define SILENT 0.10
#define NEAR 0.10
#define MIB_MB (1000000.0 / 1048576.0) /* 0.95367 */

/* One pass of one target, read back from the record. */
struct pstat {
	bool ok;                  /* figures present */
	const char *figure;
	double expected, sum, q;  /* q = sum / expected */
	int members, silent;
	double ratio[PRB_DRAM_MAX_INSTANCES];  /* members' counted / share; NaN for others */
	int node[PRB_DRAM_MAX_INSTANCES];
	const char *name[PRB_DRAM_MAX_INSTANCES];
	int n;
	bool has_cross, nt;
	double cross_expected, cross;
};

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static bool near(double x, double r, double tol)
{
	return fabs(x - r) <= tol * r;
}

static void read_pass(const json_t *pass, struct pstat *p)
{
	memset(p, 0, sizeof(*p));
	p->expected = num(pass, "expected_bytes");
	p->sum = num(pass, "counted_bytes");
	p->ok = p->expected > 0 && !isnan(p->sum);
	if (!p->ok)
		return;
	p->figure = json_string_value(json_object_get(pass, "figure"));
	p->nt = json_is_true(json_object_get(pass, "nontemporal"));
	p->q = p->sum / p->expected;
	size_t i;
	const json_t *in;
	json_array_foreach(json_object_get(pass, "instances"), i, in) {
		if (i >= PRB_DRAM_MAX_INSTANCES)
			break;
		double share = num(in, "expected_bytes"), c = num(in, "counted_bytes");
		bool member = json_is_true(json_object_get(in, "member"));
		p->name[i] = json_string_value(json_object_get(in, "name"));
		p->node[i] = json_is_integer(json_object_get(in, "node")) ?
				     (int)json_integer_value(json_object_get(in, "node")) : -1;
		p->ratio[i] = member && share > 0 ? c / share : NAN;
		p->n = (int)i + 1;
		if (member && share > 0) {
			p->members++;
			p->silent += !(c / share >= SILENT);
		}
	}
	const json_t *cr = json_object_get(pass, "cross");
	if (json_is_object(cr) && json_is_number(json_object_get(cr, "counted_bytes"))) {
		p->has_cross = true;
		p->cross_expected = num(cr, "expected_bytes");
		p->cross = num(cr, "counted_bytes");
	}
}

/* Every member's ratio about r. */
static bool uniform(const struct pstat *p, double r)
{
	for (int i = 0; i < p->n; i++)
		if (!isnan(p->ratio[i]) && !near(p->ratio[i], r, NEAR))
			return false;
	return p->members > 0;
}

static void add(json_t *out, const char *id, const char *where, const char *evidence,
		const char *fix)
{
	size_t i;
	const json_t *d;
	json_array_foreach(out, i, d)
		if (!strcmp(json_string_value(json_object_get(d, "id")), id))
			return; /* one diagnosis per cause: the first target's evidence */
	json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s?}", "id", id, "evidence",
					     evidence, "fix", fix, "where", where));
}

/* The silent members, "a (node 1), b" into buf; nodes named where there are several. */
static void silent_list(const struct pstat *p, bool nodes, char *buf, size_t n)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < p->n && at < n; i++) {
		if (isnan(p->ratio[i]) || p->ratio[i] >= SILENT)
			continue;
		int w = nodes && p->node[i] >= 0 ? snprintf(buf + at, n - at, "%s%s (node %d)", at ? ", " : "",
						   p->name[i], p->node[i])
					: snprintf(buf + at, n - at, "%s%s", at ? ", " : "", p->name[i]);
		at += w > 0 ? (size_t)w : 0;
	}
}

struct ctx {
	const json_t *rec;
	const char *root, *backend, *where;
	json_t *out;
	char events[600]; /* the first instance's events, as perf names them */
	char channels[200];
	int n_nodes;      /* nodes the instances lie on */
};

/* Instance i's events as perf names them (the record's instances[i].events) into buf. */
static void events_of(const struct ctx *c, int i, char *buf, size_t n)
{
	const json_t *ev = json_object_get(json_array_get(json_object_get(c->rec, "instances"),
							  (size_t)i), "events"), *e;
	size_t k, at = 0;
	buf[0] = '\0';
	json_array_foreach(ev, k, e) {
		int w = snprintf(buf + at, n - at, "%s%s", k ? ", " : "",
				 json_string_value(json_object_get(e, "perf")));
		at += w > 0 ? (size_t)w : 0;
		if (at >= n)
			break;
	}
}

/* The first silent member of a pass; -1 when none. */
static int first_silent(const struct pstat *p)
{
	for (int i = 0; i < p->n; i++)
		if (!isnan(p->ratio[i]) && p->ratio[i] < SILENT)
			return i;
	return -1;
}

static bool half_counting(struct ctx *c, const struct pstat *r, const struct pstat *w)
{
	char ev[900], fix[1600], sl[600];
	if (!r->ok || !near(r->q, 0.5, NEAR))
		return false;
	bool all_half = uniform(r, 0.5) && (!w->ok || uniform(w, 0.5));
	bool silent_half = r->members >= 2 && r->silent * 2 == r->members;
	for (int i = 0; silent_half && i < r->n; i++)
		silent_half = isnan(r->ratio[i]) || r->ratio[i] < SILENT ||
			      near(r->ratio[i], 1.0, NEAR);
	if (silent_half) {
		char evs[600];
		events_of(c, first_silent(r), evs, sizeof(evs));
		silent_list(r, c->n_nodes > 1, sl, sizeof(sl));
		snprintf(ev, sizeof(ev), "the read pass counted %.2fx the canary: %d of %d "
			 "controller instances counted nothing (%s) and the others their full share",
			 r->q, r->silent, r->members, sl);
		snprintf(fix, sizeof(fix), "half of the memory controllers are not counted. A client "
			 "part has two, uncore_imc_free_running_0 and _1 (the kernel's "
			 "arch/x86/events/intel/uncore_snb.c: num_boxes 2), and a figure read through "
			 "_0 alone is half the traffic (AIOS's published baseline read only _0). Check "
			 "that each silent instance's counter runs: `perf stat -a -e EVENT -- sleep 1` "
			 "with its events (%s), and that its channel holds memory (%s)",
			 evs, c->channels);
	} else if (all_half && !strcmp(c->backend, "intel_imc_cas")) {
		snprintf(ev, sizeof(ev), "every instance counted %.2fx its share (reads%s): one "
			 "scheduler of two", r->q, w->ok ? " and writes alike" : "");
		snprintf(fix, sizeof(fix), "on Granite Rapids and Sierra Forest each channel has two "
			 "command schedulers, and before the kernel's commit 6a8a48644c4b "
			 "(\"perf/x86/intel/uncore: Add per-scheduler IMC CAS count events\", February "
			 "2026, in 6.18 stable) cas_count_read and cas_count_write count SCH0 only. Use "
			 "a kernel with cas_count_{read,write}_sch0 and _sch1 (%s/bus/event_source/"
			 "devices/uncore_imc_0/events/): memwall sums both schedulers where they exist",
			 c->root);
	} else {
		return false;
	}
	add(c->out, "half-counting", c->where, ev, fix);
	return true;
}

static bool numa_local(struct ctx *c, const struct pstat *r, bool placed)
{
	if (placed || c->n_nodes < 2 || !r->ok || !near(r->q, 1.0, NEAR))
		return false;
	double mean[64] = { 0 };
	int cnt[64] = { 0 }, hot = -1, cold = -1;
	for (int i = 0; i < r->n; i++)
		if (!isnan(r->ratio[i]) && r->node[i] >= 0 && r->node[i] < 64) {
			mean[r->node[i]] += r->ratio[i];
			cnt[r->node[i]]++;
		}
	for (int k = 0; k < 64; k++) {
		if (!cnt[k])
			continue;
		mean[k] /= cnt[k];
		if (mean[k] >= 1.5 && hot < 0)
			hot = k;
		if (mean[k] < SILENT && cold < 0)
			cold = k;
	}
	if (hot < 0 || cold < 0)
		return false;
	char ev[600], fix[600];
	snprintf(ev, sizeof(ev), "the canary was not placed; the instances on node %d counted "
		 "%.2fx their fair share and those on node %d %.2fx, while the sum is right "
		 "(%.2fx the canary)", hot, mean[hot], cold, mean[cold], r->q);
	snprintf(fix, sizeof(fix), "memory is NUMA-local: the canary's pages sat on node %d (first "
		 "touch), so only its controllers counted them. Verify with placement: `memwall "
		 "verify` (--numa auto: each node in turn) or `memwall verify --numa interleave`",
		 hot);
	add(c->out, "numa-local", c->where, ev, fix);
	return true;
}

static void missing_instance(struct ctx *c, const struct pstat *r, const struct pstat *w)
{
	const struct pstat *p = r->ok && r->silent ? r : w->ok && w->silent ? w : NULL;
	if (!p)
		return;
	char sl[600], ev[900], fix[1400], evs[600];
	silent_list(p, c->n_nodes > 1, sl, sizeof(sl));
	events_of(c, first_silent(p), evs, sizeof(evs));
	if (p->silent == p->members)
		snprintf(ev, sizeof(ev), "every instance (%s) counted nothing of the %s pass%s%s",
			 sl, p == r ? "read" : "write", c->where ? " placed on " : "",
			 c->where ? c->where : "");
	else
		snprintf(ev, sizeof(ev), "%s counted nothing of the %s pass%s%s, while %d other "
			 "instance%s counted their shares; the sum is %.2fx the canary", sl,
			 p == r ? "read" : "write", c->where ? " placed on " : "",
			 c->where ? c->where : "", p->members - p->silent,
			 p->members - p->silent == 1 ? "" : "s", p->q);
	if (near(p->q, 1.0, MW_DRAMVERIFY_SUM_PCT / 100.0))
		snprintf(fix, sizeof(fix), "the others carried its share, so the bytes were counted: "
			 "its channel most likely holds no memory (a phantom or unpopulated channel; "
			 "topology: %s), and the fair share assumed it did. Nothing to fix in the "
			 "counters", c->channels);
	else
		snprintf(fix, sizeof(fix), "its counter does not count: check that it opens and runs "
			 "on its package's CPU (`perf stat -a -e EVENT -- sleep 1` with its events, "
			 "e.g. %s), that the driver exposes every controller (a kernel or BIOS that "
			 "hides one), and that its channel is populated (topology: %s)", evs,
			 c->channels);
	add(c->out, "missing-instance", c->where, ev, fix);
}

static void per_target(struct ctx *c, const json_t *tg)
{
	const json_t *passes = json_object_get(tg, "passes");
	if (!json_is_object(passes))
		return;
	struct pstat *r = calloc(2, sizeof(*r)), *w = r ? r + 1 : NULL;
	if (!r)
		return;
	read_pass(json_object_get(passes, "read"), r);
	read_pass(json_object_get(passes, "write"), w);
	const char *policy = json_string_value(json_object_get(json_object_get(tg, "placement"),
							       "policy"));
	bool placed = policy && strcmp(policy, "default");
	char ev[800], fix[1200];
	bool explained = false;
	/* read-write-swapped: each pass counted in the other direction */
	if (r->ok && w->ok && r->has_cross && w->has_cross && r->q < SILENT && w->q < SILENT &&
	    near(r->cross / r->expected, 1.0, 2 * NEAR) && near(w->cross / w->expected, 1.0, 2 * NEAR)) {
		snprintf(ev, sizeof(ev), "the read pass counted %.2fx the canary as reads and %.2fx as "
			 "writes; the write pass %.2fx as writes and %.2fx as reads", r->q,
			 r->cross / r->expected, w->q, w->cross / w->expected);
		snprintf(fix, sizeof(fix), "the backend's read and write events are swapped: compare "
			 "its encodings (the record's instances[].events: %s) with the kernel's aliases "
			 "(%s/bus/event_source/devices/PMU/events/) or `perf list`", c->events, c->root);
		add(c->out, "read-write-swapped", c->where, ev, fix);
		explained = true;
	} else if (w->ok && w->has_cross && w->nt && w->cross >= 0.5 * w->expected) {
		snprintf(ev, sizeof(ev), "the non-temporal write pass counted %.2fx its written bytes "
			 "as reads (expected: the idle rate)", w->cross / w->expected);
		snprintf(fix, sizeof(fix), "either each written line was read first and that "
			 "write-allocate read is counted in the reads (the stores were not "
			 "non-temporal: a hypervisor, or a CPU that makes them plain; the record's "
			 "canary.stream_kernels names the kernel table), or the read event also counts "
			 "writes: then `memwall verify --matrix` shows the plain write pattern reading "
			 "2x what it writes. Check the read event's encoding (%s)", c->events);
		add(c->out, "write-allocate-in-reads", c->where, ev, fix);
	}
	explained = explained || half_counting(c, r, w) || numa_local(c, r, placed);
	bool two = r->ok && uniform(r, 2.0) && (!w->ok || uniform(w, 2.0));
	bool halfu = r->ok && uniform(r, 0.5) && (!w->ok || uniform(w, 0.5)) && !explained;
	if (two || halfu) {
		snprintf(ev, sizeof(ev), "every instance counted %.2fx its share, in both passes", r->q);
		snprintf(fix, sizeof(fix), "the bytes per count are off by 2 (64 against 32): memwall "
			 "converts a count with the alias's .scale times its .unit (%s/bus/"
			 "event_source/devices/PMU/events/ALIAS.scale; the kernel's 6.103515625e-5 MiB "
			 "is 64 bytes, one line per CAS). Check the .scale files against the kernel's "
			 "and the encodings (%s) against `perf list`", c->root, c->events);
		add(c->out, "scale-2x", c->where, ev, fix);
		explained = true;
	}
	double inv = 1.0 / MIB_MB;
	if (r->ok && (near(r->q, MIB_MB, 0.01) || near(r->q, inv, 0.01)) &&
	    (!w->ok || near(w->q, near(r->q, MIB_MB, 0.01) ? MIB_MB : inv, 0.01))) {
		snprintf(ev, sizeof(ev), "the sums are %.3fx the canary (%+.1f %%) in both passes: "
			 "10^6 / 2^20 = %.3f", r->q, (r->q - 1) * 100, MIB_MB);
		snprintf(fix, sizeof(fix), "a MiB was taken as 10^6 bytes (or an MB as 2^20): the "
			 "events' .unit says MiB (2^20 bytes; %s/bus/event_source/devices/PMU/events/"
			 "ALIAS.unit), and MB and MiB must stay apart (probes.h, prb_unit_bytes). Check "
			 "any converter between the count and the bytes", c->root);
		add(c->out, "mib-as-mb", c->where, ev, fix);
		explained = true;
	}
	if (!explained)
		missing_instance(c, r, w);
	free(r);
}

json_t *mw_verify_diagnose(const json_t *record, const char *root)
{
	struct ctx c = { .rec = record, .root = root ? root : "/sys", .out = json_array() };
	c.backend = json_string_value(json_object_get(record, "backend"));
	if (!c.out || !c.backend)
		return c.out;
	const json_t *ev = json_object_get(json_array_get(json_object_get(record, "instances"), 0),
					   "events"), *e;
	size_t i;
	json_array_foreach(ev, i, e)
		snprintf(c.events + strlen(c.events), sizeof(c.events) - strlen(c.events), "%s%s",
			 i ? ", " : "", json_string_value(json_object_get(e, "perf")));
	const json_t *ch = json_object_get(json_object_get(record, "topology"), "channels");
	if (json_is_integer(json_object_get(ch, "populated"))) {
		char present[48] = "";
		if (json_is_integer(json_object_get(ch, "present")))
			snprintf(present, sizeof(present), " of %lld present",
				 (long long)json_integer_value(json_object_get(ch, "present")));
		snprintf(c.channels, sizeof(c.channels), "%lld channel%s populated%s (%s)",
			 (long long)json_integer_value(json_object_get(ch, "populated")),
			 json_integer_value(json_object_get(ch, "populated")) == 1 ? "" : "s",
			 present, json_string_value(json_object_get(ch, "source")));
	} else
		snprintf(c.channels, sizeof(c.channels), "channels unknown: run as root for SMBIOS, "
			 "or load the EDAC driver");
	int seen[64], ns = 0;
	const json_t *in;
	json_array_foreach(json_object_get(record, "instances"), i, in) {
		const json_t *nd = json_object_get(in, "node");
		int j, id = json_is_integer(nd) ? (int)json_integer_value(nd) : -1;
		for (j = 0; j < ns && seen[j] != id; j++)
			;
		if (id >= 0 && j == ns && ns < 64)
			seen[ns++] = id;
	}
	c.n_nodes = ns;
	const json_t *targets = json_object_get(record, "targets"), *tg;
	json_array_foreach(targets, i, tg) {
		c.where = json_array_size(targets) > 1 ?
				  json_string_value(json_object_get(tg, "label")) : NULL;
		per_target(&c, tg);
	}
	return c.out;
}
