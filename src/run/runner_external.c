/* src/runner_external.c: `memwall run` of an external engine (engine.kind "external").
 *
 * memwall cannot see inside a foreign program, so it measures around it. Each repetition runs
 * the protocol's command twice, at short_tokens (N1) and decode_tokens (N2) tokens; each
 * process gets
 *   - an idle window before and after it, on the system-wide DRAM counters (when the machine
 *     has them), so the idle machine's traffic can be subtracted;
 *   - software counters of its own (task-clock, page faults, ...): opened on the child's pid
 *     with inherit, after fork and before exec, so every thread it starts is counted (perf
 *     adds an inherited thread's count when the thread exits, and all have exited once the
 *     process is reaped);
 *   - its output read by the protocol's adapter (src/adapters.h), which must confirm how many
 *     tokens came out. A count it cannot confirm, or one short of the target, makes the run
 *     invalid: memwall stops, prints why and what to change, and writes the record so far.
 * The figures (src/differential.c) are computed from these raw records, so `memwall validate`
 * recomputes them.
 *
 * The command is an argv template expanded argument by argument and run with execv: no shell
 * ever sees the prompt. The child pins itself to the protocol's CPUs before exec, so the
 * program and every thread it starts inherit the mask. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "adapters.h"
#include "differential.h"
#include "machine.h"
#include "probes.h"
#include "result.h"
#include "runner.h"
#include "runner_common.h"
#include "sha256.h"
#include "version.h"

#define VERSION_TIMEOUT_MS 10000
#define VERSION_MAX 2048      /* bytes of `--version` output kept */
#define TAIL_MAX 1024         /* bytes of each run's stderr kept for diagnosis */
#define OUTPUT_MAX (64u << 20) /* bytes of a stream given to the adapter */
#define POLL_NS 1000000L      /* how often a running child is checked (1 ms) */

/* ---- one process --------------------------------------------------------------------------- */

/* Called between fork and the child's exec, with the child's pid: opens its counters. */
typedef void (*spawn_hook)(void *ctx, pid_t pid);

struct spawn {
	/* in */
	char *const *argv;     /* argv[0] is the program's path */
	const cpu_set_t *cpus; /* NULL: not pinned */
	int timeout_ms;
	spawn_hook hook;
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

static char *slurp(int fd, size_t *len, bool *truncated)
{
	struct stat st;
	char *buf;
	size_t n;
	*len = 0;
	if (fstat(fd, &st) || lseek(fd, 0, SEEK_SET) < 0)
		return NULL;
	n = (size_t)st.st_size;
	if (n > OUTPUT_MAX) {
		*truncated = true;
		n = OUTPUT_MAX;
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
static int spawn_run(struct spawn *s, struct mw_error *err)
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
		waitpid(pid, NULL, 0);
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
			kill(pid, SIGKILL);
			killed = true;
		}
		struct timespec ts = { 0, POLL_NS };
		nanosleep(&ts, NULL);
	}
	s->wall_ns = mw_now_ns() - t0;
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

static void spawn_free(struct spawn *s)
{
	free(s->out);
	free(s->err);
	s->out = s->err = NULL;
}

/* ---- the program --------------------------------------------------------------------------- */

/* The program to run: --llama-bin, else engine.command[0] as a path (it holds a '/'), else
 * looked up in PATH as execvp would. *path receives its absolute path. */
static int program_find(const struct mw_protocol *p, const struct mw_run_options *o, char *path,
			size_t n, struct mw_error *err)
{
	const char *want = o->llama_bin ? o->llama_bin : p->engine.command[0];
	const char *field = o->llama_bin ? "--llama-bin" : "engine.command[0]";
	char cand[PATH_MAX];
	if (strchr(want, '/')) {
		snprintf(cand, sizeof(cand), "%s", want);
	} else {
		const char *env = getenv("PATH");
		char dirs[8192];
		bool found = false;
		snprintf(dirs, sizeof(dirs), "%s", env && *env ? env : "/usr/local/bin:/usr/bin:/bin");
		for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found;
		     d = strtok_r(NULL, ":", &save)) {
			snprintf(cand, sizeof(cand), "%s/%s", *d ? d : ".", want);
			found = access(cand, X_OK) == 0;
		}
		if (!found)
			return mw_error_set(err, -ENOENT, o->llama_bin ? "" : p->source, field,
					    "'%s' is not in PATH: pass --llama-bin /path/to/%s "
					    "(your llama.cpp build's bin/ folder), or put its folder "
					    "in PATH", want, want);
	}
	if (access(cand, X_OK))
		return mw_error_set(err, -errno, o->llama_bin ? "" : p->source, field,
				    "%s is not an executable file: %s", cand, strerror(errno));
	if (!realpath(cand, path) || strlen(path) >= n)
		return mw_error_set(err, -errno, cand, field, "cannot resolve the path: %s",
				    strerror(errno));
	return 0;
}

/* `PROGRAM --version`, bounded in time and size: what the program says about itself. */
static json_t *program_version(const char *path)
{
	char *argv[] = { (char *)(uintptr_t)path, (char *)(uintptr_t)"--version", NULL };
	struct spawn s = { .argv = argv, .timeout_ms = VERSION_TIMEOUT_MS };
	struct mw_error err;
	char text[VERSION_MAX + 1], why[256];
	json_t *o;
	mw_error_clear(&err);
	if (spawn_run(&s, &err))
		return json_pack("{s:n, s:s}", "version", "version_reason", err.text);
	/* llama.cpp prints its version on stderr, most programs on stdout: keep both. */
	snprintf(text, sizeof(text), "%s%s%s", s.out, s.out_len && s.err_len ? "\n" : "", s.err);
	size_t len = strlen(text);
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
		text[--len] = '\0';
	why[0] = '\0';
	if (s.timed_out)
		snprintf(why, sizeof(why), "`--version` did not finish within %d s",
			 VERSION_TIMEOUT_MS / 1000);
	else if (s.exit_code != 0)
		snprintf(why, sizeof(why), "`--version` exited with status %d%s", s.exit_code,
			 len ? " (its output is kept)" : "");
	o = json_pack("{s:o, s:o}", "version", json_stringn(text, len), "version_reason",
		      why[0] ? json_string(why) : json_null());
	spawn_free(&s);
	return o;
}

/* ---- the measurement ----------------------------------------------------------------------- */

struct ext {
	const struct mw_protocol *p;
	const struct mw_run_options *o;
	struct prb_system *sys;
	struct prb_dram *dram;       /* NULL: DRAM not measured */
	char dram_reason[1024];
	struct prb_dram_sample *d0, *d1;
	struct prb_set *sset;        /* the current process's software counters */
	int sidx[MW_RUN_N_SW];
	bool sw_open[MW_RUN_N_SW];   /* opened on some process: listed in counters.software */
	char sw_reason[1024];        /* the first software event that could not be opened */
	const struct mw_adapter *adapter;
	enum mw_adapter_stream stream;
};

/* The spawn hook: software counters on the child, with inherit, enabled before it execs. */
static void open_software(void *ctx, pid_t pid)
{
	struct ext *x = ctx;
	struct prb_set_options so = { .pid = pid, .cpu = -1, .inherit = true };
	x->sset = NULL;
	if (prb_set_new(&x->sset, x->sys, &so))
		return;
	for (size_t i = 0; i < MW_RUN_N_SW; i++) {
		struct prb_error e;
		prb_error_clear(&e);
		if (prb_set_add(x->sset, mw_run_sw_events[i].event, &x->sidx[i], &e) &&
		    !x->sw_reason[0])
			snprintf(x->sw_reason, sizeof(x->sw_reason), "%s: %.700s",
				 mw_run_sw_events[i].event, e.text);
	}
	prb_set_enable(x->sset);
}

static json_t *software_json(struct ext *x)
{
	json_t *o = json_object();
	int n = x->sset ? prb_set_count(x->sset) : 0;
	struct prb_reading *r = calloc((size_t)(n ? n : 1), sizeof(*r));
	bool ok = x->sset && r && prb_set_read(x->sset, r) == 0;
	for (size_t i = 0; o && i < MW_RUN_N_SW; i++) {
		const unsigned bad = PRB_READING_NOT_COUNTED | PRB_READING_UNAVAILABLE;
		bool have = ok && x->sidx[i] >= 0 && !(r[x->sidx[i]].flags & bad);
		x->sw_open[i] |= have;
		json_object_set_new(o, mw_run_sw_events[i].key,
				    have ? json_integer((json_int_t)r[x->sidx[i]].value) : json_null());
	}
	free(r);
	prb_set_free(x->sset);
	x->sset = NULL;
	return o;
}

static bool dram_read(struct ext *x, struct prb_dram_sample *s)
{
	return x->dram && prb_dram_read(x->dram, s) == 0 && !(s->reading_flags &
							     PRB_READING_NOT_COUNTED);
}

/* An idle window of idle_baseline_ms on the DRAM counters; adds to *ns, *rd, *wr. Without
 * DRAM counters there is nothing to count, so no time is spent. */
static bool idle_window(struct ext *x, uint64_t *ns, uint64_t *rd, uint64_t *wr)
{
	if (!x->dram || x->p->idle_baseline_ms <= 0)
		return x->dram != NULL;
	uint64_t t0 = mw_now_ns();
	if (!dram_read(x, x->d0))
		return false;
	mw_run_sleep_ms(x->p->idle_baseline_ms);
	if (!dram_read(x, x->d1))
		return false;
	*ns += mw_now_ns() - t0;
	*rd += prb_counter_delta(x->d1->read.bytes, x->d0->read.bytes, 64);
	*wr += prb_counter_delta(x->d1->write.bytes, x->d0->write.bytes, 64);
	return true;
}

static json_t *opt_count(bool known, int64_t v)
{
	return known ? json_integer((json_int_t)v) : json_null();
}

static json_t *opt_ms(bool known, double v)
{
	return known ? mw_json_num(v) : json_null();
}

/* The last TAIL_MAX bytes of text, from a line start where one is near. */
static const char *tail_of(const char *text, size_t len)
{
	if (len <= TAIL_MAX)
		return text;
	const char *t = text + len - TAIL_MAX, *nl = strchr(t, '\n');
	return nl && nl[1] ? nl + 1 : t;
}

/* One process of a repetition: idle window, the program, idle window; its raw record. *why
 * receives the reason when the run is invalid (left "" otherwise). -errno only when the
 * program could not be started at all. */
static int process_once(struct ext *x, const char *path, const char *model, long n, long threads,
			const cpu_set_t *cpus, const char *label, json_t **out, char *why,
			size_t wn, struct mw_error *err)
{
	const struct mw_protocol *p = x->p;
	struct mw_command_values v = { .model = model, .prompt = p->prompt, .n = n,
				       .threads = threads, .seed = p->sampling.seed };
	char **argv = calloc(p->engine.n_command + 1, sizeof(char *));
	json_t *jargv = json_array();
	struct spawn s = { .cpus = cpus, .timeout_ms = p->engine.timeout_s * 1000,
			   .hook = open_software, .ctx = x };
	struct mw_adapter_result res;
	struct mw_error aerr;
	uint64_t ib_ns = 0, ib_rd = 0, ib_wr = 0, ia_ns = 0, ia_rd = 0, ia_wr = 0;
	bool dram_ok;
	char *buf = NULL;
	int rc = 0;

	*out = NULL;
	why[0] = '\0';
	if (!argv || !jargv) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->engine.n_command; i++) {
		char field[48];
		snprintf(field, sizeof(field), "engine.command[%zu]", i);
		if (i == 0)
			argv[0] = strdup(path);
		else if ((rc = mw_command_expand(p->engine.command[i], &v, p->source, field,
						 &argv[i], err)))
			goto out;
		if (!argv[i]) {
			rc = -ENOMEM;
			goto out;
		}
		json_array_append_new(jargv, json_string(argv[i]));
	}
	s.argv = argv;

	dram_ok = idle_window(x, &ib_ns, &ib_rd, &ib_wr);
	dram_ok &= dram_read(x, x->d0);
	if ((rc = spawn_run(&s, err))) {
		prb_set_free(x->sset);
		x->sset = NULL;
		goto out;
	}
	dram_ok &= dram_read(x, x->d1);
	uint64_t rd = prb_counter_delta(x->d1->read.bytes, x->d0->read.bytes, 64);
	uint64_t wr = prb_counter_delta(x->d1->write.bytes, x->d0->write.bytes, 64);
	json_t *sw = software_json(x);
	dram_ok &= idle_window(x, &ia_ns, &ia_rd, &ia_wr);

	/* The adapter reads the stream the protocol names (stdout then stderr for "both"). */
	const char *text = x->stream == MW_ADAPTER_STDOUT ? s.out : s.err;
	size_t tlen = x->stream == MW_ADAPTER_STDOUT ? s.out_len : s.err_len;
	if (x->stream == MW_ADAPTER_BOTH) {
		buf = malloc(s.out_len + s.err_len + 2);
		if (!buf) {
			json_decref(sw);
			rc = -ENOMEM;
			goto out;
		}
		memcpy(buf, s.out, s.out_len);
		buf[s.out_len] = '\n';
		memcpy(buf + s.out_len + 1, s.err, s.err_len + 1);
		text = buf;
		tlen = s.out_len + 1 + s.err_len;
	}
	struct mw_adapter_opts aopt = { .pattern = p->engine.adapter_pattern };
	char source[96];
	snprintf(source, sizeof(source), "%s %s", label,
		 x->stream == MW_ADAPTER_STDOUT ? "stdout" : x->stream == MW_ADAPTER_STDERR
		 ? "stderr" : "output");
	mw_error_clear(&aerr);
	int arc = x->adapter->parse(text, tlen, &aopt, source, &res, &aerr);
	if (s.stopped)
		snprintf(why, wn, "stopped by %s",
			 mw_run_stopped() == SIGTERM ? "SIGTERM" : "SIGINT");
	else if (s.timed_out)
		snprintf(why, wn, "did not finish within engine.timeout_s (%d s): raise it or ask "
			 "for fewer tokens", p->engine.timeout_s);
	else if (s.term_signal)
		snprintf(why, wn, "killed by signal %d (%s)", s.term_signal,
			 strsignal(s.term_signal));
	else if (s.exit_code != 0)
		snprintf(why, wn, "exited with status %d%s%s", s.exit_code,
			 arc ? ": " : "", arc ? aerr.text : "");
	else if (arc)
		snprintf(why, wn, "%s%s%s", aerr.field[0] ? aerr.field : "",
			 aerr.field[0] ? ": " : "", aerr.text);
	else if ((arc = mw_adapter_check(&res, n, p->allow_short, source, &aerr)))
		snprintf(why, wn, "%s%s", aerr.text, arc == -ERANGE
			 ? " (the protocol field is \"allow_short\": true)" : "");
	if (s.truncated && !why[0])
		snprintf(why, wn, "printed more than %u MiB: its output was cut, so the adapter "
			 "may have missed the timing lines", OUTPUT_MAX >> 20);
	bool counts = arc == 0 || arc == -ENODATA || arc == -ERANGE || arc == -EPROTO;
	*out = json_pack(
		"{s:i, s:o, s:o, s:o, s:b, s:I,"
		" s:{s:I, s:I, s:o, s:o},"
		" s:o, s:o, s:n, s:o,"
		" s:{s:o, s:o, s:o, s:o, s:o, s:o},"
		" s:b, s:o, s:s}",
		"tokens_target", (int)n, "argv", jargv, "exit_code",
		s.exit_code >= 0 ? json_integer(s.exit_code) : json_null(), "signal",
		s.term_signal ? json_integer(s.term_signal) : json_null(), "timed_out", s.timed_out,
		"wall_ns", (json_int_t)s.wall_ns,
		"idle", "before_ns", (json_int_t)ib_ns, "after_ns", (json_int_t)ia_ns,
		"dram_read_bytes", dram_ok ? json_integer((json_int_t)(ib_rd + ia_rd)) : json_null(),
		"dram_write_bytes", dram_ok ? json_integer((json_int_t)(ib_wr + ia_wr)) : json_null(),
		"dram_read_bytes", dram_ok ? json_integer((json_int_t)rd) : json_null(),
		"dram_write_bytes", dram_ok ? json_integer((json_int_t)wr) : json_null(),
		"engine_bytes", "software", sw,
		"adapter", "decode_tokens", opt_count(counts && res.decode_tokens.known,
						       res.decode_tokens.value),
		"prompt_tokens", opt_count(counts && res.prompt_tokens.known, res.prompt_tokens.value),
		"eval_runs", opt_count(counts && res.eval_runs.known, res.eval_runs.value),
		"eval_ms", opt_ms(counts && res.eval_ms.known, res.eval_ms.value),
		"prompt_ms", opt_ms(counts && res.prompt_ms.known, res.prompt_ms.value),
		"load_ms", opt_ms(counts && res.load_ms.known, res.load_ms.value),
		"valid", !why[0], "invalid_reason", why[0] ? json_string(why) : json_null(),
		"stderr_tail", tail_of(s.err, s.err_len));
	jargv = NULL;
	if (!*out)
		rc = mw_error_set(err, -ENOMEM, "", "", "cannot build the run's record");
out:
	json_decref(jargv);
	for (size_t i = 0; argv && i < p->engine.n_command; i++)
		free(argv[i]);
	free(argv);
	free(buf);
	spawn_free(&s);
	return rc;
}

/* ---- the record ---------------------------------------------------------------------------- */

static const char *stream_name(enum mw_adapter_stream s)
{
	return s == MW_ADAPTER_STDOUT ? "stdout" : s == MW_ADAPTER_STDERR ? "stderr" : "both";
}

/* One line per figure: the differential value beside the whole-process one. */
static void say_figures(const struct mw_run_options *o, const json_t *doc)
{
	static const struct {
		const char *figure, *label;
	} rows[] = {
		{ "dram_read_MB_per_token", "DRAM read MB/token" },
		{ "engine_MB_per_token", "engine-accounted MB/token" },
		{ "task_clock_ns_per_token", "task-clock ns/token" },
		{ "page_faults_per_token", "page faults/token" },
	};
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	const json_t *tok = json_object_get(m, "tok_per_s");
	if (json_is_true(json_object_get(tok, "measured")))
		mw_run_say(o, "decode tok/s (engine's own timings): %.4g", json_number_value(
			    json_object_get(tok, "mean")));
	else
		mw_run_say(o, "decode tok/s: not measured (%s)",
		    json_string_value(json_object_get(tok, "reason")));
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char whole[128];
		snprintf(whole, sizeof(whole), "%s_whole_process", rows[i].figure);
		const json_t *d = json_object_get(m, rows[i].figure), *w = json_object_get(m, whole);
		if (!json_is_true(json_object_get(d, "measured"))) {
			mw_run_say(o, "%s: not measured (%s)", rows[i].label,
			    json_string_value(json_object_get(d, "reason")));
			continue;
		}
		mw_run_say(o, "%s: %.6g differential (N2 - N1 tokens), %.6g whole-process (/ N2)",
		    rows[i].label, json_number_value(json_object_get(d, "mean")),
		    json_number_value(json_object_get(w, "mean")));
	}
}

/* ---- the run ------------------------------------------------------------------------------- */

enum mw_run_status mw_runner_external(const struct mw_protocol *p, const struct mw_run_options *o,
				      json_t **out, struct mw_error *err)
{
	struct ext x = { .p = p, .o = o };
	struct mw_run_signals sigs;
	enum mw_run_status status = MW_RUN_DONE;
	json_t *doc = NULL, *reps = NULL, *machine = NULL, *version = NULL;
	char prog[PATH_MAX], model[4096], sha[65], started[32], stop_why[1024] = "";
	uint64_t file_bytes = 0;
	cpu_set_t cpus;
	int rc;

	*out = NULL;
	mw_run_signals_catch(&sigs);

	int runs = o->runs > 0 ? o->runs : p->runs;
	int n2 = o->tokens > 0 ? o->tokens : p->decode_tokens;
	int n1 = p->short_tokens;
	if (o->tokens > 0 && !json_object_get(json_object_get(p->doc, "differential"),
					      "short_tokens"))
		n1 = n2 / 4 > 0 ? n2 / 4 : 1;
	if (n1 >= n2) {
		mw_error_set(err, -EINVAL, o->tokens > 0 ? "--tokens" : p->source,
			     "differential.short_tokens", "the short run (%d tokens) must be shorter "
			     "than the long one (%d): ask for more tokens", n1, n2);
		status = MW_RUN_BAD_INPUT;
		goto out;
	}
	x.adapter = mw_adapter_find(p->engine.adapter);
	x.stream = x.adapter->stream;
	if (p->engine.adapter_stream)
		x.stream = !strcmp(p->engine.adapter_stream, "stdout") ? MW_ADAPTER_STDOUT
			   : !strcmp(p->engine.adapter_stream, "stderr") ? MW_ADAPTER_STDERR
			   : MW_ADAPTER_BOTH;

	if ((rc = program_find(p, o, prog, sizeof(prog), err))) {
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}
	mw_run_say(o, "external engine: %s", prog);
	version = program_version(prog);

	if (p->model.synth_shape) {
		if ((rc = mw_runner_synth_path(p, model, sizeof(model), o->log, err))) {
			status = rc == -EINVAL ? MW_RUN_BAD_INPUT : MW_RUN_ENVIRONMENT;
			goto out;
		}
	} else {
		snprintf(model, sizeof(model), "%s", p->model.path);
	}
	mw_run_say(o, "hashing %s", model);
	if ((rc = mw_sha256_file(model, sha, &file_bytes, err))) {
		status = MW_RUN_BAD_INPUT;
		goto out;
	}
	if (p->model.size_bytes >= 0 && (uint64_t)p->model.size_bytes != file_bytes) {
		mw_error_set(err, -EINVAL, p->source, "model.size_bytes",
			     "%s has %llu bytes, the protocol pins %lld: an incomplete or different "
			     "download", model, (unsigned long long)file_bytes,
			     (long long)p->model.size_bytes);
		status = MW_RUN_BAD_INPUT;
		goto out;
	}
	if (p->model.sha256 && strcmp(p->model.sha256, sha)) {
		mw_error_set(err, -EINVAL, p->source, "model.sha256",
			     "%s has sha256 %s, the protocol pins %s", model, sha, p->model.sha256);
		status = MW_RUN_BAD_INPUT;
		goto out;
	}

	CPU_ZERO(&cpus);
	for (size_t i = 0; i < p->engine.n_cpus; i++)
		CPU_SET(p->engine.cpus[i], &cpus);
	int threads = o->threads > 0 ? o->threads : p->engine.threads;
	if (threads <= 0)
		threads = p->engine.n_cpus ? (int)p->engine.n_cpus : mw_cpus_allowed();

	/* Counters: DRAM system-wide, opened once; software per process (open_software). */
	struct prb_error perr;
	prb_error_clear(&perr);
	if (prb_system_open(&x.sys, NULL, &perr)) {
		x.sys = NULL;
		snprintf(x.dram_reason, sizeof(x.dram_reason), "cannot read the PMU list: %.300s: %.400s",
			 perr.source, perr.text);
	} else {
		x.dram = mw_run_dram_open(p, x.sys, x.dram_reason, sizeof(x.dram_reason));
	}
	if (mw_run_dram_check(p, o, x.dram != NULL, x.dram_reason, err)) {
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}
	x.d0 = calloc(1, sizeof(*x.d0));
	x.d1 = calloc(1, sizeof(*x.d1));
	machine = mw_machine_describe(NULL);
	reps = json_array();
	if (!x.d0 || !x.d1 || !machine || !reps) {
		mw_error_set(err, -ENOMEM, "", "", "out of memory");
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}

	mw_utc_now(started, sizeof(started), false);
	mw_run_say(o, "differential method: %d repetition%s (+%d warm-up) of %d and %d tokens, %d "
	    "threads%s", runs, runs == 1 ? "" : "s", p->warmup_runs, n1, n2, threads,
	    p->engine.n_cpus ? ", pinned" : "");
	int total = p->warmup_runs + runs;
	for (int i = 0; i < total && !mw_run_stopped() && !stop_why[0]; i++) {
		bool warm = i < p->warmup_runs;
		json_t *proc[2] = { NULL, NULL };
		const int len[2] = { n1, n2 };
		static const char *const name[2] = { "short", "long" };
		for (int k = 0; k < 2 && !stop_why[0]; k++) {
			char label[64], why[1024];
			snprintf(label, sizeof(label), "repetition %d%s, %s run", i + 1,
				 warm ? " (warm-up)" : "", name[k]);
			if ((rc = process_once(&x, prog, model, len[k], threads,
					       p->engine.n_cpus ? &cpus : NULL, label, &proc[k], why,
					       sizeof(why), err))) {
				json_decref(proc[0]);
				status = rc == -EINVAL ? MW_RUN_BAD_INPUT : MW_RUN_ENVIRONMENT;
				goto out;
			}
			const json_t *ad = json_object_get(proc[k], "adapter");
			double secs = (double)json_integer_value(json_object_get(proc[k], "wall_ns")) * 1e-9;
			if (why[0]) {
				snprintf(stop_why, sizeof(stop_why), "%s (%d tokens) is invalid: %s",
					 label, len[k], why);
				mw_run_say(o, "%s", stop_why);
			} else {
				mw_run_say(o, "%s: %lld tokens confirmed by %s, %.3f s wall", label,
				    (long long)json_integer_value(json_object_get(ad, "decode_tokens")),
				    x.adapter->name, secs);
			}
		}
		if (!proc[1])
			proc[1] = json_null();
		json_array_append_new(reps, json_pack("{s:i, s:b, s:o, s:o, s:{}}", "index", i,
						      "warmup", warm, "short", proc[0], "long",
						      proc[1], "figures"));
	}
	if (x.sw_reason[0])
		mw_run_say(o, "software counter not read: %s", x.sw_reason);
	if (mw_run_stopped() && !stop_why[0])
		snprintf(stop_why, sizeof(stop_why), "interrupted by %s",
			 mw_run_stopped() == SIGTERM ? "SIGTERM" : "SIGINT (Ctrl-C)");

	/* The record. */
	char commit[128];
	bool dirty;
	mw_run_git_split(commit, sizeof(commit), &dirty);
	json_t *cmd = json_array(), *tmpl = json_array(), *overrides = json_object();
	for (int i = 0; i < o->argc; i++)
		json_array_append_new(cmd, json_string(o->argv[i]));
	for (size_t i = 0; i < p->engine.n_command; i++)
		json_array_append_new(tmpl, json_string(p->engine.command[i]));
	if (o->runs > 0)
		json_object_set_new(overrides, "runs", json_integer(o->runs));
	if (o->tokens > 0)
		json_object_set_new(overrides, "decode_tokens", json_integer(o->tokens));
	if (o->threads > 0)
		json_object_set_new(overrides, "threads", json_integer(o->threads));
	json_t *jcpus = json_null();
	if (p->engine.n_cpus) {
		jcpus = json_array();
		for (size_t i = 0; i < p->engine.n_cpus; i++)
			json_array_append_new(jcpus, json_integer(p->engine.cpus[i]));
	}
	json_t *sw = json_array();
	for (size_t i = 0; i < MW_RUN_N_SW; i++)
		if (x.sw_open[i])
			json_array_append_new(sw, json_string(mw_run_sw_events[i].event));
	json_t *synth = p->model.synth_shape
		? json_pack("{s:s, s:I}", "shape", p->model.synth_shape, "seed",
			    (json_int_t)p->model.synth_seed)
		: json_null();
	char mname[256];
	snprintf(mname, sizeof(mname), "%s%.200s", p->model.synth_shape ? "synthetic " : "",
		 p->model.synth_shape ? p->model.synth_shape
		 : strrchr(model, '/') ? strrchr(model, '/') + 1 : model);
	json_object_set_new(version, "path", json_string(prog));
	json_object_set_new(version, "requested", json_string(o->llama_bin ? o->llama_bin
							      : p->engine.command[0]));
	doc = json_pack(
		"{s:s, s:s, s:b, s:o, s:s,"
		" s:{s:s, s:s, s:b, s:o, s:n, s:o},"
		" s:{s:s, s:s, s:s},"
		" s:{s:s, s:s, s:s, s:O, s:o},"
		" s:{s:s, s:s, s:s, s:I, s:s, s:b, s:o, s:n, s:n, s:n},"
		" s:{s:s, s:n, s:i, s:o, s:o, s:o, s:{s:s, s:s, s:o}},"
		" s:O,"
		" s:{s:o, s:{s:b, s:s}, s:o},"
		" s:{s:b, s:s},"
		" s:[], s:{}, s:{},"
		" s:{s:s, s:i, s:i, s:b, s:o}}",
		"schema", MW_RESULT_SCHEMA_ID, "kind", "run", "complete", !stop_why[0],
		"incomplete_reason", stop_why[0] ? json_string(stop_why) : json_null(),
		"created_utc", started,
		"memwall", "version", mw_version(), "git_commit", commit, "git_dirty", dirty,
		"command", cmd, "kernels", "environment", mw_environment_allowed(),
		"units", "MB", "10^6 bytes", "MiB", "2^20 bytes", "time",
		"ns unless the key names another unit",
		"protocol", "name", p->name, "source", p->source, "sha256", p->sha256, "document",
		p->doc, "overrides", overrides,
		"model", "format", p->model.format, "name", mname, "path", model, "file_bytes",
		(json_int_t)file_bytes, "sha256", sha, "synthetic", p->model.synth_shape != NULL,
		"synth", synth, "arch", "shape", "weight_bytes",
		"engine", "kind", "external", "kernels", "threads", threads, "cpus", jcpus,
		"program", version, "command", tmpl, "adapter", "name", x.adapter->name, "stream",
		stream_name(x.stream), "pattern",
		p->engine.adapter_pattern ? json_string(p->engine.adapter_pattern) : json_null(),
		"machine", machine,
		"counters", "dram", mw_run_dram_json(x.dram, x.dram_reason), "energy", "measured", 0,
		"reason", "package energy is not read around external engines yet", "software", sw,
		"drift", "measured", 0, "reason",
		"the bandwidth drift probe runs only with memwall's own engine",
		"runs", "summary", "acceptance",
		"external", "method", "differential", "short_tokens", n1, "long_tokens", n2,
		"allow_short", p->allow_short, "repetitions", reps);
	reps = NULL;
	version = NULL; /* json_pack took it, on success and on failure alike */
	if (!doc) {
		mw_error_set(err, -ENOMEM, "", "", "cannot build the result record");
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}
	if ((rc = mw_result_derive(doc, "(this run)", err))) {
		status = MW_RUN_ENVIRONMENT;
		json_decref(doc);
		doc = NULL;
		goto out;
	}
	say_figures(o, doc);
	*out = doc;
	status = stop_why[0] ? MW_RUN_INTERRUPTED : MW_RUN_DONE;
out:
	mw_run_signals_restore(&sigs);
	json_decref(reps);
	json_decref(machine);
	json_decref(version);
	prb_dram_close(x.dram);
	prb_system_close(x.sys);
	free(x.d0);
	free(x.d1);
	return status;
}
