/* tests/engine/test_cancel.c: Ctrl-C and SIGTERM during the long steps outside the token loop
 * (issue 15): hashing a model, writing a synthetic one, reading a model into memory.
 *
 * In process: each step, with its cancellation flag already set, stops at once with
 * -ECANCELED, says so, and leaves no file. As a child: `memwall synth` of a large shape and
 * `memwall run` hashing a 6 GB sparse file each get SIGTERM or SIGINT 0.3 s in, and must exit
 * within about a second, with the message, the shell's 128 + signal where the verb owns its
 * signals, and no partial file.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "run.h"
#include "sha256.h"
#include "test.h"

static char dir[] = "/tmp/mw-test-cancel-XXXXXX";

static void path_in(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

/* The number of entries in dir, but for the names given (NULL-terminated). */
static int left_in_dir(const char *const keep[])
{
	char cmd[512];
	int n = 0;
	snprintf(cmd, sizeof(cmd), "ls -A '%s'", dir);
	FILE *p = popen(cmd, "r");
	char line[512];
	while (p && fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		bool kept = false;
		for (int i = 0; keep && keep[i]; i++)
			kept = kept || !strcmp(line, keep[i]);
		if (!kept) {
			fprintf(stderr, "left behind: %s\n", line);
			n++;
		}
	}
	if (p)
		pclose(p);
	return n;
}

/* Within about a second: 1.5 s leaves room for a sanitized build on a shared machine. On a
 * busy one a process gets about ncpu/load of a CPU, so the limit stretches by load/ncpu, at
 * most 6 times (issue 29: the suite must pass at load 4-7 on 2 cores; it passed at 8-12, but
 * a fixed 1.5 s assumed a quiet machine). Still a check that the stop is prompt for the CPU
 * the process gets, and the full work it would do without one takes longer. */
static double prompt_s(void)
{
	double load[1];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double f = 1.0;
	if (getloadavg(load, 1) == 1 && ncpu > 0 && load[0] / (double)ncpu > 1.0)
		f = load[0] / (double)ncpu;
	return 1.5 * (f < 6.0 ? f : 6.0);
}
#define PROMPT_S prompt_s()

/* ---- in process: the flag already set ----------------------------------------------------- */

static void test_in_process(void)
{
	atomic_int flag = SIGTERM;
	char p[512];
	struct eng_error err;
	struct mw_error merr;
	char hex[65];

	eng_cancel_hook(&flag);
	T_ASSERT(eng_cancelled());
	path_in(p, sizeof(p), "a.gguf");
	T_EQ_INT(eng_synth_gguf(p, "llama", "stories260K", "f32", 1, &err), -ECANCELED);
	T_CONTAINS(err.text, "stopped by a signal");
	T_EQ_STR(err.source, p);
	path_in(p, sizeof(p), "a.bin");
	T_EQ_INT(eng_synth_llama2c(p, "stories260K", 1, &err), -ECANCELED);
	T_CONTAINS(err.text, "stopped by a signal");
	T_EQ_INT(left_in_dir(NULL), 0);

	/* A model read into memory (huge-copy, repack) stops; the mapped one has no long step. */
	eng_cancel_hook(NULL);
	T_ASSERT(!eng_cancelled());
	path_in(p, sizeof(p), "m.gguf");
	T_EQ_INT(eng_synth_gguf(p, "llama", "stories260K", "f32", 1, &err), 0);
	eng_cancel_hook(&flag);
	for (int mode = ENG_LOAD_HUGE_COPY; mode <= ENG_LOAD_REPACK; mode++) {
		struct eng_model_options mo = { .load = (enum eng_load_mode)mode };
		struct eng_model *m = NULL;
		T_EQ_INT(eng_model_open(&m, p, &mo, &err), -ECANCELED);
		T_ASSERT(m == NULL);
		T_CONTAINS(err.text, "stopped by a signal while reading the model");
	}
	struct eng_model_options mo = { .load = ENG_LOAD_MMAP };
	struct eng_model *m = NULL;
	T_EQ_INT(eng_model_open(&m, p, &mo, &err), 0);
	eng_model_close(m);

	mw_sha256_cancel_hook(&flag);
	T_EQ_INT(mw_sha256_file(p, hex, NULL, &merr), -ECANCELED);
	T_CONTAINS(merr.text, "stopped by a signal while hashing");
	/* Unhooked, both work again. */
	mw_sha256_cancel_hook(NULL);
	eng_cancel_hook(NULL);
	T_EQ_INT(mw_sha256_file(p, hex, NULL, &merr), 0);
	unlink(p);
}

/* ---- as a child: a signal 0.3 s into the step ----------------------------------------------- */

struct outcome {
	int status;        /* waitpid's */
	double after_s;    /* from the signal to the exit */
	char err[2048];    /* the child's stderr */
	bool early;        /* it had finished before the signal */
};

static struct outcome signal_child(const char *const argv[], int sig)
{
	struct outcome o = { .status = -1 };
	const char *bin = getenv("MEMWALL_BIN");
	if (!bin)
		t_skip("MEMWALL_BIN is not set (run under meson test)");
	char err_path[512];
	path_in(err_path, sizeof(err_path), "stderr");
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		FILE *e = freopen(err_path, "w", stderr);
		(void)e;
		if (!freopen("/dev/null", "w", stdout))
			_exit(126);
		if (chdir(dir))
			_exit(126);
		execv(bin, (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	struct timespec ts = { 0, 300 * 1000000L };
	nanosleep(&ts, NULL);
	o.early = waitpid(pid, &o.status, WNOHANG) == pid;
	double t0 = t_now();
	if (!o.early) {
		kill(pid, sig);
		/* Up to 5 s (more on a busy machine: prompt_s()), to report a slow stop rather
		 * than hang the suite. */
		double cap = 5.0 > 3.0 * prompt_s() ? 5.0 : 3.0 * prompt_s();
		while (waitpid(pid, &o.status, WNOHANG) == 0 && t_now() - t0 < cap) {
			struct timespec tick = { 0, 5 * 1000000L };
			nanosleep(&tick, NULL);
		}
		o.after_s = t_now() - t0;
		if (o.after_s >= cap) {
			kill(pid, SIGKILL);
			waitpid(pid, &o.status, 0);
		}
	}
	FILE *f = fopen(err_path, "r");
	if (f) {
		size_t n = fread(o.err, 1, sizeof(o.err) - 1, f);
		o.err[n] = '\0';
		fclose(f);
	}
	unlink(err_path);
	return o;
}

static void test_synth_signal(const char *const argv[], int sig, const char *what)
{
	struct outcome o = signal_child(argv, sig);
	if (o.early) {
		printf("%s: finished before the signal; nothing to check\n", what);
		return;
	}
	printf("%s: exited %.3f s after %s\n", what, o.after_s, sig == SIGTERM ? "SIGTERM" : "SIGINT");
	T_ASSERT(o.after_s < PROMPT_S);
	T_ASSERT(WIFEXITED(o.status));
	T_EQ_INT(WEXITSTATUS(o.status), 128 + sig);
	T_CONTAINS(o.err, sig == SIGTERM ? "stopped by SIGTERM" : "stopped by SIGINT");
	T_CONTAINS(o.err, "nothing was written");
	T_EQ_INT(left_in_dir(NULL), 0);
}

static void test_children(void)
{
	const char *const gguf[] = { "memwall", "synth", "--arch", "falcon", "--shape",
				     "falcon-7b", "--quant", "q4_k_m", "-o", "f.gguf", NULL };
	test_synth_signal(gguf, SIGTERM, "synth falcon-7b q4_k_m");
	test_synth_signal(gguf, SIGINT, "synth falcon-7b q4_k_m");
	const char *const l2c[] = { "memwall", "synth", "--shape", "stories110M", "-o", "s.bin",
				    NULL };
	test_synth_signal(l2c, SIGTERM, "synth stories110M");

	/* memwall run hashes the model first: 6 GB of holes read at memory speed. */
	char big[512], proto[512];
	path_in(big, sizeof(big), "big.gguf");
	path_in(proto, sizeof(proto), "p.json");
	FILE *f = fopen(big, "w");
	T_ASSERT(f && ftruncate(fileno(f), (off_t)6 << 30) == 0);
	if (f)
		fclose(f);
	f = fopen(proto, "w");
	T_ASSERT(f != NULL);
	if (f) {
		fputs("{ \"name\": \"hash\", \"model\": { \"format\": \"gguf\", \"path\": "
		      "\"big.gguf\" }, \"prompt_tokens\": [1], \"decode_tokens\": 1, \"runs\": 1 }\n",
		      f);
		fclose(f);
	}
	const char *const run[] = { "memwall", "run", "p.json", "-o", "out", NULL };
	struct outcome o = signal_child(run, SIGTERM);
	if (o.early) {
		printf("run: finished hashing 6 GB in 0.3 s; nothing to check\n");
	} else {
		printf("run: exited %.3f s after SIGTERM while hashing\n", o.after_s);
		T_ASSERT(o.after_s < PROMPT_S);
		T_ASSERT(WIFEXITED(o.status) && WEXITSTATUS(o.status) != 0);
		T_CONTAINS(o.err, "big.gguf: stopped by a signal while hashing");
	}
	/* The output folder is made (and checked) before the first step; it must hold nothing. */
	char out[512];
	path_in(out, sizeof(out), "out");
	T_EQ_INT(rmdir(out), 0);
	const char *const keep[] = { "big.gguf", "p.json", NULL };
	T_EQ_INT(left_in_dir(keep), 0);
	unlink(big);
	unlink(proto);
}

int main(void)
{
	t_mkdtemp(dir);
	test_in_process();
	test_children();
	rmdir(dir);
	return t_done();
}
