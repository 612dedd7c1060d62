/* tests/lib/run_record.h: a short `memwall run` of synthetic stories260K into a scratch folder,
 * and edits of its record, shared by the tests of the verbs that read records (roofline,
 * headroom). Include after test.h and jansson.h. */
#ifndef MEMWALL_TEST_RUN_RECORD_H
#define MEMWALL_TEST_RUN_RECORD_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char rscratch[256];

/* Runs a short protocol (with a 10 GB/s roofline.bandwidth_gbps) into rscratch and returns
 * the record's path in path (n bytes), "" when none was written. */
static void run_record(char *path, size_t n)
{
	char proto[512], dir[512], cache[512], state[512];
	path[0] = '\0';
	snprintf(rscratch, sizeof(rscratch), "/tmp/mw-test-rec-XXXXXX");
	if (!mkdtemp(rscratch))
		return;
	snprintf(cache, sizeof(cache), "%s/cache", rscratch);
	snprintf(state, sizeof(state), "%s/state", rscratch);
	setenv("MEMWALL_CACHE_DIR", cache, 1);
	setenv("MEMWALL_STATE_DIR", state, 1);
	snprintf(proto, sizeof(proto), "%s/p.json", rscratch);
	snprintf(dir, sizeof(dir), "%s/out", rscratch);
	FILE *f = fopen(proto, "w");
	if (!f)
		return;
	fputs("{\"name\": \"rec\", \"model\": {\"format\": \"llama2c\", \"synth\": "
	      "{\"shape\": \"stories260K\", \"seed\": 42}}, \"tokenizer\": null,\n"
	      " \"engine\": {\"kind\": \"builtin\", \"threads\": 1},\n"
	      " \"prompt_tokens\": [1], \"decode_tokens\": 8, \"runs\": 2, \"warmup_runs\": 0,\n"
	      " \"counters\": {\"dram\": \"optional\", \"energy\": \"off\"},\n"
	      " \"idle_baseline_ms\": 2, \"drift\": {\"max_bandwidth_change_pct\": 50, "
	      "\"probe_ms\": 0},\n \"roofline\": {\"bandwidth_gbps\": 10}}\n", f);
	fclose(f);
	const char *argv[] = { "memwall", "run", proto, "-o", dir, NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	const char *w = strstr(o.err, "result written to ");
	if (w)
		snprintf(path, n, "%.*s", (int)strcspn(w + 18, " \n"), w + 18);
	else
		fprintf(stderr, "memwall run exited %d:\n%s\n%s\n", o.status, o.out, o.err);
	t_output_free(&o);
}

/* A copy of the record at path, edited by edit, written to out. */
static void record_edit(const char *path, const char *out, void (*edit)(json_t *doc))
{
	json_t *doc = json_load_file(path, 0, NULL);
	T_ASSERT(doc != NULL);
	if (!doc)
		return;
	edit(doc);
	T_EQ_INT(json_dump_file(doc, out, JSON_INDENT(1)), 0);
	json_decref(doc);
}

/* A measured tok/s of -5: what a hand edit or a broken writer leaves. */
static void edit_negative_tok_s(json_t *doc)
{
	json_object_set_new(json_object_get(json_object_get(json_object_get(doc, "summary"),
							    "metrics"), "tok_per_s"),
			    "mean", json_real(-5));
}

static void rm_scratch(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rscratch);
	if (!t_failures && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", rscratch);
}

#endif
