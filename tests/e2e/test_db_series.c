/* tests/e2e/test_db_series.c: `memwall db series|check|changes` on series made by `memwall run`
 * on the simulated PMU (issue 39's "Done when").
 *
 * A short protocol (3 prompt tokens, 2 decode tokens, 3 runs) runs the synthetic stories260K
 * model with its DRAM counts scripted on the recorded arrow-lake tree (tests/lib/sim_series.h
 * says how). Script A gives every decode token X counts of each instance's data_read, script B
 * X_B = 1.15 X: the MB/token each script makes is computed from the counts and the tree's bytes
 * per count, and so is the step between them.
 *
 * Store A: 30 records of script A, then 10 of script B: `db changes` finds exactly one step, from
 * record 30 to record 31, of +15 % (+/- 3) in MB/token. Store B: 40 records of script A: none.
 * `db check` of record 31 against the 30 before it exits 1 naming dram_MB_per_token; of record
 * 30 against the 10 before it, 0; of a record of another protocol (no series in the store), 2.
 * The protocol sets no tok/s CV limit: runs of a millisecond on a busy machine differ tenfold.
 * A protocol of another name is another protocol file, so another series.
 * tok/s is the machine's, noisy on a busy one: the checks name --metric dram_MB_per_token. */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <unistd.h>

#include "record.h"
#include "run.h"
#include "sim_series.h"
#include "test.h"

#define TREE "arrow-lake"
#define D 2         /* decode tokens */
#define RUNS 3
#define X_A 15625u  /* data_read counts per instance and decode token, script A */
#define X_B 17969u  /* script B: round(1.15 X_A) */
#define N_A 30
#define N_B 10

static char scratch[256];

static double mb_per_token(unsigned x)
{
	return t_series_mb_per_token(TREE, x);
}

static const char *protocol(const char *name, int decode)
{
	return t_series_protocol(scratch, name, decode, RUNS,
				   "{\"bandwidth_gbps\": null, \"llc_bytes\": null}");
}

static void run_one(const char *proto, const char *script, char *out, size_t n)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/records", scratch);
	t_series_run(dir, proto, script, out, n);
}

static char *sha_of(const char *path)
{
	static char ids[64][65];
	static int next;
	char *id = ids[next++ % 64];
	struct t_output o = t_run((const char *[]){ "/usr/bin/sha256sum", path, NULL });
	snprintf(id, 65, "%.64s", o.out ? o.out : "");
	t_output_free(&o);
	return id;
}

/* `memwall db --db STORE import` every path, in order (the store's import order is theirs). */
static void import(const char *store, char paths[][512], int n)
{
	const char *argv[80] = { "memwall", "db", "--db", store, "import" };
	int k = 5;
	for (int i = 0; i < n; i++)
		argv[k++] = paths[i];
	argv[k] = NULL;
	struct t_output o = t_run(argv);
	char want[64];
	snprintf(want, sizeof(want), "%d imported, 0 already there, 0 refused", n);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, want);
	t_output_free(&o);
}

static json_t *run_json(const char *const argv[], int want_status)
{
	struct t_output o = t_run(argv);
	if (o.status != want_status)
		fprintf(stderr, "%s %s: exit %d, want %d\n%s%s", argv[3], argv[4], o.status,
			want_status, o.out, o.err);
	T_EQ_INT(o.status, want_status);
	json_error_t je;
	json_t *j = json_loads(o.out ? o.out : "", 0, &je);
	T_ASSERT(j != NULL);
	t_output_free(&o);
	return j;
}

/* The median of a record's measured runs' MB/token, read from the record here. */
static double record_median(const char *path)
{
	return t_runs_median(path, "dram_MB_per_token");
}

static void test_changes(const char *store_a, const char *store_b, char recs[][512])
{
	double a = mb_per_token(X_A), b = mb_per_token(X_B);
	double want = 100.0 * (b - a) / a;
	printf("script A %.6f MB/token, script B %.6f: a step of %+.3f %%\n", a, b, want);
	/* Each record's MB/token is its script's, less the idle window's few bytes. */
	T_NEAR(record_median(recs[0]), a, 0.01 * a);
	T_NEAR(record_median(recs[N_A]), b, 0.01 * b);

	json_t *j = run_json((const char *[]){ "memwall", "db", "--db", store_a, "changes",
					       "--metric", "dram_MB_per_token", "--format", "json",
					       NULL }, 0);
	const json_t *ch = json_object_get(j, "changes"), *c = json_array_get(ch, 0);
	T_EQ_INT(json_array_size(ch), 1);
	T_EQ_STR(json_string_value(json_object_get(c, "metric")), "dram_MB_per_token");
	T_EQ_STR(json_string_value(json_object_get(json_object_get(c, "before"), "id")),
		 sha_of(recs[N_A - 1]));
	T_EQ_STR(json_string_value(json_object_get(json_object_get(c, "after"), "id")),
		 sha_of(recs[N_A]));
	T_NEAR(json_number_value(json_object_get(c, "change_pct")), want, 3.0);
	T_EQ_STR(json_string_value(json_object_get(c, "direction")), "regression");
	T_CONTAINS(json_string_value(json_object_get(c, "provenance")), "SIMULATED");
	T_ASSERT(json_is_string(json_object_get(json_object_get(c, "after"), "created_utc")));
	T_ASSERT(json_is_string(json_object_get(json_object_get(c, "after"), "engine_version")));
	json_decref(j);

	/* The same in Markdown, marked SIMULATED. */
	struct t_output o = t_run((const char *[]){ "memwall", "db", "--db", store_a, "changes",
						    "--metric", "dram_MB_per_token", NULL });
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "dram_MB_per_token [SIMULATED]");
	T_CONTAINS(o.out, "1 change in 1 series");
	char line[80];
	snprintf(line, sizeof(line), "| %.12s, ", sha_of(recs[N_A]));
	T_CONTAINS(o.out, line);
	t_output_free(&o);

	/* 40 records of one script: no step. */
	j = run_json((const char *[]){ "memwall", "db", "--db", store_b, "changes", "--metric",
				       "dram_MB_per_token", "--format", "json", NULL }, 0);
	T_EQ_INT(json_array_size(json_object_get(j, "changes")), 0);
	T_EQ_INT(json_integer_value(json_object_get(j, "series_checked")), 1);
	json_decref(j);
}

static void test_series(const char *store_a, char recs[][512])
{
	json_t *j = run_json((const char *[]){ "memwall", "db", "--db", store_a, "series",
					       "--format", "json", NULL }, 0);
	const json_t *s = json_array_get(j, 0);
	T_EQ_INT(json_array_size(j), 1);
	T_EQ_INT(json_integer_value(json_object_get(s, "records")), N_A + N_B);
	T_EQ_STR(json_string_value(json_object_get(s, "last_id")), sha_of(recs[N_A + N_B - 1]));
	T_NEAR(json_number_value(json_object_get(s, "dram_MB_per_token")),
	       record_median(recs[N_A + N_B - 1]), 1e-9);
	T_CONTAINS(json_string_value(json_object_get(s, "provenance")), "SIMULATED");
	T_EQ_STR(json_string_value(json_object_get(s, "counters")), "sim/intel_imc_free");
	json_t *first = json_load_file(recs[0], 0, NULL);
	T_EQ_STR(json_string_value(json_object_get(s, "first_utc")),
		 json_string_value(json_object_get(first, "created_utc")));
	json_decref(first);
	json_decref(j);
}

static void test_check(const char *store_a, const char *store_b, char recs[][512],
		       const char *other)
{
	char id31[13], id30[13];
	snprintf(id31, sizeof(id31), "%.12s", sha_of(recs[N_A]));
	snprintf(id30, sizeof(id30), "%.12s", sha_of(recs[N_A - 1]));
	/* Record 31 (script B), in the store, against the 30 before it: a regression. */
	struct t_output o = t_run((const char *[]){ "memwall", "db", "--db", store_a, "check", id31,
						    "--against", "last:30", "--metric",
						    "dram_MB_per_token", NULL });
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.out, "| dram_MB_per_token | yes |");
	T_CONTAINS(o.out, "**REGRESSION**");
	T_CONTAINS(o.out, "(90, 30)"); /* 3 runs of each of the 30 records pooled */
	T_CONTAINS(o.out, "SIMULATED");
	t_output_free(&o);
	json_t *j = run_json((const char *[]){ "memwall", "db", "--db", store_a, "check", id31,
					       "--against", "last:30", "--metric",
					       "dram_MB_per_token", "--format", "json", NULL }, 1);
	const json_t *m = json_array_get(json_object_get(j, "metrics"), 0);
	T_EQ_STR(json_string_value(json_object_get(j, "schema")), "memwall-check/1");
	T_EQ_STR(json_string_value(json_object_get(m, "name")), "dram_MB_per_token");
	T_EQ_STR(json_string_value(json_object_get(m, "verdict")), "regression");
	T_EQ_INT(json_integer_value(json_object_get(json_object_get(m, "base"), "records")), 30);
	double a = mb_per_token(X_A), b = mb_per_token(X_B);
	T_NEAR(json_number_value(json_object_get(m, "median_change_pct")), 100.0 * (b - a) / a,
	       1.0);
	/* 3 runs above all 90 pooled ones: the exact two-sided p is 2 / C(93, 3). */
	T_NEAR(json_number_value(json_object_get(m, "p_mann_whitney")), 2.0 / (93.0 * 92 * 91 / 6),
	       1e-12);
	json_decref(j);
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", store_a, "check", id31, "--against",
				       "last:30", "--metric", "dram_MB_per_token", "--format",
				       "junit", NULL}),
		     1,
		     T_LIST("<testsuite name=\"memwall db check\"", "name=\"dram_MB_per_token\"",
			    "type=\"regression\""),
		     NULL);

	/* Record 30 (script A) against the 10 before it: no regression. */
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", store_a, "check", id30, "--metric",
				       "dram_MB_per_token", NULL}),
		     0, T_LIST("(30, 10)"), NULL);
	/* A file not in store B (script B, made before store B's last 10): against the records
	 * created before it, all script A: a regression; store B's own record 50 as a file: 0. */
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", store_b, "check", recs[N_A + 2],
				       "--metric", "dram_MB_per_token", NULL}),
		     1, NULL, NULL);
	T_RUN_EXPECT(
	    ((const char *[]){"memwall", "db", "--db", store_b, "check", recs[N_A + N_B + N_B - 1],
			      "--metric", "dram_MB_per_token", NULL}),
	    0, NULL, NULL);

	/* A record of another protocol has no series in the store: not comparable, 2. */
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", store_a, "check", other, NULL}), 2,
		     T_LIST("no earlier record of this record's series"), NULL);
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", store_a, "check", other, "--format",
				       "junit", NULL}),
		     2, T_LIST("name=\"history\""), NULL);
	/* Bad usage names what to fix. */
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", store_a, "check", id31, "--against",
				       "yesterday", NULL}),
		     2, NULL, T_LIST("last:N"));
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", store_a, "check", id31, "--metric",
				       "MB", NULL}),
		     2, NULL, T_LIST("no such metric"));
}

int main(void)
{
	t_need_memwall();
	t_scratch(scratch, sizeof(scratch), "dbseries");
	char script_a[400], script_b[400], store_a[400], store_b[400];
	t_series_ab(scratch, TREE, X_A, X_B, RUNS, D, script_a, script_b, sizeof(script_a));
	snprintf(store_a, sizeof(store_a), "%s/a.db", scratch);
	snprintf(store_b, sizeof(store_b), "%s/b.db", scratch);

	/* 30 of A, 10 of B (store A), then 10 more of A: store B holds the first 30 and these. */
	static char recs[N_A + 2 * N_B][512], b_recs[N_A + N_B][512], other[512];
	const char *proto = protocol("series-sim", D);
	for (int i = 0; i < N_A + 2 * N_B; i++)
		run_one(proto, i < N_A || i >= N_A + N_B ? script_a : script_b, recs[i],
			sizeof(recs[i]));
	run_one(protocol("series-other", D), script_a, other, sizeof(other));
	for (int i = 0; i < N_A + N_B; i++)
		snprintf(b_recs[i], sizeof(b_recs[i]), "%s", recs[i < N_A ? i : i + N_B]);
	import(store_a, recs, N_A + N_B);
	import(store_b, b_recs, N_A + N_B);

	test_series(store_a, recs);
	test_changes(store_a, store_b, recs);
	test_check(store_a, store_b, recs, other);

	return t_done_rm(scratch, 0);
}
