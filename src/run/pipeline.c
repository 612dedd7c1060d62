/* src/run/pipeline.c: `memwall run`, one loop for every engine (the rows: run_state.h).
 *
 *   plan      the protocol and the overrides resolved and checked once (plan.c);
 *   prepare   the engine row opens what it runs (a model, a program);
 *   counters  DRAM, energy: opened once, required ones checked (counters.c);
 *   execute   the row's warm-ups and measured runs;
 *   record    built in one place (record_build.c) and derived (src/record/result.c).
 *
 * A protocol of variants (protocols/README.md, Variants) runs this once per variant, each a
 * whole protocol, and keeps every variant's record in one (variants_run below).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "dram_calibration.h"
#include "dram_verify.h"
#include "machine.h"
#include "record_build.h"
#include "run_state.h"
#include "result.h"
#include "roofline_block.h"

static const struct mw_engine_row *const rows[MW_ENGINE_COUNT] = {
	[MW_ENGINE_BUILTIN] = &mw_engine_builtin,
	[MW_ENGINE_EXTERNAL] = &mw_engine_external,
};

static void run_free(struct mw_run *run)
{
	json_decref(run->machine);
	json_decref(run->calibration);
	json_decref(run->verification);
	json_decref(run->engine);
	json_decref(run->model);
	json_decref(run->preflight);
	json_decref(run->software);
	json_decref(run->drift);
	json_decref(run->runs);
	json_decref(run->external);
	mw_counters_close(&run->ctr);
	mw_plan_free(&run->plan);
}

/* The calibration of this machine's DRAM counters, looked up once the backend is open. */
static int calibration_find(struct mw_run *run)
{
	if (!run->ctr.dram)
		return 0;
	char sha[65];
	json_t *fp = mw_dramcal_fingerprint(run->machine, prb_dram_status(run->ctr.dram), sha);
	if (!fp)
		return -ENOMEM;
	struct mw_dramcal_source src = { .file = run->o->calibration,
					 .off = run->o->no_calibration };
	run->calibration = mw_dramcal_for_run(&src, fp, sha, mw_counters_dram_basis(&run->ctr),
					      run->o->log);
	/* the latest `memwall verify` of this machine, on the layer this run counts on */
	run->verification = mw_dramverify_for_run(NULL, sha, prb_counter_backend(), run->o->log);
	json_decref(fp);
	return run->calibration && run->verification ? 0 : -ENOMEM;
}

/* One protocol (or one variant of one), start to record. */
static enum mw_run_status run_one(const struct mw_protocol *p, const struct mw_run_options *o,
				  json_t **out, struct mw_error *err)
{
	const struct mw_engine_row *row = rows[p->engine.kind];
	struct mw_run run = { .p = p, .o = o };
	struct mw_run_signals sigs;
	enum mw_run_status st;
	json_t *doc = NULL;

	*out = NULL;
	mw_run_signals_catch(&sigs);
	if ((st = mw_plan_resolve(&run.plan, p, o, err)) != MW_RUN_DONE ||
	    (st = row->prepare(&run, err)) != MW_RUN_DONE)
		goto out;
	if (mw_counters_open(&run.ctr, &run.plan, row->energy, o->log, err)) {
		st = MW_RUN_ENVIRONMENT;
		goto out;
	}
	mw_utc_now(run.started, sizeof(run.started), false);
	if (!(run.machine = mw_machine_describe(NULL)) || calibration_find(&run)) {
		mw_error_set(err, -ENOMEM, "", "", "out of memory");
		st = MW_RUN_ENVIRONMENT;
		goto out;
	}
	if ((st = row->execute(&run, err)) != MW_RUN_DONE)
		goto out;
	if (mw_run_stopped() && !run.stop_why[0])
		snprintf(run.stop_why, sizeof(run.stop_why), "interrupted by %s",
			 mw_run_stop_name());
	doc = mw_record_build(&run);
	if (!doc) {
		mw_error_set(err, -ENOMEM, "", "", "cannot build the result record");
		st = MW_RUN_ENVIRONMENT;
		goto out;
	}
	if (mw_result_derive(doc, "(this run)", err)) {
		json_decref(doc);
		st = MW_RUN_ENVIRONMENT;
		goto out;
	}
	/* Headroom against the analytic roofline, from the derived figures
	 * (record/roofline_block.c). */
	json_t *roof = mw_roofline_block(doc, "(this run)");
	if (roof)
		json_object_set_new(doc, "roofline", roof);
	if (row->summarize)
		row->summarize(&run, doc);
	*out = doc;
	st = run.stop_why[0] ? MW_RUN_INTERRUPTED : MW_RUN_DONE;
out:
	mw_run_signals_restore(&sigs);
	row->close(&run);
	run_free(&run);
	return st;
}

/* The record of a protocol of variants: the first variant's record at the top (so report,
 * compare and the store read it as any record), the protocol as written, and every variant's
 * whole record under variants[] with its name and overrides. */
static json_t *variants_record(const struct mw_protocol *p, json_t *const *recs, size_t n,
			       const char *stop_why)
{
	json_t *doc = json_deep_copy(recs[0]), *list = json_array();
	json_t *proto = json_object_get(doc, "protocol");
	if (!doc || !list || !proto) {
		json_decref(doc);
		json_decref(list);
		return NULL;
	}
	json_object_set_new(proto, "source", json_string(p->source));
	json_object_set_new(proto, "sha256", json_string(p->sha256));
	json_object_set(proto, "document", p->doc);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, json_pack("{s:s, s:O, s:O}", "name", p->variants[i].name,
						      "overrides", p->variants[i].overrides, "record",
						      recs[i]));
	json_object_set_new(doc, "variants", list);
	if (stop_why[0]) {
		json_object_set_new(doc, "complete", json_false());
		json_object_set_new(doc, "incomplete_reason", json_string(stop_why));
	}
	return doc;
}

static enum mw_run_status variants_run(const struct mw_protocol *p,
				       const struct mw_run_options *o, json_t **out,
				       struct mw_error *err)
{
	json_t **recs = calloc(p->n_variants, sizeof(*recs));
	enum mw_run_status st = MW_RUN_DONE;
	char why[512] = "";
	size_t n = 0;
	if (!recs) {
		mw_error_set(err, -ENOMEM, "", "", "out of memory");
		return MW_RUN_ENVIRONMENT;
	}
	for (; n < p->n_variants && st == MW_RUN_DONE; n++) {
		mw_run_say(o, "variant %zu/%zu: %s", n + 1, p->n_variants, p->variants[n].name);
		st = run_one(p->variants[n].p, o, &recs[n], err);
		if (st == MW_RUN_INTERRUPTED)
			snprintf(why, sizeof(why), "variant %s: %.400s", p->variants[n].name,
				 json_string_value(json_object_get(recs[n], "incomplete_reason")));
		else if (st != MW_RUN_DONE)
			break;
	}
	if (st == MW_RUN_DONE || st == MW_RUN_INTERRUPTED) {
		if (n < p->n_variants && !why[0])
			snprintf(why, sizeof(why), "stopped after %zu of %zu variants", n,
				 p->n_variants);
		if (!(*out = variants_record(p, recs, n, why))) {
			mw_error_set(err, -ENOMEM, "", "", "cannot build the result record");
			st = MW_RUN_ENVIRONMENT;
		}
	}
	for (size_t i = 0; i < p->n_variants; i++)
		json_decref(recs[i]);
	free(recs);
	return st;
}

enum mw_run_status mw_runner_run(const struct mw_protocol *p, const struct mw_run_options *o,
				 json_t **out, struct mw_error *err)
{
	*out = NULL;
	return p->n_variants ? variants_run(p, o, out, err) : run_one(p, o, out, err);
}
