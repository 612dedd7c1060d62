/* src/run/dram_calibration.c: the calibration store and its use by runs (dram_calibration.h). */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dram_calibration.h"
#include "file.h"
#include "machine.h"
#include "metrics.h"
#include "version.h"

int mw_dramcal_store_path(char *buf, size_t n, struct mw_error *err)
{
	if (mw_state_path(buf, n, "calibration.json"))
		return mw_error_set(err, -ENOENT, "calibration store", "",
				    "no state folder: set MEMWALL_STATE_DIR, XDG_STATE_HOME or HOME");
	return 0;
}

/* ---- the fingerprint ----------------------------------------------------------------------- */

static void read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)n, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

/* The DIMM layout as the kernel's EDAC driver shows it
 * (Documentation/admin-guide/ras.rst: /sys/devices/system/edac/mc/mcX/dimmY/{size,
 * dimm_mem_type}): "mc0/dimm0 16384 MB DDR5", one string per DIMM, or null where there is no
 * EDAC driver (most desktops and every VM; SMBIOS type 17 needs root). */
static json_t *dimms_json(void)
{
	glob_t g;
	json_t *a = NULL;
	if (glob("/sys/devices/system/edac/mc/mc*/dimm*", 0, NULL, &g) != 0)
		return json_null();
	a = json_array();
	for (size_t i = 0; a && i < g.gl_pathc; i++) {
		char p[4200], size[64], type[64], name[512];
		snprintf(p, sizeof(p), "%s/size", g.gl_pathv[i]);
		read_line(p, size, sizeof(size));
		snprintf(p, sizeof(p), "%s/dimm_mem_type", g.gl_pathv[i]);
		read_line(p, type, sizeof(type));
		const char *mc = strstr(g.gl_pathv[i], "/mc/");
		snprintf(name, sizeof(name), "%s %s MB %s", mc ? mc + 4 : g.gl_pathv[i], size, type);
		json_array_append_new(a, json_string(name));
	}
	globfree(&g);
	return a ? a : json_null();
}

json_t *mw_dramcal_fingerprint(const json_t *machine, const struct prb_dram_status *st,
			       char sha[65])
{
	json_t *inst = json_array();
	for (int i = 0; inst && st && i < st->n_instances; i++) {
		char s[160];
		snprintf(s, sizeof(s), "%s@%d", st->instances[i].pmu, st->instances[i].cpu);
		json_array_append_new(inst, json_string(s));
	}
	/* The same fields, in the same function, as a series' machine key (src/record/series.c):
	 * here the DIMMs as this machine's EDAC driver shows them. */
	return mw_machine_fingerprint(machine, dimms_json(), st ? st->backend : NULL, inst, sha);
}

/* ---- the store ----------------------------------------------------------------------------- */

/* Reads the store at path into *out: a new object, or an empty store when the file does not
 * exist. Bounded: a file over MW_DRAMCAL_MAX_BYTES is refused, never read. */
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
			return mw_error_set(err, -errno, path, "", "cannot read the calibration "
					    "store: %s", strerror(errno));
		*out = json_pack("{s:s, s:{}}", "schema", MW_DRAMCAL_SCHEMA, "machines");
		return *out ? 0 : -ENOMEM;
	}
	/* Through the bounded reader (file.h): a FIFO, a device or a folder is refused by what
	 * it is, never blocked on or read forever. */
	if ((rc = mw_file_read(path, "calibration store", "", MW_DRAMCAL_MAX_BYTES, &text, &len,
			       err))) {
		if (rc == -EFBIG)
			snprintf(err->text, sizeof(err->text), "the calibration store is larger "
				 "than the %u bytes a store can hold: remove the file and run "
				 "`memwall calibrate` again", MW_DRAMCAL_MAX_BYTES);
		return rc;
	}
	*out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!*out)
		return mw_error_set(err, -EINVAL, path, "", "not valid JSON: %s (line %d): remove "
				    "the file and run `memwall calibrate` again", jerr.text,
				    jerr.line);
	const char *schema = json_string_value(json_object_get(*out, "schema"));
	if (!schema || strcmp(schema, MW_DRAMCAL_SCHEMA) ||
	    !json_is_object(json_object_get(*out, "machines"))) {
		json_decref(*out);
		*out = NULL;
		return mw_error_set(err, -EINVAL, path, "schema", "not a calibration store (want "
				    "\"schema\": \"" MW_DRAMCAL_SCHEMA "\" and a \"machines\" "
				    "object): point --calibration at a file `memwall calibrate` "
				    "wrote");
	}
	return 0;
}

int mw_json_write_atomic(const char *path, const json_t *doc, const char *what,
			 struct mw_error *err)
{
	char tmp[4200];
	int rc = mw_mkdir_parents(path), fd = -1;
	FILE *f = NULL;
	if (rc)
		return mw_error_set(err, rc, path, "", "cannot create the folder: %s (set "
				    "MEMWALL_STATE_DIR to a writable folder)", strerror(-rc));
	snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path);
	if ((fd = mkstemp(tmp)) < 0)
		return mw_error_set(err, -errno, path, "", "cannot write next to it: %s (set "
				    "MEMWALL_STATE_DIR to a writable folder)", strerror(errno));
	f = fdopen(fd, "w");
	if (!f || json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) || fputc('\n', f) < 0 ||
	    fflush(f) || fsync(fd)) {
		rc = -(errno ? errno : EIO);
		goto out;
	}
	if (fclose(f)) {
		f = NULL;
		rc = -errno;
		goto out;
	}
	f = NULL;
	fd = -1;
	if (rename(tmp, path))
		rc = -errno;
out:
	if (f)
		fclose(f);
	else if (fd >= 0)
		close(fd);
	if (rc) {
		unlink(tmp);
		return mw_error_set(err, rc, path, "", "cannot write %s: %s", what,
				    strerror(-rc));
	}
	return 0;
}

static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A copy of v, or null where it is absent (json_pack's "O" refuses NULL). */
static json_t *opt(const json_t *v)
{
	return v ? json_deep_copy(v) : json_null();
}

/* expected / counted from an error in percent: the factor that turns counted bytes into the
 * bytes the kernel moved. NaN when the error is unknown or the counter saw nothing. */
static double factor_of(double err_pct)
{
	return isnan(err_pct) || err_pct <= -100.0 ? NAN : 1.0 / (1.0 + err_pct / 100.0);
}

/* The calibration entry for calibrate's report: the read pass gives the read and total
 * errors (the traffic of decode is mostly reads), the copy pass the write error. Instances:
 * each one's share of the read pass's total, a diagnostic (an instance whose share stands out
 * may count wrongly, e.g. a wrong .scale). There is no per-instance factor: one would assume
 * the calibration pass spread its bytes evenly over the instances, which the hardware does
 * not promise (interleaving granularity, NUMA placement of the buffer), and would carry that
 * pass's imbalance into every run's per-instance figures. Only the sums are calibrated. */
static json_t *entry_of(const json_t *report, const json_t *fingerprint)
{
	const json_t *ps = json_object_get(report, "passes");
	const json_t *rp = json_object_get(ps, "read"), *wp = json_object_get(ps, "write");
	const json_t *re = json_object_get(rp, "error_pct"), *we = json_object_get(wp, "error_pct");
	double e[3] = { num(re, "read"), num(we, "write"), num(re, "total") };
	const json_t *in;
	const json_t *insts = json_object_get(rp, "instances");
	json_t *ia = json_array();
	size_t i;
	json_array_foreach(insts, i, in)
		json_array_append_new(ia, json_pack("{s:o, s:o, s:o}", "pmu",
						    opt(json_object_get(in, "pmu")), "cpu",
						    opt(json_object_get(in, "cpu")), "share_pct",
						    opt(json_object_get(in, "share_pct"))));
	char now[32];
	mw_utc_now(now, sizeof(now), false);
	return json_pack("{s:s, s:s, s:O, s:o, s:o, s:o, s:{s:o, s:o, s:o}, s:{s:o, s:o, s:o},"
			 " s:o, s:o}",
			 "created_utc", now, "memwall_version", mw_version(), "fingerprint",
			 fingerprint, "backend", opt(json_object_get(report, "backend")),
			 "working_set_bytes", opt(json_object_get(report, "working_set_bytes")),
			 "threads", opt(json_object_get(report, "threads")), "error_pct", "read",
			 mw_json_num(e[0]), "write", mw_json_num(e[1]), "total", mw_json_num(e[2]),
			 "factor", "read", mw_json_num(factor_of(e[0])), "write",
			 mw_json_num(factor_of(e[1])), "total", mw_json_num(factor_of(e[2])),
			 "instances", ia, "passes", opt(ps));
}

int mw_dramcal_save(const char *path, const json_t *report, const json_t *fingerprint,
		    const char *sha, struct mw_error *err)
{
	json_t *store = NULL, *entry = NULL;
	int rc = store_read(path, &store, err);
	if (rc)
		return rc;
	entry = entry_of(report, fingerprint);
	if (!entry) {
		rc = mw_error_set(err, -ENOMEM, path, "", "out of memory");
		goto out;
	}
	json_object_set(json_object_get(store, "machines"), sha, entry);
	rc = mw_json_write_atomic(path, store, "the calibration store", err);
out:
	json_decref(entry);
	json_decref(store);
	return rc;
}

/* ---- use by a run -------------------------------------------------------------------------- */

/* Days since an ISO 8601 UTC time ("2026-11-25T18:35:36Z"); NaN when it does not parse. */
static double age_days(const char *utc)
{
	struct tm tm = { 0 };
	if (!utc || !strptime(utc, "%Y-%m-%dT%H:%M:%S", &tm))
		return NAN;
	time_t then = timegm(&tm);
	return difftime(time(NULL), then) / 86400.0;
}

/* The fields of fingerprint a that differ from b, "kernel, microcode", into buf. */
static void differences(const json_t *a, const json_t *b, char *buf, size_t n)
{
	const char *k;
	json_t *v;
	size_t used = 0;
	buf[0] = '\0';
	json_object_foreach((json_t *)(uintptr_t)a, k, v) {
		if (json_equal(v, json_object_get(b, k)))
			continue;
		int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", k);
		if (w < 0 || (size_t)w >= n - used)
			break;
		used += (size_t)w;
	}
	if (!buf[0])
		snprintf(buf, n, "the fingerprint");
}

/* The newest entry of a store (for a mismatch: what was calibrated, and how it differs). */
static const json_t *newest(const json_t *machines)
{
	const json_t *best = NULL, *e;
	const char *k;
	json_object_foreach((json_t *)(uintptr_t)machines, k, e) {
		const char *t = json_string_value(json_object_get(e, "created_utc"));
		const char *bt = json_string_value(json_object_get(best, "created_utc"));
		if (!best || (t && bt && strcmp(t, bt) > 0))
			best = e;
	}
	return best;
}

/* Factors a calibration may hold: counters that miss nine bytes in ten, or count ten times
 * what moved, are broken, not calibrated. The error in percent follows: 1/f - 1. */
#define FACTOR_MIN 0.1
#define FACTOR_MAX 10.0

/* Why entry e cannot be applied (a figure no calibration can produce), into why; false
 * when every figure is plausible: each error_pct and factor null or finite and in range,
 * each factor the one its error gives. */
static bool implausible(const json_t *e, char *why, size_t n)
{
	static const char *const keys[] = { "read", "write", "total" };
	const json_t *ep = json_object_get(e, "error_pct"), *fa = json_object_get(e, "factor");
	const json_t *in;
	size_t i;
	if (!json_is_object(ep) || !json_is_object(fa)) {
		snprintf(why, n, "error_pct and factor are not objects");
		return true;
	}
	for (size_t k = 0; k < 3; k++) {
		const json_t *x = json_object_get(ep, keys[k]), *f = json_object_get(fa, keys[k]);
		double v = num(ep, keys[k]), fv = num(fa, keys[k]);
		if ((x && !json_is_null(x) && !(v >= 100.0 / FACTOR_MAX - 100.0 &&
						 v <= 100.0 / FACTOR_MIN - 100.0)) ||
		    (f && !json_is_null(f) && !(fv >= FACTOR_MIN && fv <= FACTOR_MAX)) ||
		    (!isnan(v) && !isnan(fv) && fabs(fv - factor_of(v)) > 1e-6 * fv)) {
			snprintf(why, n, "error_pct.%s %g and factor.%s %g are not a calibration's "
				 "(factors lie in %g..%g, factor = 1 / (1 + error_pct / 100))",
				 keys[k], v, keys[k], fv, FACTOR_MIN, FACTOR_MAX);
			return true;
		}
	}
	json_array_foreach(json_object_get(e, "instances"), i, in) {
		const json_t *f = json_object_get(in, "factor");
		double fv = num(in, "factor");
		if (f && !json_is_null(f) && !(fv >= FACTOR_MIN && fv <= FACTOR_MAX)) {
			snprintf(why, n, "instances[%zu].factor %g is outside %g..%g", i, fv,
				 FACTOR_MIN, FACTOR_MAX);
			return true;
		}
	}
	return false;
}

static json_t *without(const char *why, FILE *log)
{
	if (log)
		fprintf(log, "memwall run: DRAM calibration: %s\n", why);
	return json_pack("{s:n, s:s, s:n}", "calibration_error_pct", "calibration_reason", why,
			 "calibration");
}

json_t *mw_dramcal_for_run(const struct mw_dramcal_source *src, const json_t *fingerprint,
			   const char *sha, const char *basis, FILE *log)
{
	char path[1024], why[1600], diff[256];
	struct mw_error err;
	json_t *store = NULL, *out = NULL;
	mw_error_clear(&err);
	if (src->off)
		return without("not used (--no-calibration)", log);
	struct stat sb;
	if (src->file && stat(src->file, &sb) != 0) {
		snprintf(why, sizeof(why), "%s: %s (--calibration names a store `memwall "
			 "calibrate` wrote, e.g. ~/.local/state/memwall/calibration.json)", src->file,
			 strerror(errno));
		return without(why, log);
	}
	if (src->file)
		snprintf(path, sizeof(path), "%s", src->file);
	else if (mw_dramcal_store_path(path, sizeof(path), &err))
		return without(err.text, log);
	if (store_read(path, &store, &err)) {
		snprintf(why, sizeof(why), "%s: %.500s", path, err.text);
		return without(why, log);
	}
	const json_t *machines = json_object_get(store, "machines");
	const json_t *e = json_object_get(machines, sha);
	/* The key is only a name: the entry's own fingerprint must be this machine's too, or
	 * an entry copied under this machine's key would be applied. */
	bool match = e != NULL && json_equal(json_object_get(e, "fingerprint"), fingerprint);
	if (!e && !(e = newest(machines))) {
		snprintf(why, sizeof(why), "missing: %s has no calibration; run `memwall calibrate` "
			 "on this machine (or pass --calibration FILE)", path);
		out = without(why, log);
		goto out;
	}
	double age = age_days(json_string_value(json_object_get(e, "created_utc")));
	why[0] = '\0';
	if (!match) {
		differences(fingerprint, json_object_get(e, "fingerprint"), diff, sizeof(diff));
		snprintf(why, sizeof(why), "stale: %s holds no calibration of this machine (its "
			 "newest differs in %s); run `memwall calibrate` again", path, diff);
	} else if (age < -1.0) {
		/* A day's slack for clocks; a date in the future would never go stale. */
		snprintf(why, sizeof(why), "stale: the calibration in %s is dated %.0f days in the "
			 "future (created_utc %s); run `memwall calibrate` again", path, -age,
			 json_string_value(json_object_get(e, "created_utc")));
	} else if (!(age <= MW_DRAMCAL_MAX_AGE_DAYS)) {
		snprintf(why, sizeof(why), "stale: the calibration in %s is %.0f days old (more "
			 "than %.0f); run `memwall calibrate` again", path, age,
			 MW_DRAMCAL_MAX_AGE_DAYS);
	} else {
		char bad[400];
		if (implausible(e, bad, sizeof(bad))) {
			snprintf(why, sizeof(why), "implausible: the calibration in %s holds %s; "
				 "run `memwall calibrate` again", path, bad);
			mw_error_clear(&err);
			out = without(why, log);
			goto out;
		}
	}
	if (why[0] && log)
		fprintf(log, "memwall run: DRAM calibration: %s\n", why);
	const json_t *err_pct = json_object_get(json_object_get(e, "error_pct"), basis);
	out = json_pack("{s:o, s:o, s:{s:s, s:s, s:o, s:o, s:b, s:b, s:o, s:o, s:o, s:o}}",
			"calibration_error_pct", json_is_number(err_pct) ? opt(err_pct) : json_null(),
			"calibration_reason", why[0] ? json_string(why) : json_null(),
			"calibration", "source", path, "fingerprint_sha256", sha, "created_utc",
			opt(json_object_get(e, "created_utc")), "age_days", mw_json_num(age),
			"matches", match, "stale", why[0] != '\0', "backend",
			opt(json_object_get(e, "backend")), "error_pct",
			opt(json_object_get(e, "error_pct")), "factor",
			opt(json_object_get(e, "factor")), "instances",
			opt(json_object_get(e, "instances")));
out:
	json_decref(store);
	return out;
}
