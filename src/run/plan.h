/* src/run/plan.h: a run plan, resolved once from a protocol and the command line's overrides.
 *
 * Every check of what a run will do is here, in one place, for both engine rows: the token
 * counts and the differential method's short length, the threads against the pinned CPUs,
 * the model's file against the protocol's size, sha256 and format. The rows read only the
 * plan (and, for what only they use, the protocol it came from). */
#ifndef MEMWALL_RUN_PLAN_H
#define MEMWALL_RUN_PLAN_H

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "protocol.h"
#include "runner.h"

struct mw_plan {
	const struct mw_protocol *p;
	enum mw_engine_kind kind;
	int runs, warmups;
	int decode;          /* tokens decoded per run (the long run of an external engine) */
	int short_tokens;    /* external engines: the short run's length; 0 for builtin */
	int threads;         /* resolved: never 0 */
	bool pinned;
	cpu_set_t cpus;      /* when pinned */
	char model_path[4096];
	char model_name[256];  /* for people: "synthetic stories110M (seed 7)", a file name */
	char model_sha256[65];
	uint64_t model_bytes;
	json_t *overrides;   /* what the command line changed, as recorded; owned */
};

/* Resolves p and o into *pl: synthesises the model on first use, hashes it and checks it.
 * MW_RUN_DONE, or the status to exit with and err naming the file, the field and the fix.
 * Free with mw_plan_free, also after a failure. */
enum mw_run_status mw_plan_resolve(struct mw_plan *pl, const struct mw_protocol *p,
				   const struct mw_run_options *o, struct mw_error *err);
void mw_plan_free(struct mw_plan *pl);

#endif
