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

/* Called every tick_ns while the child runs, with the spawn's ctx (memwall stat -I). */
typedef void (*mw_spawn_tick)(void *ctx);

struct mw_spawn {
	/* in */
	char *const *argv;     /* argv[0] is the program's path */
	const cpu_set_t *cpus; /* NULL: not pinned */
	int timeout_ms;        /* <= 0: none */
	mw_spawn_hook hook;
	void *ctx;
	bool inherit_stdio;    /* the child keeps memwall's stdin, stdout and stderr (out and err
				* stay NULL) and, when stdin is the terminal memwall runs in the
				* foreground of, the terminal: its group is the foreground one until
				* it ends, so it reads the terminal and Ctrl-C reaches it (as a
				* shell runs a job); false: stdin is /dev/null and the output is kept */
	int grace_ms;          /* on a stop request: the stop signal to the child's group, then
				* SIGKILL after grace_ms if any member is left; 0: SIGKILL at once */
	mw_spawn_tick tick;    /* NULL: none */
	uint64_t tick_ns;
	/* out */
	int exit_code;         /* -1 unless it exited */
	int term_signal;       /* 0 unless a signal ended it */
	bool timed_out, stopped;
	uint64_t wall_ns;      /* from releasing the child to reaping it */
	char *out, *err;       /* its stdout and stderr, NUL-terminated, malloc'd */
	size_t out_len, err_len;
	bool truncated;
};

/* The program name as execvp would find it: a name holding a '/' as it is, else the first
 * executable file of that name in $PATH (or /usr/local/bin:/usr/bin:/bin when $PATH is unset
 * or empty), made absolute (realpath) into path. 0; -ENOENT when no folder of $PATH has it
 * (*tried is left NULL), or another -errno with *tried the candidate that failed (access(2)
 * X_OK, realpath): the caller words the error, naming where the name came from. tried may
 * be NULL; *tried is static storage, valid until the next call. */
int mw_spawn_find(const char *name, char *path, size_t n, const char **tried);

/* Runs s->argv to completion (or its timeout, or a stop signal). 0 when it ran, whatever its
 * exit status; -errno with err filled when it could not be started. */
int mw_spawn_run(struct mw_spawn *s, struct mw_error *err);
/* Frees s->out and s->err. */
void mw_spawn_free(struct mw_spawn *s);

#endif
