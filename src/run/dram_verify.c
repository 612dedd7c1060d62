/* src/run/dram_verify.c: `memwall verify`'s store and its perf comparison (dram_verify.h); the
 * measurement and the record are verify_run.c's, the checks verify_checks.c's. */
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

#include "control.h"
#include "dram_calibration.h"
#include "dram_verify.h"
#include "verify_checks.h"
#include "dram_verify_entry.h"
#include "engine.h"
#include "file.h"
#include "machine.h"
#include "metrics.h"
#include "probes.h"
#include "spawn.h"
#include "text.h"
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
	char *text = NULL;
	size_t len = 0;
	int rc;
	*out = NULL;
	if (stat(path, &sb) != 0) {
		if (errno != ENOENT)
			return mw_error_set(err, -errno, path, "", "cannot read the verification "
					    "store: %s", strerror(errno));
		*out = json_pack("{s:s, s:{}}", "schema", MW_DRAMVERIFY_STORE_SCHEMA, "machines");
		return *out ? 0 : -ENOMEM;
	}
	/* Through the bounded reader (file.h), as the calibration store is: a FIFO, a device or
	 * a folder is refused by what it is, never blocked on or read forever. */
	if ((rc = mw_file_read(path, "verification store", "", MW_DRAMCAL_MAX_BYTES, &text, &len,
			       err))) {
		if (rc == -EFBIG)
			snprintf(err->text, sizeof(err->text), "the verification store is larger "
				 "than the %u bytes a store can hold: remove it and run `memwall "
				 "verify` again", MW_DRAMCAL_MAX_BYTES);
		return rc;
	}
	*out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
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
	char ewhy[300];
	double age = NAN;
	if (!v) {
		snprintf(why, sizeof(why), "missing: %s holds no verification of this machine on "
			 "the %s counter layer%s; run `memwall verify` here", path, layer,
			 json_object_size(m) ? " (only of another layer)" : "");
		out = without(why, log);
		goto out;
	}
	/* an entry is taken only when it says of itself what verify wrote (issue 43) */
	if (mw_dramverify_entry_check(v, sha, layer, &age, ewhy, sizeof(ewhy))) {
		snprintf(why, sizeof(why), "missing: the verification of this machine on the %s "
			 "layer in %s cannot be taken: %s; run `memwall verify` here", layer, path,
			 ewhy);
		out = without(why, log);
		goto out;
	}
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
		if (!mw_verify_passed(c))
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

/* ---- measuring: verify_run.c; the checks: verify_checks.c --------------------------------- */

/* Ends early on a stop (SIGINT or SIGTERM, caught by `memwall verify`: control.h), so that an
 * idle window of minutes does not outlive a Ctrl-C. In slices of 10 ms: the signal may land
 * on perf's thread and leave this one's nanosleep uninterrupted. */
static void sleep_ns(uint64_t ns)
{
	uint64_t until = mw_now_ns() + ns;
	for (uint64_t now = mw_now_ns(); now < until && !mw_run_stopped(); now = mw_now_ns()) {
		uint64_t left = until - now < 10000000ull ? until - now : 10000000ull;
		struct timespec ts = { 0, (long)left };
		nanosleep(&ts, NULL);
	}
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
	/* perf prints a count as a whole number below 2^64: "inf", "nan" or "1e400" (strtod's
	 * HUGE_VAL) is none it made, and as a reference it would fail every check (-nan %) */
	if (!isfinite(x) || x >= 0x1p64) {
		snprintf(why, n, "perf printed \"%s\" for %s, which is no count (perf prints whole "
			 "numbers below 2^64)", v, ev);
		return NAN;
	}
	return x;
}

/* Text from perf (its messages, its counts) or from the environment (its path) as a JSON
 * string: bytes that are not UTF-8, or a character cut at a buffer's end, become U+FFFD, so
 * the record can always be built (jansson refuses invalid UTF-8). NULL only without memory. */
static json_t *text_json(const char *s)
{
	char *fixed = mw_utf8_fix(s);
	json_t *j = fixed ? json_string(fixed) : NULL;
	free(fixed);
	return j;
}

/* perf stat over the canary: memwall reads its counters, starts `perf stat -a -x, -e EVENTS --
 * sleep S`, streams the canary within perf's window, waits for perf and reads again; then
 * compares, PMU by PMU and figure by figure. */
json_t *mw_verify_perf_check(struct mw_verify_meters *m, struct eng_stream *es,
			     const struct mw_dramverify_options *o, json_t *checks)
{
	char path[4096], why[600] = "", secs[32];
	if (!perf_find(o->perf, path, sizeof(path), why, sizeof(why)))
		return json_pack("{s:b, s:o}", "available", 0, "reason", text_json(why));
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
		int k = mw_verify_events(m, i, d, NULL, PRB_DRAM_MAX_EVENTS);
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
		out = json_pack("{s:b, s:o, s:s}", "available", 0, "path", text_json(path), "reason",
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
	int p0 = mw_verify_take(m);
	if (pthread_create(&th, NULL, perf_thread, &job)) {
		out = json_pack("{s:b, s:o, s:s}", "available", 0, "path", text_json(path), "reason",
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
	while ((passes == 0 || mw_now_ns() - t0 < span * 4 / 5) && !mw_run_stopped()) {
		if (eng_stream_run(es, ENG_STREAM_READ, false, &ss))
			break;
		passes++;
	}
	pthread_join(th, NULL);
	int p1 = mw_verify_take(m);
	if (job.rc < 0 || job.sp.exit_code != 0) {
		char first[300] = "";
		if (job.sp.err)
			snprintf(first, sizeof(first), "%.*s", (int)strcspn(job.sp.err, "\n"),
				 job.sp.err);
		snprintf(why, sizeof(why), "%.200s %s: %.300s", path,
			 job.rc < 0 ? "could not run" : "failed",
			 job.rc < 0 ? job.err.text : first[0] ? first : "(no message)");
		out = json_pack("{s:b, s:o, s:o}", "available", 0, "path", text_json(path), "reason",
				text_json(why));
		mw_spawn_free(&job.sp);
		goto out;
	}
	prb_dram_sample_delta(m->s[p1], m->s[p0], m->w);
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
			const struct prb_bytes *b = mw_verify_figure(&m->w->inst[i], evs[e].ev.figure);
			if (b->state != PRB_MEASURED && state == PRB_MEASURED)
				state = b->state;
			mw_bytes += (double)b->bytes;
		}
		char name[160], subject[200];
		snprintf(name, sizeof(name), "perf: %.*s %s", (int)plen, evs[e].ev.perf,
			 mw_verify_figure_name(evs[e].ev.figure));
		snprintf(subject, sizeof(subject), "%.*s (%s, perf stat against memwall)",
			 (int)plen, evs[e].ev.perf, mw_verify_figure_name(evs[e].ev.figure));
		if (state != PRB_MEASURED)
			mw_verify_not_counted(checks, name, subject, state);
		else
			mw_verify_check(checks, name, subject, perf_bytes, mw_bytes,
					MW_DRAMVERIFY_PERF_PCT, "perf's bytes", "memwall");
		char pmu[96];
		snprintf(pmu, sizeof(pmu), "%.*s", (int)plen, evs[e].ev.perf);
		json_array_append_new(rows, json_pack("{s:s, s:s, s:f, s:o}", "pmu", pmu, "figure", mw_verify_figure_name(evs[e].ev.figure), "perf_bytes",
			perf_bytes, "memwall_bytes",
			state == PRB_MEASURED ? json_real(mw_bytes) : json_null()));
	}
	if (!complete) {
		json_decref(rows);
		out = json_pack("{s:b, s:o, s:o}", "available", 0, "path", text_json(path), "reason",
				text_json(why));
	} else {
		out = json_pack("{s:b, s:o, s:s, s:f, s:i, s:o, s:f}", "available", 1, "path",
				text_json(path),
				"events", list, "seconds", o->perf_seconds, "canary_passes", passes,
				"pmus", rows, "threshold_pct", MW_DRAMVERIFY_PERF_PCT);
	}
	mw_spawn_free(&job.sp);
out:
	free(evs);
	free(list);
	return out;
}

