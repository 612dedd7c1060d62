/* tests/e2e/test_bench_kernels.c: `memwall bench-kernels` and the cache it writes, end to end
 * (issue 42): the side-by-side table, the cache's fields, its choice re-derived here from its
 * own rates, and its use by `generate --batch`: used when it is this machine's, said and
 * ignored when another's, refused (file, field) when malformed. The rates are not checked:
 * they are this machine's speed. */
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "engine.h"
#include "run.h"
#include "test.h"

static char dir[] = "/tmp/mw-test-bench-kernels-XXXXXX";
static char cache[4200], model[4200];

/* The choice of the cache's rates, worked out here: per type and token count the table with
 * the highest rate when it beats the default's (the first the verb lists: "default") by more
 * than 3 %, else the default. One round, so a rate's ratio is the rates' ratio. */
static void check_choice(json_t *doc)
{
	const char *def = json_string_value(json_object_get(doc, "default"));
	json_t *choice = json_object_get(doc, "choice"), *rates = json_object_get(doc, "rates");
	T_ASSERT(def && json_is_object(choice) && json_is_object(rates));
	static const char *const types[] = { "q4_0", "q8_0" }, *const toks[] = { "1", "2", "4",
										 "8" };
	for (size_t i = 0; def && i < 2; i++)
		for (size_t k = 0; k < 4; k++) {
			json_t *r = json_object_get(json_object_get(rates, types[i]), toks[k]);
			const char *got = json_string_value(
				json_object_get(json_object_get(choice, types[i]), toks[k]));
			T_ASSERT(json_is_object(r) && got);
			double r0 = json_number_value(json_object_get(r, def)), best = 0;
			T_ASSERT(r0 > 0);
			const char *want = def, *name;
			json_t *v;
			json_object_foreach(r, name, v)
				if (json_number_value(v) > r0 * 1.03 && json_number_value(v) > best) {
					best = json_number_value(v);
					want = name;
				}
			if (got)
				T_EQ_STR(got, want);
		}
}

static void check_written(void)
{
	const char *argv[] = { "memwall", "bench-kernels", "--types", "q4_0,q8_0", "--mb", "1",
			       "--rounds", "1", "--out", cache, NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "type  tokens");
	T_CONTAINS(o.out, "chosen");
	T_CONTAINS(o.err, "stored in");
	for (int k = 1; k <= 8; k *= 2) {
		char row[32];
		snprintf(row, sizeof(row), "q8_0  %6d", k);
		T_CONTAINS(o.out, row);
	}
	t_output_free(&o);
	json_error_t jerr;
	json_t *doc = json_load_file(cache, 0, &jerr);
	T_ASSERT(doc != NULL);
	T_EQ_STR(json_string_value(json_object_get(doc, "schema")), "memwall-kernels/1");
	const char *sha = json_string_value(json_object_get(doc, "fingerprint_sha256"));
	T_ASSERT(sha && strlen(sha) == 64 && strspn(sha, "0123456789abcdef") == 64);
	T_ASSERT(json_is_object(json_object_get(doc, "fingerprint")));
	T_ASSERT(json_is_string(json_object_get(doc, "memwall_version")));
	T_ASSERT(json_is_string(json_object_get(doc, "method")));
	bool x8;
	T_EQ_STR(json_string_value(json_object_get(doc, "default")),
		 eng_quant_kernels_name(0, NULL, &x8));
	check_choice(doc);
	json_decref(doc);
}

/* generate --batch 2 with the state folder's cache as it is now */
static struct t_output batch2(void)
{
	const char *argv[] = { "memwall", "generate", "-m", model, "-n", "3", "--ids",
			       "--temperature", "0", "--batch", "2", NULL };
	return t_run(argv);
}

/* The cache file with key (a path of two names, the second NULL for a top-level key) set to
 * value, and `drop` (under the same parent; NULL: none) removed */
static void edit_cache(const char *k1, const char *k2, json_t *value, const char *drop)
{
	json_error_t jerr;
	json_t *doc = json_load_file(cache, JSON_PRESERVE_ORDER, &jerr);
	json_t *parent = k2 ? json_object_get(json_object_get(doc, "choice"), k1) : doc;
	T_ASSERT(json_is_object(parent));
	if (parent) {
		json_object_set_new(parent, k2 ? k2 : k1, value);
		if (drop)
			json_object_del(parent, drop);
		T_EQ_INT(json_dump_file(doc, cache, JSON_INDENT(2)), 0);
	}
	json_decref(doc);
}

static void check_used_by_generate(void)
{
	T_EQ_INT(setenv("MEMWALL_STATE_DIR", dir, 1), 0);
	struct t_output o = batch2();
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.err, "quant kernels at 2 tokens a call: q8_0 ");
	T_CONTAINS(o.err, "(measured choice");
	t_output_free(&o);
	/* another machine's: said, and the defaults run */
	edit_cache("fingerprint_sha256", NULL,
		   json_string("0000000000000000000000000000000000000000000000000000000000000000"),
		   NULL);
	o = batch2();
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.err, "another machine");
	T_CONTAINS(o.err, "(default)");
	t_output_free(&o);
	/* malformed: refused, naming the file and the field */
	edit_cache("q8_0", "3", json_string(eng_quant_kernels_name(0, NULL, NULL)), "1");
	o = batch2();
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, cache);
	T_CONTAINS(o.err, "choice.q8_0.3");
	t_output_free(&o);
	/* --kernels named: the cache is not read at all */
	const char *named[] = { "memwall", "generate", "-m", model, "-n", "3", "--ids",
				"--temperature", "0", "--batch", "2", "--kernels",
				eng_quant_kernels_name(0, NULL, NULL), NULL };
	T_RUN_EXPECT(named, 0, NULL, T_LIST("(default)"));
	unsetenv("MEMWALL_STATE_DIR");
}

static void check_refusals(void)
{
	char other[4300];
	snprintf(other, sizeof(other), "%s/notes.json", dir);
	t_write_file(other, "{\"mine\": true}\n");
	const char *argv[] = { "memwall", "bench-kernels", "--types", "q8_0", "--mb", "1",
			       "--rounds", "1", "--out", other, NULL };
	T_RUN_EXPECT(argv, 2, NULL, T_LIST("not a kernel cache"));
	FILE *f = fopen(other, "r");
	char buf[64] = "";
	T_ASSERT(f && fgets(buf, sizeof(buf), f));
	if (f)
		fclose(f);
	T_EQ_STR(buf, "{\"mine\": true}\n"); /* left alone */
	unlink(other);
	static const char *const bad[][2] = { { "--types", "f32" }, { "--rounds", "0" },
					      { "--columns", "100" }, { "--margin", "-1" } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[] = { "memwall", "bench-kernels", bad[i][0], bad[i][1], "--dry-run",
				    NULL };
		T_RUN_EXPECT(a, 2, NULL, T_LIST(bad[i][0]));
	}
}

int main(void)
{
	bool x8;
	const char *def = eng_quant_kernels_name(0, "q8_0", &x8);
	if (!def || !x8)
		t_skip("no quant table on this CPU has x8 kernels (a ref-only build): nothing to "
		       "measure");
	t_mkdtemp(dir);
	snprintf(cache, sizeof(cache), "%s/kernels.json", dir);
	snprintf(model, sizeof(model), "%s/s15m-q8_0.gguf", dir);
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_synth_gguf(model, "llama", "stories15M", "q8_0", 1, &err), 0);
	check_written();
	check_used_by_generate();
	check_refusals();
	unlink(cache);
	unlink(model);
	rmdir(dir);
	return t_done();
}
