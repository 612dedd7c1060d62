/* src/run/pipeline.c: `memwall run`, one loop for every engine (the rows: run_state.h).
 *
 *   plan      the protocol and the overrides resolved and checked once (plan.c);
 *   prepare   the engine row opens what it runs (a model, a program);
 *   counters  DRAM, energy: opened once, required ones checked (counters.c);
 *   execute   the row's warm-ups and measured runs;
 *   record    built in one place (record_build.c) and derived (src/record/result.c).
 */
#include <errno.h>
#include <string.h>

#include "control.h"
#include "dram_calibration.h"
#include "machine.h"
#include "record_build.h"
#include "run_state.h"
#include "result.h"
#include "roofline.h"

static const struct mw_engine_row *const rows[MW_ENGINE_COUNT] = {
	[MW_ENGINE_BUILTIN] = &mw_engine_builtin,
	[MW_ENGINE_EXTERNAL] = &mw_engine_external,
};

static void run_free(struct mw_run *run)
{
	json_decref(run->machine);
	json_decref(run->calibration);
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
	json_decref(fp);
	return run->calibration ? 0 : -ENOMEM;
}

enum mw_run_status mw_runner_run(const struct mw_protocol *p, const struct mw_run_options *o,
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
	/* Headroom against the analytic roofline, from the derived figures (analysis/roofline.c). */
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
