/* tests/e2e/test_external_llama.c: `memwall run` with real llama.cpp as the external engine:
 * scripts/llama-node.mjs (llama.cpp v0.5.0, prebuilt in the node-llama-cpp npm package) on a
 * tiny Falcon Q4_K_M model, read by the llama-completion adapter from llama.cpp's own perf
 * lines on stderr. Checks that the counts the adapter confirms are llama.cpp's (N tokens,
 * N - 1 eval runs), that tok/s comes from llama.cpp's eval timings, that the differential
 * arithmetic holds on the software counters, and that reading the wrong stream (no timing
 * lines) makes the run invalid with the reason.
 *
 * Skips (77) when node is not on PATH, when node-llama-cpp is in neither
 * $MEMWALL_NODE_LLAMA_DIR/node_modules nor scripts/llama-node/node_modules (install:
 * `npm install --prefix scripts/llama-node --omit=optional`), or when ../shared lacks the model. */
#include <limits.h>
#include <math.h>
#include <unistd.h>

#include "result.h"
#include "record.h"
#include "run.h"
#include "test.h"

#define MODEL "fixtures/gguf/models/tiny-falcon-Q4_K_M.gguf"

static char scratch[256], script[PATH_MAX], model[PATH_MAX];

static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	char dirs[8192], cand[PATH_MAX];
	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(cand, sizeof(cand), "%s/%s", *d ? d : ".", name);
		if (access(cand, X_OK) == 0)
			return true;
	}
	return false;
}

static bool have_package(const char *root)
{
	char probe[PATH_MAX];
	const char *dir = getenv("MEMWALL_NODE_LLAMA_DIR");
	if (dir && *dir) {
		snprintf(probe, sizeof(probe), "%s/node_modules/node-llama-cpp/package.json", dir);
		if (access(probe, F_OK) == 0)
			return true;
	}
	snprintf(probe, sizeof(probe),
		 "%s/scripts/llama-node/node_modules/node-llama-cpp/package.json", root);
	return access(probe, F_OK) == 0;
}

static json_t *run(const char *name, const char *stream, struct t_output *o)
{
	char proto[512], dir[512], body[10000], path[1024];
	snprintf(proto, sizeof(proto), "%s/%s.json", scratch, name);
	snprintf(dir, sizeof(dir), "%s/out", scratch);
	snprintf(body, sizeof(body),
		 "{\"name\": \"%s\", \"model\": {\"format\": \"gguf\", \"path\": \"%s\"},\n"
		 " \"prompt\": \"Once upon a time\",\n"
		 " \"engine\": {\"kind\": \"external\", \"threads\": 1, \"command\": [\"node\", \"%s\", "
		 "\"{model}\", \"{prompt}\", \"{n}\", \"{threads}\", \"{seed}\", \"--ignore-eos\"],\n"
		 "  \"adapter\": {\"name\": \"llama-completion\", \"stream\": \"%s\"}, "
		 "\"timeout_s\": 60},\n"
		 " \"decode_tokens\": 32, \"differential\": {\"short_tokens\": 8}, \"runs\": 2, "
		 "\"warmup_runs\": 0, \"idle_baseline_ms\": 0, \"drift\": {\"probe_ms\": 0}}\n",
		 name, model, script, stream);
	t_write_file(proto, body);
	const char *argv[] = { "memwall", "run", proto, "-o", dir, NULL };
	*o = t_run(argv);
	if (!t_written_path(o->err, path, sizeof(path)))
		return NULL;
	return json_load_file(path, 0, NULL);
}

static void test_real(void)
{
	struct t_output o;
	json_t *doc = run("llama", "stderr", &o);
	T_OK(o, "memwall run");
	T_CONTAINS(o.err, "long run: 32 tokens confirmed by llama-completion");
	T_ASSERT(doc != NULL);
	if (!doc)
		goto out;
	struct mw_error err;
	int rc = mw_result_validate(doc, "llama record", &err);
	if (rc)
		mw_error_print(&err);
	T_EQ_INT(rc, 0);
	T_CONTAINS(json_string_value(t_json_get(doc, "engine", "program", "version")), "v");
	const json_t *rep;
	size_t i;
	json_array_foreach(t_json_get(doc, "external", "repetitions", NULL), i, rep) {
		const json_t *l = json_object_get(rep, "long"), *s = json_object_get(rep, "short");
		/* llama.cpp's own counts: the first token comes out of the prompt's pass. */
		T_EQ_INT(json_integer_value(t_json_get(l, "adapter", "decode_tokens", NULL)), 32);
		T_EQ_INT(json_integer_value(t_json_get(l, "adapter", "eval_runs", NULL)), 31);
		T_EQ_INT(json_integer_value(t_json_get(s, "adapter", "decode_tokens", NULL)), 8);
		double eval_ms = json_number_value(t_json_get(l, "adapter", "eval_ms", NULL));
		T_ASSERT(eval_ms > 0);
		T_NEAR(json_number_value(t_json_get(rep, "figures", "tok_per_s", NULL)),
		       31 / (eval_ms * 1e-3), 1e-9 * 31 / (eval_ms * 1e-3));
		double b1 =
		    (double)json_integer_value(t_json_get(s, "software", "task_clock_ns", NULL));
		double b2 =
		    (double)json_integer_value(t_json_get(l, "software", "task_clock_ns", NULL));
		T_ASSERT(b1 > 0 && b2 > 0);
		T_NEAR(
		    json_number_value(t_json_get(rep, "figures", "task_clock_ns_per_token", NULL)),
		    (b2 - b1) / 24, 1e-9 * b2);
		T_NEAR(json_number_value(t_json_get(rep, "figures",
						    "task_clock_ns_per_token_whole_process", NULL)),
		       b2 / 32, 1e-9 * b2);
	}
	T_ASSERT(json_is_true(json_object_get(t_json_get(doc, "summary", "metrics", "tok_per_s"),
					      "measured")));
	json_decref(doc);
out:
	t_output_free(&o);
}

/* llama.cpp's perf lines are on stderr: reading stdout finds none, and memwall says so. */
static void test_wrong_stream(void)
{
	struct t_output o;
	json_t *doc = run("llama-stdout", "stdout", &o);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.err, "repetition 1, short run (8 tokens) is invalid:");
	T_ASSERT(doc != NULL);
	if (doc)
		T_ASSERT(json_is_false(json_object_get(doc, "complete")));
	json_decref(doc);
	t_output_free(&o);
}

int main(void)
{
	const char *root = getenv("MEMWALL_SOURCE_ROOT");
	if (!root)
		t_skip("MEMWALL_SOURCE_ROOT is not set (run under meson test)");
	if (!on_path("node"))
		t_skip("node is not on PATH: install nodejs to run real llama.cpp through "
		       "scripts/llama-node.mjs");
	if (!have_package(root))
		t_skip("node-llama-cpp is not installed: npm install --prefix scripts/llama-node "
		       "--omit=optional (or set MEMWALL_NODE_LLAMA_DIR)");
	snprintf(model, sizeof(model), "%s", t_shared(MODEL));
	snprintf(script, sizeof(script), "%s/scripts/llama-node.mjs", root);
	snprintf(scratch, sizeof(scratch), "/tmp/mw-test-external-llama-XXXXXX");
	t_mkdtemp(scratch);
	test_real();
	test_wrong_stream();
	return t_done_rm(scratch, 0);
}
