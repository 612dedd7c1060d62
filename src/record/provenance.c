/* src/record/provenance.c: what counted a record's DRAM figures (provenance.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "dram_verify.h"
#include "mw.h"
#include "provenance.h"
#include "text.h"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static double jnum(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *mw_dram_source_name(enum mw_dram_source s)
{
	static const char *const names[] = { [MW_DRAM_HARDWARE] = "hardware",
					     [MW_DRAM_SIMULATED] = "simulated",
					     [MW_DRAM_NONE] = "none" };
	return names[s];
}

void mw_provenance_of(const json_t *doc, struct mw_provenance *p)
{
	const json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	const json_t *cal = json_object_get(dram, "calibration");
	const json_t *ver = json_object_get(dram, "verification");
	*p = (struct mw_provenance){ .source = MW_DRAM_NONE, .cal_error_pct = NAN,
				     .cal_age_days = NAN, .verify_age_days = NAN };
	p->synthetic = json_is_true(json_object_get(json_object_get(doc, "model"), "synthetic"));
	const json_t *quota = json_object_get(json_object_get(doc, "machine"), "cpu_quota");
	p->cpu_quota = json_is_number(json_object_get(quota, "cpus"))
			       ? json_number_value(json_object_get(quota, "cpus"))
			       : NAN;
	p->quota_file = jstr(quota, "file");
	p->threads = json_integer_value(json_object_get(json_object_get(doc, "engine"), "threads"));
	p->reference = json_object_get(doc, "reference") != NULL;
	p->layer = jstr(dram, "layer");
	p->backend = jstr(dram, "backend");
	p->caveat = jstr(dram, "caveat");
	p->n_instances = (int)json_array_size(json_object_get(dram, "instances"));
	if (!json_is_true(json_object_get(dram, "measured")))
		p->why_none = jstr(dram, "reason") ? jstr(dram, "reason")
						   : "the record has no DRAM counter reading";
	else
		p->source = p->layer && !strcmp(p->layer, "sim") ? MW_DRAM_SIMULATED
								 : MW_DRAM_HARDWARE;
	p->cal_present = json_is_object(cal);
	p->calibrated = p->cal_present && !json_is_true(json_object_get(cal, "stale"));
	p->cal_error_pct = jnum(dram, "calibration_error_pct");
	p->cal_age_days = jnum(cal, "age_days");
	p->cal_reason = jstr(dram, "calibration_reason");
	if (json_is_object(ver)) {
		p->verdict = jstr(ver, "verdict");
		p->verify_layer = jstr(ver, "layer");
		p->verify_age_days = jnum(ver, "age_days");
	}
}

const char *mw_provenance_mark(const struct mw_provenance *p)
{
	return p->source == MW_DRAM_SIMULATED ? " [SIMULATED]" : "";
}

const char *mw_provenance_tag(const struct mw_provenance *p, char *buf, size_t n)
{
	switch (p->source) {
	case MW_DRAM_SIMULATED:
		snprintf(buf, n, "SIMULATED (%s)", p->backend ? mw_esc(p->backend) : "?");
		break;
	case MW_DRAM_HARDWARE:
		snprintf(buf, n, "hardware (%s%s)", p->backend ? mw_esc(p->backend) : "?",
			 p->calibrated ? ", calibrated" : "");
		break;
	default:
		snprintf(buf, n, "engine-accounted only");
	}
	return buf;
}

/* "3 days old", "11 hours old", "age unknown". */
static const char *age_text(double days, char *buf, size_t n)
{
	if (isnan(days))
		snprintf(buf, n, "age unknown");
	else if (days < 1)
		snprintf(buf, n, "%.0f hours old", days * 24);
	else
		snprintf(buf, n, "%.0f day%s old", days, days < 1.5 ? "" : "s");
	return buf;
}

static void print_source(FILE *f, const struct mw_provenance *p)
{
	/* Text from the record is escaped for terminals and markdown (text.h). */
	const char *backend = p->backend ? mw_esc_md(p->backend) : "?";
	switch (p->source) {
	case MW_DRAM_SIMULATED:
		fprintf(f, "- **SIMULATED**: DRAM counts: the simulated PMU (MEMWALL_COUNTERS=sim, "
			   "counts scripted by a test), through the %s backend's plan over %d "
			   "instance%s. No DRAM byte here was counted by hardware.\n",
			backend, p->n_instances, p->n_instances == 1 ? "" : "s");
		break;
	case MW_DRAM_HARDWARE:
		fprintf(f, "- DRAM counts: hardware counters (the %s backend, %d instance%s, read "
			   "through the kernel's %s layer).\n",
			backend, p->n_instances, p->n_instances == 1 ? "" : "s",
			p->layer ? mw_esc_md(p->layer) : "?");
		break;
	default:
		if (p->why_mark[0])
			fprintf(f, "- DRAM counts: none (not measured %s); every MB/token figure here "
				   "is engine-accounted, computed from tensor shapes.\n", p->why_mark);
		else
			fprintf(f, "- DRAM counts: none (not measured: %s); every MB/token figure "
				   "here is engine-accounted, computed from tensor shapes.\n",
				mw_esc_md(p->why_none));
	}
	if (p->caveat && p->source != MW_DRAM_NONE)
		fprintf(f, "- Caveat of the %s backend: %s\n", backend, mw_esc_md(p->caveat));
}

void mw_provenance_print_md(FILE *f, const struct mw_provenance *p)
{
	char age[32];
	if (p->reference) {
		fprintf(f, "- Imported reference record: its figures were not measured by memwall.\n");
		return;
	}
	print_source(f, p);
	if (p->source != MW_DRAM_NONE) {
		if (p->calibrated)
			fprintf(f, "- Calibration: applies (the calibration's error on this figure "
				   "%+.1f %%, %s); the calibrated MB/token is an estimate beside the "
				   "counted one.\n", p->cal_error_pct,
				age_text(p->cal_age_days, age, sizeof(age)));
		else
			fprintf(f, "- Calibration: none applies (%s); figures are raw counts.\n",
				p->cal_reason ? mw_esc_md(p->cal_reason) : "none recorded");
		if (!p->verdict)
			fprintf(f, "- Verification: none on record (`memwall verify` checks the "
				   "counters against a known stream).\n");
		else
			fprintf(f, "- Verification: %s%s (%s%s).\n", !strcmp(p->verdict, "pass")
				? "passed" : "FAILED", p->verify_layer && !strcmp(p->verify_layer, "sim")
				? " on the SIMULATED PMU" : "",
				age_text(p->verify_age_days, age, sizeof(age)),
				!strcmp(p->verdict, "pass") ? "" : "; the counts may be wrong");
	}
	if (p->synthetic)
		fprintf(f, "- Model: SYNTHETIC weights (real shapes; bytes per token are real, the "
			   "tokens are not).\n");
	if (!isnan(p->cpu_quota))
		fprintf(f, "- CPU quota: the run's cgroup allowed %.2f CPUs (%s) to its %lld "
			   "thread%s: %s\n", p->cpu_quota, p->quota_file ? mw_esc_md(p->quota_file)
			   : "cgroup", p->threads, p->threads == 1 ? "" : "s",
			(double)p->threads > p->cpu_quota
				? "more than it allows, so they were throttled: tok/s and latency "
				  "are the quota's, not the machine's."
				: "within it, though the quota also caps the run's other threads "
				  "and its bursts.");
}

static json_t *num_or_null(double x)
{
	return isnan(x) ? json_null() : json_real(x);
}

json_t *mw_provenance_json(const struct mw_provenance *p)
{
	return json_pack("{s:s, s:s?, s:s?, s:s?, s:b, s:b, s:o, s:o, s:s?, s:s?, s:s?, s:o, s:o}",
			 "dram_source", mw_dram_source_name(p->source), "dram_layer", p->layer,
			 "dram_backend", p->backend, "dram_caveat", p->caveat, "model_synthetic",
			 p->synthetic, "calibrated", p->calibrated, "calibration_error_pct",
			 num_or_null(p->calibrated ? p->cal_error_pct : NAN),
			 "calibration_age_days", num_or_null(p->cal_age_days),
			 "calibration_reason", p->cal_reason, "verification", p->verdict,
			 "verification_layer", p->verify_layer, "verification_age_days",
			 num_or_null(p->verify_age_days), "cpu_quota", num_or_null(p->cpu_quota));
}

/* The words of a DRAM figure: its source, and for hardware its calibration and verification. */
static void dram_words(const struct mw_provenance *p, bool calibrated_figure, char *buf, size_t n)
{
	const char *backend = p->backend ? mw_esc(p->backend) : "?";
	char cal[64] = "";
	switch (p->source) {
	case MW_DRAM_SIMULATED:
		snprintf(buf, n, "SIMULATED (%s)", backend);
		return;
	case MW_DRAM_NONE:
		snprintf(buf, n, "not measured");
		return;
	default:
		break;
	}
	if (calibrated_figure && p->calibrated && !isnan(p->cal_error_pct))
		snprintf(cal, sizeof(cal), ", calibrated (error %+.1f %%)", p->cal_error_pct);
	else if (calibrated_figure)
		snprintf(cal, sizeof(cal), ", calibrated (error unknown)");
	snprintf(buf, n, "hardware (%s)%s, %s", backend, cal,
		 !p->verdict ? "not verified"
		 : strcmp(p->verdict, "pass") ? "verification FAILED"
		 : p->verify_layer && !strcmp(p->verify_layer, "sim") ? "verified on the SIMULATED PMU"
		 : "verified");
}

const char *mw_provenance_metric(const struct mw_provenance *p, const char *metric, char *buf,
				 size_t n)
{
	char words[256];
	if (p->reference)
		snprintf(words, sizeof(words), "imported reference (not measured by memwall)");
	else if (strstr(metric, "dram_"))
		dram_words(p, strstr(metric, "_calibrated") != NULL, words, sizeof(words));
	else if (!strncmp(metric, "engine_", 7))
		snprintf(words, sizeof(words), "engine-accounted");
	else if (!strncmp(metric, "energy_", 7))
		snprintf(words, sizeof(words), "hardware (package energy)");
	else
		snprintf(words, sizeof(words), "timed");
	snprintf(buf, n, "%s%s", words, p->synthetic ? ", SYNTHETIC weights" : "");
	return buf;
}

const char *mw_provenance_words(const struct mw_provenance *p, char *buf, size_t n)
{
	/* The DRAM figures' own words; a record without DRAM counters has engine-accounted
	 * figures only, which is what a series of such records is. */
	if (p->source == MW_DRAM_NONE && !p->reference)
		return mw_provenance_tag(p, buf, n);
	return mw_provenance_metric(p, "dram_MB_per_token", buf, n);
}

/* A run records its verification's age from the time the run started (created_utc) a moment
 * later (src/run/pipeline.c: the machine is described in between): the age the two dates give
 * may be short of the recorded one by that moment, never by an hour. */
#define AGE_SLACK_S 3600.0

static int bad(char *field, size_t fn, const char *f, char *why, size_t wn, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static int bad(char *field, size_t fn, const char *f, char *why, size_t wn, const char *fmt, ...)
{
	va_list ap;
	snprintf(field, fn, "%s", f);
	va_start(ap, fmt);
	vsnprintf(why, wn, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int check_verification(const json_t *doc, const json_t *dram, char *field, size_t fn,
			      char *why, size_t wn)
{
	const json_t *v = json_object_get(dram, "verification");
	const json_t *failed = json_object_get(v, "failed_checks"), *age_j = json_object_get(v,
											     "age_days");
	const char *verdict = jstr(v, "verdict"), *layer = jstr(v, "layer");
	const char *rlayer = jstr(dram, "layer"), *sha = jstr(v, "fingerprint_sha256");
	const char *csha = jstr(json_object_get(dram, "calibration"), "fingerprint_sha256");
	int64_t vt, rt;
	if (!json_is_object(v))
		return 0;
	if (verdict && json_is_array(failed) && (json_array_size(failed) != 0) !=
						   !strcmp(verdict, "fail"))
		return bad(field, fn, "counters.dram.verification.verdict", why, wn, "is \"%s\", "
			   "but failed_checks lists %zu failed check%s: the record was edited",
			   verdict, json_array_size(failed), json_array_size(failed) == 1 ? "" : "s");
	if (layer && rlayer && strcmp(layer, rlayer))
		return bad(field, fn, "counters.dram.verification.layer", why, wn, "is \"%s\", but "
			   "the run counted on the \"%s\" layer (counters.dram.layer): a run takes "
			   "only a verification of its own layer, and a simulated one is never a "
			   "hardware one", layer, rlayer);
	if (sha && csha && strcmp(sha, csha))
		return bad(field, fn, "counters.dram.verification.fingerprint_sha256", why, wn,
			   "is not the machine's fingerprint the run's calibration lookup used "
			   "(counters.dram.calibration.fingerprint_sha256): the record was edited");
	double age = json_is_number(age_j) ? json_number_value(age_j) : NAN;
	if (age < 0)
		return bad(field, fn, "counters.dram.verification.age_days", why, wn, "is %g: a "
			   "verification the run found cannot be younger than the run", age);
	bool stale = json_is_true(json_object_get(v, "stale"));
	if (stale != !(age <= MW_DRAMVERIFY_MAX_AGE_DAYS))
		return bad(field, fn, "counters.dram.verification.stale", why, wn, "is %s, but "
			   "age_days is %g: a verification is stale exactly when it is older than "
			   "%.0f days or of unknown age; the record was edited", stale ? "true" : "false",
			   age, MW_DRAMVERIFY_MAX_AGE_DAYS);
	const char *created = jstr(v, "created_utc");
	if (!created || mw_utc_parse(jstr(doc, "created_utc"), &rt))
		return 0;
	if (mw_utc_parse(created, &vt))
		return bad(field, fn, "counters.dram.verification.created_utc", why, wn, "'%s' is "
			   "not a UTC time such as 2026-11-21T07:36:00Z", created);
	if (vt > rt)
		return bad(field, fn, "counters.dram.verification.created_utc", why, wn, "is %s, "
			   "after the record's created_utc (%s): a run records a verification made "
			   "before it", created, jstr(doc, "created_utc"));
	double diff = (double)(rt - vt);
	if (!isnan(age) && (age * 86400.0 < diff - 1.0 || age * 86400.0 > diff + AGE_SLACK_S))
		return bad(field, fn, "counters.dram.verification.age_days", why, wn, "is %g, but "
			   "the verification (%s) is %.2f days older than the record (%s): the "
			   "record was edited", age, created, diff / 86400.0, jstr(doc, "created_utc"));
	return 0;
}

int mw_provenance_check(const json_t *doc, char *field, size_t fn, char *why, size_t wn)
{
	const json_t *quota = json_object_get(json_object_get(doc, "machine"), "cpu_quota");
	const json_t *cpus = json_object_get(quota, "cpus");
	if (cpus && !json_is_null(cpus) &&
	    !(json_is_number(cpus) && isfinite(json_number_value(cpus)) &&
	      json_number_value(cpus) > 0))
		return bad(field, fn, "machine.cpu_quota.cpus", why, wn, "is not a positive number "
			   "of CPUs: a cgroup quota is quota / period, both positive (null where none "
			   "applies)");
	return check_verification(doc, json_object_get(json_object_get(doc, "counters"), "dram"),
				  field, fn, why, wn);
}
