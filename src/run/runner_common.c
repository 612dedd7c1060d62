/* src/runner_common.c: the parts of `memwall run` both runners use (see runner_common.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner_common.h"
#include "version.h"

const struct mw_run_sw_event mw_run_sw_events[MW_RUN_N_SW] = {
	{ "task-clock", "task_clock_ns" },
	{ "context-switches", "context_switches" },
	{ "cpu-migrations", "cpu_migrations" },
	{ "page-faults", "page_faults" },
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
	/* A second Ctrl-C should kill: the first one has been heard. */
	signal(sig, SIG_DFL);
}

void mw_run_signals_catch(struct mw_run_signals *saved)
{
	struct sigaction sa = { .sa_handler = on_signal };
	stop_signal = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &saved->old_int);
	sigaction(SIGTERM, &sa, &saved->old_term);
}

void mw_run_signals_restore(const struct mw_run_signals *saved)
{
	sigaction(SIGINT, &saved->old_int, NULL);
	sigaction(SIGTERM, &saved->old_term, NULL);
}

int mw_run_stopped(void)
{
	return stop_signal;
}

void mw_run_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR && !stop_signal)
		;
}

void mw_run_say(const struct mw_run_options *o, const char *fmt, ...)
{
	if (!o->log)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("memwall run: ", o->log);
	vfprintf(o->log, fmt, ap);
	va_end(ap);
	fputc('\n', o->log);
	fflush(o->log);
}

struct prb_dram *mw_run_dram_open(const struct mw_protocol *p, struct prb_system *sys,
				  char *reason, size_t n)
{
	struct prb_dram *dram = NULL;
	if (p->counters.dram == MW_NEED_OFF) {
		snprintf(reason, n, "turned off by the protocol (counters.dram is \"off\")");
		return NULL;
	}
	struct prb_dram_options dopt = {
		.backend = strcmp(p->counters.backend, "auto") ? p->counters.backend : NULL,
	};
	struct prb_dram_status *st = calloc(1, sizeof(*st));
	if (!st || prb_dram_open(&dram, sys, &dopt, st)) {
		dram = NULL;
		snprintf(reason, n, "%s",
			 st && st->reason[0] ? st->reason : "no DRAM counter backend found");
	}
	free(st);
	return dram;
}

int mw_run_dram_check(const struct mw_protocol *p, const struct mw_run_options *o, bool have,
		      const char *reason, struct mw_error *err)
{
	if (have)
		return 0;
	if (p->counters.dram == MW_NEED_REQUIRED)
		return mw_error_set(err, -ENODEV, p->source, "counters.dram",
				    "DRAM counters are required by this protocol but unavailable: "
				    "%s", reason);
	mw_run_say(o, "DRAM traffic: not measured (%s)", reason);
	return 0;
}

json_t *mw_run_dram_json(const struct prb_dram *dram, const char *reason)
{
	if (!dram)
		return json_pack("{s:b, s:s}", "measured", 0, "reason", reason);
	const struct prb_dram_status *st = prb_dram_status(dram);
	json_t *inst = json_array();
	for (int i = 0; i < st->n_instances; i++)
		json_array_append_new(inst, json_string(st->instances[i].pmu));
	json_t *o = json_pack("{s:b, s:n, s:s, s:s, s:o, s:n, s:s}", "measured", 1, "reason",
			      "backend", st->backend, "description", st->description,
			      "instances", inst, "calibration_error_pct", "calibration_reason",
			      "not calibrated by this run: `memwall calibrate` measures it");
	if (st->flags & PRB_DRAM_CAVEAT)
		json_object_set_new(o, "caveat", json_string(st->caveat));
	return o;
}

void mw_run_git_split(char *commit, size_t n, bool *dirty)
{
	snprintf(commit, n, "%s", MW_GIT_DESCRIBE);
	char *plus = strstr(commit, "+dirty");
	*dirty = plus != NULL;
	if (plus)
		*plus = '\0';
}
