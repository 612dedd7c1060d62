/* tests/lib/record.c: a short `memwall run` and edits of its record (record.h). */
#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "test.h"
#include "values.h"

void t_run_record(char *scratch, size_t sn, char *path, size_t n)
{
	char proto[512], dir[512];
	path[0] = '\0';
	t_scratch(scratch, sn, "rec");
	t_setenv_in("MEMWALL_CACHE_DIR", scratch, "cache");
	t_setenv_in("MEMWALL_STATE_DIR", scratch, "state");
	snprintf(proto, sizeof(proto), "%s/p.json", scratch);
	snprintf(dir, sizeof(dir), "%s/out", scratch);
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
	if (!t_written_path(o.err, path, n))
		fprintf(stderr, "memwall run exited %d:\n%s\n%s\n", o.status, o.out, o.err);
	t_output_free(&o);
}

void t_record_edit(const char *path, const char *out, void (*edit)(json_t *doc))
{
	json_t *doc = json_load_file(path, 0, NULL);
	T_ASSERT(doc != NULL);
	if (!doc)
		return;
	edit(doc);
	T_EQ_INT(json_dump_file(doc, out, JSON_INDENT(1)), 0);
	json_decref(doc);
}

void t_edit_negative_tok_s(json_t *doc)
{
	json_object_set_new(json_object_get(json_object_get(json_object_get(doc, "summary"),
							    "metrics"), "tok_per_s"),
			    "mean", json_real(-5));
}

const json_t *t_json_get(const json_t *o, const char *a, const char *b, const char *c)
{
	o = json_object_get(o, a);
	if (b)
		o = json_object_get(o, b);
	if (c)
		o = json_object_get(o, c);
	return o;
}

bool t_written_path(const char *err, char *path, size_t n)
{
	const char *w = err ? strstr(err, "result written to ") : NULL;
	path[0] = '\0';
	if (!w)
		return false;
	snprintf(path, n, "%.*s", (int)strcspn(w + 18, " \n"), w + 18);
	return true;
}

const json_t *t_json_find(const json_t *arr, const char *key, const char *value)
{
	size_t i;
	const json_t *e;
	json_array_foreach(arr, i, e) {
		const char *s = json_string_value(json_object_get(e, key));
		if (s && !strcmp(s, value))
			return e;
	}
	return NULL;
}

double t_runs_median(const char *path, const char *metric)
{
	json_t *d = json_load_file(path, 0, NULL), *r;
	double v[64];
	size_t n = 0, i;
	json_array_foreach(json_object_get(d, "runs"), i, r) {
		const json_t *x = json_object_get(json_object_get(r, "figures"), metric);
		if (!json_is_true(json_object_get(r, "warmup")) && json_is_number(x) && n < 64)
			v[n++] = json_number_value(x);
	}
	json_decref(d);
	return t_median(v, n);
}

void t_validates(const char *path, const char *who)
{
	struct t_output o = t_run((const char *[]){ "memwall", "validate", path, NULL });
	if (o.status)
		fprintf(stderr, "%s: validate %s:\n%s%s\n", who, path, o.out, o.err);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
}
