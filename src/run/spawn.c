/* src/run/spawn.c: running a foreign program under watch (see spawn.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* Runs s->argv to completion (or its timeout, or a stop signal). 0 when it ran, whatever its
 * exit status; -errno with err filled when it could not be started (why names the stage). */
int mw_spawn_run(struct mw_spawn *s, struct mw_error *err)
{
	int ofd = -1, efd = -1, go[2] = { -1, -1 }, report[2] = { -1, -1 }, rc = 0;
	pid_t pid = -1;

	s->exit_code = -1;
	s->term_signal = 0;
	s->timed_out = s->stopped = s->truncated = false;
	s->out = s->err = NULL;
	/* Memory files, not pipes: nothing to drain while the program runs, and no deadlock
	 * when it fills one stream while memwall waits on the other. */
	ofd = memfd_create("memwall-stdout", MFD_CLOEXEC);
	efd = memfd_create("memwall-stderr", MFD_CLOEXEC);
	if (ofd < 0 || efd < 0 || pipe2(go, O_CLOEXEC) || pipe2(report, O_CLOEXEC)) {
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
	if (pid == 0) {
		/* The child: only async-signal-safe calls from here to exec. */
		int e[2] = { 0, 0 }, nul = open("/dev/null", O_RDONLY);
		char c;
		/* Its own process group, led by itself: the group is what a timeout, an error or
		 * a stop kills. Also keeps the terminal's Ctrl-C to memwall, which ends the run. */
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(ofd, 1) < 0 || dup2(efd, 2) < 0) {
			e[0] = 1;
			e[1] = errno;
		} else if (s->cpus && sched_setaffinity(0, sizeof(*s->cpus), s->cpus)) {
			e[0] = 2;
			e[1] = errno;
		} else {
			/* Wait until the parent has opened the counters on this pid. */
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				;
			execv(s->argv[0], s->argv);
			e[0] = 3;
			e[1] = errno;
		}
		if (write(report[1], e, sizeof(e)) < 0)
			_exit(126);
		_exit(127);
	}
	setpgid(pid, pid); /* both sides set it: no window where a kill misses the group */
	close(go[0]);
	close(report[1]);
	go[0] = report[1] = -1;
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
	uint64_t deadline = t0 + (uint64_t)s->timeout_ms * 1000000u;
	bool killed = false;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			rc = mw_error_set(err, -errno, s->argv[0], "", "waitpid failed: %s",
					  strerror(errno));
			goto out;
		}
		int stop = mw_run_stopped();
		if (!killed && (stop || mw_now_ns() > deadline)) {
			s->timed_out = !stop;
			s->stopped = stop != 0;
			kill(-pid, SIGKILL);
			killed = true;
		}
		struct timespec ts = { 0, POLL_NS };
		nanosleep(&ts, NULL);
	}
	s->wall_ns = mw_now_ns() - t0;
	/* What the program left running in its group ends with it. */
	group_end(pid);
	pid = -1;
	if (WIFEXITED(status))
		s->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		s->term_signal = WTERMSIG(status);
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
