/* src/run/spawn.c: running a foreign program under watch (see spawn.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "spawn.h"

#define POLL_NS 1000000L      /* how often a running child is checked (1 ms) */
#define REAP_MS 5000          /* how long the killed group's members are waited for */

/* Kills the program's whole process group (the child leads it: setpgid in the child) and
 * reaps every member that is ours to reap: a wrapper's real engine would otherwise keep
 * running, and measure into the next run. Members that left the group (setsid) are beyond
 * reach; those orphaned by the wrapper are reparented to memwall (a child subreaper), so
 * waitpid on the group finds them. */
static void group_end(pid_t pgid)
{
	uint64_t until = mw_now_ns() + (uint64_t)REAP_MS * 1000000u;
	kill(-pgid, SIGKILL);
	for (;;) {
		pid_t w = waitpid(-pgid, NULL, WNOHANG);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || mw_now_ns() > until)
			break; /* ECHILD: none left */
		if (w == 0) {
			struct timespec ts = { 0, POLL_NS };
			kill(-pgid, SIGKILL); /* one forked after the first kill */
			nanosleep(&ts, NULL);
		}
	}
}

static char *slurp(int fd, size_t *len, bool *truncated)
{
	struct stat st;
	char *buf;
	size_t n;
	*len = 0;
	if (fstat(fd, &st) || lseek(fd, 0, SEEK_SET) < 0)
		return NULL;
	n = (size_t)st.st_size;
	if (n > MW_SPAWN_OUTPUT_MAX) {
		*truncated = true;
		n = MW_SPAWN_OUTPUT_MAX;
	}
	buf = malloc(n + 1);
	if (!buf)
		return NULL;
	while (*len < n) {
		ssize_t r = read(fd, buf + *len, n - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		*len += (size_t)r;
	}
	buf[*len] = '\0';
	return buf;
}

int mw_spawn_find(const char *name, char *path, size_t n, const char **tried)
{
	static char cand[PATH_MAX];
	char resolved[PATH_MAX];
	if (tried)
		*tried = NULL;
	if (strchr(name, '/')) {
		snprintf(cand, sizeof(cand), "%s", name);
	} else {
		const char *env = getenv("PATH");
		char dirs[8192];
		bool found = false;
		snprintf(dirs, sizeof(dirs), "%s", env && *env ? env : "/usr/local/bin:/usr/bin:/bin");
		for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found;
		     d = strtok_r(NULL, ":", &save)) {
			snprintf(cand, sizeof(cand), "%s/%s", *d ? d : ".", name);
			found = access(cand, X_OK) == 0;
		}
		if (!found)
			return -ENOENT;
	}
	if (tried)
		*tried = cand;
	if (access(cand, X_OK))
		return -errno;
	if (!realpath(cand, resolved))
		return -errno;
	if (strlen(resolved) >= n)
		return -ENAMETOOLONG;
	memcpy(path, resolved, strlen(resolved) + 1);
	return 0;
}

/* The terminal on stdin, when memwall runs in its foreground: the child's group takes it for
 * its life (inherit_stdio), as a shell hands it to a job. -1 when there is none to hand. */
static int tty_take(pid_t pgid)
{
	if (!isatty(0) || tcgetpgrp(0) != getpgrp())
		return -1;
	return tcsetpgrp(0, pgid) == 0 ? 0 : -1;
}

/* Takes the terminal back. memwall is in the background now, and a background group that sets
 * the foreground is sent SIGTTOU (tcsetpgrp(3)): blocked for the call. */
static void tty_restore(int tty)
{
	if (tty < 0)
		return;
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTTOU);
	sigprocmask(SIG_BLOCK, &block, &old);
	tcsetpgrp(0, getpgrp());
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* A stop request while the child runs: with a grace, the stop signal first (the program may
 * end cleanly: flush, remove its files), SIGKILL when the grace is over; else SIGKILL. */
static void stop_group(const struct mw_spawn *s, pid_t pgid, int sig, uint64_t *kill_at)
{
	if (s->grace_ms > 0) {
		kill(-pgid, sig);
		*kill_at = mw_now_ns() + (uint64_t)s->grace_ms * 1000000u;
	} else {
		kill(-pgid, SIGKILL);
		*kill_at = 0;
	}
}

/* The child, from fork to exec: only async-signal-safe calls. Reports a failed stage and its
 * errno on report_fd, then exits. */
static void child(const struct mw_spawn *s, int ofd, int efd, int go_fd, int report_fd)
{
	int e[2] = { 0, 0 }, nul = s->inherit_stdio ? 0 : open("/dev/null", O_RDONLY);
	char c;
	/* Its own process group, led by itself: the group is what a timeout, an error or a stop
	 * kills. Also keeps the terminal's Ctrl-C to memwall, which ends the run (unless the
	 * terminal is handed to the group: inherit_stdio). */
	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (!s->inherit_stdio &&
	    (nul < 0 || dup2(nul, 0) < 0 || dup2(ofd, 1) < 0 || dup2(efd, 2) < 0)) {
		e[0] = 1;
		e[1] = errno;
	} else if (s->cpus && sched_setaffinity(0, sizeof(*s->cpus), s->cpus)) {
		e[0] = 2;
		e[1] = errno;
	} else {
		/* Wait until the parent has opened the counters on this pid. */
		while (read(go_fd, &c, 1) < 0 && errno == EINTR)
			;
		execv(s->argv[0], s->argv);
		e[0] = 3;
		e[1] = errno;
	}
	if (write(report_fd, e, sizeof(e)) < 0)
		_exit(126);
	_exit(127);
}

/* Waits for the child, checking every POLL_NS for its timeout and the stop request and calling
 * the tick on its schedule. 0 with *status, or -errno with err when waitpid fails. */
static int wait_child(struct mw_spawn *s, pid_t pid, uint64_t t0, int *status,
		      struct mw_error *err)
{
	uint64_t deadline = t0 + (uint64_t)(s->timeout_ms > 0 ? s->timeout_ms : 0) * 1000000u;
	uint64_t next_tick = t0 + s->tick_ns, kill_at = 0;
	bool ending = false;
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return mw_error_set(err, -errno, s->argv[0], "", "waitpid failed: %s",
					    strerror(errno));
		int stop = mw_run_stopped();
		uint64_t now = mw_now_ns();
		if (!ending && (stop || (s->timeout_ms > 0 && now > deadline))) {
			s->timed_out = !stop;
			s->stopped = stop != 0;
			if (stop)
				stop_group(s, pid, stop, &kill_at);
			else
				kill(-pid, SIGKILL);
			ending = true;
		}
		if (kill_at && now >= kill_at) {
			kill(-pid, SIGKILL); /* the grace is over */
			kill_at = 0;
		}
		if (s->tick && s->tick_ns && now >= next_tick) {
			s->tick(s->ctx);
			/* the next boundary on the grid from t0, skipping any already missed */
			while (next_tick <= now)
				next_tick += s->tick_ns;
		}
		struct timespec ts = { 0, POLL_NS };
		nanosleep(&ts, NULL);
	}
}

/* Runs s->argv to completion (or its timeout, or a stop signal). 0 when it ran, whatever its
 * exit status; -errno with err filled when it could not be started (why names the stage). */
int mw_spawn_run(struct mw_spawn *s, struct mw_error *err)
{
	int ofd = -1, efd = -1, go[2] = { -1, -1 }, report[2] = { -1, -1 }, rc = 0, tty = -1;
	pid_t pid = -1;

	s->exit_code = -1;
	s->term_signal = 0;
	s->timed_out = s->stopped = s->truncated = false;
	s->out = s->err = NULL;
	/* Memory files, not pipes: nothing to drain while the program runs, and no deadlock
	 * when it fills one stream while memwall waits on the other. */
	if (!s->inherit_stdio) {
		ofd = memfd_create("memwall-stdout", MFD_CLOEXEC);
		efd = memfd_create("memwall-stderr", MFD_CLOEXEC);
	}
	if ((!s->inherit_stdio && (ofd < 0 || efd < 0)) || pipe2(go, O_CLOEXEC) ||
	    pipe2(report, O_CLOEXEC)) {
		rc = mw_error_set(err, -errno, s->argv[0], "", "cannot set up the process: %s",
				  strerror(errno));
		goto out;
	}
	/* Orphaned grandchildren come to memwall, to be killed and reaped with their group. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		rc = mw_error_set(err, -errno, s->argv[0], "", "fork failed: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(s, ofd, efd, go[0], report[1]);
	setpgid(pid, pid); /* both sides set it: no window where a kill misses the group */
	close(go[0]);
	close(report[1]);
	go[0] = report[1] = -1;
	if (s->inherit_stdio)
		tty = tty_take(pid);
	if (s->hook)
		s->hook(s->ctx, pid);
	uint64_t t0 = mw_now_ns();
	if (write(go[1], "g", 1) != 1) {
		rc = mw_error_set(err, -errno, s->argv[0], "", "cannot release the child: %s",
				  strerror(errno));
		goto out;
	}
	close(go[1]);
	go[1] = -1;
	int e[2];
	ssize_t got;
	while ((got = read(report[0], e, sizeof(e))) < 0 && errno == EINTR)
		;
	if (got == (ssize_t)sizeof(e)) {
		static const char *const stage[] = { "", "redirecting its output",
						     "pinning it to engine.cpus", "executing it" };
		group_end(pid);
		pid = -1;
		rc = mw_error_set(err, -e[1], s->argv[0], e[0] == 2 ? "engine.cpus" : "",
				  "failed %s: %s", stage[e[0] > 0 && e[0] < 4 ? e[0] : 0],
				  strerror(e[1]));
		goto out;
	}
	int status = 0;
	if ((rc = wait_child(s, pid, t0, &status, err)))
		goto out;
	s->wall_ns = mw_now_ns() - t0;
	/* What the program left running in its group ends with it. */
	group_end(pid);
	pid = -1;
	if (WIFEXITED(status))
		s->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		s->term_signal = WTERMSIG(status);
	if (s->inherit_stdio)
		goto out;
	s->out = slurp(ofd, &s->out_len, &s->truncated);
	s->err = slurp(efd, &s->err_len, &s->truncated);
	if (!s->out || !s->err)
		rc = mw_error_set(err, -ENOMEM, s->argv[0], "", "cannot read the program's output");
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		group_end(pid);
	}
	tty_restore(tty);
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (report[i] >= 0)
			close(report[i]);
	}
	if (ofd >= 0)
		close(ofd);
	if (efd >= 0)
		close(efd);
	return rc;
}

void mw_spawn_free(struct mw_spawn *s)
{
	free(s->out);
	free(s->err);
	s->out = s->err = NULL;
}
