/* src/run/record_build.c: a run's result record, built in one place for every engine.
 *
 * What is raw is written here; what is derived from it (figures, summary, acceptance) is
 * computed by mw_result_derive, which `memwall validate` runs again on the file. */
#include <string.h>

#include "machine.h"
#include "record_build.h"
#include "redact.h"
#include "result.h"
#include "version.h"

/* MW_GIT_DESCRIBE split into the commit (without "+dirty") and whether the tree was dirty. */
static void git_split(char *commit, size_t n, bool *dirty)
{
	snprintf(commit, n, "%s", MW_GIT_DESCRIBE);
	char *plus = strstr(commit, "+dirty");
	*dirty = plus != NULL;
	if (plus)
		*plus = '\0';
}

static json_t *memwall_json(const struct mw_run *run)
{
	char commit[128];
	bool dirty;
	git_split(commit, sizeof(commit), &dirty);
	json_t *cmd = json_array();
	bool redacted, r; /* secrets in the environment stay out (src/base/redact.h) */
	json_t *env = mw_environment_allowed(&redacted);
	for (int i = 0; cmd && i < run->o->argc; i++) {
		char *arg = mw_redact(run->o->argv[i], strlen(run->o->argv[i]), NULL, &r);
		json_array_append_new(cmd, json_string(arg ? arg : "(out of memory)"));
		redacted |= r;
		free(arg);
	}
	json_t *mw = json_pack("{s:s, s:s, s:b, s:o, s:o, s:o, s:b}", "version", mw_version(),
			       "git_commit", commit, "git_dirty", dirty, "command", cmd, "kernels",
			       run->kernels ? json_string(run->kernels) : json_null(),
			       "environment", env, "redacted", redacted);
	/* The quant table beside the f32 kernels' (issue 27): both tables that ran. */
	if (mw && run->kernels)
		json_object_set_new(mw, "quant_kernels", run->quant_kernels ?
				    json_string(run->quant_kernels) : json_null());
	return mw;
}

static json_t *model_json(const struct mw_run *run)
{
	const struct mw_protocol *p = run->p;
	const struct mw_plan *pl = &run->plan;
	json_t *synth = p->model.synth_shape
		? json_pack("{s:s, s:I}", "shape", p->model.synth_shape, "seed",
			    (json_int_t)p->model.synth_seed)
		: json_null();
	if (json_is_object(synth) && p->model.synth_act != ENG_ACT_SILU)
		json_object_set_new(synth, "activation", json_string(p->model.synth_activation));
	if (json_is_object(synth) && p->model.synth_cd)
		json_object_set_new(synth, "canonical_delta", json_string(p->model.synth_cd));
	json_t *m = json_pack("{s:s, s:s, s:s, s:I, s:s, s:b, s:o, s:n, s:n, s:n}", "format",
			      mw_model_format_name(p->model.format), "name", pl->model_name, "path",
			      pl->model_path, "file_bytes", (json_int_t)pl->model_bytes, "sha256",
			      pl->model_sha256, "synthetic", p->model.synth_shape != NULL, "synth",
			      synth, "arch", "shape", "weight_bytes");
	/* The row's facts (a synthetic label in the file itself, arch, shape) win. */
	if (m && run->model)
		json_object_update(m, run->model);
	return m;
}

static json_t *counters_json(const struct mw_run *run)
{
	json_t *dram = mw_counters_dram_json(&run->ctr);
	if (dram && run->calibration)
		json_object_update(dram, run->calibration);
	if (dram && run->verification)
		json_object_update(dram, run->verification);
	/* Hardware counters that opened on a virtual machine: its hypervisor passes the memory
	 * controllers' PMUs through. Said in the record, because `validate` refuses a hardware
	 * layer on a hypervisor otherwise (src/record/layer_check.h). */
	const char *layer = json_string_value(json_object_get(dram, "layer"));
	if (dram && json_is_true(json_object_get(dram, "measured")) && layer &&
	    strcmp(layer, "sim") && json_is_true(json_object_get(run->machine, "hypervisor")))
		json_object_set_new(dram, "uncore_passthrough", json_true());
	return json_pack("{s:o, s:o, s:O}", "dram", dram, "energy",
			 mw_counters_energy_json(&run->ctr), "software",
			 run->software ? run->software : json_array());
}

json_t *mw_record_build(const struct mw_run *run)
{
	const struct mw_protocol *p = run->p;
	bool complete = !run->stop_why[0];
	json_t *doc = json_pack(
		"{s:s, s:s, s:b, s:o, s:s, s:o, s:{s:s, s:s, s:s},"
		" s:{s:s, s:s, s:s, s:O, s:O}, s:o, s:O, s:O, s:o, s:O, s:O, s:{}, s:{}}",
		"schema", MW_RESULT_SCHEMA_ID, "kind", "run", "complete", complete,
		"incomplete_reason", complete ? json_null() : json_string(run->stop_why),
		"created_utc", run->started, "memwall", memwall_json(run),
		"units", "MB", "10^6 bytes", "MiB", "2^20 bytes", "time",
		"ns unless the key names another unit",
		"protocol", "name", p->name, "source", p->source, "sha256", p->sha256, "document",
		p->doc, "overrides", run->plan.overrides,
		"model", model_json(run), "engine", run->engine,
		"machine", run->machine, "counters", counters_json(run),
		"drift", run->drift, "runs", run->runs, "summary", "acceptance");
	if (doc && run->preflight)
		json_object_set(doc, "preflight", run->preflight);
	if (doc && run->external)
		json_object_set(doc, "external", run->external);
	return doc;
}
