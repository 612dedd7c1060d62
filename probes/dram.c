/* probes/dram.c: DRAM bytes from the memory controllers, over every controller.
 *
 * The backends (probes/pmu/) only describe what to count: which PMUs, which events, how many
 * bytes per count. Opening and reading is done here, once, for all of them, so that the rule
 * "every instance or none" cannot be broken by one backend: an Arrow Lake has
 * uncore_imc_free_running_0 and _1, and counting only the first reports half the traffic.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* In order of preference: the controllers' own data counters first, CAS counts next, the
 * fabric's approximate channel counts after them, and resctrl (core traffic only) last. On ARM
 * servers: the DMC-620 controllers first, Grace's fabric counts next, and the CMN mesh's
 * requests after them (an Ampere Altra has both DMC-620 and CMN PMUs). */
static const struct dram_backend *const backends[] = {
	&prb_dram_intel_imc_free,
	&prb_dram_intel_imc_cas,
	&prb_dram_amd_umc,
	&prb_dram_amd_df,
	&prb_dram_arm_dmc620,
	&prb_dram_nvidia_scf,
	&prb_dram_arm_cmn,
	&prb_dram_resctrl,
};

const char *const *prb_dram_backends(void)
{
	static const char *names[ARRAY_SIZE(backends) + 1];
	for (size_t i = 0; i < ARRAY_SIZE(backends); i++)
		names[i] = backends[i]->name;
	return names;
}

/* One event (or one file) and its reading at open: bytes since open are taken from raw
 * differences against it, modulo the counter's width, so a counter that wraps between reads
 * is still counted (the kernel's are 64 bits wide and in practice never wrap; see
 * counter_ops.bits and file_counter.bits). */
struct dram_counter {
	struct counter *c;
	struct file_counter *f; /* file instances (resctrl) */
	uint64_t v0, ena0, run0;  /* value and times read at open */
	unsigned bits;
};

struct prb_dram {
	struct prb_dram_status status;
	struct dram_plan plan;
	bool forbid_scaling;
	struct dram_counter ctr[PRB_DRAM_MAX_INSTANCES][PRB_DRAM_MAX_EVENTS];
	struct prb_bytes last[PRB_DRAM_MAX_INSTANCES][PRB_DRAM_MAX_EVENTS]; /* each event as of
									      * the last read */
	bool grouped[PRB_DRAM_MAX_INSTANCES]; /* read with one PERF_FORMAT_GROUP read */
	uint64_t t0; /* CLOCK_MONOTONIC ns at open, the times of file instances */
};

static void status_fill(struct prb_dram_status *st, const struct dram_backend *b,
			const struct dram_plan *plan)
{
	snprintf(st->backend, sizeof(st->backend), "%s", b->name);
	snprintf(st->description, sizeof(st->description), "%s", b->description);
	st->provides = b->provides;
	/* TOTAL_ONLY is kept for its readers, derived here so it cannot disagree with provides */
	st->flags = b->flags & ~(unsigned)PRB_DRAM_TOTAL_ONLY;
	if ((b->provides & (PRB_DRAM_READ | PRB_DRAM_WRITE)) != (PRB_DRAM_READ | PRB_DRAM_WRITE))
		st->flags |= PRB_DRAM_TOTAL_ONLY;
	snprintf(st->caveat, sizeof(st->caveat), "%s", b->caveat ? b->caveat : "");
	st->counters = b->counters;
	st->n_instances = plan->n;
	for (int i = 0; i < plan->n; i++) {
		snprintf(st->instances[i].pmu, sizeof(st->instances[i].pmu), "%s", plan->inst[i].name);
		st->instances[i].cpu = plan->inst[i].pmu ? plan->inst[i].cpu : -1;
		/* What was opened, so a record can name it (and `validate` check it). */
		static const char *const dirs[] = { [DRAM_READ] = "read", [DRAM_WRITE] = "write",
						    [DRAM_TOTAL] = "total" };
		st->instances[i].n_events = plan->inst[i].pmu ? plan->inst[i].n_events : 0;
		for (int e = 0; e < st->instances[i].n_events; e++) {
			const struct dram_event *ev = &plan->inst[i].events[e];
			struct prb_dram_encoding *enc = &st->instances[i].events[e];
			snprintf(enc->dir, sizeof(enc->dir), "%s", dirs[ev->dir]);
			enc->type = ev->attr.type;
			enc->config = ev->attr.config;
			enc->config1 = ev->attr.config1;
			enc->bytes_per_count = ev->bytes_per_count;
		}
	}
}

/* Appends "name: why; " to the list of backends looked for and absent. */
static void note_missing(char *buf, size_t size, const char *name, const char *why)
{
	size_t len = strlen(buf);
	if (len < size)
		snprintf(buf + len, size - len, "%s: %s; ", name, why);
}

static bool name_fits(const char *name, const char *prefix, const char *suffix)
{
	size_t n = strlen(prefix);
	if (strncmp(name, prefix, n))
		return false;
	if (!suffix)
		return !name[n];
	return name[n] && strspn(name + n, suffix) == strlen(name + n);
}

int prb_dram_backend_check(const char *backend, const char *machine, const char *instance,
			   char *why, size_t n)
{
	const struct dram_backend *b = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(backends) && !b; i++)
		if (backend && !strcmp(backends[i]->name, backend))
			b = backends[i];
	if (!b)
		return -ENOENT;
	if (machine && b->machine && strcmp(machine, b->machine)) {
		snprintf(why, n, "the %s backend's PMUs exist only on %s kernels, and this one is %s",
			 b->name, b->machine, machine);
		return -EINVAL;
	}
	if (!instance)
		return 0;
	char expect[160] = "";
	for (size_t i = 0; i < ARRAY_SIZE(b->names) && b->names[i].prefix; i++) {
		if (name_fits(instance, b->names[i].prefix, b->names[i].suffix))
			return 0;
		size_t len = strlen(expect);
		snprintf(expect + len, sizeof(expect) - len, "%s%s%s", len ? " or " : "",
			 b->names[i].prefix, !b->names[i].suffix ? ""
			 : !strcmp(b->names[i].suffix, DRAM_NAME_DIGITS) ? "N" : "<hex>");
	}
	snprintf(why, n, "'%s' is not a name the %s backend's driver gives its instances (%s)",
		 instance, b->name, expect);
	return -EINVAL;
}

/* Runs every backend's detection (to tell which are missing and why) and keeps the first
 * present one, or the one asked for, in st and plan. */
int prb_dram_probe_plan(const struct prb_system *sys, const struct prb_dram_options *opt,
		    struct prb_dram_status *st, struct dram_plan *plan)
{
	const char *want = opt ? opt->backend : NULL;
	struct dram_plan *tmp = malloc(sizeof(*tmp));
	bool known = !want;
	int rc = -ENOENT;

	memset(st, 0, sizeof(*st));
	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(backends); i++) {
		const struct dram_backend *b = backends[i];
		char why[512] = "";
		if (want && strcmp(want, b->name))
			continue;
		known = true;
		memset(tmp, 0, sizeof(*tmp));
		int n = b->detect(sys, tmp, why, sizeof(why));
		if (n > 0 && rc == -ENOENT) {
			status_fill(st, b, tmp);
			memcpy(plan, tmp, sizeof(*plan));
			plan->no_group = b->no_group;
			rc = 0;
			continue;
		}
		if (n <= 0)
			note_missing(st->missing, sizeof(st->missing), b->name, why[0] ? why : "absent");
		if (n == -E2BIG && rc == -ENOENT) {
			/* present, with more instances than memwall counts: refused, never passed
			 * over for a backend further down (prb_dram_too_many) */
			snprintf(st->reason, sizeof(st->reason), "%s: %s", b->name, why);
			rc = -E2BIG;
		}
		if (n < 0 && rc == -ENOENT && !st->reason[0])
			snprintf(st->reason, sizeof(st->reason), "%s: %s", b->name, why);
	}
	free(tmp);
	size_t len = strlen(st->missing);
	if (len >= 2)
		st->missing[len - 2] = '\0'; /* the last "; " */
	if (rc == -E2BIG)
		return rc;
	if (!known) {
		snprintf(st->reason, sizeof(st->reason),
			 "unknown DRAM backend \"%s\" (known: intel_imc_free, intel_imc_cas, amd_umc, "
			 "amd_df, arm_dmc620, nvidia_scf, arm_cmn, resctrl)", want);
		return -EINVAL;
	}
	if (rc == 0) {
		st->reason[0] = '\0';
		return 0;
	}
	if (want)
		snprintf(st->reason, sizeof(st->reason),
			 "DRAM backend \"%s\" was asked for and is not usable here: %s", want,
			 st->missing);
	else if (!st->reason[0])
		snprintf(st->reason, sizeof(st->reason),
			 "no memory-controller counters: none of the PMUs under %s/bus/event_source/"
			 "devices is a memory controller (uncore_imc_*, amd_umc_*, amd_df, arm_dmc620_*, "
			 "nvidia_scf_pmu_*, arm_cmn_*) and resctrl "
			 "monitoring is absent. Virtual machines expose no uncore PMUs: DRAM traffic "
			 "can only be measured on bare metal (or a VM with uncore passthrough)",
			 prb_system_root(sys));
	return rc;
}

int prb_dram_probe(const struct prb_system *sys, const struct prb_dram_options *opt,
		   struct prb_dram_status *st)
{
	struct dram_plan *plan = malloc(sizeof(*plan));
	if (!plan)
		return -ENOMEM;
	int rc = prb_dram_probe_plan(sys, opt, st, plan);
	free(plan);
	return rc;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void close_instance(struct prb_dram *d, int i)
{
	const struct counter_ops *ops = prb_counter_ops_get();
	for (int j = d->plan.inst[i].n_events - 1; j >= 0; j--) {
		if (d->ctr[i][j].c)
			ops->close(d->ctr[i][j].c);
		d->ctr[i][j].c = NULL;
	}
	if (d->ctr[i][0].f)
		d->ctr[i][0].f->close(d->ctr[i][0].f);
	d->ctr[i][0].f = NULL;
	d->grouped[i] = false;
}

void prb_dram_close(struct prb_dram *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->plan.n; i++)
		close_instance(d, i);
	free(d);
}

/* Opens instance i's events, as one group when asked: one read per memory controller then. */
static int open_instance(struct prb_dram *d, int i, bool group, char *what, size_t n)
{
	const struct dram_instance *in = &d->plan.inst[i];
	for (int j = 0; j < in->n_events; j++) {
		struct perf_event_attr attr = in->events[j].attr;
		/* uncore: system-wide on the cpumask CPU, no exclude bits (perf_event_open(2); the
		 * uncore drivers reject exclude_* with -EINVAL) */
		attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
				   (group ? PERF_FORMAT_GROUP : 0);
		attr.disabled = 0;
		int rc = group && j > 0 ?
			prb_counter_open_member(&d->ctr[i][j].c, &attr, -1, in->cpu, d->ctr[i][0].c) :
			prb_counter_open(&d->ctr[i][j].c, &attr, -1, in->cpu);
		if (rc < 0) {
			d->ctr[i][j].c = NULL;
			snprintf(what, n, "%s (cpu %d, config 0x%llx)", in->name, in->cpu,
				 (unsigned long long)attr.config);
			close_instance(d, i);
			return rc;
		}
	}
	d->grouped[i] = group;
	return 0;
}

static unsigned narrower(unsigned a, unsigned b)
{
	a = a >= 1 && a <= 64 ? a : 64;
	b = b >= 1 && b <= 64 ? b : 64;
	return a < b ? a : b;
}

/* Reads instance i's events raw: v[j] = { value, time_enabled, time_running } and rcs[j] 0 or
 * the read's negative errno. One read per event, or one for the group. */
static void read_raw(struct prb_dram *d, int i, uint64_t v[][3], int *rcs)
{
	const struct counter_ops *ops = prb_counter_ops_get();
	const struct dram_instance *in = &d->plan.inst[i];
	uint64_t group[3 + PRB_DRAM_MAX_EVENTS];
	int grc = 0;

	if (d->grouped[i])
		grc = ops->read_group(d->ctr[i][0].c, group, ARRAY_SIZE(group));
	for (int j = 0; j < in->n_events; j++) {
		if (!d->grouped[i]) {
			rcs[j] = ops->read(d->ctr[i][j].c, v[j]);
			continue;
		}
		rcs[j] = grc < 0 ? grc : group[0] != (uint64_t)in->n_events ? -EIO : 0;
		v[j][0] = group[3 + j];
		v[j][1] = group[1];
		v[j][2] = group[2];
	}
}

/* The reading at open, that every later one is taken against. */
static int read_base(struct prb_dram *d, int i, char *what, size_t n)
{
	const struct dram_instance *in = &d->plan.inst[i];
	uint64_t v[PRB_DRAM_MAX_EVENTS][3];
	int rcs[PRB_DRAM_MAX_EVENTS];

	if (!in->pmu) {
		struct dram_counter *dc = &d->ctr[i][0];
		int rc = dc->f->read(dc->f, &dc->v0);
		if (rc == -ENODATA)
			snprintf(what, n, "%s reads \"Unavailable\" or \"Error\": resctrl "
				 "has no count for this domain now (its RMID is not being "
				 "counted); try again, or use another backend", in->path);
		else if (rc < 0)
			snprintf(what, n, "%s: cannot read: %s", in->path, strerror(-rc));
		dc->bits = narrower(dc->f->bits, in->counter_bits);
		return rc;
	}
	read_raw(d, i, v, rcs);
	for (int j = 0; j < in->n_events; j++) {
		struct dram_counter *dc = &d->ctr[i][j];
		if (rcs[j] < 0) {
			snprintf(what, n, "%s (cpu %d, config 0x%llx): the first read failed: %s",
				 in->name, in->cpu, (unsigned long long)in->events[j].attr.config,
				 strerror(-rcs[j]));
			return rcs[j];
		}
		dc->v0 = v[j][0];
		dc->ena0 = v[j][1];
		dc->run0 = v[j][2];
		dc->bits = narrower(prb_counter_bits(dc->c), in->counter_bits);
	}
	return 0;
}

/* Keeps of each instance only the events whose bit is set in mask (prb_dram_options.events),
 * in their order, in the plan and in st. -EINVAL, st->reason saying why, when the mask names
 * an event past an instance's last or leaves one none (a file instance has no events). */
static int select_events(struct dram_plan *plan, struct prb_dram_status *st, unsigned mask)
{
	for (int i = 0; i < plan->n; i++) {
		struct dram_instance *in = &plan->inst[i];
		struct prb_dram_instance *si = &st->instances[i];
		unsigned all = in->n_events >= 32 ? ~0u : (1u << in->n_events) - 1;
		int kept = 0;
		if (!in->pmu || (mask & ~all) || !(mask & all)) {
			snprintf(st->reason, sizeof(st->reason), "%s: events mask 0x%x %s (it has %d "
				 "event%s): take a mask from prb_dram_groups", in->name, mask,
				 in->pmu && (mask & ~all) ? "names events past its last" :
				 "selects none of its events", in->n_events,
				 in->n_events == 1 ? "" : "s");
			return -EINVAL;
		}
		for (int j = 0; j < in->n_events; j++) {
			if (!(mask >> j & 1))
				continue;
			in->events[kept] = in->events[j];
			si->events[kept] = si->events[j];
			kept++;
		}
		in->n_events = si->n_events = kept;
	}
	return 0;
}

int prb_dram_groups(const struct prb_dram_status *st, unsigned *masks, int max)
{
	int n = 0, c = st->counters;
	for (int i = 0; i < st->n_instances; i++)
		if (st->instances[i].n_events > n)
			n = st->instances[i].n_events;
	int groups = c > 0 && n > c ? (n + c - 1) / c : 1;
	if (groups > max)
		return -ENOSPC;
	if (groups == 1) {
		masks[0] = 0; /* every event */
		return 1;
	}
	for (int g = 0; g < groups; g++) {
		masks[g] = 0;
		for (int j = g * c; j < (g + 1) * c && j < n; j++)
			masks[g] |= 1u << j;
	}
	return groups;
}

static int set_enabled(struct prb_dram *d, bool on)
{
	const struct counter_ops *ops = prb_counter_ops_get();
	int first = 0;
	for (int i = 0; i < d->plan.n; i++)
		for (int j = 0; d->plan.inst[i].pmu && j < d->plan.inst[i].n_events; j++) {
			int rc = on ? ops->enable(d->ctr[i][j].c) : ops->disable(d->ctr[i][j].c);
			if (rc < 0 && first == 0)
				first = rc;
		}
	return first;
}

int prb_dram_enable(struct prb_dram *d)
{
	return set_enabled(d, true);
}

int prb_dram_disable(struct prb_dram *d)
{
	return set_enabled(d, false);
}

int prb_dram_event_bytes(const struct prb_dram *d, int i, struct prb_bytes *out, int max)
{
	if (i < 0 || i >= d->plan.n)
		return -EINVAL;
	const struct dram_instance *in = &d->plan.inst[i];
	if (!in->pmu)
		return 0;
	if (in->n_events > max)
		return -ENOSPC;
	for (int j = 0; j < in->n_events; j++)
		out[j] = d->last[i][j];
	return in->n_events;
}

int prb_dram_open(struct prb_dram **out, const struct prb_system *sys,
		  const struct prb_dram_options *opt, struct prb_dram_status *st)
{
	struct prb_dram *d = calloc(1, sizeof(*d));
	int rc;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	rc = prb_dram_probe_plan(sys, opt, st, &d->plan);
	if (rc < 0)
		goto out;
	if (opt && opt->events && (rc = select_events(&d->plan, st, opt->events)) < 0)
		goto out;
	d->forbid_scaling = opt && opt->forbid_scaling;
	for (int i = 0; i < PRB_DRAM_MAX_INSTANCES; i++)
		for (int j = 0; j < PRB_DRAM_MAX_EVENTS; j++)
			d->last[i][j] = (struct prb_bytes){ 0, PRB_NOT_RUN };
	d->t0 = now_ns();
	for (int i = 0; i < d->plan.n; i++) {
		struct dram_instance *in = &d->plan.inst[i];
		char what[640];
		if (!in->pmu) {
			rc = prb_file_counter_open(&d->ctr[i][0].f, in->path);
			if (rc < 0) {
				snprintf(st->reason, sizeof(st->reason), "%s: cannot open: %s",
					 in->path, strerror(-rc));
				goto out;
			}
		} else {
			rc = -EOPNOTSUPP;
			if (!d->plan.no_group && in->n_events > 1 && prb_counter_ops_get()->read_group)
				rc = open_instance(d, i, true, what, sizeof(what));
			/* no groups in this layer, or the PMU refused one: event by event */
			if (rc < 0)
				rc = open_instance(d, i, false, what, sizeof(what));
			if (rc < 0) {
				snprintf(st->reason, sizeof(st->reason), "%s",
					 prb_explain(rc, what));
				goto out;
			}
		}
		rc = read_base(d, i, what, sizeof(what));
		if (rc < 0) {
			snprintf(st->reason, sizeof(st->reason), "%s", what);
			goto out;
		}
	}
	st->available = true;
	d->status = *st;
	*out = d;
	d = NULL;
out:
	prb_dram_close(d);
	return rc;
}

const struct prb_dram_status *prb_dram_status(const struct prb_dram *d)
{
	return &d->status;
}

int prb_dram_events(const struct prb_dram *d, int i, struct prb_dram_event_desc *out, int max)
{
	if (i < 0 || i >= d->plan.n)
		return -EINVAL;
	const struct dram_instance *in = &d->plan.inst[i];
	if (!in->pmu)
		return 0;
	if (in->n_events > max)
		return -ENOSPC;
	for (int j = 0; j < in->n_events; j++) {
		const struct dram_event *ev = &in->events[j];
		char extra[96] = "";
		/* perf's raw terms (tools/perf/Documentation/perf-list.txt, "Raw hardware event
		 * descriptor"): config, config1, config2 as the PMU's sysfs format files place
		 * them; the fields were encoded into these from those same files */
		if (ev->attr.config1)
			snprintf(extra, sizeof(extra), ",config1=0x%llx",
				 (unsigned long long)ev->attr.config1);
		if (ev->attr.config2)
			snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
				 ",config2=0x%llx", (unsigned long long)ev->attr.config2);
		if (fmt_into(out[j].perf, "%s/config=0x%llx%s/", in->name,
			     (unsigned long long)ev->attr.config, extra) < 0)
			return -ENAMETOOLONG;
		snprintf(out[j].name, sizeof(out[j].name), "%s", ev->name);
		out[j].figure = ev->dir == DRAM_READ ? PRB_DRAM_READ :
				ev->dir == DRAM_WRITE ? PRB_DRAM_WRITE : PRB_DRAM_TOTAL;
		out[j].bytes_per_count = ev->bytes_per_count;
	}
	return in->n_events;
}

/* The most bytes a figure holds: a record keeps bytes as JSON integers, which are signed 64-bit
 * (jansson's json_int_t), and no controller moves 9.2 EB between two reads. */
#define BYTES_MAX ((uint64_t)INT64_MAX)

/* count * bytes_per_count, rounded, into *bytes: false when that is not a byte count a
 * figure can hold (not finite, negative, or past BYTES_MAX; llround would overflow there, and
 * a uint64_t of it flattens every larger count to one value). */
static bool to_bytes(double count, double bytes_per_count, uint64_t *bytes)
{
	double b = nearbyint(count * bytes_per_count);
	if (!(b >= 0 && b < 0x1p63))
		return false;
	*bytes = (uint64_t)b;
	return true;
}

/* Adds one contribution to a figure: measured only while every contribution is; the first
 * one that is not gives the figure its state. A sum past BYTES_MAX is no reading either. */
static void add_bytes(struct prb_bytes *fig, enum prb_state state, uint64_t bytes)
{
	if (fig->state != PRB_MEASURED)
		return;
	if (state == PRB_MEASURED && (bytes > BYTES_MAX || fig->bytes > BYTES_MAX - bytes))
		state = PRB_READ_FAILED;
	if (state != PRB_MEASURED) {
		fig->state = state;
		fig->bytes = 0;
		return;
	}
	fig->bytes += bytes;
}

/* A figure the backend does not count. */
static void not_provided(struct prb_bytes *fig, unsigned provides, unsigned which)
{
	if (!(provides & which))
		*fig = (struct prb_bytes){ 0, PRB_NOT_PROVIDED };
}

/* Instance i's bytes since open. Returns 0 or -EIO when a read failed. */
static int read_instance(struct prb_dram *d, int i, struct prb_dram_instance_sample *is)
{
	const struct dram_instance *in = &d->plan.inst[i];
	uint64_t v[PRB_DRAM_MAX_EVENTS][3];
	int rcs[PRB_DRAM_MAX_EVENTS];
	unsigned has = 0; /* the figures this instance's open events feed */
	int rc = 0;

	memset(is, 0, sizeof(*is));
	if (!in->pmu) {
		struct dram_counter *dc = &d->ctr[i][0];
		uint64_t val = 0;
		/* a file has no times of its own: the time since open stands for both */
		is->time_enabled = is->time_running = now_ns() - d->t0;
		uint64_t delta = 0;
		if (dc->f->read(dc->f, &val) < 0 ||
		    !prb_counter_plausible(delta = prb_counter_delta(val, dc->v0, dc->bits),
					   dc->bits)) {
			is->reading_flags |= PRB_READING_NOT_COUNTED;
			add_bytes(&is->total, PRB_READ_FAILED, 0);
			rc = -EIO;
		} else {
			add_bytes(&is->total, PRB_MEASURED, delta);
		}
	} else {
		read_raw(d, i, v, rcs);
	}
	for (int j = 0; in->pmu && j < in->n_events; j++) {
		const struct dram_event *ev = &in->events[j];
		const struct dram_counter *dc = &d->ctr[i][j];
		struct prb_bytes *dir = ev->dir == DRAM_READ ? &is->read :
					ev->dir == DRAM_WRITE ? &is->write : NULL;
		enum prb_state state = PRB_MEASURED;
		uint64_t bytes = 0;

		uint64_t delta = rcs[j] < 0 ? 0 : prb_counter_delta(v[j][0], dc->v0, dc->bits);
		if (rcs[j] < 0 || !prb_counter_plausible(delta, dc->bits)) {
			/* no value, or one below the value at open: a reset, not a count */
			is->reading_flags |= PRB_READING_NOT_COUNTED;
			state = PRB_READ_FAILED;
			rc = -EIO;
		} else {
			/* the interval since open, scaled by its own enabled/running times: a
			 * counter that did not run over it has no value, whatever it read */
			struct prb_reading r = {
				.value = delta,
				.time_enabled = v[j][1] - dc->ena0,
				.time_running = v[j][2] - dc->run0,
			};
			prb_reading_scale(&r);
			is->reading_flags |= r.flags;
			if (r.time_enabled > is->time_enabled)
				is->time_enabled = r.time_enabled;
			if (j == 0 || r.time_running < is->time_running)
				is->time_running = r.time_running;
			if (r.flags & PRB_READING_NOT_COUNTED) {
				state = PRB_NOT_RUN;
			} else if (!to_bytes(r.count, ev->bytes_per_count, &bytes)) {
				state = PRB_READ_FAILED;
				rc = -EIO;
			}
		}
		if (dir)
			add_bytes(dir, state, bytes);
		add_bytes(&is->total, state, bytes);
		d->last[i][j] = (struct prb_bytes){ bytes, state };
		has |= ev->dir == DRAM_READ ? PRB_DRAM_READ : ev->dir == DRAM_WRITE ?
			PRB_DRAM_WRITE : PRB_DRAM_TOTAL;
	}
	/* a subset of the events (prb_dram_options.events) may hold none of a direction's:
	 * it does not count that figure, rather than count a 0 */
	if (in->pmu && (has & (PRB_DRAM_READ | PRB_DRAM_WRITE)))
		has |= PRB_DRAM_TOTAL;
	unsigned provides = in->pmu ? d->status.provides & has : d->status.provides;
	not_provided(&is->read, provides, PRB_DRAM_READ);
	not_provided(&is->write, provides, PRB_DRAM_WRITE);
	not_provided(&is->total, provides, PRB_DRAM_TOTAL);
	return rc;
}

/* A sum over instances: measured only when every instance's figure is. */
static void sum_into(struct prb_bytes *sum, const struct prb_bytes *fig, bool first)
{
	if (first)
		*sum = (struct prb_bytes){ 0, PRB_MEASURED };
	add_bytes(sum, fig->state, fig->bytes);
}

int prb_dram_read(struct prb_dram *d, struct prb_dram_sample *s)
{
	int rc = 0;
	s->n_instances = d->plan.n;
	s->reading_flags = 0;
	s->read = s->write = s->total = (struct prb_bytes){ 0, PRB_MEASURED };
	for (int i = 0; i < d->plan.n; i++) {
		struct prb_dram_instance_sample *is = &s->inst[i];
		if (read_instance(d, i, is) < 0)
			rc = -EIO;
		sum_into(&s->read, &is->read, i == 0);
		sum_into(&s->write, &is->write, i == 0);
		sum_into(&s->total, &is->total, i == 0);
		s->reading_flags |= is->reading_flags;
	}
	if (rc == 0 && d->forbid_scaling &&
	    (s->reading_flags & (PRB_READING_SCALED | PRB_READING_NOT_COUNTED)))
		rc = -ERANGE;
	return rc;
}

double prb_dram_instance_share(const struct prb_dram_instance_sample *is)
{
	if (!is->time_enabled)
		return NAN;
	/* time_running can only trail time_enabled; a file instance has both from one clock */
	double share = (double)is->time_running / (double)is->time_enabled;
	return share > 1 ? 1 : share;
}

double prb_dram_sample_share(const struct prb_dram_sample *s, int *worst)
{
	double min = NAN;
	int at = -1;
	for (int i = 0; i < s->n_instances && i < PRB_DRAM_MAX_INSTANCES; i++) {
		double sh = prb_dram_instance_share(&s->inst[i]);
		if (!isnan(sh) && (at < 0 || sh < min)) {
			min = sh;
			at = i;
		}
	}
	if (worst)
		*worst = at;
	return min;
}

static void bytes_delta(const struct prb_bytes *later, const struct prb_bytes *earlier,
			struct prb_bytes *out)
{
	if (later->state != PRB_MEASURED)
		*out = (struct prb_bytes){ 0, later->state };
	else if (earlier->state != PRB_MEASURED)
		*out = (struct prb_bytes){ 0, earlier->state };
	else if (later->bytes < earlier->bytes)
		/* A count that went back (wraps are unwound where the counter is read): not a
		 * reading. As a difference it would be 2^64 - 1, a negative JSON integer. */
		*out = (struct prb_bytes){ 0, PRB_READ_FAILED };
	else
		*out = (struct prb_bytes){ later->bytes - earlier->bytes, PRB_MEASURED };
}

/* A sum's difference is a reading only when every instance's is (probes.h: a partial set
 * of controllers is never counted): the sums went forward while one instance went back. */
static void sum_state(struct prb_bytes *sum, const struct prb_bytes *inst)
{
	if (sum->state == PRB_MEASURED && inst->state == PRB_READ_FAILED)
		*sum = (struct prb_bytes){ 0, PRB_READ_FAILED };
}

void prb_dram_sample_delta(const struct prb_dram_sample *later,
			   const struct prb_dram_sample *earlier, struct prb_dram_sample *out)
{
	int n = later->n_instances;
	for (int i = 0; i < n && i < PRB_DRAM_MAX_INSTANCES; i++) {
		const struct prb_dram_instance_sample *a = &later->inst[i], *b = &earlier->inst[i];
		struct prb_dram_instance_sample *o = &out->inst[i];
		unsigned flags = a->reading_flags | b->reading_flags;
		if (i >= earlier->n_instances) {
			/* nothing to take it from: not a value (samples of one prb_dram never
			 * differ in size) */
			static const struct prb_dram_instance_sample none = {
				.read = { 0, PRB_READ_FAILED }, .write = { 0, PRB_READ_FAILED },
				.total = { 0, PRB_READ_FAILED },
			};
			b = &none;
		}
		bytes_delta(&a->read, &b->read, &o->read);
		bytes_delta(&a->write, &b->write, &o->write);
		bytes_delta(&a->total, &b->total, &o->total);
		/* a side whose reads failed has no times (0): the window then has none */
		o->time_enabled = a->time_enabled >= b->time_enabled ?
					  a->time_enabled - b->time_enabled : 0;
		o->time_running = a->time_running >= b->time_running && o->time_enabled ?
					  a->time_running - b->time_running : 0;
		o->reading_flags = flags;
	}
	bytes_delta(&later->read, &earlier->read, &out->read);
	bytes_delta(&later->write, &earlier->write, &out->write);
	bytes_delta(&later->total, &earlier->total, &out->total);
	for (int i = 0; i < n && i < PRB_DRAM_MAX_INSTANCES; i++) {
		sum_state(&out->read, &out->inst[i].read);
		sum_state(&out->write, &out->inst[i].write);
		sum_state(&out->total, &out->inst[i].total);
	}
	out->reading_flags = later->reading_flags | earlier->reading_flags;
	out->n_instances = n;
}

/* One figure of prb_dram_sample_add: a side that does not provide it adds nothing. */
static void bytes_add(struct prb_bytes *acc, const struct prb_bytes *s)
{
	if (s->state == PRB_NOT_PROVIDED)
		return;
	if (acc->state == PRB_NOT_PROVIDED)
		*acc = *s;
	else
		add_bytes(acc, s->state, s->bytes);
}

void prb_dram_sample_add(struct prb_dram_sample *acc, const struct prb_dram_sample *s)
{
	for (int i = 0; i < s->n_instances && i < PRB_DRAM_MAX_INSTANCES; i++) {
		struct prb_dram_instance_sample *a = &acc->inst[i];
		const struct prb_dram_instance_sample *b = &s->inst[i];
		bytes_add(&a->read, &b->read);
		bytes_add(&a->write, &b->write);
		bytes_add(&a->total, &b->total);
		/* each set ran over its own time: the times of the whole are their sums, so that
		 * the share is what every set ran of what it was enabled */
		a->time_enabled += b->time_enabled;
		a->time_running += b->time_running;
		a->reading_flags |= b->reading_flags;
	}
	bytes_add(&acc->read, &s->read);
	bytes_add(&acc->write, &s->write);
	bytes_add(&acc->total, &s->total);
	acc->reading_flags |= s->reading_flags;
}
