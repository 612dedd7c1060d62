/* src/run/dram_verify.c: `memwall verify`'s measurement, its checks and its store
 * (dram_verify.h). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dram_calibration.h"
#include "dram_verify.h"
#include "engine.h"
#include "machine.h"
#include "metrics.h"
#include "probes.h"
#include "spawn.h"
#include "version.h"

/* ---- the store ----------------------------------------------------------------------------- */

int mw_dramverify_store_path(char *buf, size_t n, struct mw_error *err)
{
	char cal[4096];
	int rc = mw_dramcal_store_path(cal, sizeof(cal), err);
	if (rc)
		return rc;
	char *slash = strrchr(cal, '/');
	if (slash)
		slash[1] = '\0';
	else
		cal[0] = '\0';
	snprintf(buf, n, "%sverification.json", cal);
	return 0;
}

/* The store at path: a new object, an empty store when there is no file. */
static int store_read(const char *path, json_t **out, struct mw_error *err)
{
	struct stat sb;
	json_error_t jerr;
	*out = NULL;
	if (stat(path, &sb) != 0) {
		if (errno != ENOENT)
			return mw_error_set(err, -errno, path, "", "cannot read the verification "
					    "store: %s", strerror(errno));
		*out = json_pack("{s:s, s:{}}", "schema", MW_DRAMVERIFY_STORE_SCHEMA, "machines");
		return *out ? 0 : -ENOMEM;
	}
	if (sb.st_size > (off_t)MW_DRAMCAL_MAX_BYTES)
		return mw_error_set(err, -EFBIG, path, "", "the verification store is %lld bytes, "
				    "more than the %u it can hold: remove it and run `memwall "
				    "verify` again", (long long)sb.st_size, MW_DRAMCAL_MAX_BYTES);
	*out = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!*out)
		return mw_error_set(err, -EINVAL, path, "", "not valid JSON: %s (line %d): remove "
				    "the file and run `memwall verify` again", jerr.text, jerr.line);
	const char *schema = json_string_value(json_object_get(*out, "schema"));
	if (!schema || strcmp(schema, MW_DRAMVERIFY_STORE_SCHEMA) ||
	    !json_is_object(json_object_get(*out, "machines"))) {
		json_decref(*out);
		*out = NULL;
		return mw_error_set(err, -EINVAL, path, "schema", "not a verification store (want "
				    "\"schema\": \"" MW_DRAMVERIFY_STORE_SCHEMA "\" and a "
				    "\"machines\" object): remove it and run `memwall verify` again");
	}
	return 0;
}

int mw_dramverify_save(const char *path, const json_t *record, struct mw_error *err)
{
	json_t *store = NULL;
	const char *sha = json_string_value(json_object_get(record, "fingerprint_sha256"));
	const char *layer = json_string_value(json_object_get(record, "layer"));
	int rc = store_read(path, &store, err);
	if (rc)
		return rc;
	if (!sha || !layer) {
		rc = mw_error_set(err, -EINVAL, path, "", "a verification record without its "
				  "fingerprint_sha256 or layer cannot be stored");
		goto out;
	}
	json_t *machines = json_object_get(store, "machines");
	json_t *m = json_object_get(machines, sha);
	if (!json_is_object(m)) {
		m = json_object();
		json_object_set_new(machines, sha, m);
	}
	json_object_set(m, layer, (json_t *)(uintptr_t)record);
	rc = mw_json_write_atomic(path, store, "the verification store", err);
out:
	json_decref(store);
	return rc;
}

static bool passed(const json_t *check)
{
	const char *v = json_string_value(json_object_get(check, "verdict"));
	return v && !strcmp(v, "pass");
}

/* Days since an ISO 8601 UTC time; NaN when it does not parse. */
static double age_days(const char *utc)
{
	struct tm tm = { 0 };
	if (!utc || !strptime(utc, "%Y-%m-%dT%H:%M:%S", &tm))
		return NAN;
	return difftime(time(NULL), timegm(&tm)) / 86400.0;
}

static json_t *without(const char *why, FILE *log)
{
	if (log)
		fprintf(log, "memwall run: DRAM verification: %s\n", why);
	return json_pack("{s:n, s:s}", "verification", "verification_reason", why);
}

json_t *mw_dramverify_for_run(const char *store, const char *sha, const char *layer, FILE *log)
{
	char path[4096], why[5200];
	struct mw_error err;
	json_t *doc = NULL, *out = NULL;
	mw_error_clear(&err);
	if (store)
		snprintf(path, sizeof(path), "%s", store);
	else if (mw_dramverify_store_path(path, sizeof(path), &err))
		return without(err.text, log);
	if (store_read(path, &doc, &err)) {
		snprintf(why, sizeof(why), "%s: %.700s", path, err.text);
		return without(why, log);
	}
	const json_t *m = json_object_get(json_object_get(doc, "machines"), sha);
	const json_t *v = json_object_get(m, layer);
	if (!v) {
		snprintf(why, sizeof(why), "missing: %s holds no verification of this machine on "
			 "the %s counter layer%s; run `memwall verify` here", path, layer,
			 json_object_size(m) ? " (only of another layer)" : "");
		out = without(why, log);
		goto out;
	}
	const char *created = json_string_value(json_object_get(v, "created_utc"));
	double age = age_days(created);
	why[0] = '\0';
	if (!(age <= MW_DRAMVERIFY_MAX_AGE_DAYS))
		snprintf(why, sizeof(why), "stale: the verification in %s is %.0f days old (more "
			 "than %.0f); run `memwall verify` again", path, age,
			 MW_DRAMVERIFY_MAX_AGE_DAYS);
	if (why[0] && log)
		fprintf(log, "memwall run: DRAM verification: %s\n", why);
	json_t *failed = json_array();
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(v, "checks"), i, c)
		if (!passed(c))
			json_array_append(failed, json_object_get(c, "message"));
	const json_t *verdict = json_object_get(v, "verdict");
	out = json_pack("{s:{s:O?, s:O?, s:o, s:b, s:O?, s:O?, s:s, s:s, s:o}, s:o}",
			"verification", "verdict", verdict, "created_utc",
			json_object_get(v, "created_utc"), "age_days", mw_json_num(age), "stale",
			why[0] != '\0', "backend", json_object_get(v, "backend"), "layer",
			json_object_get(v, "layer"), "source", path, "fingerprint_sha256", sha,
			"failed_checks", failed, "verification_reason",
			why[0] ? json_string(why) : json_null());
out:
	json_decref(doc);
	return out;
}

/* ---- measuring ----------------------------------------------------------------------------- */

/* The boundaries at which every meter is read, in this order (a simulated PMU scripts each
 * window by the read that ends it: tests/data/sim/README.md). */
enum { S_IDLE0, S_IDLE1, S_READ, S_WRITE, S_PERF0, S_PERF1, S_COUNT };

struct meters {
	struct prb_dram *d, *r;             /* the backend under test; resctrl beside it */
	struct prb_dram_status st, rst;
	struct prb_dram_sample *s[S_COUNT]; /* d's readings at each boundary */
	struct prb_dram_sample *rs[S_COUNT];
	struct prb_dram_sample *w;          /* a window's delta, scratch */
	struct prb_dram_sample *idle;       /* the idle window's delta */
};

static void take(struct meters *m, int at)
{
	/* a failed read leaves its figures read-failed in the sample: the checks say so */
	(void)prb_dram_read(m->d, m->s[at]);
	if (m->r)
		(void)prb_dram_read(m->r, m->rs[at]);
}

static const struct prb_bytes *figure(const struct prb_dram_instance_sample *is, unsigned f)
{
	return f == PRB_DRAM_READ ? &is->read : f == PRB_DRAM_WRITE ? &is->write : &is->total;
}

static const struct prb_bytes *sum_figure(const struct prb_dram_sample *s, unsigned f)
{
	return f == PRB_DRAM_READ ? &s->read : f == PRB_DRAM_WRITE ? &s->write : &s->total;
}

static const char *figure_name(unsigned f)
{
	return f == PRB_DRAM_READ ? "read" : f == PRB_DRAM_WRITE ? "write" : "total";
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* An instance's name in messages: the PMU, with its CPU where several instances share a PMU
 * (one per socket). */
static void instance_label(const struct prb_dram_status *st, int i, char *buf, size_t n)
{
	int same = 0;
	for (int j = 0; j < st->n_instances; j++)
		same += !strcmp(st->instances[j].pmu, st->instances[i].pmu);
	if (same > 1)
		snprintf(buf, n, "%s@cpu%d", st->instances[i].pmu, st->instances[i].cpu);
	else
		snprintf(buf, n, "%s", st->instances[i].pmu);
}

static double pct(double measured, double expected)
{
	return expected > 0 ? (measured - expected) * 100.0 / expected : NAN;
}

/* One check: measured against expected, within threshold percent. what names the subject,
 * against the reference ("the expected bytes", "perf's bytes"). A measured 0 fails whatever
 * the threshold: a counter that saw nothing of the canary counts nothing. */
static void check(json_t *checks, const char *name, const char *subject, double expected,
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

/* A figure that was not counted: a failed check with its state, never a 0. */
static void not_counted(json_t *checks, const char *name, const char *subject,
			enum prb_state state)
{
	char msg[600];
	snprintf(msg, sizeof(msg), "%s: not counted (%s: %s)", subject, prb_state_name(state),
		 prb_state_reason(state));
	json_array_append_new(checks, json_pack("{s:s, s:s, s:n, s:n, s:n, s:n, s:s, s:s}",
		"name", name, "subject", subject, "expected_bytes", "measured_bytes", "error_pct",
		"threshold_pct", "verdict", "fail", "message", msg));
}

/* One canary pass: the window [a, b] of d against the stream's bytes, net of the idle rate.
 * f is the figure checked; expected what the stream moved of it. */
static json_t *pass_check(struct meters *m, const char *pname, int a, int b, unsigned f,
			  uint64_t expected, const struct eng_stream_sample *ss, bool nt,
			  json_t *checks)
{
	const struct prb_dram_status *st = &m->st;
	int n = st->n_instances;
	char name[200], subject[260], label[96];
	prb_dram_sample_delta(m->s[b], m->s[a], m->w);
	json_t *inst = json_array();
	double sum = 0;
	bool all = true;
	enum prb_state bad = PRB_MEASURED;
	for (int i = 0; i < n; i++) {
		const struct prb_dram_instance_sample *is = &m->w->inst[i], *id = &m->idle->inst[i];
		const struct prb_bytes *got = figure(is, f), *idle = figure(id, f);
		/* the background over this window at the idle window's rate, both timed by the
		 * counters' own time_enabled */
		double bg = idle->state == PRB_MEASURED && id->time_enabled ?
				    (double)idle->bytes * (double)is->time_enabled /
					    (double)id->time_enabled : 0;
		double net = got->state == PRB_MEASURED ? (double)got->bytes - bg : NAN;
		double share = (double)expected / n;
		instance_label(st, i, label, sizeof(label));
		json_array_append_new(inst, json_pack("{s:s, s:s, s:i, s:f, s:o, s:f, s:o, s:s}",
			"name", label, "pmu", st->instances[i].pmu, "cpu", st->instances[i].cpu,
			"expected_bytes", share, "raw_bytes",
			got->state == PRB_MEASURED ? json_integer((json_int_t)got->bytes) : json_null(),
			"background_bytes", bg, "counted_bytes", mw_json_num(net), "state",
			prb_state_name(got->state)));
		snprintf(name, sizeof(name), "%s pass: %s", pname, label);
		snprintf(subject, sizeof(subject), "%s (%s pass, %s)", label, pname, figure_name(f));
		if (got->state != PRB_MEASURED) {
			not_counted(checks, name, subject, got->state);
			if (all)
				bad = got->state;
			all = false;
			continue;
		}
		check(checks, name, subject, share, net, MW_DRAMVERIFY_INSTANCE_PCT,
		      "its fair share of the expected bytes", NULL);
		sum += net;
	}
	snprintf(name, sizeof(name), "%s pass: sum", pname);
	snprintf(subject, sizeof(subject), "%s pass, %s, sum over %d instance%s", pname,
		 figure_name(f), n, n == 1 ? "" : "s");
	if (all)
		check(checks, name, subject, (double)expected, sum, MW_DRAMVERIFY_SUM_PCT,
		      "the expected bytes", "memwall");
	else
		not_counted(checks, name, subject, bad);
	const struct prb_bytes *s = sum_figure(m->w, f);
	return json_pack("{s:s, s:b, s:f, s:I, s:I, s:s, s:I, s:o, s:f, s:o}", "figure",
			 figure_name(f), "nontemporal", nt, "seconds", ss->seconds,
			 "stream_bytes_read", (json_int_t)ss->bytes_read, "stream_bytes_written",
			 (json_int_t)ss->bytes_written, "state", prb_state_name(s->state),
			 "expected_bytes", (json_int_t)expected, "counted_bytes",
			 all ? mw_json_num(sum) : json_null(), "threshold_pct",
			 MW_DRAMVERIFY_SUM_PCT, "instances", inst);
}

/* ---- perf ---------------------------------------------------------------------------------- */

/* The perf tool: o->perf as given, else "perf" on $PATH. false with why when there is none. */
static bool perf_find(const char *want, char *path, size_t n, char *why, size_t wn)
{
	if (want && !*want) {
		snprintf(why, wn, "not asked for (--no-perf)");
		return false;
	}
	if (want) {
		snprintf(path, n, "%s", want);
		if (access(path, X_OK) == 0)
			return true;
		snprintf(why, wn, "--perf %s: %s", want, strerror(errno));
		return false;
	}
	const char *env = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof(dirs), "%s", env && *env ? env : "/usr/bin:/bin");
	char *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(path, n, "%s/perf", *d ? d : ".");
		if (access(path, X_OK) == 0)
			return true;
	}
	snprintf(why, wn, "the kernel's perf tool is not on $PATH (install linux-tools or "
		 "linux-perf, or pass --perf PATH)");
	return false;
}

struct perf_job {
	struct mw_spawn sp;
	struct mw_error err;
	int rc;
};

static void *perf_thread(void *arg)
{
	struct perf_job *j = arg;
	j->rc = mw_spawn_run(&j->sp, &j->err);
	return NULL;
}

/* The count perf printed for event ev in its -x, output (perf-stat(1), "CSV FORMAT": counter
 * value, unit, event name, run time, percentage, ...): the line naming ev, else the k-th data
 * line (perf prints them in the order of -e). NaN with why when perf did not count it
 * ("<not counted>", "<not supported>") or printed nothing for it. */
static double perf_count(const char *text, const char *ev, int k, char *why, size_t n)
{
	char first[256] = "", kth[256] = "";
	bool named = false;
	int data = 0;
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[1024], *f[3] = { buf, NULL, NULL };
		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) ? len : sizeof(buf) - 1),
			 line);
		line = end ? end + 1 : NULL;
		if (buf[0] == '#' || !(f[1] = strchr(buf, ',')) || !(f[2] = strchr(f[1] + 1, ',')))
			continue;
		*f[1]++ = '\0';
		*f[2]++ = '\0';
		f[2][strcspn(f[2], ",")] = '\0';
		if (!named && !strcmp(f[2], ev)) {
			snprintf(first, sizeof(first), "%.200s", buf);
			named = true;
		}
		if (data++ == k)
			snprintf(kth, sizeof(kth), "%.200s", buf);
	}
	const char *v = named ? first : kth;
	if (!named && !kth[0]) {
		snprintf(why, n, "perf printed no count for %s", ev);
		return NAN;
	}
	char *endp = NULL;
	double x = strtod(v, &endp);
	if (endp == v || *endp || !(x >= 0)) {
		snprintf(why, n, "perf did not count %s: \"%s\"", ev, v);
		return NAN;
	}
	return x;
}

/* perf stat over the canary: memwall reads its counters, starts `perf stat -a -x, -e EVENTS --
 * sleep S`, streams the canary within perf's window, waits for perf and reads again; then
 * compares, PMU by PMU and figure by figure. */
static json_t *perf_check(struct meters *m, struct eng_stream *es,
			  const struct mw_dramverify_options *o, json_t *checks)
{
	char path[4096], why[600] = "", secs[32];
	if (!perf_find(o->perf, path, sizeof(path), why, sizeof(why)))
		return json_pack("{s:b, s:s}", "available", 0, "reason", why);
	const struct prb_dram_status *st = &m->st;
	/* the distinct (PMU, event) pairs: instances sharing a PMU (one per socket) are one
	 * event to perf, which sums it over the PMU's cpumask */
	struct {
		struct prb_dram_event_desc ev;
	} *evs = calloc(PRB_DRAM_MAX_INSTANCES * PRB_DRAM_MAX_EVENTS, sizeof(*evs));
	char *list = calloc(1, 65536);
	int nev = 0;
	json_t *out = NULL;
	for (int i = 0; evs && list && i < st->n_instances; i++) {
		struct prb_dram_event_desc d[PRB_DRAM_MAX_EVENTS];
		int k = prb_dram_events(m->d, i, d, PRB_DRAM_MAX_EVENTS);
		for (int j = 0; j < k; j++) {
			bool seen = false;
			for (int e = 0; e < nev && !seen; e++)
				seen = !strcmp(evs[e].ev.perf, d[j].perf);
			if (seen)
				continue;
			evs[nev++].ev = d[j];
			size_t len = strlen(list);
			snprintf(list + len, 65536 - len, "%s%s", len ? "," : "", d[j].perf);
		}
	}
	if (!evs || !list || !nev) {
		out = json_pack("{s:b, s:s, s:s}", "available", 0, "path", path, "reason",
				!nev && evs && list ? "this backend's counters are files (resctrl), "
				"which perf does not read" : "out of memory");
		goto out;
	}
	snprintf(secs, sizeof(secs), "%.3f", o->perf_seconds);
	char a1[] = "stat", a2[] = "-a", a3[] = "-x", a4[] = ",", a5[] = "-e", a6[] = "--",
	     a7[] = "sleep";
	char *argv[] = { path, a1, a2, a3, a4, a5, list, a6, a7, secs, NULL };
	struct perf_job job = { .sp = { .argv = argv,
					.timeout_ms = (int)(o->perf_seconds * 1000) + 30000 } };
	mw_error_clear(&job.err);
	pthread_t th;
	take(m, S_PERF0);
	if (pthread_create(&th, NULL, perf_thread, &job)) {
		out = json_pack("{s:b, s:s, s:s}", "available", 0, "path", path, "reason",
				"cannot start a thread for perf");
		goto out;
	}
	/* perf opens its counters within the first fifth of its window (it execs, parses and
	 * opens a few events); the canary streams in the middle three fifths, so both windows
	 * hold all of it and differ only by idle traffic at their edges */
	uint64_t t0 = mw_now_ns(), span = (uint64_t)(o->perf_seconds * 1e9);
	sleep_ns(span / 5);
	struct eng_stream_sample ss;
	int passes = 0;
	while (passes == 0 || mw_now_ns() - t0 < span * 4 / 5) {
		if (eng_stream_run(es, ENG_STREAM_READ, false, &ss))
			break;
		passes++;
	}
	pthread_join(th, NULL);
	take(m, S_PERF1);
	if (job.rc < 0 || job.sp.exit_code != 0) {
		char first[300] = "";
		if (job.sp.err)
			snprintf(first, sizeof(first), "%.*s", (int)strcspn(job.sp.err, "\n"),
				 job.sp.err);
		snprintf(why, sizeof(why), "%.200s %s: %.300s", path,
			 job.rc < 0 ? "could not run" : "failed",
			 job.rc < 0 ? job.err.text : first[0] ? first : "(no message)");
		out = json_pack("{s:b, s:s, s:s}", "available", 0, "path", path, "reason", why);
		mw_spawn_free(&job.sp);
		goto out;
	}
	prb_dram_sample_delta(m->s[S_PERF1], m->s[S_PERF0], m->w);
	json_t *rows = json_array();
	bool complete = true;
	/* per PMU name and figure: perf's counts times bytes per count, against memwall's sum
	 * over the instances of that PMU */
	for (int e = 0; e < nev && complete; e++) {
		const char *slash = strchr(evs[e].ev.perf, '/');
		size_t plen = slash ? (size_t)(slash - evs[e].ev.perf) : strlen(evs[e].ev.perf);
		bool first = true;
		for (int p = 0; p < e && first; p++)
			first = !(evs[p].ev.figure == evs[e].ev.figure &&
				  !strncmp(evs[p].ev.perf, evs[e].ev.perf, plen) &&
				  evs[p].ev.perf[plen] == '/');
		if (!first)
			continue;
		double perf_bytes = 0, mw_bytes = 0;
		enum prb_state state = PRB_MEASURED;
		for (int q = e; q < nev; q++) {
			if (evs[q].ev.figure != evs[e].ev.figure ||
			    strncmp(evs[q].ev.perf, evs[e].ev.perf, plen) || evs[q].ev.perf[plen] != '/')
				continue;
			double c = perf_count(job.sp.err ? job.sp.err : "", evs[q].ev.perf, q, why,
					      sizeof(why));
			if (isnan(c)) {
				complete = false;
				break;
			}
			perf_bytes += c * evs[q].ev.bytes_per_count;
		}
		if (!complete)
			break;
		for (int i = 0; i < st->n_instances; i++) {
			if (strlen(st->instances[i].pmu) != plen ||
			    strncmp(st->instances[i].pmu, evs[e].ev.perf, plen))
				continue;
			const struct prb_bytes *b = figure(&m->w->inst[i], evs[e].ev.figure);
			if (b->state != PRB_MEASURED && state == PRB_MEASURED)
				state = b->state;
			mw_bytes += (double)b->bytes;
		}
		char name[160], subject[200];
		snprintf(name, sizeof(name), "perf: %.*s %s", (int)plen, evs[e].ev.perf,
			 figure_name(evs[e].ev.figure));
		snprintf(subject, sizeof(subject), "%.*s (%s, perf stat against memwall)",
			 (int)plen, evs[e].ev.perf, figure_name(evs[e].ev.figure));
		if (state != PRB_MEASURED)
			not_counted(checks, name, subject, state);
		else
			check(checks, name, subject, perf_bytes, mw_bytes, MW_DRAMVERIFY_PERF_PCT,
			      "perf's bytes", "memwall");
		char pmu[96];
		snprintf(pmu, sizeof(pmu), "%.*s", (int)plen, evs[e].ev.perf);
		json_array_append_new(rows, json_pack("{s:s, s:s, s:f, s:o}", "pmu", pmu, "figure", figure_name(evs[e].ev.figure), "perf_bytes",
			perf_bytes, "memwall_bytes",
			state == PRB_MEASURED ? json_real(mw_bytes) : json_null()));
	}
	if (!complete) {
		json_decref(rows);
		out = json_pack("{s:b, s:s, s:s}", "available", 0, "path", path, "reason", why);
	} else {
		out = json_pack("{s:b, s:s, s:s, s:f, s:i, s:o, s:f}", "available", 1, "path", path,
				"events", list, "seconds", o->perf_seconds, "canary_passes", passes,
				"pmus", rows, "threshold_pct", MW_DRAMVERIFY_PERF_PCT);
	}
	mw_spawn_free(&job.sp);
out:
	free(evs);
	free(list);
	return out;
}

/* resctrl MBM against the memory controllers over both canary passes. */
static json_t *resctrl_check(struct meters *m, const char *why, json_t *checks)
{
	if (!m->r)
		return json_pack("{s:b, s:s}", "available", 0, "reason", why);
	struct prb_dram_sample *w = m->w;
	prb_dram_sample_delta(m->s[S_WRITE], m->s[S_IDLE1], w);
	struct prb_bytes imc = w->total;
	prb_dram_sample_delta(m->rs[S_WRITE], m->rs[S_IDLE1], w);
	struct prb_bytes res = w->total;
	char subject[200];
	snprintf(subject, sizeof(subject), "resctrl MBM against the memory controllers (%s), "
		 "both canary passes", m->st.backend);
	if (imc.state != PRB_MEASURED || res.state != PRB_MEASURED)
		not_counted(checks, "resctrl: total", subject,
			    imc.state != PRB_MEASURED ? imc.state : res.state);
	else
		check(checks, "resctrl: total", subject, (double)imc.bytes, (double)res.bytes,
		      MW_DRAMVERIFY_RESCTRL_PCT, "the memory controllers' bytes", "resctrl");
	return json_pack("{s:b, s:i, s:o, s:o, s:f}", "available", 1, "domains",
			 m->rst.n_instances, "controllers_bytes",
			 imc.state == PRB_MEASURED ? json_integer((json_int_t)imc.bytes) : json_null(),
			 "resctrl_bytes",
			 res.state == PRB_MEASURED ? json_integer((json_int_t)res.bytes) : json_null(),
			 "threshold_pct", MW_DRAMVERIFY_RESCTRL_PCT);
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

/* The idle window, then the two passes, each window ended by the next reading. 0, or -errno
 * with why. *nt says whether the write pass had non-temporal stores. */
static int stream_passes(struct meters *m, struct eng_stream *es, int idle_ms,
			 struct eng_stream_sample *rs, struct eng_stream_sample *ws, bool *nt,
			 char *why, size_t n)
{
	take(m, S_IDLE0);
	sleep_ns((uint64_t)idle_ms * 1000000ull);
	take(m, S_IDLE1);
	int rc = eng_stream_run(es, ENG_STREAM_READ, false, rs);
	if (rc < 0) {
		snprintf(why, n, "the read pass failed: %s", strerror(-rc));
		return rc;
	}
	take(m, S_READ);
	*nt = true;
	rc = eng_stream_run(es, ENG_STREAM_COPY, true, ws);
	if (rc == -ENOTSUP) /* no non-temporal stores in this kernel table */
		rc = eng_stream_run(es, ENG_STREAM_COPY, *nt = false, ws);
	if (rc < 0) {
		snprintf(why, n, "the write pass failed: %s", strerror(-rc));
		return rc;
	}
	take(m, S_WRITE);
	return 0;
}

/* The idle window per instance: its total and its time. */
static json_t *idle_json(const struct meters *m)
{
	json_t *a = json_array();
	for (int i = 0; a && i < m->st.n_instances; i++) {
		char label[96];
		const struct prb_dram_instance_sample *is = &m->idle->inst[i];
		instance_label(&m->st, i, label, sizeof(label));
		json_array_append_new(a, json_pack("{s:s, s:o, s:I}", "name", label, "total_bytes",
			is->total.state == PRB_MEASURED ? json_integer((json_int_t)is->total.bytes) :
							  json_null(),
			"time_enabled_ns", (json_int_t)is->time_enabled));
	}
	return a;
}

static json_t *thresholds_json(void)
{
	return json_pack("{s:f, s:f, s:f, s:f}", "sum_pct", MW_DRAMVERIFY_SUM_PCT,
			 "instance_pct", MW_DRAMVERIFY_INSTANCE_PCT, "perf_pct",
			 MW_DRAMVERIFY_PERF_PCT, "resctrl_pct", MW_DRAMVERIFY_RESCTRL_PCT);
}

int mw_dramverify_run(const struct mw_dramverify_options *o, json_t **record, char *why,
		      size_t n)
{
	struct prb_system *sys = NULL;
	struct prb_error perr = { 0 };
	struct eng_stream *es = NULL;
	struct eng_error eerr = { 0 };
	struct meters *m = calloc(1, sizeof(*m));
	json_t *rec = NULL, *machine = NULL, *fp = NULL, *checks = NULL;
	char sha[65], llc_src[512] = "", rwhy[800] = "";
	uint64_t llc = 0;
	int rc = -ENOMEM;

	*record = NULL;
	why[0] = '\0';
	if (!m)
		goto out;
	for (int i = 0; i < S_COUNT; i++)
		if (!(m->s[i] = calloc(1, sizeof(*m->s[i]))) ||
		    !(m->rs[i] = calloc(1, sizeof(*m->rs[i]))))
			goto out;
	if (!(m->w = calloc(1, sizeof(*m->w))) || !(m->idle = calloc(1, sizeof(*m->idle))))
		goto out;
	if ((rc = prb_system_open(&sys, o->sysfs, &perr)) < 0) {
		snprintf(why, n, "%s: %s", perr.source, perr.text);
		rc = -ENOENT;
		goto out;
	}
	struct prb_dram_options dopt = { .backend = o->backend };
	rc = prb_dram_open(&m->d, sys, &dopt, &m->st);
	if (rc < 0) {
		snprintf(why, n, "%s", m->st.reason);
		rc = rc == -EINVAL && !m->st.backend[0] ? -EINVAL : -ENOENT;
		goto out;
	}
	/* a second meter: resctrl beside memory-controller counters */
	if (strcmp(m->st.backend, "resctrl")) {
		struct prb_dram_options ropt = { .backend = "resctrl" };
		/* Nobody asked for resctrl: verify looks for it as a second meter, so its reason
		 * is said as that, not as prb_dram_open's "was asked for" (issue 44). */
		if (prb_dram_open(&m->r, sys, &ropt, &m->rst) < 0) {
			snprintf(rwhy, sizeof(rwhy), "no second meter: verify reads resctrl beside "
				 "the backend where it exists, and here %.600s",
				 m->rst.missing[0] ? m->rst.missing : m->rst.reason);
			m->r = NULL;
		}
	} else {
		snprintf(rwhy, sizeof(rwhy), "resctrl is the backend under test: no second meter");
	}
	bool llc_known = eng_llc_size(&llc, llc_src, sizeof(llc_src)) == 0 && llc > 0;
	struct eng_stream_options sopt = { .threads = o->threads,
					   .bytes = canary_bytes(o->bytes, llc_known, llc) };
	if ((rc = eng_stream_new(&es, &sopt, &eerr)) < 0) {
		snprintf(why, n, "cannot set up streaming: %s%s%s", eerr.source,
			 eerr.source[0] ? ": " : "", eerr.text);
		goto out;
	}
	if (o->log)
		fprintf(o->log, "memwall verify: %s (%d instances) on the %s layer; canary %.1f MiB; "
			"idle window %d ms\n", m->st.backend, m->st.n_instances,
			prb_counter_backend(), (double)eng_stream_bytes(es) / 1048576.0, o->idle_ms);

	struct eng_stream_sample rs, ws;
	bool nt = true;
	if ((rc = stream_passes(m, es, o->idle_ms, &rs, &ws, &nt, why, n)) < 0)
		goto out;

	checks = json_array();
	prb_dram_sample_delta(m->s[S_IDLE1], m->s[S_IDLE0], m->idle);
	bool split = (m->st.provides & (PRB_DRAM_READ | PRB_DRAM_WRITE)) ==
		     (PRB_DRAM_READ | PRB_DRAM_WRITE);
	/* a plain store reads the line before writing it (write-allocate): the controller sees
	 * one more read per written byte, which a total then holds */
	uint64_t wr_total = ws.bytes_read + ws.bytes_written + (nt ? 0 : ws.bytes_written);
	/* one statement each: the checks are listed in this order */
	json_t *rp = pass_check(m, "read", S_IDLE1, S_READ, split ? PRB_DRAM_READ : PRB_DRAM_TOTAL,
				rs.bytes_read + rs.bytes_written, &rs, false, checks);
	json_t *wp = pass_check(m, "write", S_READ, S_WRITE,
				split ? PRB_DRAM_WRITE : PRB_DRAM_TOTAL,
				split ? ws.bytes_written : wr_total, &ws, nt, checks);
	json_t *passes = json_pack("{s:o, s:o}", "read", rp, "write", wp);
	json_t *resctrl = resctrl_check(m, rwhy, checks);
	json_t *perf = perf_check(m, es, o, checks);

	json_t *idle_inst = idle_json(m);
	bool pass = true;
	size_t i;
	json_t *c;
	json_array_foreach(checks, i, c)
		pass &= passed(c);

	if (!(machine = mw_machine_describe(NULL)) ||
	    !(fp = mw_dramcal_fingerprint(machine, &m->st, sha))) {
		rc = -ENOMEM;
		goto out;
	}
	char now[32];
	mw_utc_now(now, sizeof(now), false);
	json_t *inst = json_array();
	for (int k = 0; k < m->st.n_instances; k++)
		json_array_append_new(inst, json_pack("{s:s, s:i}", "pmu", m->st.instances[k].pmu,
						      "cpu", m->st.instances[k].cpu));
	rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O, s:s, s:s, s:o, s:o,"
			" s:{s:I, s:o, s:s, s:i, s:s},"
			" s:{s:i, s:o}, s:s, s:o, s:o, s:o, s:o, s:o}",
			"schema", MW_DRAMVERIFY_SCHEMA, "created_utc", now, "memwall_version",
			mw_version(), "verdict", pass ? "pass" : "fail", "layer",
			prb_counter_backend(), "fingerprint_sha256", sha, "fingerprint", fp,
			"backend", m->st.backend, "description", m->st.description, "caveat",
			m->st.caveat[0] ? json_string(m->st.caveat) : json_null(), "instances", inst,
			"canary", "bytes", (json_int_t)eng_stream_bytes(es), "llc_bytes",
			llc_known ? json_integer((json_int_t)llc) : json_null(), "llc_source",
			llc_known ? llc_src : "unknown: sysfs does not say", "threads", o->threads,
			"stream_kernels", eng_stream_kernels(es),
			"idle", "ms", o->idle_ms, "instances", idle_inst,
			"assumption", "each instance's fair share is the expected bytes divided by "
			"the number of instances: memory interleaved evenly over every instance",
			"thresholds", thresholds_json(), "passes", passes, "perf", perf, "resctrl",
			resctrl, "checks", checks);
	checks = NULL;
	if (!rec) {
		rc = -ENOMEM;
		goto out;
	}
	*record = rec;
	rc = 0;
out:
	if (rc == -ENOMEM && !why[0])
		snprintf(why, n, "out of memory");
	json_decref(checks);
	json_decref(fp);
	json_decref(machine);
	eng_stream_free(es);
	if (m) {
		prb_dram_close(m->d);
		prb_dram_close(m->r);
		for (int k = 0; k < S_COUNT; k++) {
			free(m->s[k]);
			free(m->rs[k]);
		}
		free(m->w);
		free(m->idle);
		free(m);
	}
	prb_system_close(sys);
	return rc;
}
