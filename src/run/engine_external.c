/* src/run/engine_external.c: a foreign program (engine.kind "external") as a row of the run
 * pipeline.
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
 *   - its output read by the protocol's adapter (src/run/adapters.h), which must confirm how many
 *     tokens came out. A count it cannot confirm, or one short of the target, makes the run
 *     invalid: memwall stops, prints why and what to change, and writes the record so far.
 * The figures (src/record/differential.c) are computed from these raw records, so `memwall validate`
 * recomputes them.
 *
 * The command is an argv template expanded argument by argument and run with execv: no shell
 * ever sees the prompt. The child pins itself to the protocol's CPUs before exec, so the
 * program and every thread it starts inherit the mask. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapters.h"
#include "control.h"
#include "drift.h"
#include "redact.h"
#include "run_state.h"
#include "result.h"
#include "spawn.h"

#define VERSION_TIMEOUT_MS 10000
#define VERSION_MAX 2048      /* bytes of `--version` output kept */
#define TAIL_MAX 1024         /* bytes of each run's stderr kept for diagnosis */

/* ---- the program --------------------------------------------------------------------------- */

/* The program to run: --llama-bin, else engine.command[0] as a path (it holds a '/'), else
 * looked up in PATH as execvp would. *path receives its absolute path. */
static int program_find(const struct mw_protocol *p, const struct mw_run_options *o, char *path,
			size_t n, struct mw_error *err)
{
	const char *want = o->llama_bin ? o->llama_bin : p->engine.command[0];
	const char *field = o->llama_bin ? "--llama-bin" : "engine.command[0]";
	const char *tried = NULL;
	int rc = mw_spawn_find(want, path, n, &tried);
	if (rc == -ENOENT && !tried)
		return mw_error_set(err, -ENOENT, o->llama_bin ? "" : p->source, field,
				    "'%s' is not in PATH: pass --llama-bin /path/to/%s "
				    "(your llama.cpp build's bin/ folder), or put its folder "
				    "in PATH", want, want);
	if (rc < 0)
		return mw_error_set(err, rc, o->llama_bin ? "" : p->source, field,
				    "%s is not an executable file: %s", tried ? tried : want,
				    strerror(-rc));
	return 0;
}

/* `PROGRAM --version`, bounded in time and size: what the program says about itself. */
static json_t *program_version(const char *path)
{
	char *argv[] = { (char *)(uintptr_t)path, (char *)(uintptr_t)"--version", NULL };
	struct mw_spawn s = { .argv = argv, .timeout_ms = VERSION_TIMEOUT_MS };
	struct mw_error err;
	char text[VERSION_MAX + 1], why[256];
	json_t *o;
	mw_error_clear(&err);
	if (mw_spawn_run(&s, &err))
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
	/* Secrets in the environment stay out of the record (src/base/redact.h). */
	bool redacted = false;
	char *clean = mw_redact(text, len, &len, &redacted);
	o = json_pack("{s:o, s:o, s:b}", "version", clean ? json_stringn(clean, len)
		      : json_null(), "version_reason", clean ? why[0] ? json_string(why)
		      : json_null() : json_string("out of memory redacting the output"),
		      "version_redacted", redacted);
	free(clean);
	mw_spawn_free(&s);
	return o;
}

/* ---- the measurement ----------------------------------------------------------------------- */

struct ext {
	struct mw_run *run;
	char program[PATH_MAX];
	json_t *version;             /* what `PROGRAM --version` said */
	struct mw_snap *s0, *s1;     /* readings around a window */
	struct prb_dram_sample delta;
	struct prb_set *sset;        /* the current process's software counters */
	int sidx[MW_N_SW];
	bool sw_open[MW_N_SW];       /* opened on some process: listed in counters.software */
	char sw_reason[1024];        /* the first software event that could not be opened */
	const struct mw_adapter *adapter;
	enum mw_adapter_stream stream;
	struct mw_drift drift;       /* the bandwidth probe, before and after the repetitions */
};

/* The spawn hook: software counters on the child, with inherit, enabled before it execs. */
static void open_software(void *ctx, pid_t pid)
{
	struct ext *x = ctx;
	struct prb_set_options so = { .pid = pid, .cpu = -1, .inherit = true };
	x->sset = NULL;
	if (prb_set_new(&x->sset, x->run->ctr.sys, &so))
		return;
	for (size_t i = 0; i < MW_N_SW; i++) {
		struct prb_error e;
		prb_error_clear(&e);
		if (prb_set_add(x->sset, mw_sw_events[i].event, &x->sidx[i], &e) &&
		    !x->sw_reason[0])
			snprintf(x->sw_reason, sizeof(x->sw_reason), "%s: %.700s",
				 mw_sw_events[i].event, e.text);
	}
	prb_set_enable(x->sset);
}

static json_t *software_json(struct ext *x)
{
	json_t *o = json_object();
	int n = x->sset ? prb_set_count(x->sset) : 0;
	struct prb_reading *r = calloc((size_t)(n ? n : 1), sizeof(*r));
	bool ok = x->sset && r && prb_set_read(x->sset, r) == 0;
	for (size_t i = 0; o && i < MW_N_SW; i++) {
		const unsigned bad = PRB_READING_NOT_COUNTED | PRB_READING_UNAVAILABLE;
		bool have = ok && x->sidx[i] >= 0 && !(r[x->sidx[i]].flags & bad);
		x->sw_open[i] |= have;
		json_object_set_new(o, mw_sw_events[i].key,
				    have ? json_integer((json_int_t)r[x->sidx[i]].value) : json_null());
	}
	free(r);
	prb_set_free(x->sset);
	x->sset = NULL;
	return o;
}

/* DRAM bytes over idle windows, each figure with its state: measured only when every window
 * measured it. */
struct idle_sum {
	uint64_t ns;
	struct prb_bytes rd, wr, tot;
	struct energy_sum { double j; enum prb_state state; } energy; /* package energy */
};

/* Package energy between two readings, with its state: measured only when both were. */
static struct energy_sum energy_delta(const struct mw_snap *later, const struct mw_snap *earlier)
{
	if (later->energy != PRB_MEASURED)
		return (struct energy_sum){ 0, later->energy };
	if (earlier->energy != PRB_MEASURED)
		return (struct energy_sum){ 0, earlier->energy };
	return (struct energy_sum){ later->joules - earlier->joules, PRB_MEASURED };
}

static void energy_add(struct energy_sum *sum, struct energy_sum e)
{
	if (sum->state != PRB_MEASURED)
		return;
	if (e.state != PRB_MEASURED)
		*sum = e;
	else
		sum->j += e.j;
}

static json_t *energy_json(struct energy_sum e)
{
	return e.state == PRB_MEASURED ? json_real(e.j) : json_null();
}

static void bytes_add(struct prb_bytes *sum, struct prb_bytes b)
{
	if (sum->state != PRB_MEASURED)
		return;
	if (b.state != PRB_MEASURED)
		*sum = (struct prb_bytes){ 0, b.state };
	else
		sum->bytes += b.bytes;
}

/* An idle window of idle_baseline_ms on the system-wide counters (DRAM, package energy),
 * added to *sum. Without either there is nothing to count, so no time is spent. */
static void idle_window(struct ext *x, struct idle_sum *sum)
{
	struct mw_counters *c = &x->run->ctr;
	if ((!c->dram && !c->eset) || x->run->p->idle_baseline_ms <= 0)
		return;
	mw_counters_read(c, x->s0);
	mw_run_sleep_ms(x->run->p->idle_baseline_ms);
	mw_counters_read(c, x->s1);
	sum->ns += x->s1->ns - x->s0->ns;
	mw_snap_dram_delta(x->s1, x->s0, &x->delta);
	bytes_add(&sum->rd, x->delta.read);
	bytes_add(&sum->wr, x->delta.write);
	bytes_add(&sum->tot, x->delta.total);
	energy_add(&sum->energy, energy_delta(x->s1, x->s0));
}

static struct idle_sum idle_start(const struct ext *x)
{
	enum prb_state st = x->run->ctr.dram ? PRB_MEASURED : PRB_NOT_RUN;
	enum prb_state est = x->run->ctr.eset ? PRB_MEASURED : PRB_NOT_RUN;
	return (struct idle_sum){ 0, { 0, st }, { 0, st }, { 0, st }, { 0, est } };
}

static json_t *idle_json(const struct idle_sum *before, const struct idle_sum *after)
{
	struct idle_sum s = *before;
	bytes_add(&s.rd, after->rd);
	bytes_add(&s.wr, after->wr);
	bytes_add(&s.tot, after->tot);
	energy_add(&s.energy, after->energy);
	return json_pack("{s:I, s:I, s:o, s:o, s:o, s:o}", "before_ns", (json_int_t)before->ns,
			 "after_ns", (json_int_t)after->ns, "dram_read_bytes", mw_bytes_json(s.rd),
			 "dram_write_bytes", mw_bytes_json(s.wr), "dram_total_bytes",
			 mw_bytes_json(s.tot), "energy_j", energy_json(s.energy));
}

static json_t *opt_count(bool known, int64_t v)
{
	return known ? json_integer((json_int_t)v) : json_null();
}

static json_t *opt_ms(bool known, double v)
{
	return known ? mw_json_num(v) : json_null();
}

/* AIOS's method counts one counter: the first uncore_imc_free_running instance by name (its
 * script sorts perf's accepted events so that such a name wins). The instance's read bytes
 * over the process, or null with the reason when this machine's DRAM backend has none. */
static json_t *aios_counter_json(const struct ext *x)
{
	static const char prefix[] = "uncore_imc_free_running";
	const struct mw_counters *c = &x->run->ctr;
	const struct prb_dram_status *st = c->dram ? prb_dram_status(c->dram) : NULL;
	int best = -1;
	for (int i = 0; st && i < st->n_instances && i < x->delta.n_instances; i++)
		if (!strncmp(st->instances[i].pmu, prefix, sizeof(prefix) - 1) &&
		    (best < 0 || strcmp(st->instances[i].pmu, st->instances[best].pmu) < 0))
			best = i;
	if (best < 0) {
		char why[1200];
		if (!st)
			snprintf(why, sizeof(why), "DRAM is not measured: %s", c->dram_reason);
		else
			snprintf(why, sizeof(why), "this machine's DRAM backend (%s) has no "
				 "uncore_imc_free_running instance, the counter AIOS's script prefers; "
				 "memwall does not guess which counter the script would have taken "
				 "instead", st->backend);
		return json_pack("{s:n, s:n, s:s}", "pmu", "read_bytes", "reason", why);
	}
	const struct prb_bytes rd = x->delta.inst[best].read;
	return json_pack("{s:s, s:o, s:o}", "pmu", st->instances[best].pmu, "read_bytes",
			 mw_bytes_json(rd), "reason", rd.state == PRB_MEASURED ? json_null()
			 : json_string(prb_state_name(rd.state)));
}

/* The last TAIL_MAX bytes of text, from a line start where one is near. */
static const char *tail_of(const char *text, size_t len)
{
	if (len <= TAIL_MAX)
		return text;
	const char *t = text + len - TAIL_MAX, *nl = strchr(t, '\n');
	return nl && nl[1] ? nl + 1 : t;
}

/* The stderr tail as it enters the record: secrets in the environment replaced (redacted
 * over the last 64 KiB first, so a value straddling the tail's start is caught whole). */
static json_t *tail_json(const char *text, size_t len, bool *redacted)
{
	size_t start = len > 65536 ? len - 65536 : 0, n = 0;
	char *clean = mw_redact(text + start, len - start, &n, redacted);
	json_t *j = clean ? json_string(tail_of(clean, n))
			  : json_string("(out of memory redacting the program's stderr)");
	free(clean);
	return j;
}

/* One process of a repetition: idle window, the program, idle window; its raw record. *why
 * receives the reason when the run is invalid (left "" otherwise). -errno only when the
 * program could not be started at all. */
static int process_once(struct ext *x, long n, const char *label, json_t **out, char *why,
			size_t wn, struct mw_error *err)
{
	const struct mw_plan *pl = &x->run->plan;
	const struct mw_protocol *p = pl->p;
	const char *path = x->program;
	struct mw_command_values v = { .model = pl->model_path, .prompt = p->prompt, .n = n,
				       .threads = pl->threads, .seed = p->sampling.seed };
	const cpu_set_t *cpus = pl->pinned ? &pl->cpus : NULL;
	char **argv = calloc(p->engine.n_command + 1, sizeof(char *));
	json_t *jargv = json_array();
	struct mw_spawn s = { .cpus = cpus, .timeout_ms = p->engine.timeout_s * 1000,
			   .hook = open_software, .ctx = x };
	struct mw_adapter_result res = { 0 }; /* an adapter that stops early leaves the rest unset */
	struct mw_error aerr;
	struct idle_sum before = idle_start(x), after = before;
	/* AIOS's method has no idle windows and takes the command's success as the count. */
	const bool aios = p->measure == MW_MEASURE_AIOS;
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

	if (!aios)
		idle_window(x, &before);
	mw_counters_read(&x->run->ctr, x->s0);
	if ((rc = mw_spawn_run(&s, err))) {
		prb_set_free(x->sset);
		x->sset = NULL;
		goto out;
	}
	mw_counters_read(&x->run->ctr, x->s1);
	mw_snap_dram_delta(x->s1, x->s0, &x->delta);
	struct energy_sum energy = energy_delta(x->s1, x->s0);
	bool dram_open = x->s0->dram_open;
	json_t *sw = software_json(x);
	if (!aios)
		idle_window(x, &after);

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
	else if (aios)
		; /* the command succeeded: AIOS's script then assumes the requested count */
	else if (arc)
		snprintf(why, wn, "%s%s%s", aerr.field[0] ? aerr.field : "",
			 aerr.field[0] ? ": " : "", aerr.text);
	else if ((arc = mw_adapter_check(&res, n, p->allow_short, source, &aerr)))
		snprintf(why, wn, "%s%s", aerr.text, arc == -ERANGE
			 ? " (the protocol field is \"allow_short\": true)" : "");
	if (s.truncated && !why[0])
		snprintf(why, wn, "printed more than %u MiB: its output was cut, so the adapter "
			 "may have missed the timing lines", MW_SPAWN_OUTPUT_MAX >> 20);
	bool counts = arc == 0 || arc == -ENODATA || arc == -ERANGE || arc == -EPROTO;
	bool redacted = false;
	json_t *tail = tail_json(s.err, s.err_len, &redacted);
	*out = json_pack(
		"{s:i, s:o, s:o, s:o, s:b, s:I,"
		" s:o, s:n, s:o,"
		" s:{s:o, s:o, s:o, s:o, s:o, s:o},"
		" s:b, s:o, s:o, s:b}",
		"tokens_target", (int)n, "argv", jargv, "exit_code",
		s.exit_code >= 0 ? json_integer(s.exit_code) : json_null(), "signal",
		s.term_signal ? json_integer(s.term_signal) : json_null(), "timed_out", s.timed_out,
		"wall_ns", (json_int_t)s.wall_ns,
		"idle", idle_json(&before, &after),
		"engine_bytes", "software", sw,
		"adapter", "decode_tokens", opt_count(counts && res.decode_tokens.known,
						       res.decode_tokens.value),
		"prompt_tokens", opt_count(counts && res.prompt_tokens.known, res.prompt_tokens.value),
		"eval_runs", opt_count(counts && res.eval_runs.known, res.eval_runs.value),
		"eval_ms", opt_ms(counts && res.eval_ms.known, res.eval_ms.value),
		"prompt_ms", opt_ms(counts && res.prompt_ms.known, res.prompt_ms.value),
		"load_ms", opt_ms(counts && res.load_ms.known, res.load_ms.value),
		"valid", !why[0], "invalid_reason", why[0] ? json_string(why) : json_null(),
		"stderr_tail", tail, "stderr_redacted", redacted);
	jargv = NULL;
	if (*out) {
		mw_window_set_dram(*out, dram_open, &x->delta);
		json_object_set_new(*out, "energy_j", energy_json(energy));
		if (aios)
			json_object_set_new(*out, "aios_counter", aios_counter_json(x));
		if (x->run->ctr.eset)
			json_object_set_new(*out, "energy_state",
					    json_string(prb_state_name(energy.state)));
	}
	if (!*out)
		rc = mw_error_set(err, -ENOMEM, "", "", "cannot build the run's record");
out:
	json_decref(jargv);
	for (size_t i = 0; argv && i < p->engine.n_command; i++)
		free(argv[i]);
	free(argv);
	free(buf);
	mw_spawn_free(&s);
	return rc;
}

/* ---- the record ---------------------------------------------------------------------------- */

static const char *stream_name(enum mw_adapter_stream s)
{
	return s == MW_ADAPTER_STDOUT ? "stdout" : s == MW_ADAPTER_STDERR ? "stderr" : "both";
}

/* One line per figure: the differential value beside the whole-process one. */
static void external_summarize(const struct mw_run *run, const json_t *doc)
{
	static const struct {
		const char *figure, *label;
	} rows[] = {
		{ "dram_MB_per_token", "DRAM MB/token" },
		{ "engine_MB_per_token", "engine-accounted MB/token" },
		{ "task_clock_ns_per_token", "task-clock ns/token" },
		{ "page_faults_per_token", "page faults/token" },
	};
	const struct mw_run_options *o = run->o;
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	if (run->p->measure == MW_MEASURE_AIOS) {
		const json_t *a = json_object_get(json_object_get(json_object_get(doc, "summary"),
								  "aios_method"), "aios_method_MB_per_token");
		if (json_is_true(json_object_get(a, "measured")))
			mw_run_say(o, "AIOS's method \"MB\"/token (MiB, one controller, whole process, "
				   "assumed count; not memwall's figure): %.6g, CV %.3g%% (population)",
				   json_number_value(json_object_get(a, "mean")),
				   json_number_value(json_object_get(a, "cv_pct_population")));
		else
			mw_run_say(o, "AIOS's method MB/token: not measured (%s)",
				   json_string_value(json_object_get(a, "reason")));
		return;
	}
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

/* ---- the row -------------------------------------------------------------------------------- */

static enum mw_run_status external_prepare(struct mw_run *run, struct mw_error *err)
{
	const struct mw_protocol *p = run->p;
	struct ext *x = calloc(1, sizeof(*x));
	run->state = x;
	if (!x || !(x->s0 = calloc(1, sizeof(*x->s0))) || !(x->s1 = calloc(1, sizeof(*x->s1)))) {
		mw_error_set(err, -ENOMEM, "", "", "out of memory");
		return MW_RUN_ENVIRONMENT;
	}
	x->run = run;
	x->adapter = mw_adapter_find(p->engine.adapter);
	x->stream = p->engine.adapter_stream_given ? p->engine.adapter_stream : x->adapter->stream;
	if (program_find(p, run->o, x->program, sizeof(x->program), err))
		return MW_RUN_ENVIRONMENT;
	mw_run_say(run->o, "external engine: %s", x->program);
	x->version = program_version(x->program);
	return MW_RUN_DONE;
}

/* One repetition: the short run, then the long one; stops at the first invalid process. */
static int repetition(struct ext *x, int i, json_t *reps, struct mw_error *err)
{
	struct mw_run *run = x->run;
	bool warm = i < run->plan.warmups;
	json_t *proc[2] = { NULL, NULL };
	const int len[2] = { run->plan.short_tokens, run->plan.decode };
	static const char *const name[2] = { "short", "long" };
	int rc;
	/* AIOS's method: one process of N tokens per repetition, kept as the long run. */
	for (int k = run->p->measure == MW_MEASURE_AIOS; k < 2 && !run->stop_why[0]; k++) {
		char label[64], why[1024];
		snprintf(label, sizeof(label), "repetition %d%s, %s run", i + 1,
			 warm ? " (warm-up)" : "", name[k]);
		if ((rc = process_once(x, len[k], label, &proc[k], why, sizeof(why), err))) {
			json_decref(proc[0]);
			return rc;
		}
		const json_t *ad = json_object_get(proc[k], "adapter");
		double secs = (double)json_integer_value(json_object_get(proc[k], "wall_ns")) * 1e-9;
		if (why[0]) {
			snprintf(run->stop_why, sizeof(run->stop_why), "%s (%d tokens) is invalid: %s",
				 label, len[k], why);
			mw_run_say(run->o, "%s", run->stop_why);
		} else if (run->p->measure == MW_MEASURE_AIOS) {
			mw_run_say(run->o, "%s: exited 0, %d tokens assumed (AIOS's method), %.3f s "
				   "wall", label, len[k], secs);
		} else {
			mw_run_say(run->o, "%s: %lld tokens confirmed by %s, %.3f s wall", label,
			    (long long)json_integer_value(json_object_get(ad, "decode_tokens")),
			    x->adapter->name, secs);
		}
	}
	if (!proc[0])
		proc[0] = json_null();
	if (!proc[1])
		proc[1] = json_null();
	json_array_append_new(reps, json_pack("{s:i, s:b, s:o, s:o, s:{}}", "index", i, "warmup",
					      warm, "short", proc[0], "long", proc[1], "figures"));
	return 0;
}

static json_t *engine_json(struct ext *x)
{
	const struct mw_plan *pl = &x->run->plan;
	const struct mw_protocol *p = pl->p;
	json_t *tmpl = json_array(), *cpus = json_null();
	for (size_t i = 0; i < p->engine.n_command; i++)
		json_array_append_new(tmpl, json_string(p->engine.command[i]));
	if (pl->pinned) {
		cpus = json_array();
		for (size_t i = 0; i < p->engine.n_cpus; i++)
			json_array_append_new(cpus, json_integer(p->engine.cpus[i]));
	}
	json_object_set_new(x->version, "path", json_string(x->program));
	json_object_set_new(x->version, "requested", json_string(x->run->o->llama_bin
								 ? x->run->o->llama_bin
								 : p->engine.command[0]));
	json_t *e = json_pack("{s:s, s:n, s:i, s:o, s:O, s:o, s:{s:s, s:s, s:o, s:s}}", "kind",
			      "external", "kernels", "threads", pl->threads, "cpus", cpus,
			      "program", x->version, "command", tmpl, "adapter", "name",
			      x->adapter->name, "stream", stream_name(x->stream), "pattern",
			      p->engine.adapter_pattern ? json_string(p->engine.adapter_pattern)
							: json_null(), "token_times",
			      x->adapter->token_times);
	return e;
}

static enum mw_run_status external_execute(struct mw_run *run, struct mw_error *err)
{
	struct ext *x = run->state;
	const struct mw_plan *pl = &run->plan;
	json_t *reps = json_array();
	int rc;
	if (!reps)
		return MW_RUN_ENVIRONMENT;
	bool aios = pl->p->measure == MW_MEASURE_AIOS;
	if (aios)
		mw_run_say(run->o, "AIOS's method (whole process, one controller, assumed count): "
			   "%d repetition%s (+%d warm-up) of %d tokens, %d threads%s", pl->runs,
			   pl->runs == 1 ? "" : "s", pl->warmups, pl->decode, pl->threads,
			   pl->pinned ? ", pinned" : "");
	else
		mw_run_say(run->o, "differential method: %d repetition%s (+%d warm-up) of %d and "
			   "%d tokens, %d threads%s", pl->runs, pl->runs == 1 ? "" : "s",
			   pl->warmups, pl->short_tokens, pl->decode, pl->threads,
			   pl->pinned ? ", pinned" : "");
	mw_drift_step(&x->drift, run, 0);
	int total = pl->warmups + pl->runs;
	for (int i = 0; i < total && !mw_run_stopped() && !run->stop_why[0]; i++)
		if ((rc = repetition(x, i, reps, err))) {
			json_decref(reps);
			return rc == -EINVAL ? MW_RUN_BAD_INPUT : MW_RUN_ENVIRONMENT;
		}
	if (x->sw_reason[0])
		mw_run_say(run->o, "software counter not read: %s", x->sw_reason);
	run->software = json_array();
	for (size_t i = 0; i < MW_N_SW; i++)
		if (x->sw_open[i])
			json_array_append_new(run->software, json_string(mw_sw_events[i].event));
	run->runs = json_array();
	run->engine = engine_json(x);
	mw_drift_step(&x->drift, run, 1);
	run->external = json_pack("{s:s, s:i, s:b, s:o}", "method", aios ? "aios-whole-process"
				  : "differential", "long_tokens", pl->decode, "allow_short",
				  pl->p->allow_short, "repetitions", reps);
	if (run->external && !aios)
		json_object_set_new(run->external, "short_tokens", json_integer(pl->short_tokens));
	return run->engine && run->drift && run->external ? MW_RUN_DONE : MW_RUN_ENVIRONMENT;
}

static void external_close(struct mw_run *run)
{
	struct ext *x = run->state;
	if (!x)
		return;
	prb_set_free(x->sset);
	json_decref(x->version);
	free(x->s0);
	free(x->s1);
	free(x);
	run->state = NULL;
}

const struct mw_engine_row mw_engine_external = {
	.kind = MW_ENGINE_EXTERNAL,
	.energy = true,
	.prepare = external_prepare,
	.execute = external_execute,
	.summarize = external_summarize,
	.close = external_close,
};
