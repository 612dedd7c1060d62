/* tests/lib/verify_sim.c: the bodies of verify_sim.h. */
#include "verify_sim.h"

#include <string.h>

#include "record.h"
#include "run.h"
#include "sim_tree.h"
#include "test.h"

uint64_t t_vs_bytes(double gib)
{
	uint64_t unit = 6 * (uint64_t)sysconf(_SC_PAGESIZE), asked = (uint64_t)(gib * 1073741824.0);
	return (asked + unit - 1) / unit * unit;
}

void t_vs_begin(struct t_vs_steps *s)
{
	s->n = 0;
}

void t_vs_add(struct t_vs_steps *s, uint64_t net)
{
	if (s->n < T_VS_MAX)
		s->net[s->n++] = net;
}

void t_vs_target(struct t_vs_steps *s, uint64_t rd, uint64_t wr)
{
	t_vs_add(s, UINT64_MAX); /* set-up: GAP */
	t_vs_add(s, rd);
	t_vs_add(s, wr);
}

uint64_t t_vs_count(const struct t_vs_steps *s, int i)
{
	return s->net[i] == UINT64_MAX ? (uint64_t)T_VS_GAP : s->net[i] + T_VS_IDLE;
}

uint64_t t_vs_sum(const struct t_vs_steps *s, int from, int to)
{
	uint64_t n = 0;
	for (int i = from; i <= to && i < s->n; i++)
		n += t_vs_count(s, i);
	return n;
}

void t_vs_rule(FILE *f, uint32_t type, uint64_t config, const char *match,
	       const struct t_vs_steps *s)
{
	fprintf(f,
		"perf type=%u config=0x%" PRIx64 " %s start=1000 ns_per_read=2000000 steps=%d,%d",
		type, config, match, T_VS_GAP, T_VS_IDLE);
	for (int i = 0; i < s->n; i++)
		fprintf(f, ",%" PRIu64, t_vs_count(s, i));
	fputc('\n', f);
}

struct t_output t_vs_verify(const char *size, const char *out, const char *a1,
			  const char *a2, const char *a3)
{
	const char *argv[] = { "memwall", "verify", "--json", "--size", size, "--idle-ms", "1",
			       "--no-perf", "-o", out, a1, a2, a3, NULL };
	return t_run(argv);
}

void t_vs_run_protocol(const char *path, const char *name)
{
	char doc[1024];
	snprintf(doc, sizeof(doc),
		 "{\"name\": \"%s\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		 "{\"shape\": \"stories260K\", \"seed\": 42}}, \"tokenizer\": null,\n"
		 " \"engine\": {\"kind\": \"builtin\", \"threads\": 1},\n"
		 " \"prompt_tokens\": [1], \"decode_tokens\": 2, \"runs\": 1, \"warmup_runs\": 0,\n"
		 " \"counters\": {\"dram\": \"required\", \"backend\": \"intel_imc_free\", "
		 "\"energy\": \"off\"}, \"idle_baseline_ms\": 2,\n"
		 " \"drift\": {\"max_bandwidth_change_pct\": 50, \"probe_ms\": 0}}\n",
		 name);
	t_write_file(path, doc);
}

json_t *t_vs_load(const char *path)
{
	json_t *doc = json_load_file(path, 0, NULL);
	T_ASSERT(doc != NULL);
	return doc;
}

json_t *t_vs_expect_at(const char *file, int line, int status, const char *size, const char *out,
		       const char *a1, const char *a2, const char *const err_has[])
{
	struct t_output o = t_vs_verify(size, out, a1, a2, NULL);
	t_checks++;
	if (o.status != status)
		T_FAIL_AT(file, line, "verify exited %d, not %d:\n%s%s", o.status, status, o.out,
			  o.err);
	t_contains_all_at(file, line, "stderr", o.err, err_has);
	t_output_free(&o);
	return t_vs_load(out);
}

const json_t *t_vs_check(const json_t *rec, const char *name)
{
	return t_json_find(json_object_get(rec, "checks"), "name", name);
}

const char *t_vs_verdict(const json_t *rec, const char *name)
{
	const json_t *c = t_vs_check(rec, name);
	if (!c)
		fprintf(stderr, "no check named \"%s\"\n", name);
	T_ASSERT(c != NULL);
	return c ? json_string_value(json_object_get(c, "verdict")) : "(absent)";
}

const json_t *t_vs_diagnosis(const json_t *rec, const char *id)
{
	return t_json_find(json_object_get(rec, "diagnoses"), "id", id);
}

void t_vs_setup(char *scratch, size_t sn, const char *name, char *script, size_t n)
{
	t_need_memwall();
	t_scratch(scratch, sn, name);
	snprintf(script, n, "%s/sim.script", scratch);
	t_setenv_in("MEMWALL_STATE_DIR", scratch, "state");
}

FILE *t_vs_open(const char *path)
{
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	if (!f)
		exit(1);
	return f;
}

uint32_t t_vs_al_type(int i)
{
	char pmu[64];
	snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", i);
	return t_pmu_type("arrow-lake", pmu);
}

void t_vs_write_al(const char *path, t_vs_fill *fill, const void *arg)
{
	FILE *f = t_vs_open(path);
	for (int i = 0; i < 2; i++) {
		struct t_vs_steps rd, wr;
		t_vs_begin(&rd);
		t_vs_begin(&wr);
		fill(i, &rd, &wr, arg);
		t_vs_rule(f, t_vs_al_type(i), 0x20ff, "cpu=*", &rd);
		t_vs_rule(f, t_vs_al_type(i), 0x30ff, "cpu=*", &wr);
	}
	fclose(f);
}
