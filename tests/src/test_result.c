/* tests/src/test_result.c: src/record/result.c and src/sha256.c: deriving and validating records (an
 * edited figure must be caught and named), unique atomic writes that survive SIGKILL, the
 * shipped reference record, and SHA-256 against FIPS 180-4's examples. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture_result.h"
#include "report.h"
#include "result.h"
#include "sha256.h"
#include "test.h"

static char scratch[256];

/* mw_report_print's Markdown page of doc, malloc'd. */
static char *report_md(const json_t *doc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	mw_report_print(f, doc, MW_FORMAT_MD);
	fclose(f);
	return buf;
}

static void test_sha256(void)
{
	char hex[65];
	/* FIPS 180-4 examples (NIST CSRC "Examples with intermediate values": SHA256.pdf,
	 * SHA2_Additional.pdf). */
	mw_sha256_hex("abc", 3, hex);
	T_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	mw_sha256_hex("", 0, hex);
	T_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	mw_sha256_hex(two, strlen(two), hex);
	T_EQ_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* One million 'a', fed in uneven pieces to cross block boundaries. */
	static char a[1000000];
	memset(a, 'a', sizeof(a));
	struct mw_sha256 s;
	mw_sha256_init(&s);
	for (size_t off = 0, step = 1; off < sizeof(a); off += step, step = step * 3 % 997 + 1)
		mw_sha256_update(&s, a + off, off + step > sizeof(a) ? sizeof(a) - off : step);
	mw_sha256_final(&s, hex);
	T_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* Files: the same digest, and the size. */
	char path[512];
	snprintf(path, sizeof(path), "%s/abc.txt", scratch);
	FILE *f = fopen(path, "w");
	fputs("abc", f);
	fclose(f);
	uint64_t bytes = 0;
	T_EQ_INT(mw_sha256_file(path, hex, &bytes, NULL), 0);
	T_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	T_EQ_U64(bytes, 3);
	struct mw_error err;
	T_ASSERT(mw_sha256_file("/nonexistent/x", hex, NULL, &err) < 0);
	T_EQ_STR(err.source, "/nonexistent/x");
}

static const struct t_fx_spec base_spec = {
	.protocol = "fixture", .cpu = "Test CPU", .runs = 5, .warmups = 1, .tokens = 64,
	.latency_ns = 20e6, .jitter = 0.01, .dram_bytes = 400e6, .instances = 2, .seed = 7,
};

/* Edits one number in a fresh record and expects validation to name exactly that field. */
static void expect_edit_caught(const char *what, json_t *(*locate)(json_t *doc), const char *key,
			       const char *field)
{
	json_t *doc = t_fx_record(&base_spec);
	json_t *obj = locate(doc);
	struct mw_error err;
	T_ASSERT(obj != NULL);
	if (!obj)
		return;
	json_t *v = json_object_get(obj, key);
	double x = json_is_number(v) ? json_number_value(v) : 0;
	json_object_set_new(obj, key, json_real(x * 1.01 + 1));
	mw_error_clear(&err);
	int rc = mw_result_validate(doc, "edited.json", &err);
	if (rc != MW_RESULT_INCONSISTENT || strcmp(err.field, field)) {
		T_FAIL_AT(__FILE__, __LINE__, "%s: want %s named, got rc %d", what, field, rc);
		mw_error_print(&err);
	}
	T_CONTAINS(err.text, "recorded");
	json_decref(doc);
}

static json_t *at_summary_tps(json_t *d)
{
	return json_object_get(json_object_get(json_object_get(d, "summary"), "metrics"),
			       "tok_per_s");
}
static json_t *at_summary_dram(json_t *d)
{
	return json_object_get(json_object_get(json_object_get(d, "summary"), "metrics"),
			       "dram_read_MB_per_token");
}
static json_t *at_run2_figures(json_t *d)
{
	return json_object_get(json_array_get(json_object_get(d, "runs"), 2), "figures");
}
static json_t *at_drift(json_t *d)
{
	return json_object_get(d, "drift");
}
static json_t *at_pooled(json_t *d)
{
	return json_object_get(json_object_get(d, "summary"), "latency_pooled_ns");
}

static void test_validate(void)
{
	struct mw_error err;
	json_t *doc = t_fx_record(&base_spec);
	int rc = mw_result_validate(doc, "fixture.json", &err);
	if (rc)
		mw_error_print(&err);
	T_EQ_INT(rc, 0);

	/* DRAM measured: a figure per run and summary statistics over the 5 measured runs. */
	const json_t *m = at_summary_dram(doc);
	T_ASSERT(json_is_true(json_object_get(m, "measured")));
	T_EQ_INT(json_integer_value(json_object_get(m, "n")), 5);
	json_decref(doc);

	expect_edit_caught("summary mean", at_summary_tps, "mean", "summary.metrics.tok_per_s.mean");
	expect_edit_caught("summary CV", at_summary_dram, "cv_pct",
			   "summary.metrics.dram_read_MB_per_token.cv_pct");
	expect_edit_caught("run figure", at_run2_figures, "engine_MB_per_token",
			   "runs[2].figures.engine_MB_per_token");
	expect_edit_caught("drift", at_drift, "change_pct", "drift.change_pct");
	expect_edit_caught("pooled p99", at_pooled, "p99", "summary.latency_pooled_ns.p99");

	/* Raw data that contradicts itself: a token's latency no longer sums to the window. */
	doc = t_fx_record(&base_spec);
	json_t *lat = json_object_get(
		json_object_get(json_array_get(json_object_get(doc, "runs"), 3), "tokens"),
		"latency_ns");
	json_array_set_new(lat, 5, json_integer(json_integer_value(json_array_get(lat, 5)) + 1000));
	T_EQ_INT(mw_result_validate(doc, "raw.json", &err), MW_RESULT_INCONSISTENT);
	T_EQ_STR(err.field, "runs[3].decode.ns");
	json_decref(doc);

	/* An acceptance verdict flipped by hand. */
	doc = t_fx_record(&base_spec);
	json_object_set_new(json_object_get(doc, "acceptance"), "status", json_string("pass"));
	json_t *c = json_array_get(json_object_get(json_object_get(doc, "acceptance"), "criteria"), 0);
	json_object_set_new(c, "status", json_string(
		strcmp(json_string_value(json_object_get(c, "status")), "pass") ? "pass" : "fail"));
	T_EQ_INT(mw_result_validate(doc, "acc.json", &err), MW_RESULT_INCONSISTENT);
	T_CONTAINS(err.field, "acceptance");
	json_decref(doc);

	/* Schema: a missing section and an unknown field are malformed, named. */
	doc = t_fx_record(&base_spec);
	json_object_del(doc, "units");
	T_EQ_INT(mw_result_validate(doc, "schema.json", &err), MW_RESULT_MALFORMED);
	T_EQ_STR(err.field, "units");
	json_object_set_new(doc, "units", json_pack("{s:s, s:s, s:s}", "MB", "2^20 bytes", "MiB",
						    "2^20 bytes", "time", "x"));
	T_EQ_INT(mw_result_validate(doc, "schema.json", &err), MW_RESULT_MALFORMED);
	T_EQ_STR(err.field, "units.MB");
	json_decref(doc);
	doc = t_fx_record(&base_spec);
	json_object_set_new(doc, "mb_per_token", json_real(1));
	T_EQ_INT(mw_result_validate(doc, "schema.json", &err), MW_RESULT_MALFORMED);
	T_EQ_STR(err.field, "mb_per_token");
	T_CONTAINS(err.text, "unknown field");
	json_decref(doc);
}

/* created_utc: RFC 3339 with Z, fractional seconds allowed (issue 44); every field in range,
 * and nothing after the Z. */
static void test_created_utc(void)
{
	static const struct {
		const char *t;
		int rc;
	} cases[] = {
		{ "2026-12-06T21:07:35Z", 0 },
		{ "2026-12-06T21:07:35.001Z", 0 },
		{ "2026-12-06T21:07:35.5Z", 0 },
		{ "2026-12-06T21:07:35.123456789Z", 0 },
		{ "2026-12-06T21:07:35.Z", MW_RESULT_MALFORMED },     /* a point, no digit */
		{ "2026-12-06T21:07:35.001", MW_RESULT_MALFORMED },   /* no Z */
		{ "2026-12-06T21:07:35.001+01:00", MW_RESULT_MALFORMED }, /* not UTC's Z */
		{ "2026-12-06T21:07:35.0a1Z", MW_RESULT_MALFORMED },
		{ "2026-02-30T21:07:35.001Z", MW_RESULT_MALFORMED },  /* no 30 February */
		{ "2026-12-06T21:07:35ZZ", MW_RESULT_MALFORMED },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mw_error err;
		json_t *doc = t_fx_record(&base_spec);
		json_object_set_new(doc, "created_utc", json_string(cases[i].t));
		int rc = mw_result_validate(doc, "utc.json", &err);
		if (rc != cases[i].rc)
			fprintf(stderr, "created_utc %s: validate gave %d (%s), want %d\n", cases[i].t,
				rc, rc ? err.text : "", cases[i].rc);
		T_EQ_INT(rc, cases[i].rc);
		if (rc)
			T_EQ_STR(err.field, "created_utc");
		json_decref(doc);
	}
}

/* Issue 28, class 12: an idle baseline larger than the decode traffic (run 2's idle window
 * cut to 1 us with its bytes kept: a rate of 10^12 byte/s) gives no net figure, never one
 * below zero; the record stays valid. */
static void test_negative_net(void)
{
	json_t *doc = t_fx_record(&base_spec);
	struct mw_error err;
	json_t *idle = json_object_get(json_array_get(json_object_get(doc, "runs"), 2), "idle");
	json_object_set_new(idle, "window_ns", json_integer(1000));
	T_EQ_INT(mw_result_derive(doc, "neg.json", &err), 0);
	const json_t *v = json_object_get(at_run2_figures(doc), "dram_read_bytes_per_token");
	T_ASSERT(json_is_null(v));
	if (json_is_number(v))
		fprintf(stderr, "  dram_read_bytes_per_token %g\n", json_number_value(v));
	T_EQ_INT(mw_result_validate(doc, "neg.json", &err), 0);
	json_decref(doc);
}

/* Without DRAM counters every DRAM figure is null, the summary says "not measured" with the
 * counter's reason, and the DRAM acceptance criterion is not-measured: never a pass. The
 * fixture's protocol leaves counters.dram at its default, "optional": the criterion is
 * excused (required false) and the overall status passes; the same record from a protocol
 * that requires DRAM is not-measured overall. */
static void test_not_measured(void)
{
	struct t_fx_spec sp = base_spec;
	sp.dram_bytes = 0;
	json_t *doc = t_fx_record(&sp);
	struct mw_error err;
	T_EQ_INT(mw_result_validate(doc, "nm.json", &err), 0);
	const json_t *m = at_summary_dram(doc);
	T_ASSERT(json_is_false(json_object_get(m, "measured")));
	T_EQ_STR(json_string_value(json_object_get(m, "reason")),
		 "fixture: no memory-controller counters");
	T_ASSERT(json_is_null(json_object_get(at_run2_figures(doc), "dram_read_bytes_per_token")));
	const json_t *acc = json_object_get(doc, "acceptance"), *c;
	size_t i;
	int seen = 0;
	json_array_foreach(json_object_get(acc, "criteria"), i, c) {
		if (strcmp(json_string_value(json_object_get(c, "criterion")), "max_cv_mb_per_token_pct"))
			continue;
		seen++;
		T_EQ_STR(json_string_value(json_object_get(c, "status")), "not-measured");
		T_ASSERT(json_is_null(json_object_get(c, "value")));
		T_ASSERT(json_is_false(json_object_get(c, "required")));
	}
	T_EQ_INT(seen, 1);
	T_EQ_STR(json_string_value(json_object_get(acc, "status")), "pass");
	T_ASSERT(json_is_true(json_object_get(json_array_get(json_object_get(acc, "criteria"), 1),
					      "required"))); /* tok/s CV: always required */

	/* report says the criterion is excused */
	char *buf = report_md(doc);
	T_CONTAINS(buf, "| max_cv_mb_per_token_pct | 1.0 | null | not-measured (optional)");
	T_CONTAINS(buf, "acceptance: pass");
	free(buf);

	/* One thread and one run are singular in the header (issue 29: "1 threads"). */
	json_t *singular = json_deep_copy(doc);
	json_t *eng = json_object_get(singular, "engine");
	if (!eng)
		json_object_set_new(singular, "engine", eng = json_object());
	json_object_set_new(eng, "threads", json_integer(1));
	json_object_set_new(json_object_get(singular, "summary"), "runs_measured", json_integer(1));
	buf = report_md(singular);
	T_CONTAINS(buf, "1 measured run (+");
	T_CONTAINS(buf, ", 1 thread, ");
	free(buf);
	json_decref(singular);

	/* A record derived before "required" existed: no key, and the old overall rule (any
	 * not-measured criterion made it not-measured). It still validates under its rule; the
	 * same status on a record with the keys is caught. */
	json_t *old = json_deep_copy(doc);
	const json_t *oc;
	json_array_foreach(json_object_get(json_object_get(old, "acceptance"), "criteria"), i, oc)
		json_object_del((json_t *)(uintptr_t)oc, "required");
	json_object_set_new(json_object_get(old, "acceptance"), "status",
			    json_string("not-measured"));
	T_EQ_INT(mw_result_validate(old, "old.json", &err), 0);
	json_decref(old);
	json_t *edited = json_deep_copy(doc);
	json_object_set_new(json_object_get(edited, "acceptance"), "status",
			    json_string("not-measured"));
	T_EQ_INT(mw_result_validate(edited, "edited.json", &err), MW_RESULT_INCONSISTENT);
	T_EQ_STR(err.field, "acceptance.status");
	json_decref(edited);

	/* counters.dram "required": the same missing figure is not excused. */
	json_t *pdoc = json_object_get(json_object_get(doc, "protocol"), "document");
	json_object_set_new(pdoc, "counters", json_pack("{s:s}", "dram", "required"));
	json_object_set_new(doc, "acceptance", json_object());
	T_EQ_INT(mw_result_derive(doc, "nm.json", &err), 0);
	acc = json_object_get(doc, "acceptance");
	T_EQ_STR(json_string_value(json_object_get(acc, "status")), "not-measured");
	T_ASSERT(json_is_true(json_object_get(json_array_get(json_object_get(acc, "criteria"), 0),
					      "required")));
	T_EQ_INT(mw_result_validate(doc, "nm.json", &err), 0);

	/* One measured run: the tok/s CV is a required figure that is missing. */
	struct t_fx_spec one = base_spec;
	one.runs = 1;
	json_t *d1 = t_fx_record(&one);
	if (d1) {
		T_EQ_STR(json_string_value(json_object_get(json_object_get(d1, "acceptance"),
							   "status")), "not-measured");
		json_decref(d1);
	}
	json_decref(doc);
}

/* Two runs far apart: Student's t with 1 degree of freedom (12.706, a table value, not
 * memwall's) puts the lower end of tok/s's interval below 0. The record keeps the interval
 * as computed and marks it; the report says "n too small" instead of a negative tok/s. */
static void test_ci_clamped(void)
{
	struct t_fx_spec sp = base_spec;
	sp.runs = 2;
	sp.jitter = 0.9;
	json_t *doc = NULL;
	double low = 0;
	/* The fixture's seed decides how far apart the two runs land: take the first that
	 * puts the interval below 0 (the arithmetic here, not memwall's, decides). */
	for (sp.seed = 1; sp.seed < 200 && !(low < 0); sp.seed++) {
		json_decref(doc);
		doc = t_fx_record(&sp);
		T_ASSERT(doc != NULL);
		if (!doc)
			return;
		const json_t *r;
		double x[2];
		size_t i, n = 0;
		json_array_foreach(json_object_get(doc, "runs"), i, r)
			if (!json_is_true(json_object_get(r, "warmup")) && n < 2)
				x[n++] = json_number_value(
					json_object_get(json_object_get(r, "figures"), "tok_per_s"));
		T_EQ_INT(n, 2);
		double mean = (x[0] + x[1]) / 2, sd = fabs(x[0] - x[1]) / sqrt(2.0);
		low = mean - 12.7062047361747 * sd / sqrt(2.0);
	}
	T_ASSERT(low < 0); /* some seed does what this test needs */
	const json_t *tps = at_summary_tps(doc);
	T_ASSERT(fabs(json_number_value(json_object_get(tps, "ci95_low")) - low) <
		 1e-9 * fabs(low));
	T_ASSERT(json_is_true(json_object_get(tps, "ci95_clamped")));
	T_CONTAINS(json_string_value(json_object_get(tps, "ci95_note")), "n too small");
	struct mw_error err;
	T_EQ_INT(mw_result_validate(doc, "ci.json", &err), 0);

	char *buf = report_md(doc);
	T_CONTAINS(buf, "| Decode speed | token/s (decode) | 2 |");
	T_CONTAINS(buf, "n too small (n=2)");
	T_ASSERT(!strstr(buf, "[-")); /* no interval printed with a negative end */
	free(buf);

	/* A record whose interval stays above 0 carries no mark. */
	json_t *ok = t_fx_record(&base_spec);
	T_ASSERT(ok && !json_object_get(at_summary_tps(ok), "ci95_clamped"));
	json_decref(ok);
	json_decref(doc);
}

static int count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			n++;
	if (d)
		closedir(d);
	return n;
}

static void test_write_unique(void)
{
	char dir[512], p1[1024], p2[1024];
	struct mw_error err;
	snprintf(dir, sizeof(dir), "%s/out/nested", scratch);
	json_t *doc = t_fx_record(&base_spec);
	T_EQ_INT(mw_result_write(doc, dir, "same", p1, sizeof(p1), &err), 0);
	T_EQ_INT(mw_result_write(doc, dir, "same", p2, sizeof(p2), &err), 0);
	T_ASSERT(strcmp(p1, p2) != 0);
	T_CONTAINS(p1, "/same.json");
	T_CONTAINS(p2, "/same-2.json");
	T_EQ_INT(count_files(dir, ".same"), 0); /* no temporary left behind */
	json_t *back = NULL;
	T_EQ_INT(mw_result_load(&back, p2, &err), 0);
	T_EQ_INT(mw_result_validate(back, p2, &err), 0); /* bit-exact round trip */
	json_decref(back);
	json_decref(doc);
}

/* A child writes a large record and is SIGKILLed at a varying point during the write. The
 * target must then be absent or a complete, valid record: never a partial file. */
static void test_write_killed(void)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/killed", scratch);
	struct t_fx_spec big = base_spec;
	big.tokens = 20000; /* about 10 MB of JSON: a write that takes a while */
	big.runs = 6;
	int absent = 0, whole = 0;
	for (int k = 0; k < 8; k++) {
		int pipefd[2];
		T_ASSERT(pipe(pipefd) == 0);
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			char path[1024];
			struct mw_error err;
			json_t *doc = t_fx_record(&big);
			if (write(pipefd[1], "x", 1) != 1)
				_exit(3);
			_exit(mw_result_write(doc, dir, "killed", path, sizeof(path), &err) ? 1 : 0);
		}
		char c;
		T_ASSERT(read(pipefd[0], &c, 1) == 1);
		/* 0 to 300 ms: from before the first byte to after the rename (~150 ms). */
		usleep((useconds_t)(k * k * 6000));
		kill(pid, SIGKILL);
		int st;
		waitpid(pid, &st, 0);
		close(pipefd[0]);
		close(pipefd[1]);

		char target[1024];
		snprintf(target, sizeof(target), "%s/killed.json", dir);
		json_t *doc = NULL;
		struct mw_error err;
		if (access(target, F_OK) != 0) {
			absent++;
			continue;
		}
		T_EQ_INT(mw_result_load(&doc, target, &err), 0);
		T_EQ_INT(mw_result_validate(doc, target, &err), 0);
		json_decref(doc);
		whole++;
		unlink(target);
	}
	printf("killed writes: %d left no record, %d left a whole one\n", absent, whole);
	T_EQ_INT(absent + whole, 8);
}

static void test_reference(void)
{
	char path[4096];
	t_source(path, sizeof(path), "results/reference/aios-falcon7b-q4km.json");
	json_t *doc = NULL;
	struct mw_error err;
	int rc = mw_result_load(&doc, path, &err);
	if (!rc)
		rc = mw_result_validate(doc, path, &err);
	if (rc)
		mw_error_print(&err);
	T_EQ_INT(rc, 0);
	/* What it measured and what it did not. */
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	T_NEAR(json_number_value(json_object_get(json_object_get(m, "dram_read_MB_per_token"), "mean")),
	       2340, 0);
	T_NEAR(json_number_value(json_object_get(json_object_get(m, "tok_per_s"), "mean")), 11.43, 0);
	/* AIOS's +/- is np.std's population SD: kept as published, the sample SD beside it. */
	const json_t *dr = json_object_get(m, "dram_read_MB_per_token");
	T_NEAR(json_number_value(json_object_get(dr, "sd_population")), 4, 0);
	T_NEAR(json_number_value(json_object_get(dr, "sd")), 4 * sqrt(5.0 / 4.0), 1e-4);
	/* An sd that is not the sample SD of sd_population is refused. */
	json_object_set_new((json_t *)(uintptr_t)dr, "sd", json_real(4));
	T_EQ_INT(mw_result_validate(doc, path, &err), MW_RESULT_INCONSISTENT);
	T_CONTAINS(err.text, "sample SD of sd_population");
	T_ASSERT(json_is_false(json_object_get(json_object_get(m, "energy_J_per_token"), "measured")));
	json_decref(doc);
}

/* A record written by memwall before schema /2 (tests/data/results/v1-stories260k-run.json,
 * made by commit 9f2d492) still validates, is still checked on the figures it carries, and a
 * record of a schema this memwall does not know is refused with its version named. */
static void test_schema_versions(void)
{
	char path[4096];
	const char *data = getenv("MEMWALL_TEST_DATA");
	snprintf(path, sizeof(path), "%s/results/v1-stories260k-run.json", data ? data : "tests/data");
	json_t *doc = NULL;
	struct mw_error err;
	mw_error_clear(&err);
	int rc = mw_result_load(&doc, path, &err);
	T_EQ_INT(rc, 0);
	if (rc)
		return;
	T_EQ_STR(json_string_value(json_object_get(doc, "schema")), "memwall-result/1");
	rc = mw_result_validate(doc, path, &err);
	if (rc)
		mw_error_print(&err);
	T_EQ_INT(rc, 0);

	/* An edited figure of a /1 record is still caught. */
	json_t *tok = json_object_get(json_object_get(json_object_get(doc, "summary"), "metrics"),
				      "tok_per_s");
	double mean = json_number_value(json_object_get(tok, "mean"));
	json_object_set_new(tok, "mean", json_real(mean * 2));
	T_EQ_INT(mw_result_validate(doc, path, &err), MW_RESULT_INCONSISTENT);
	T_CONTAINS(err.field, "tok_per_s");
	json_object_set_new(tok, "mean", json_real(mean));

	/* A /2 record must carry the figures /2 added: dropping one is caught. */
	json_object_set_new(doc, "schema", json_string("memwall-result/2"));
	T_EQ_INT(mw_result_validate(doc, path, &err), MW_RESULT_INCONSISTENT);
	T_CONTAINS(err.text, "missing");

	json_object_set_new(doc, "schema", json_string("memwall-result/3"));
	T_EQ_INT(mw_result_validate(doc, path, &err), MW_RESULT_MALFORMED);
	T_CONTAINS(err.text, "memwall-result/3");
	json_decref(doc);
}

int main(void)
{
	test_schema_versions();
	test_negative_net();
	t_scratch(scratch, sizeof(scratch), "result");
	test_sha256();
	test_validate();
	test_created_utc();
	test_not_measured();
	test_ci_clamped();
	test_write_unique();
	test_write_killed();
	test_reference();
	return t_done_rm(scratch, 0);
}
