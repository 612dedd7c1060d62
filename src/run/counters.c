/* src/run/counters.c: the counters a run reads (see counters.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "counters.h"
#include "metrics.h"
#include "sha256.h"

#define ENERGY_EVENT "power/energy-pkg/"

const struct mw_sw_event mw_sw_events[MW_N_SW] = {
	{ "task-clock", "task_clock_ns" },
	{ "context-switches", "context_switches" },
	{ "cpu-migrations", "cpu_migrations" },
	{ "page-faults", "page_faults" },
};

static void dram_open(struct mw_counters *c, enum mw_need need, const char *backend)
{
	if (need == MW_NEED_OFF) {
		snprintf(c->dram_reason, sizeof(c->dram_reason),
			 "turned off by the protocol (counters.dram is \"off\")");
		return;
	}
	struct prb_dram_options dopt = { .backend = backend };
	struct prb_dram_status *st = calloc(1, sizeof(*st));
	if (!st || prb_dram_open(&c->dram, c->sys, &dopt, st)) {
		c->dram = NULL;
		snprintf(c->dram_reason, sizeof(c->dram_reason), "%s",
			 st && st->reason[0] ? st->reason : "no DRAM counter backend found");
	}
	free(st);
}

static void energy_open(struct mw_counters *c, const struct mw_protocol *p)
{
	struct prb_error perr;
	if (p->counters.energy == MW_NEED_OFF) {
		snprintf(c->energy_reason, sizeof(c->energy_reason),
			 "turned off by the protocol (counters.energy is \"off\")");
		return;
	}
	if (prb_set_new(&c->eset, c->sys, NULL)) {
		c->eset = NULL;
		snprintf(c->energy_reason, sizeof(c->energy_reason), "cannot create a counter set");
		return;
	}
	prb_error_clear(&perr);
	int rc = prb_set_add(c->eset, ENERGY_EVENT, &c->eidx, &perr);
	if (rc == 0 && prb_set_enable(c->eset) == 0) {
		c->ereadings = calloc((size_t)prb_set_count(c->eset), sizeof(*c->ereadings));
		if (c->ereadings)
			return;
	}
	snprintf(c->energy_reason, sizeof(c->energy_reason), "%s: %.900s", ENERGY_EVENT,
		 perr.text[0] ? perr.text : "the event could not be opened");
	prb_set_free(c->eset);
	c->eset = NULL;
}

int mw_counters_open(struct mw_counters *c, const struct mw_plan *pl, bool energy, FILE *log,
		     struct mw_error *err)
{
	const struct mw_protocol *p = pl->p;
	struct prb_error perr;
	memset(c, 0, sizeof(*c));
	c->eidx = -1;
	prb_error_clear(&perr);
	if (prb_system_open(&c->sys, NULL, &perr)) {
		c->sys = NULL;
		snprintf(c->dram_reason, sizeof(c->dram_reason),
			 "cannot read the PMU list: %.300s%s%.400s", perr.source,
			 perr.source[0] ? ": " : "", perr.text);
		snprintf(c->energy_reason, sizeof(c->energy_reason), "%s", c->dram_reason);
	} else {
		dram_open(c, p->counters.dram, p->counters.backend);
		if (energy)
			energy_open(c, p);
	}
	if (!energy)
		snprintf(c->energy_reason, sizeof(c->energy_reason),
			 "this engine row does not read package energy");
	if (!c->dram && p->counters.dram == MW_NEED_REQUIRED)
		return mw_error_set(err, -ENODEV, p->source, "counters.dram",
				    "DRAM counters are required by this protocol but unavailable: "
				    "%s", c->dram_reason);
	if (energy && !c->eset && p->counters.energy == MW_NEED_REQUIRED)
		return mw_error_set(err, -ENODEV, p->source, "counters.energy",
				    "energy counters are required by this protocol but "
				    "unavailable: %s", c->energy_reason);
	if (!c->dram && log) {
		fprintf(log, "memwall run: DRAM traffic: not measured (%s)\n", c->dram_reason);
		fflush(log);
	}
	return 0;
}

int mw_counters_open_dram(struct mw_counters *c, const char *backend)
{
	struct prb_error perr;
	memset(c, 0, sizeof(*c));
	c->eidx = -1;
	snprintf(c->energy_reason, sizeof(c->energy_reason), "not read by this command");
	prb_error_clear(&perr);
	if (prb_system_open(&c->sys, NULL, &perr)) {
		c->sys = NULL;
		snprintf(c->dram_reason, sizeof(c->dram_reason),
			 "cannot read the PMU list: %.300s%s%.400s", perr.source,
			 perr.source[0] ? ": " : "", perr.text);
		return -ENODEV;
	}
	dram_open(c, MW_NEED_OPTIONAL, backend);
	if (c->dram)
		return 0;
	/* an unknown name is the caller's mistake, not this machine's */
	bool known = !backend;
	for (const char *const *b = prb_dram_backends(); *b && !known; b++)
		known = !strcmp(*b, backend);
	return known ? -ENODEV : -EINVAL;
}

void mw_counters_close(struct mw_counters *c)
{
	prb_dram_close(c->dram);
	prb_set_free(c->eset);
	free(c->ereadings);
	prb_system_close(c->sys);
	memset(c, 0, sizeof(*c));
}

void mw_counters_read(struct mw_counters *c, struct mw_snap *s)
{
	s->ns = mw_now_ns();
	s->dram_open = c->dram != NULL;
	s->energy = PRB_NOT_PROVIDED;
	/* prb_dram_read fills every figure with its state whatever it returns: a failed
	 * instance is READ_FAILED in the sample, not a reason to drop the others. */
	if (c->dram)
		prb_dram_read(c->dram, &s->dram);
	if (!c->eset)
		return;
	if (prb_set_read(c->eset, c->ereadings)) {
		s->energy = PRB_READ_FAILED;
		return;
	}
	const struct prb_reading *e = &c->ereadings[c->eidx];
	s->energy = e->flags & PRB_READING_UNAVAILABLE ? PRB_READ_FAILED
		    : e->flags & PRB_READING_NOT_COUNTED ? PRB_NOT_RUN : PRB_MEASURED;
	s->joules = e->physical;
}

void mw_snap_dram_delta(const struct mw_snap *later, const struct mw_snap *earlier,
			struct prb_dram_sample *out)
{
	prb_dram_sample_delta(&later->dram, &earlier->dram, out);
}

json_t *mw_bytes_json(struct prb_bytes b)
{
	return b.state == PRB_MEASURED ? json_integer((json_int_t)b.bytes) : json_null();
}

void mw_window_set_dram(json_t *window, bool dram_open, const struct prb_dram_sample *d)
{
	static const struct prb_bytes none = { 0, PRB_NOT_RUN };
	struct prb_bytes rd = dram_open ? d->read : none, wr = dram_open ? d->write : none;
	struct prb_bytes tot = dram_open ? d->total : none;
	json_object_set_new(window, "dram_read_bytes", mw_bytes_json(rd));
	json_object_set_new(window, "dram_write_bytes", mw_bytes_json(wr));
	json_object_set_new(window, "dram_total_bytes", mw_bytes_json(tot));
	if (!dram_open)
		return;
	json_object_set_new(window, "dram_state",
			    json_pack("{s:s, s:s, s:s}", "read", prb_state_name(rd.state), "write",
				      prb_state_name(wr.state), "total", prb_state_name(tot.state)));
	/* the least counted instance's share of the window: below 1, the kernel multiplexed a
	 * counter and its count was extrapolated (probes.h, prb_dram_instance_share) */
	json_object_set_new(window, "dram_running_share",
			    mw_json_num(prb_dram_sample_share(d, NULL)));
}

json_t *mw_dram_instances_json(const struct prb_dram_status *st, const struct prb_dram_sample *d)
{
	json_t *a = json_array();
	for (int k = 0; a && k < d->n_instances && k < st->n_instances; k++) {
		const struct prb_dram_instance_sample *in = &d->inst[k];
		json_array_append_new(a, json_pack("{s:s, s:i, s:o, s:o, s:o, s:I, s:I, s:o}", "pmu",
			st->instances[k].pmu, "cpu", st->instances[k].cpu, "read_bytes",
			mw_bytes_json(in->read), "write_bytes", mw_bytes_json(in->write),
			"total_bytes", mw_bytes_json(in->total), "time_enabled_ns",
			(json_int_t)in->time_enabled, "time_running_ns",
			(json_int_t)in->time_running, "running_share",
			mw_json_num(prb_dram_instance_share(in))));
	}
	return a;
}

const char *mw_counters_dram_basis(const struct mw_counters *c)
{
	/* MB/token is defined on what was measured: read bytes where the backend splits reads
	 * from writes, the total where it cannot. */
	return c->dram && prb_dram_status(c->dram)->provides & PRB_DRAM_READ ? "read" : "total";
}

/* What was opened on each instance, as the kernel saw it: the PMU, the CPU, and each event's
 * perf_event_attr type and config (from the PMU's sysfs type and format files). */
json_t *mw_dram_opened_json(const struct prb_dram_status *st)
{
	json_t *a = json_array();
	for (int i = 0; i < st->n_instances; i++) {
		const struct prb_dram_instance *in = &st->instances[i];
		json_t *ev = json_array();
		for (int e = 0; e < in->n_events; e++) {
			char cfg[24];
			snprintf(cfg, sizeof(cfg), "0x%llx", (unsigned long long)in->events[e].config);
			json_t *o = json_pack("{s:s, s:I, s:s, s:f}", "dir", in->events[e].dir,
					      "type", (json_int_t)in->events[e].type, "config", cfg,
					      "bytes_per_count", in->events[e].bytes_per_count);
			if (o && in->events[e].config1) {
				snprintf(cfg, sizeof(cfg), "0x%llx",
					 (unsigned long long)in->events[e].config1);
				json_object_set_new(o, "config1", json_string(cfg));
			}
			json_array_append_new(ev, o);
		}
		json_array_append_new(a, json_pack("{s:s, s:i, s:o}", "pmu", in->pmu, "cpu", in->cpu,
						   "events", ev));
	}
	return a;
}

json_t *mw_counters_dram_json(const struct mw_counters *c)
{
	if (!c->dram)
		return json_pack("{s:b, s:s}", "measured", 0, "reason", c->dram_reason);
	const struct prb_dram_status *st = prb_dram_status(c->dram);
	json_t *inst = json_array(), *provides = json_array();
	for (int i = 0; i < st->n_instances; i++)
		json_array_append_new(inst, json_string(st->instances[i].pmu));
	static const struct {
		unsigned bit;
		const char *name;
	} figures[] = { { PRB_DRAM_READ, "read" }, { PRB_DRAM_WRITE, "write" },
			{ PRB_DRAM_TOTAL, "total" } };
	for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++)
		if (st->provides & figures[i].bit)
			json_array_append_new(provides, json_string(figures[i].name));
	const char *basis = mw_counters_dram_basis(c);
	/* The counter layer says how the counts were read: "sim" marks a simulated PMU. */
	json_t *o = json_pack("{s:b, s:n, s:s, s:s, s:s, s:o, s:o, s:s, s:n, s:s}", "measured", 1,
			      "reason", "backend", st->backend, "layer", prb_counter_backend(),
			      "description", st->description,
			      "instances", inst, "provides", provides, "mb_per_token_basis", basis,
			      "calibration_error_pct", "calibration_reason",
			      "not calibrated by this run: `memwall calibrate` measures it");
	if (o && st->flags & PRB_DRAM_CAVEAT)
		json_object_set_new(o, "caveat", json_string(st->caveat));
	if (o)
		json_object_set_new(o, "opened", mw_dram_opened_json(st));
	/* A simulated record names the script whose counts it replayed: `validate` then knows a
	 * record whose layer was edited away from "sim". */
	const char *script = getenv("MEMWALL_SIM_SCRIPT");
	char hex[65] = "none";
	struct stat sb;
	struct mw_error err;
	if (script && *script && stat(script, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    sb.st_size <= (1 << 20) && mw_sha256_file(script, hex, NULL, &err))
		snprintf(hex, sizeof(hex), "none");
	if (o && !strcmp(prb_counter_backend(), "sim"))
		json_object_set_new(o, "sim_script_sha256", json_string(hex));
	return o;
}

json_t *mw_counters_energy_json(const struct mw_counters *c)
{
	if (!c->eset)
		return json_pack("{s:b, s:s}", "measured", 0, "reason", c->energy_reason);
	return json_pack("{s:b, s:n, s:[s]}", "measured", 1, "reason", "events", ENERGY_EVENT);
}
