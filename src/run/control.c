/* src/run/control.c: stopping a run and its progress log (see control.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control.h"
#include "engine.h"
#include "sha256.h"

static atomic_int stop_signal;

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
	/* The long steps outside the token loop stop on the same flag. */
	eng_cancel_hook(&stop_signal);
	mw_sha256_cancel_hook(&stop_signal);
}

void mw_run_signals_restore(const struct mw_run_signals *saved)
{
	sigaction(SIGINT, &saved->old_int, NULL);
	sigaction(SIGTERM, &saved->old_term, NULL);
	eng_cancel_hook(NULL);
	mw_sha256_cancel_hook(NULL);
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

const char *mw_run_stop_name(void)
{
	return stop_signal == SIGTERM ? "SIGTERM" : "SIGINT (Ctrl-C)";
}

int mw_run_prefill(struct eng_session *s, int seq, const int *tokens, int n,
		   const float **logits)
{
	int rc = 0;
	*logits = NULL;
	for (int at = 0, k; at < n && !rc && !mw_run_stopped(); at += k) {
		k = n - at < ENG_PREFILL_CHUNK ? n - at : ENG_PREFILL_CHUNK;
		/* logits only for the last pass, as one call computes them */
		rc = eng_session_prefill_seq(s, seq, tokens + at, k, at, at + k == n ? logits : NULL,
					     NULL);
	}
	return rc;
}
