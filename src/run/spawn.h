/* src/run/spawn.h: running a foreign program under watch: its own memory files for stdout and
 * stderr, a hook between fork and exec (to open counters on the child), pinning, a timeout
 * and the run's stop request. */
#ifndef MEMWALL_RUN_SPAWN_H
#define MEMWALL_RUN_SPAWN_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mw.h"

#define MW_SPAWN_OUTPUT_MAX (64u << 20) /* bytes of a stream kept */

/* Called between fork and the child's exec, with the child's pid: opens its counters. */
typedef void (*mw_spawn_hook)(void *ctx, pid_t pid);

struct mw_spawn {
	/* in */
	char *const *argv;     /* argv[0] is the program's path */
	const cpu_set_t *cpus; /* NULL: not pinned */
	int timeout_ms;
	mw_spawn_hook hook;
	void *ctx;
	/* out */
	int exit_code;         /* -1 unless it exited */
	int term_signal;       /* 0 unless a signal ended it */
	bool timed_out, stopped;
	uint64_t wall_ns;      /* from releasing the child to reaping it */
	char *out, *err;       /* its stdout and stderr, NUL-terminated, malloc'd */
	size_t out_len, err_len;
	bool truncated;
};

/* Runs s->argv to completion (or its timeout, or a stop signal). 0 when it ran, whatever its
 * exit status; -errno with err filled when it could not be started. */
int mw_spawn_run(struct mw_spawn *s, struct mw_error *err);
/* Frees s->out and s->err. */
void mw_spawn_free(struct mw_spawn *s);

#endif
