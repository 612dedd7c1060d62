/* tests/lib/run.c: running a program and capturing it (run.h). */
#include "run.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "test.h"

struct t_output t_run_in(const char *const argv[], const char *stdin_path)
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
	int in = open(stdin_path, O_RDONLY);
	pid_t pid = t_spawn(argv, in, ofd, efd);
	if (in >= 0)
		close(in);
	int st = 0;
	waitpid(pid, &st, 0);
	o.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	o.out = t_slurp_fd(ofd);
	o.err = t_slurp_fd(efd);
	close(ofd);
	close(efd);
	return o;
}

struct t_output t_run(const char *const argv[])
{
	return t_run_in(argv, "/dev/null");
}

void t_smoke_protocol(const char *path)
{
	char src[4096];
	t_source(src, sizeof(src), "protocols/stories260k-smoke.json");
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

void t_output_free(struct t_output *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

void t_ok_at(const char *file, int line, const struct t_output *o, const char *what)
{
	t_checks++;
	if (o->status)
		T_FAIL_AT(file, line, "%s exited %d, not 0:\n%s%s", what, o->status,
			  o->out ? o->out : "", o->err ? o->err : "");
}

void t_contains_all_at(const char *file, int line, const char *stream, const char *text,
		       const char *const has[])
{
	for (size_t i = 0; has && has[i]; i++) {
		t_checks++;
		if (!text || !strstr(text, has[i]))
			T_FAIL_AT(file, line, "%s contains \"%s\": got \"%s\"", stream, has[i],
				  text ? text : "(null)");
	}
}

void t_run_expect_at(const char *file, int line, const char *const argv[], int status,
		     const char *const out_has[], const char *const err_has[])
{
	struct t_output o = t_run(argv);
	t_checks++;
	if (o.status != status)
		T_FAIL_AT(file, line, "%s %s exited %d, not %d:\n%s%s", argv[0],
			  argv[1] ? argv[1] : "", o.status, status, o.out, o.err);
	t_contains_all_at(file, line, "stdout", o.out, out_has);
	t_contains_all_at(file, line, "stderr", o.err, err_has);
	t_output_free(&o);
}

void t_smoke_scratch(const char *name, char *scratch, size_t sn, char *proto, size_t pn,
		     char *cache, size_t cn)
{
	if (!getenv("MEMWALL_SOURCE_ROOT") || !getenv("MEMWALL_BIN"))
		t_skip("MEMWALL_SOURCE_ROOT or MEMWALL_BIN is not set (run under meson test)");
	t_scratch(scratch, sn, name);
	snprintf(proto, pn, "%s/stories260k-smoke.json", scratch);
	t_smoke_protocol(proto);
	snprintf(cache, cn, "%s/cache", scratch);
	setenv("MEMWALL_CACHE_DIR", cache, 1);
}

pid_t t_spawn(const char *const argv[], int in, int out, int err)
{
	const char *prog = argv[0];
	if (!strcmp(prog, "memwall")) {
		prog = getenv("MEMWALL_BIN");
		if (!prog)
			t_skip("MEMWALL_BIN is not set (run under meson test)");
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		execv(prog, (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	return pid;
}

pid_t t_start(const char *const argv[])
{
	int nul = open("/dev/null", O_RDWR);
	pid_t pid = t_spawn(argv, nul, nul, nul);
	close(nul);
	return pid;
}

double t_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
