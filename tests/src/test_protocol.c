/* tests/src/test_protocol.c: src/run/protocol.c and src/base/jschema.c: the shipped protocols, defaults,
 * path resolution, and a folder of bad protocols each with the error it must produce
 * (tests/data/protocols/bad/NAME.json beside NAME.err: line 1 the field, line 2 a piece of
 * the message). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <unistd.h>

#include "embedded.h"
#include "jschema.h"
#include "probes.h"
#include "protocol.h"
#include "test.h"

static const char *root(void)
{
	const char *r = getenv("MEMWALL_SOURCE_ROOT");
	return r ? r : ".";
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

/* Every protocols/NAME.json parses, passes protocol.schema.json as read from disk, and is named
 * after its file; the schema and default protocol compiled into the binary match the files. */
static void test_shipped(void)
{
	char dir[4096], path[4600];
	size_t len;
	snprintf(dir, sizeof(dir), "%s/protocols", root());
	snprintf(path, sizeof(path), "%s/protocol.schema.json", dir);
	char *schema_text = t_slurp(path, &len);
	T_ASSERT(schema_text != NULL);
	json_t *schema = schema_text ? json_loads(schema_text, 0, NULL) : NULL;
	T_ASSERT(schema != NULL);
	const struct mw_embedded *e = mw_embedded_find("protocol.schema.json");
	T_ASSERT(e && schema_text && e->len == len && !memcmp(e->data, schema_text, len));

	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	T_ASSERT(d != NULL);
	while (d && schema && (de = readdir(d))) {
		if (!ends_with(de->d_name, ".json") || ends_with(de->d_name, ".schema.json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		char *text = t_slurp(path, &len);
		json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
		struct mw_error err;
		mw_error_clear(&err);
		T_ASSERT(doc != NULL);
		int rc = mw_schema_check(schema, doc, path, &err);
		if (rc)
			mw_error_print(&err);
		T_EQ_INT(rc, 0);

		struct mw_protocol *p = NULL;
		rc = mw_protocol_load(&p, path, 0, &err);
		if (rc)
			mw_error_print(&err);
		T_EQ_INT(rc, 0);
		if (p) {
			char want[256];
			snprintf(want, sizeof(want), "%s.json", p->name);
			T_EQ_STR(want, de->d_name);
			T_ASSERT(p->runs >= 1 && p->decode_tokens >= 1);
			T_ASSERT(p->sampling.temperature == 0); /* every shipped baseline is greedy */
		}
		/* Embedded copies must not drift from the files. */
		const struct mw_embedded *pe = mw_embedded_find(de->d_name);
		if (pe)
			T_ASSERT(pe->len == len && !memcmp(pe->data, text, len));
		mw_protocol_free(p);
		json_decref(doc);
		free(text);
		n++;
	}
	if (d)
		closedir(d);
	T_ASSERT(n >= 4);
	json_decref(schema);
	free(schema_text);
}

static void test_embedded_default(void)
{
	struct mw_protocol *p = NULL;
	struct mw_error err;
	T_EQ_INT(mw_protocol_load_embedded(&p, "stories110m-synthetic", &err), 0);
	if (!p)
		return;
	T_EQ_STR(p->model.synth_shape, "stories110M");
	T_ASSERT(p->model.path == NULL);
	T_EQ_INT(p->decode_tokens, 256);
	T_EQ_INT(p->runs, 5);
	T_EQ_INT(p->warmup_runs, 1);
	T_CONTAINS(p->source, "(embedded)");
	/* no model.synth.construction: the legacy weights, as before the field (issue 26) */
	T_EQ_INT(p->model.synth_construction, ENG_SYNTH_LEGACY);
	mw_protocol_free(p);
	T_EQ_INT(mw_protocol_load_embedded(&p, "no-such-protocol", &err), -ENOENT);
}

/* A minimal protocol gets the documented defaults (protocols/README.md). */
static void test_defaults(void)
{
	const char *text = "{\"name\": \"min\", \"model\": {\"format\": \"llama2c\", \"synth\": "
			   "{\"shape\": \"stories260K\"}}, \"decode_tokens\": 4, \"runs\": 2}";
	struct mw_protocol *p = NULL;
	struct mw_error err;
	T_EQ_INT(mw_protocol_parse(&p, text, strlen(text), "min.json", NULL, 0, &err), 0);
	if (!p)
		return;
	T_EQ_INT(p->warmup_runs, 1);
	T_EQ_INT(p->engine.kind, MW_ENGINE_BUILTIN);
	T_EQ_STR(mw_engine_kind_name(p->engine.kind), "builtin");
	T_EQ_INT(p->engine.threads, 0);
	T_EQ_INT(p->engine.load, ENG_LOAD_MMAP); /* older protocols keep their meaning */
	T_EQ_INT(p->engine.pin, ENG_PIN_CPUS);
	T_ASSERT(p->engine.cpus == NULL);
	T_EQ_INT(p->n_prompt_tokens, 1);
	T_EQ_INT(p->prompt_tokens[0], 1);
	T_NEAR(p->sampling.temperature, 0, 0);
	T_EQ_U64(p->sampling.seed, 42);
	T_EQ_U64(p->model.synth_seed, 42);
	T_EQ_INT(p->counters.dram, MW_NEED_OPTIONAL);
	T_EQ_INT(p->counters.energy, MW_NEED_OPTIONAL);
	T_ASSERT(p->counters.backend == NULL); /* "auto" */
	T_EQ_INT(p->idle_baseline_ms, 500);
	T_NEAR(p->drift.max_bandwidth_change_pct, 10, 0);
	T_EQ_INT(strlen(p->sha256), 64);
	mw_protocol_free(p);
}

/* Paths resolve against the protocol's folder, not the current directory. */
static void test_relative(void)
{
	char path[4096], want[4200];
	snprintf(path, sizeof(path), "%s", t_data("protocols/good/relative.json"));
	struct mw_protocol *p = NULL;
	struct mw_error err;
	mw_error_clear(&err);
	int rc = mw_protocol_load(&p, path, MW_PROTOCOL_CHECK_FILES, &err);
	if (rc)
		mw_error_print(&err);
	T_EQ_INT(rc, 0);
	if (!p)
		return;
	snprintf(want, sizeof(want), "%s", t_data("protocols/good/tiny.bin"));
	T_EQ_STR(p->model.path, want);
	T_EQ_STR(p->tokenizer.path, want);
	T_EQ_STR(p->prompt, "Once upon a time");
	T_EQ_INT(p->model.size_bytes, 40);
	mw_protocol_free(p);
}

static void chomp(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
}

static void test_bad(void)
{
	char dir[4096], path[4600], errpath[4600];
	snprintf(dir, sizeof(dir), "%s", t_data("protocols/bad"));
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	T_ASSERT(d != NULL);
	while (d && (de = readdir(d))) {
		if (!ends_with(de->d_name, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(errpath, sizeof(errpath), "%.*s.err", (int)(strlen(path) - 5), path);
		char field[256] = "", text[512] = "";
		FILE *f = fopen(errpath, "r");
		if (!f) {
			T_FAIL_AT(__FILE__, __LINE__, "%s has no .err file", path);
			continue;
		}
		if (!fgets(field, sizeof(field), f) || !fgets(text, sizeof(text), f))
			T_FAIL_AT(__FILE__, __LINE__, "%s: want two lines", errpath);
		fclose(f);
		chomp(field);
		chomp(text);

		struct mw_protocol *p = NULL;
		struct mw_error err;
		mw_error_clear(&err);
		int rc = mw_protocol_load(&p, path, MW_PROTOCOL_CHECK_FILES, &err);
		if (rc == 0) {
			T_FAIL_AT(__FILE__, __LINE__, "%s loaded but must fail", path);
			mw_protocol_free(p);
			continue;
		}
		T_ASSERT(p == NULL);
		if (strcmp(err.source, path) || strcmp(err.field, field) || !strstr(err.text, text)) {
			T_FAIL_AT(__FILE__, __LINE__,
				  "%s: want field '%s' and text containing '%s'; got", de->d_name,
				  field, text);
			mw_error_print(&err);
		}
		n++;
	}
	if (d)
		closedir(d);
	T_ASSERT(n >= 20);
}

/* The validator refuses a schema keyword it does not implement rather than skip it, and
 * reports $ref'd and nested failures with the field's path. */
static void test_schema_subset(void)
{
	struct mw_error err;
	json_t *schema = json_loads("{\"type\": \"object\", \"uniqueItems\": true}", 0, NULL);
	json_t *doc = json_loads("{}", 0, NULL);
	T_EQ_INT(mw_schema_check(schema, doc, "d.json", &err), -EINVAL);
	T_EQ_STR(err.source, "(schema)");
	T_CONTAINS(err.text, "unsupported schema keyword 'uniqueItems'");
	json_decref(schema);
	json_decref(doc);

	schema = json_loads("{\"$defs\": {\"pos\": {\"type\": \"number\", \"minimum\": 0}},"
			    " \"type\": \"object\", \"properties\": {\"a\": {\"type\": \"array\","
			    " \"items\": {\"$ref\": \"#/$defs/pos\"}, \"maxItems\": 3}}}",
			    0, NULL);
	doc = json_loads("{\"a\": [1, 2.5, -1]}", 0, NULL);
	T_EQ_INT(mw_schema_check(schema, doc, "d.json", &err), -EINVAL);
	T_EQ_STR(err.field, "a[2]");
	T_CONTAINS(err.text, "must be >= 0, got -1");
	json_decref(doc);
	doc = json_loads("{\"a\": [1, 2, 3, 4]}", 0, NULL);
	T_EQ_INT(mw_schema_check(schema, doc, "d.json", &err), -EINVAL);
	T_CONTAINS(err.text, "at most 3 entries");
	json_decref(doc);
	doc = json_loads("{\"a\": [0, 1e9], \"other\": null}", 0, NULL);
	T_EQ_INT(mw_schema_check(schema, doc, "d.json", &err), 0);
	json_decref(doc);
	json_decref(schema);
}

/* The schema's enum at path (properties only, '/'-separated), e.g. "engine/load". */
static const json_t *schema_enum(const json_t *schema, const char *path)
{
	char buf[128], *save = NULL;
	const json_t *at = schema;
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, "/", &save); k; k = strtok_r(NULL, "/", &save))
		at = json_object_get(json_object_get(at, "properties"), k);
	return json_object_get(at, "enum");
}

/* The names a schema enum holds must be exactly the names a table owns, in any order. */
static void check_enum(const json_t *schema, const char *path, const char *const *names,
		       size_t n, const char *extra)
{
	const json_t *e = schema_enum(schema, path);
	T_ASSERT(json_is_array(e));
	T_EQ_INT(json_array_size(e), n + (extra != NULL));
	for (size_t i = 0; i < n; i++) {
		bool found = false;
		for (size_t j = 0; j < json_array_size(e); j++)
			found |= !strcmp(json_string_value(json_array_get(e, j)), names[i]);
		if (!found)
			T_FAIL_AT(__FILE__, __LINE__, "%s: the table's \"%s\" is not in the schema", path,
				  names[i]);
	}
	bool extra_found = !extra;
	for (size_t j = 0; extra && j < json_array_size(e); j++)
		extra_found |= !strcmp(json_string_value(json_array_get(e, j)), extra);
	T_ASSERT(extra_found);
}

/* Each library owns the names of its values: the schema must list the same ones, so a value
 * added to a table and not to the schema (or the reverse) fails here. */
static void test_schema_enums(void)
{
	json_t *schema = mw_protocol_schema();
	const char *names[16];
	size_t n = 0;
	T_ASSERT(schema != NULL);
	for (n = 0; n < (size_t)eng_load_mode_count(); n++)
		names[n] = eng_load_mode_name((enum eng_load_mode)n);
	check_enum(schema, "engine/load", names, n, NULL);
	for (n = 0; eng_pin_name((enum eng_pin)n); n++)
		names[n] = eng_pin_name((enum eng_pin)n);
	check_enum(schema, "engine/pin", names, n, NULL);
	for (n = 0; n < MW_ENGINE_COUNT; n++)
		names[n] = mw_engine_kind_name((enum mw_engine_kind)n);
	check_enum(schema, "engine/kind", names, n, NULL);
	for (n = 0; n < MW_MODEL_FORMAT_COUNT; n++)
		names[n] = mw_model_format_name((enum mw_model_format)n);
	check_enum(schema, "model/format", names, n, NULL);
	const char *const *backends = prb_dram_backends();
	for (n = 0; backends[n]; n++)
		names[n] = backends[n];
	check_enum(schema, "counters/backend", names, n, "auto");
	/* The engine's architecture table (engine/model/arch.c): its names and its shapes. */
	for (n = 0; n < eng_arch_count() && n < 16; n++)
		names[n] = eng_arch_at(n)->name;
	check_enum(schema, "model/synth/arch", names, n, NULL);
	char shapes[512], *save = NULL;
	eng_arch_shape_names(NULL, shapes, sizeof(shapes));
	n = 0;
	for (char *w = strtok_r(shapes, " ", &save); w && n < 16; w = strtok_r(NULL, " ", &save))
		names[n++] = w;
	check_enum(schema, "model/synth/shape", names, n, NULL);
	json_decref(schema);
}

/* No shipped protocol or projections file carries a placeholder: each is a baseline someone
 * runs as it is. */
static void scan_placeholders(const char *dir)
{
	static const char *const markers[] = { "TODO", "placeholder", "TBD", "XXX", "FIXME" };
	char path[4600];
	size_t len;
	DIR *d = opendir(dir);
	struct dirent *de;
	T_ASSERT(d != NULL);
	while (d && (de = readdir(d))) {
		if (!ends_with(de->d_name, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		char *text = t_slurp(path, &len);
		T_ASSERT(text != NULL);
		for (size_t k = 0; text && k < sizeof(markers) / sizeof(markers[0]); k++) {
			const char *hit = strcasestr(text, markers[k]);
			if (hit)
				fprintf(stderr, "%s: placeholder marker '%s' at byte %zu\n", path,
					markers[k], (size_t)(hit - text));
			T_ASSERT(hit == NULL);
		}
		free(text);
	}
	if (d)
		closedir(d);
}

static void test_no_placeholders(void)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/protocols", root());
	scan_placeholders(dir);
	snprintf(dir, sizeof(dir), "%s/protocols/projections", root());
	scan_placeholders(dir);
}

/* The AIOS protocols carry AIOS's baseline prompt byte for byte (the shared reference copy,
 * when it is at hand: MEMWALL_SHARED). Returns false when it is not, so main can skip. */
static bool test_aios_prompt(void)
{
	static const char *const names[] = { "falcon7b-q4km-llamacpp.json",
					      "falcon7b-q4km-llamacpp-aios-method.json" };
	const char *shared = getenv("MEMWALL_SHARED");
	char path[4600];
	size_t len = 0;
	snprintf(path, sizeof(path), "%s/reference/aios/baseline-prompt.txt", shared ? shared : "");
	char *want = shared ? t_slurp(path, &len) : NULL;
	if (!want) {
		fprintf(stderr, "skip: AIOS prompt comparison: %s not readable (set MEMWALL_SHARED to "
			"the shared reference folder)\n", path);
		return false;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct mw_protocol *p = NULL;
		struct mw_error err;
		mw_error_clear(&err);
		snprintf(path, sizeof(path), "%s/protocols/%s", root(), names[i]);
		T_EQ_INT(mw_protocol_load(&p, path, 0, &err), 0);
		T_ASSERT(p && p->prompt && strlen(p->prompt) == len && !memcmp(p->prompt, want, len));
		mw_protocol_free(p);
	}
	free(want);
	return true;
}

/* With --aios-prompt, only the comparison with the shared reference: its own test row
 * (tests/meson.build), so a machine without ../shared skips that and nothing else. */
/* model.synth.construction (issue 26): the engine's names, and nothing else, reach the plan. */
static void test_construction(void)
{
	static const struct {
		const char *value;
		int rc;
		enum eng_synth_construction want;
	} cases[] = { { "varied", 0, ENG_SYNTH_VARIED }, { "legacy", 0, ENG_SYNTH_LEGACY },
		      { "random", -EINVAL, 0 } };
	char path[4096], smoke[4096], text[8192], *at;
	snprintf(path, sizeof(path), "/tmp/mw-test-protocol-%d.json", (int)getpid());
	snprintf(smoke, sizeof(smoke), "%s/protocols/stories260k-smoke.json", root());
	FILE *f = fopen(smoke, "r");
	size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	if (f)
		fclose(f);
	text[n] = '\0';
	at = strstr(text, "\"synth\": {");
	T_ASSERT(at != NULL);
	if (!at)
		return;
	at += strlen("\"synth\": {");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f = fopen(path, "w");
		T_ASSERT(f && fprintf(f, "%.*s \"construction\": \"%s\",%s", (int)(at - text), text,
				      cases[i].value, at) > 0);
		if (f)
			fclose(f);
		struct mw_protocol *p = NULL;
		struct mw_error err;
		mw_error_clear(&err);
		int rc = mw_protocol_load(&p, path, 0, &err);
		T_EQ_INT(rc, cases[i].rc);
		if (rc)
			T_CONTAINS(err.field, "construction");
		else if (p)
			T_EQ_INT(p->model.synth_construction, cases[i].want);
		mw_protocol_free(p);
	}
	unlink(path);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--aios-prompt")) {
		bool compared = test_aios_prompt();
		int rc = t_done();
		return rc == 0 && !compared ? 77 : rc;
	}
	test_schema_enums();
	test_shipped();
	test_embedded_default();
	test_defaults();
	test_relative();
	test_construction();
	test_bad();
	test_schema_subset();
	test_no_placeholders();
	return t_done();
}
