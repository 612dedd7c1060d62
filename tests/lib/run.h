/* tests/lib/run.h: run the memwall binary (or any program) and capture its output, for tests
 * that check the command line: exit codes, messages, files written. */
#ifndef MEMWALL_TEST_RUN_H
#define MEMWALL_TEST_RUN_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

struct t_output {
	int status;   /* exit code, or 128 + signal */
	char *out;    /* stdout, NUL-terminated, malloc'd */
	char *err;    /* stderr, NUL-terminated, malloc'd */
};

static inline char *t_slurp_fd(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;
	lseek(fd, 0, SEEK_SET);
	while (buf && (n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

/* Runs argv (argv[0] "memwall" is $MEMWALL_BIN; else a path) with stdin from stdin_path,
 * capturing its exit status, stdout and stderr. */
static inline struct t_output t_run_in(const char *const argv[], const char *stdin_path)
{
	struct t_output o = { .status = -1 };
	char out_tmpl[] = "/tmp/mw-test-out-XXXXXX", err_tmpl[] = "/tmp/mw-test-err-XXXXXX";
	int ofd = mkstemp(out_tmpl), efd = mkstemp(err_tmpl);
	if (ofd < 0 || efd < 0) {
		perror("mkstemp");
		exit(1);
	}
	unlink(out_tmpl);
	unlink(err_tmpl);
	const char *prog = argv[0];
	if (!strcmp(prog, "memwall")) {
		prog = getenv("MEMWALL_BIN");
		if (!prog)
			t_skip("MEMWALL_BIN is not set (run under meson test)");
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int in = open(stdin_path, O_RDONLY);
		dup2(in, 0);
		dup2(ofd, 1);
		dup2(efd, 2);
		execv(prog, (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	o.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	o.out = t_slurp_fd(ofd);
	o.err = t_slurp_fd(efd);
	close(ofd);
	close(efd);
	return o;
}

/* t_run_in with stdin from /dev/null. */
static inline struct t_output t_run(const char *const argv[])
{
	return t_run_in(argv, "/dev/null");
}

/* Writes body to path (a fixture the test makes); exits 1 when it cannot. */
static inline void t_write_file(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(body, f);
	fclose(f);
}

/* The shipped smoke protocol (protocols/stories260k-smoke.json) without its bandwidth drift
 * probe, written to path: the same runs, the same name, "drift": {"probe_ms": 0}. The probe
 * streams 8x the LLC in fresh 2 MiB pages before and after the runs: about a second of CPU a
 * run where the runs themselves take 20 ms, which a test that does not look at drift need not
 * spend (issue 44: the suite's CPU budget). Exits 1 when the file cannot be read or no
 * longer has the one probe_ms it replaces. */
static inline void t_smoke_protocol(const char *path)
{
	const char *root = getenv("MEMWALL_SOURCE_ROOT");
	char src[4096];
	snprintf(src, sizeof(src), "%s/protocols/stories260k-smoke.json", root ? root : ".");
	int fd = open(src, O_RDONLY);
	char *text = fd >= 0 ? t_slurp_fd(fd) : NULL;
	if (fd >= 0)
		close(fd);
	const char *key = "\"probe_ms\": ";
	char *at = text ? strstr(text, key) : NULL;
	if (!at || strstr(at + 1, key)) {
		fprintf(stderr, "%s: no single \"probe_ms\" to turn off\n", src);
		exit(1);
	}
	at += strlen(key);
	size_t digits = strspn(at, "0123456789");
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "%.*s0%s", (int)(at - text), text, at + digits);
	fclose(f);
	free(text);
}

static inline void t_output_free(struct t_output *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

#endif
