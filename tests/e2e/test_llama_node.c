/* tests/e2e/test_llama_node.c: scripts/llama-node.mjs, stock llama.cpp (v0.5.0, prebuilt in the
 * node-llama-cpp npm package) as an external engine, read back through src/run/adapters/registry.c.
 *
 * The script prints llama.cpp's own perf block on stderr and a memwall-tokens line on stdout;
 * the two adapters must agree on the token counts. That checks, against real llama.cpp code,
 * the rule the llama-completion adapter relies on (N generated = eval runs + 1) and its refusal
 * to guess when llama.cpp prints the ambiguous "1 runs".
 *
 * Skips (77) when node is not on PATH, when node-llama-cpp is in neither
 * $MEMWALL_NODE_LLAMA_DIR/node_modules nor scripts/llama-node/node_modules (install:
 * `npm install --prefix scripts/llama-node --omit=optional`), or when ../shared lacks the model. */
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "adapters.h"
#include "run.h"
#include "test.h"

#define MODEL "fixtures/gguf/models/tiny-llama-Q8_0.gguf"
#define PROMPT "Once upon a time"

static char node[PATH_MAX], script[PATH_MAX], model[PATH_MAX];

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* The first executable "node" on PATH. */
static bool find_node(void)
{
	const char *path = getenv("PATH");
	char dirs[8192];
	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
	for (char *save = NULL, *dir = strtok_r(dirs, ":", &save); dir;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(node, sizeof(node), "%s/node", *dir ? dir : ".");
		if (access(node, X_OK) == 0)
			return true;
	}
	return false;
}

/* Where the script will find node-llama-cpp (the same order as scripts/llama-node.mjs). */
static bool find_package(const char *root, char *where, size_t size)
{
	const char *dir = getenv("MEMWALL_NODE_LLAMA_DIR");
	char probe[PATH_MAX];
	if (dir && *dir) {
		snprintf(probe, sizeof(probe), "%s/node_modules/node-llama-cpp/package.json", dir);
		if (exists(probe))
			return snprintf(where, size, "%s", dir) > 0;
	}
	snprintf(probe, sizeof(probe),
		 "%s/scripts/llama-node/node_modules/node-llama-cpp/package.json", root);
	if (exists(probe))
		return snprintf(where, size, "%s/scripts/llama-node", root) > 0;
	snprintf(where, size, "%s%s%s/scripts/llama-node", dir && *dir ? dir : "",
		 dir && *dir ? " or " : "", root);
	return false;
}

static struct t_output generate(const char *n_tokens, bool ignore_eos)
{
	const char *argv[] = { node, script, model, PROMPT, n_tokens, "1", "42",
			       ignore_eos ? "--ignore-eos" : NULL, NULL };
	return t_run(argv);
}

static void parse_both(const struct t_output *o, struct mw_adapter_result *gen,
		       struct mw_adapter_result *cpp)
{
	struct mw_error err;
	int rc = mw_adapter_parse("memwall-tokens", o->out, strlen(o->out), NULL, "stdout", gen,
				  &err);
	if (rc)
		mw_error_print(&err);
	T_EQ_INT(rc, 0);
	rc = mw_adapter_parse("llama-completion", o->err, strlen(o->err), NULL, "stderr", cpp,
			      &err);
	if (rc)
		mw_error_print(&err);
	T_EQ_INT(rc, 0);
}

/* 32 tokens: both adapters say 32, from different sources (the script's own count on stdout,
 * llama.cpp's "31 runs" on stderr). One thread: on a shared 2-core machine two threads spin
 * against each other and the run takes 100x longer. */
static void test_generate(void)
{
	struct mw_adapter_result gen, cpp;
	struct mw_error err;
	struct t_output o = generate("32", true);
	T_EQ_INT(o.status, 0);
	if (o.status)
		fprintf(stderr, "stderr: %s\n", o.err);
	parse_both(&o, &gen, &cpp);

	T_ASSERT(gen.decode_tokens.known && cpp.decode_tokens.known);
	T_EQ_INT(gen.decode_tokens.value, 32);
	T_EQ_INT(cpp.decode_tokens.value, 32);
	T_EQ_INT(gen.eval_runs.value, 31);
	T_EQ_INT(cpp.eval_runs.value, 31);
	T_ASSERT(gen.prompt_tokens.known && cpp.prompt_tokens.known);
	T_ASSERT(gen.prompt_tokens.value >= 2);
	T_EQ_INT(cpp.prompt_tokens.value, gen.prompt_tokens.value);
	T_ASSERT(cpp.eval_ms.known && cpp.eval_ms.value > 0);
	T_ASSERT(cpp.tok_per_s.known && cpp.tok_per_s.value > 0);
	T_ASSERT(cpp.load_ms.known && cpp.prompt_ms.known);
	/* The script's wall clock around the loop includes llama.cpp's eval time. */
	T_ASSERT(gen.eval_ms.known && gen.eval_ms.value >= cpp.eval_ms.value * 0.9);
	T_EQ_INT(mw_adapter_check(&gen, 32, false, "stdout", &err), 0);
	T_EQ_INT(mw_adapter_check(&cpp, 32, false, "stderr", &err), 0);
	t_output_free(&o);
}

/* -n 2: one eval run with a non-zero time, so llama.cpp's "1 runs" is a real 1.
 * -n 1: no eval run, printed as "0.00 ms / 1 runs": the adapter must refuse, not guess. */
static void test_short(void)
{
	struct mw_adapter_result gen, cpp;
	struct t_output o = generate("2", true);
	T_EQ_INT(o.status, 0);
	parse_both(&o, &gen, &cpp);
	T_EQ_INT(gen.decode_tokens.value, 2);
	T_ASSERT(cpp.decode_tokens.known);
	T_EQ_INT(cpp.decode_tokens.value, 2);
	t_output_free(&o);

	o = generate("1", true);
	T_EQ_INT(o.status, 0);
	parse_both(&o, &gen, &cpp);
	T_ASSERT(gen.decode_tokens.known);
	T_EQ_INT(gen.decode_tokens.value, 1);
	T_ASSERT(!cpp.decode_tokens.known);
	T_CONTAINS(cpp.why_unknown, "max(1, n)");
	t_output_free(&o);
}

static void test_errors(void)
{
	struct mw_adapter_result r;
	struct mw_error err;
	const char *missing[] = { node, script, "/nonexistent.gguf", "x", "4", "1", "1", NULL };
	struct t_output o = t_run(missing);
	T_EQ_INT(o.status, 1);
	T_EQ_INT(mw_adapter_parse("llama-completion", o.err, strlen(o.err), NULL, "stderr", &r,
				  &err), -EIO);
	T_CONTAINS(err.text, "failed to load model /nonexistent.gguf");
	t_output_free(&o);

	const char *usage[] = { node, script, model, "x", "many", "1", "1", NULL };
	T_RUN_EXPECT(usage, 2, NULL, T_LIST("N_TOKENS must be a whole number"));
}

int main(void)
{
	const char *root = getenv("MEMWALL_SOURCE_ROOT");
	char where[2 * PATH_MAX];
	if (!root)
		t_skip("MEMWALL_SOURCE_ROOT is not set (run under meson test)");
	if (!find_node())
		t_skip("node is not on PATH: this test runs llama.cpp through node-llama-cpp");
	if (!find_package(root, where, sizeof(where)))
		t_skip("node-llama-cpp is not installed in %s: run `npm install --prefix "
		       "scripts/llama-node --omit=optional` (85 MB) or set MEMWALL_NODE_LLAMA_DIR",
		       where);
	snprintf(model, sizeof(model), "%s", t_shared(MODEL));
	snprintf(script, sizeof(script), "%s/scripts/llama-node.mjs", root);
	printf("node %s, node-llama-cpp from %s\n", node, where);

	test_generate();
	test_short();
	test_errors();
	return t_done();
}
