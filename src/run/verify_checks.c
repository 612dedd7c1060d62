/* src/run/verify_checks.c: `memwall verify`'s checks: each canary pass, in both directions,
 * against what the stream moved, net of the idle rate; each instance against its fair share
 * of the placement it serves; resctrl against the controllers (verify_checks.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_checks.h"
#include "metrics.h"

const struct prb_bytes *mw_verify_figure(const struct prb_dram_instance_sample *is, unsigned f)
{
	return f == PRB_DRAM_READ ? &is->read : f == PRB_DRAM_WRITE ? &is->write : &is->total;
}

static const struct prb_bytes *sum_figure(const struct prb_dram_sample *s, unsigned f)
{
	return f == PRB_DRAM_READ ? &s->read : f == PRB_DRAM_WRITE ? &s->write : &s->total;
}

const char *mw_verify_figure_name(unsigned f)
{
	return f == PRB_DRAM_READ ? "read" : f == PRB_DRAM_WRITE ? "write" : "total";
}

void mw_verify_label(const struct prb_dram_status *st, int i, char *buf, size_t n)
{
	int same = 0;
	for (int j = 0; j < st->n_instances; j++)
		same += !strcmp(st->instances[j].pmu, st->instances[i].pmu);
	if (same > 1)
		snprintf(buf, n, "%s@cpu%d", st->instances[i].pmu, st->instances[i].cpu);
	else
		snprintf(buf, n, "%s", st->instances[i].pmu);
}

bool mw_verify_passed(const json_t *check)
{
	const char *v = json_string_value(json_object_get(check, "verdict"));
	return v && !strcmp(v, "pass");
}

static double pct(double measured, double expected)
{
	return expected > 0 ? (measured - expected) * 100.0 / expected : NAN;
}

void mw_verify_check(json_t *checks, const char *name, const char *subject, double expected,
		     double measured, double threshold, const char *against, const char *who)
{
	double e = pct(measured, expected);
	bool pass = measured > 0 && isfinite(e) && fabs(e) <= threshold;
	char msg[600];
	if (!(measured > 0))
		snprintf(msg, sizeof(msg), "%s: %s%scounted nothing (%.0f bytes, against %.0f)",
			 subject, who ? who : "", who ? " " : "", measured, expected);
	else
		snprintf(msg, sizeof(msg), "%s: %s%scounted %.2fx %s (%+.1f %%, threshold %g %%)",
			 subject, who ? who : "", who ? " " : "", measured / expected, against, e,
			 threshold);
	json_array_append_new(checks, json_pack("{s:s, s:s, s:o, s:o, s:o, s:f, s:s, s:s}",
		"name", name, "subject", subject, "expected_bytes", mw_json_num(expected),
		"measured_bytes", mw_json_num(measured), "error_pct", mw_json_num(e),
		"threshold_pct", threshold, "verdict", pass ? "pass" : "fail", "message", msg));
}

void mw_verify_check_idle(json_t *checks, const char *name, const char *subject,
			  double measured, double scale, double limit_pct)
{
	double e = scale > 0 ? measured * 100.0 / scale : NAN;
	bool pass = isfinite(e) && fabs(e) <= limit_pct;
	char msg[600];
	snprintf(msg, sizeof(msg), "%s: counted %.2fx the pass's bytes beyond the idle rate (%+.1f "
		 "%% of them, limit %g %%: expected the idle rate)", subject, measured / scale, e,
		 limit_pct);
	json_array_append_new(checks, json_pack("{s:s, s:s, s:i, s:o, s:o, s:f, s:s, s:s}",
		"name", name, "subject", subject, "expected_bytes", 0, "measured_bytes",
		mw_json_num(measured), "error_pct", mw_json_num(e), "threshold_pct", limit_pct,
		"verdict", pass ? "pass" : "fail", "message", msg));
}

void mw_verify_not_counted(json_t *checks, const char *name, const char *subject,
			   enum prb_state state)
{
	char msg[600];
	snprintf(msg, sizeof(msg), "%s: not counted (%s: %s)", subject, prb_state_name(state),
		 prb_state_reason(state));
	json_array_append_new(checks, json_pack("{s:s, s:s, s:n, s:n, s:n, s:n, s:s, s:s}",
		"name", name, "subject", subject, "expected_bytes", "measured_bytes", "error_pct",
		"threshold_pct", "verdict", "fail", "message", msg));
}

/* Instance i's figure f over the window w, net of the background: the idle window's bytes
 * (idle) at its rate over this window, both timed by the counters' own time_enabled. */
static double net_from(const struct prb_dram_sample *w, const struct prb_dram_sample *iw, int i,
		       unsigned f, enum prb_state *state, double *raw, double *bg)
{
	const struct prb_dram_instance_sample *is = &w->inst[i], *id = &iw->inst[i];
	const struct prb_bytes *got = mw_verify_figure(is, f), *idle = mw_verify_figure(id, f);
	double b = idle->state == PRB_MEASURED && id->time_enabled ?
			   (double)idle->bytes * (double)is->time_enabled / (double)id->time_enabled :
			   0;
	*state = got->state;
	if (raw)
		*raw = got->state == PRB_MEASURED ? (double)got->bytes : NAN;
	if (bg)
		*bg = b;
	return got->state == PRB_MEASURED ? (double)got->bytes - b : NAN;
}

/* Instance i's figure f over the window in m->w, net of the background. With counter groups,
 * the sum of every group's over its own run of the window, each net of its own idle window:
 * a group's channels are idle at their own rate, over their own time. */
static double net_of(const struct mw_verify_meters *m, int i, unsigned f, enum prb_state *state,
		     double *raw, double *bg)
{
	if (m->n_groups == 1)
		return net_from(m->w, m->idle, i, f, state, raw, bg);
	double net = 0, r = 0, b = 0;
	enum prb_state st = PRB_NOT_PROVIDED; /* until a group counts the figure */
	for (int g = 0; g < m->n_groups; g++) {
		enum prb_state s;
		double gr, gb, v = net_from(m->gw[g], m->gidle[g], i, f, &s, &gr, &gb);
		if (s == PRB_NOT_PROVIDED)
			continue; /* none of this figure's events is in the group */
		if (st == PRB_NOT_PROVIDED || (st == PRB_MEASURED && s != PRB_MEASURED))
			st = s; /* the first group that was not counted gives the state */
		if (s == PRB_MEASURED) {
			net += v;
			r += gr;
			b += gb;
		}
	}
	*state = st;
	bool ok = st == PRB_MEASURED;
	if (raw)
		*raw = ok ? r : NAN;
	if (bg)
		*bg = ok ? b : 0;
	return ok ? net : NAN;
}

double mw_verify_net(struct mw_verify_meters *m, int i, unsigned f, int a, int b,
		     enum prb_state *state, double *raw, double *bg)
{
	mw_verify_window(m, a, b);
	return net_of(m, i, f, state, raw, bg);
}

double mw_verify_sum_net(struct mw_verify_meters *m, unsigned f, int a, int b,
			 enum prb_state *state)
{
	double sum = 0;
	enum prb_state s;
	*state = PRB_MEASURED;
	mw_verify_window(m, a, b);
	for (int i = 0; i < m->st.n_instances; i++) {
		double v = net_of(m, i, f, &s, NULL, NULL);
		if (s != PRB_MEASURED) {
			*state = s;
			return NAN;
		}
		sum += v;
	}
	return sum;
}

/* What one pass checks: its main figure against expected, and (split backends) the other
 * direction against cross_expected: 0 means "stays at the idle rate". */
struct pass_spec {
	const char *name;        /* "read", "write" */
	int a, b;                /* the readings around it */
	unsigned f, cross_f;     /* figures; cross_f 0: none */
	uint64_t expected, cross_expected;
	const struct eng_stream_sample *ss;
	bool nt;
};

static json_t *instance_json(const struct mw_verify_meters *m, int i, const char *label,
			     bool member, double share, double raw, double bg, double net,
			     enum prb_state state)
{
	return json_pack("{s:s, s:s, s:i, s:o, s:b, s:f, s:o, s:f, s:o, s:s}", "name", label,
			 "pmu", m->st.instances[i].pmu, "cpu", m->st.instances[i].cpu, "node",
			 m->topo[i].node >= 0 ? json_integer(m->topo[i].node) : json_null(),
			 "member", member, "expected_bytes", share, "raw_bytes",
			 isnan(raw) ? json_null() : json_integer((json_int_t)llround(raw)),
			 "background_bytes", bg, "counted_bytes", mw_json_num(net), "state",
			 prb_state_name(state));
}

/* The other direction over the pass: summed over every instance, at the idle rate or at the
 * write-allocate read. Returns its JSON. */
static json_t *cross_check(struct mw_verify_meters *m, const char *pre, const struct pass_spec *ps,
			   json_t *checks)
{
	char name[200], subject[260];
	double sum = 0;
	enum prb_state bad = PRB_MEASURED, s;
	for (int i = 0; i < m->st.n_instances; i++) {
		double v = net_of(m, i, ps->cross_f, &s, NULL, NULL);
		if (s != PRB_MEASURED && bad == PRB_MEASURED)
			bad = s;
		sum += s == PRB_MEASURED ? v : 0;
	}
	const char *fn = mw_verify_figure_name(ps->cross_f);
	snprintf(name, sizeof(name), "%s%s pass: %ss", pre, ps->name, fn);
	snprintf(subject, sizeof(subject), "%s%s pass, %ss, sum over %d instance%s", pre, ps->name,
		 fn, m->st.n_instances, m->st.n_instances == 1 ? "" : "s");
	double limit = ps->cross_expected ? MW_DRAMVERIFY_WA_PCT : MW_DRAMVERIFY_IDLE_PCT;
	if (bad != PRB_MEASURED) {
		mw_verify_not_counted(checks, name, subject, bad);
	} else if (ps->cross_expected) {
		/* plain stores: each written line read first, unless the CPU skips that read
		 * (Intel's SpecI2M under load, ARM's write streaming): anything from the idle
		 * rate to the written bytes, never more (a read event that counts writes) */
		double e = (double)ps->cross_expected, hi = e * (1 + limit / 100);
		double lo = -(double)ps->expected * MW_DRAMVERIFY_IDLE_PCT / 100;
		char msg[600];
		snprintf(msg, sizeof(msg), "%s: counted %.2fx the written bytes as reads (plain "
			 "stores: from the idle rate, where the CPU skips write-allocate reads, to "
			 "%.2fx)", subject, sum / e, hi / e);
		json_array_append_new(checks, json_pack("{s:s, s:s, s:f, s:o, s:o, s:f, s:s, s:s}",
			"name", name, "subject", subject, "expected_bytes", e, "measured_bytes",
			mw_json_num(sum), "error_pct", mw_json_num((sum - e) * 100 / e),
			"threshold_pct", limit, "verdict", sum >= lo && sum <= hi ? "pass" : "fail",
			"message", msg));
	} else
		mw_verify_check_idle(checks, name, subject, sum, (double)ps->expected, limit);
	return json_pack("{s:s, s:I, s:o, s:f}", "figure", fn, "expected_bytes",
			 (json_int_t)ps->cross_expected, "counted_bytes",
			 bad == PRB_MEASURED ? mw_json_num(sum) : json_null(),
			 ps->cross_expected ? "threshold_pct" : "limit_pct", limit);
}

/* A pass whose counters were multiplexed was extrapolated, not counted: verify checks counts,
 * so a running share (time running / time enabled, as perf prints it) below 100 % on any
 * instance fails the pass, naming the least counted instance (and its counter group, where
 * the events take turns: each group's share over its own run of the pass). */
static void share_check(json_t *checks, const char *pre, const char *pname,
			const struct mw_verify_meters *m)
{
	int worst, wg = -1;
	double share = prb_dram_sample_share(m->w, &worst);
	for (int g = 0; m->n_groups > 1 && g < m->n_groups; g++) {
		int at;
		double sh = prb_dram_sample_share(m->gw[g], &at);
		if (!isnan(sh) && (wg < 0 || sh < share)) {
			share = sh;
			worst = at;
			wg = g;
		}
	}
	bool pass = !(share < 1.0); /* no time at all: the byte checks fail it already */
	char name[260], subject[320], label[140] = "?", msg[800];
	if (worst >= 0)
		mw_verify_label(&m->st, worst, label, sizeof(label));
	if (worst >= 0 && m->n_groups > 1)
		snprintf(label + strlen(label), sizeof(label) - strlen(label), " counter group %d "
			 "of %d", wg + 1, m->n_groups);
	snprintf(name, sizeof(name), "%s%s pass: running share", pre, pname);
	snprintf(subject, sizeof(subject), "%s (%s%s pass, time running / time enabled)", label,
		 pre, pname);
	if (pass && m->n_groups > 1)
		snprintf(msg, sizeof(msg), "%s: every instance counted the whole pass, in %d "
			 "counter groups of at most %d events (the PMU's counters), one run of the "
			 "pass each", subject, m->n_groups, m->st.counters);
	else if (pass)
		snprintf(msg, sizeof(msg), "%s: every instance counted the whole pass", subject);
	else
		snprintf(msg, sizeof(msg), "%s: multiplexed: counted %.1f %% of the pass, the rest "
			 "extrapolated; verify passes counts, not extrapolations: stop what else "
			 "counts on this PMU (another perf stat, a monitoring agent) and verify "
			 "again", subject, share * 100.0);
	json_array_append_new(checks, json_pack("{s:s, s:s, s:n, s:n, s:n, s:n, s:o, s:s, s:s}",
		"name", name, "subject", subject, "expected_bytes", "measured_bytes", "error_pct",
		"threshold_pct", "running_share", mw_json_num(share), "verdict",
		pass ? "pass" : "fail", "message", msg));
}

/* Event j of group g's events on instance i over the window m->w holds, net of the event's
 * own idle count at the group's rate (the group's times: its events run together). */
static double event_net(const struct mw_verify_meters *m, int g, int i, int j,
			enum prb_state *state)
{
	const struct prb_bytes *a = mw_verify_gev(m, g, m->wa, i, j);
	const struct prb_bytes *b = mw_verify_gev(m, g, m->wb, i, j);
	*state = b->state != PRB_MEASURED ? b->state : a->state;
	if (*state == PRB_MEASURED && b->bytes < a->bytes)
		*state = PRB_READ_FAILED; /* a count that went back is no reading */
	if (*state != PRB_MEASURED)
		return NAN;
	double bg = 0;
	if (m->idle_a >= 0) {
		const struct prb_bytes *ia = mw_verify_gev(m, g, m->idle_a, i, j);
		const struct prb_bytes *ib = mw_verify_gev(m, g, m->idle_b, i, j);
		uint64_t te = m->gw[g]->inst[i].time_enabled;
		uint64_t ite = m->gidle[g]->inst[i].time_enabled;
		if (ia->state == PRB_MEASURED && ib->state == PRB_MEASURED &&
		    ib->bytes >= ia->bytes && ite)
			bg = (double)(ib->bytes - ia->bytes) * (double)te / (double)ite;
	}
	return (double)(b->bytes - a->bytes) - bg;
}

/* With counter groups, member instance i's groups and events of the pass's figure: each
 * group of k of the instance's n such events against k/n of the instance's share, each event
 * against 1/n (the channels interleave evenly, as the fair share assumes of instances); the
 * groups add up to the instance's count. where: "node 1, " or "". Returns the instance's
 * "groups", NULL with one group. */
static json_t *group_checks(struct mw_verify_meters *m, int i, const char *label,
			    const char *pre, const char *where, const struct pass_spec *ps,
			    double share, json_t *checks)
{
	if (m->n_groups == 1)
		return NULL;
	const struct prb_dram_instance *si = &m->st.instances[i];
	const char *fig = mw_verify_figure_name(ps->f);
	char name[300], subject[400], against[120];
	int n = 0;
	for (int j = 0; j < si->n_events; j++)
		n += !strcmp(si->events[j].dir, fig);
	/* A part with fewer channels than the backend has channel events (a two-channel desktop
	 * read through amd_df's eight) leaves some events on channels without memory: the
	 * per-group and per-channel shares would assume memory that is not there, so they are
	 * recorded but not checked; the instance's own check and the sum still are. */
	bool checked = m->channels_populated < 0 || m->channels_populated == n;
	char why[200] = "";
	if (!checked)
		snprintf(why, sizeof(why), "not checked: %d channels populated (topology) of the "
			 "instance's %d %s channel events; which event counts which channel is not "
			 "known", m->channels_populated, n, fig);
	json_t *groups = json_array();
	for (int g = 0; n && g < m->n_groups; g++) {
		struct prb_dram_event_desc d[PRB_DRAM_MAX_EVENTS];
		int idx[PRB_DRAM_MAX_EVENTS], kf = 0;
		int ng = mw_verify_group_events(m, g, i, idx, PRB_DRAM_MAX_EVENTS);
		if (prb_dram_events(m->g[g], i, d, PRB_DRAM_MAX_EVENTS) != ng)
			continue; /* never: the group's handle holds exactly these */
		for (int j = 0; j < ng; j++)
			kf += !strcmp(si->events[idx[j]].dir, fig);
		if (!kf)
			continue;
		enum prb_state gs;
		double graw, gbg, gnet = net_from(m->gw[g], m->gidle[g], i, ps->f, &gs, &graw, &gbg);
		double gexp = share * kf / n;
		snprintf(name, sizeof(name), "%s%s pass: %s counter group %d", pre, ps->name, label,
			 g + 1);
		snprintf(subject, sizeof(subject), "%s counter group %d of %d (%s%s pass, %s)", label,
			 g + 1, m->n_groups, where, ps->name, fig);
		snprintf(against, sizeof(against), "its part of the fair share (%d of the "
			 "instance's %d %s events)", kf, n, fig);
		if (!checked)
			;
		else if (gs != PRB_MEASURED)
			mw_verify_not_counted(checks, name, subject, gs);
		else
			mw_verify_check(checks, name, subject, gexp, gnet,
					MW_DRAMVERIFY_INSTANCE_PCT, against, NULL);
		json_t *names = json_array(), *evs = json_array();
		for (int j = 0; j < ng; j++) {
			if (strcmp(si->events[idx[j]].dir, fig))
				continue;
			enum prb_state es;
			double enet = event_net(m, g, i, j, &es);
			json_array_append_new(names, json_string(d[j].name));
			snprintf(name, sizeof(name), "%s%s pass: %s/%s", pre, ps->name, label,
				 d[j].name);
			snprintf(subject, sizeof(subject), "%s/%s (counter group %d of %d, %s%s "
				 "pass, %s)", label, d[j].name, g + 1, m->n_groups, where, ps->name,
				 fig);
			snprintf(against, sizeof(against), "its part of the fair share (1 of the "
				 "instance's %d %s events)", n, fig);
			if (!checked)
				;
			else if (es != PRB_MEASURED)
				mw_verify_not_counted(checks, name, subject, es);
			else
				mw_verify_check(checks, name, subject, share / n, enet,
						MW_DRAMVERIFY_INSTANCE_PCT, against, NULL);
			json_array_append_new(evs, json_pack("{s:s, s:f, s:o, s:s}", "name",
				d[j].name, "expected_bytes", share / n, "counted_bytes",
				mw_json_num(enet), "state", prb_state_name(es)));
		}
		json_array_append_new(groups, json_pack("{s:i, s:o, s:f, s:o, s:o, s:f, s:o, s:o, "
			"s:s, s:o}", "group", g + 1, "events", names, "expected_bytes", gexp,
			"counted_bytes", mw_json_num(gnet), "raw_bytes", mw_json_num(graw),
			"background_bytes", gbg, "checked", checked ? json_true() : json_string(why),
			"running_share",
			mw_json_num(prb_dram_instance_share(&m->gw[g]->inst[i])), "state",
			prb_state_name(gs), "by_event", evs));
	}
	return groups;
}

static json_t *pass_check(struct mw_verify_meters *m, const struct mw_verify_plan *p, int k,
			  const struct pass_spec *ps, json_t *checks)
{
	const struct mw_verify_target *tg = &p->t[k];
	int n = m->st.n_instances;
	char pre[80] = "", name[260], subject[320], label[96];
	if (p->n > 1)
		snprintf(pre, sizeof(pre), "%s: ", tg->label);
	mw_verify_window(m, ps->a, ps->b);
	json_t *inst = json_array();
	double sum = 0, other = 0, share = (double)ps->expected / tg->n_members;
	bool all = true;
	enum prb_state bad = PRB_MEASURED, s;
	char where[80] = "";
	if (p->n > 1)
		snprintf(where, sizeof(where), "%s, ", tg->label);
	for (int i = 0; i < n; i++) {
		double raw, bg, net = net_of(m, i, ps->f, &s, &raw, &bg);
		mw_verify_label(&m->st, i, label, sizeof(label));
		json_t *ij = instance_json(m, i, label, tg->member[i], tg->member[i] ? share : 0, raw,
					   bg, net, s);
		json_array_append_new(inst, ij);
		snprintf(name, sizeof(name), "%s%s pass: %s", pre, ps->name, label);
		snprintf(subject, sizeof(subject), "%s (%s%s pass, %s)", label, where, ps->name,
			 mw_verify_figure_name(ps->f));
		if (s != PRB_MEASURED) {
			mw_verify_not_counted(checks, name, subject, s);
			if (all)
				bad = s;
			all = false;
		} else if (!tg->member[i]) {
			sum += net;
			other += net;
		} else {
			sum += net;
			mw_verify_check(checks, name, subject, share, net,
					MW_DRAMVERIFY_INSTANCE_PCT,
					"its fair share of the expected bytes", NULL);
		}
		json_t *gj = tg->member[i] ? group_checks(m, i, label, pre, where, ps, share, checks)
					   : NULL;
		if (gj)
			json_object_set_new(ij, "groups", gj);
	}
	snprintf(name, sizeof(name), "%s%s pass: sum", pre, ps->name);
	snprintf(subject, sizeof(subject), "%s%s pass, %s, sum over %d instance%s", pre, ps->name,
		 mw_verify_figure_name(ps->f), n, n == 1 ? "" : "s");
	if (all)
		mw_verify_check(checks, name, subject, (double)ps->expected, sum,
				MW_DRAMVERIFY_SUM_PCT, "the expected bytes", "memwall");
	else
		mw_verify_not_counted(checks, name, subject, bad);
	if (all && tg->n_members < n) {
		snprintf(name, sizeof(name), "%s%s pass: other instances", pre, ps->name);
		snprintf(subject, sizeof(subject), "%s%s pass, %s, the %d instance%s not serving the "
			 "canary's memory", pre, ps->name, mw_verify_figure_name(ps->f),
			 n - tg->n_members, n - tg->n_members == 1 ? "" : "s");
		mw_verify_check_idle(checks, name, subject, other, (double)ps->expected,
				     MW_DRAMVERIFY_IDLE_PCT);
	}
	share_check(checks, pre, ps->name, m);
	json_t *cross = ps->cross_f ? cross_check(m, pre, ps, checks) : json_null();
	const struct prb_bytes *sf = sum_figure(m->w, ps->f);
	return json_pack("{s:s, s:b, s:f, s:I, s:I, s:s, s:I, s:o, s:f, s:o, s:o}", "figure",
			 mw_verify_figure_name(ps->f), "nontemporal", ps->nt, "seconds",
			 ps->ss->seconds, "stream_bytes_read", (json_int_t)ps->ss->bytes_read,
			 "stream_bytes_written", (json_int_t)ps->ss->bytes_written, "state",
			 prb_state_name(sf->state), "expected_bytes", (json_int_t)ps->expected,
			 "counted_bytes", all ? mw_json_num(sum) : json_null(), "threshold_pct",
			 MW_DRAMVERIFY_SUM_PCT, "instances", inst, "cross", cross);
}

json_t *mw_verify_target_check(struct mw_verify_meters *m, const struct mw_verify_plan *p,
			       int k, const struct mw_verify_passes *ps, json_t *placement,
			       json_t *checks)
{
	bool split = m->split;
	const struct eng_stream_sample *rs = &ps->rs, *ws = &ps->ws;
	/* the write pass is ENG_STREAM_WRITE: it reads nothing; plain stores (no non-temporal
	 * ones in this kernel table) read each line before writing it (write-allocate), which
	 * the controller counts as a read */
	uint64_t wa = ps->nt ? 0 : ws->bytes_written;
	struct pass_spec r = { .name = "read", .a = ps->start, .b = ps->after_read,
			       .f = split ? PRB_DRAM_READ : PRB_DRAM_TOTAL,
			       .cross_f = split ? PRB_DRAM_WRITE : 0,
			       .expected = rs->bytes_read + rs->bytes_written,
			       .cross_expected = 0, .ss = rs, .nt = false };
	struct pass_spec w = { .name = "write", .a = ps->after_read, .b = ps->after_write,
			       .f = split ? PRB_DRAM_WRITE : PRB_DRAM_TOTAL,
			       .cross_f = split ? PRB_DRAM_READ : 0,
			       .expected = split ? ws->bytes_written
						 : ws->bytes_read + ws->bytes_written + wa,
			       .cross_expected = ws->bytes_read + wa, .ss = ws, .nt = ps->nt };
	json_t *rp = pass_check(m, p, k, &r, checks);
	json_t *wp = pass_check(m, p, k, &w, checks);
	const struct mw_verify_target *tg = &p->t[k];
	return json_pack("{s:s, s:o, s:i, s:o, s:{s:o, s:o}}", "label", tg->label, "node",
			 tg->node >= 0 ? json_integer(tg->node) : json_null(), "members",
			 tg->n_members, "placement", placement, "passes", "read", rp, "write", wp);
}

/* acc += b: measured while both are, else the first state that is not */
static void bytes_sum(struct prb_bytes *acc, const struct prb_bytes *b)
{
	if (acc->state != PRB_MEASURED)
		return;
	if (b->state != PRB_MEASURED)
		*acc = (struct prb_bytes){ 0, b->state };
	else
		acc->bytes += b->bytes;
}

json_t *mw_verify_resctrl_check(struct mw_verify_meters *m, const char *why, json_t *checks)
{
	if (!m->r)
		return json_pack("{s:b, s:s}", "available", 0, "reason", why);
	/* each placement's passes, summed: with counter groups the whole counts each group over
	 * its own run and resctrl the first group's run, one canary each; between placements
	 * (the next one's set-up) neither is a count of the canary */
	struct prb_bytes imc = { 0, PRB_MEASURED }, res = { 0, PRB_MEASURED };
	for (int c = 0; c < m->n_canary; c++) {
		mw_verify_window(m, m->canary[c][0], m->canary[c][1]);
		bytes_sum(&imc, &m->w->total);
		prb_dram_sample_delta(m->rs[m->canary[c][1]], m->rs[m->canary[c][0]], m->w);
		bytes_sum(&res, &m->w->total);
	}
	char subject[200];
	snprintf(subject, sizeof(subject), "resctrl MBM against the memory controllers (%s), "
		 "both canary passes", m->st.backend);
	if (imc.state != PRB_MEASURED || res.state != PRB_MEASURED)
		mw_verify_not_counted(checks, "resctrl: total", subject,
				      imc.state != PRB_MEASURED ? imc.state : res.state);
	else
		mw_verify_check(checks, "resctrl: total", subject, (double)imc.bytes,
				(double)res.bytes, MW_DRAMVERIFY_RESCTRL_PCT,
				"the memory controllers' bytes", "resctrl");
	return json_pack("{s:b, s:i, s:o, s:o, s:f}", "available", 1, "domains",
			 m->rst.n_instances, "controllers_bytes",
			 imc.state == PRB_MEASURED ? json_integer((json_int_t)imc.bytes) : json_null(),
			 "resctrl_bytes",
			 res.state == PRB_MEASURED ? json_integer((json_int_t)res.bytes) : json_null(),
			 "threshold_pct", MW_DRAMVERIFY_RESCTRL_PCT);
}
