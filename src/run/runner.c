/* src/runner.c: `memwall run`: preflight, the measured runs, and the result record.
 *
 * Counters are read inside the engine's token hook, right after each step, so every decode
 * token gets its own latency, DRAM bytes and energy: the in-process view no outside tool has.
 * Windows follow one another without gaps: the decode window starts at the last prefill
 * token's reading, and each token's latency runs from the previous token's reading to its
 * own (so it includes sampling the token it was fed). Hence a window's totals are exactly the
 * sums of its tokens, which `memwall validate` checks. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "machine.h"
#include "probes.h"
#include "result.h"
#include "runner.h"
#include "runner_common.h"
#include "sha256.h"
#include "version.h"

#define ENERGY_EVENT "power/energy-pkg/"

/* One reading of every counter, taken together. */
struct snap {
	uint64_t ns;
	bool dram;        /* rd, wr valid */
	uint64_t rd, wr;
	bool energy;      /* joules valid */
	double joules;
};

struct runner {
	const struct mw_protocol *p;
	const struct mw_run_options *o;
	struct prb_system *sys;
	struct prb_dram *dram;              /* NULL: DRAM not measured */
	char dram_reason[1024];
	struct prb_set *eset;               /* NULL: energy not measured */
	int eidx;
	char energy_reason[1024];
	struct prb_set *sset;               /* software events; NULL when none opened */
	int sidx[MW_RUN_N_SW];
	struct prb_reading *sread0, *sread1;
	struct prb_dram_sample *cur, *dec0; /* the latest reading and the one at decode start */
	struct prb_reading *ereadings;

	/* The run in progress. */
	enum { PH_PREFILL, PH_DECODE } phase;
	struct snap last;      /* the previous hook's reading */
	struct snap pre0;      /* prefill start */
	uint64_t pre_engine;   /* engine bytes of the prefill tokens */
	size_t n_dec, cap;
	int *ids;
	uint64_t *lat, *eng, *rd, *wr;
	double *ej;
	bool dram_ok, energy_ok; /* every reading of this run succeeded */
	int fed;                 /* the token fed to the step the hook reports */

	/* --phases: decode bytes by engine phase, summed over the run's decode tokens. */
	struct snap ph_begin;    /* the reading at the current phase's start */
	uint64_t ph_eng[ENG_PHASE_COUNT], ph_rd[ENG_PHASE_COUNT], ph_wr[ENG_PHASE_COUNT];
	bool ph_dram_ok;         /* every phase had a DRAM reading at both edges */
	int n_layers;
	uint64_t *pl_rd, *pl_wr; /* (n_layers, 2): attention and FFN of each layer (--phases=layers) */
};

static void snap_take(struct runner *r, struct snap *s)
{
	s->ns = mw_now_ns();
	s->dram = false;
	s->energy = false;
	if (r->dram && prb_dram_read(r->dram, r->cur) == 0) {
		s->dram = true;
		s->rd = r->cur->read.bytes;
		s->wr = r->cur->write.bytes;
	}
	if (r->eset && prb_set_read(r->eset, r->ereadings) == 0) {
		const struct prb_reading *e = &r->ereadings[r->eidx];
		if (!(e->flags & (PRB_READING_NOT_COUNTED | PRB_READING_UNAVAILABLE))) {
			s->energy = true;
			s->joules = e->physical;
		}
	}
}

/* The engine's token hook: one reading per step. */
static void on_token(void *ctx, int pos, int token, const struct eng_step_bytes *bytes)
{
	struct runner *r = ctx;
	struct snap s;
	(void)pos;
	(void)token;
	snap_take(r, &s);
	uint64_t eng = bytes ? bytes->weights + bytes->kv_read + bytes->kv_write : 0;
	if (r->phase == PH_PREFILL) {
		r->pre_engine += eng;
	} else if (r->n_dec < r->cap) {
		size_t i = r->n_dec++;
		r->ids[i] = r->fed;
		r->lat[i] = s.ns - r->last.ns;
		r->eng[i] = eng;
		r->dram_ok &= s.dram && r->last.dram;
		r->energy_ok &= s.energy && r->last.energy;
		if (s.dram && r->last.dram) {
			r->rd[i] = prb_counter_delta(s.rd, r->last.rd, 64);
			r->wr[i] = prb_counter_delta(s.wr, r->last.wr, 64);
		}
		if (s.energy && r->last.energy)
			r->ej[i] = s.joules - r->last.joules;
		for (int k = 0; bytes && k < ENG_PHASE_COUNT; k++)
			r->ph_eng[k] += bytes->by_phase[k];
	}
	r->last = s;
}

/* The engine's phase hook (--phases): a reading at every phase edge of a decode step; the
 * engine holds its other threads at the edge meanwhile, so each delta is one phase's. */
static void on_phase(void *ctx, enum eng_phase phase, int layer, bool begin)
{
	struct runner *r = ctx;
	struct snap s;
	if (r->phase != PH_DECODE || (unsigned)phase >= ENG_PHASE_COUNT)
		return;
	snap_take(r, &s);
	if (!begin && s.dram && r->ph_begin.dram) {
		uint64_t rd = prb_counter_delta(s.rd, r->ph_begin.rd, 64);
		uint64_t wr = prb_counter_delta(s.wr, r->ph_begin.wr, 64);
		r->ph_rd[phase] += rd;
		r->ph_wr[phase] += wr;
		if (r->pl_rd && layer >= 0 && layer < r->n_layers && phase != ENG_PHASE_CLASSIFIER) {
			r->pl_rd[2 * layer + (int)phase] += rd;
			r->pl_wr[2 * layer + (int)phase] += wr;
		}
	} else if (!begin) {
		r->ph_dram_ok = false;
	}
	r->ph_begin = s;
}

static json_t *phases_json(const struct runner *r)
{
	static const char *const names[ENG_PHASE_COUNT] = {
		[ENG_PHASE_ATTENTION] = "attention", [ENG_PHASE_FFN] = "ffn",
		[ENG_PHASE_CLASSIFIER] = "classifier",
	};
	bool dram = r->dram && r->ph_dram_ok;
	json_t *o = json_object();
	for (int k = 0; o && k < ENG_PHASE_COUNT; k++)
		json_object_set_new(o, names[k], json_pack(
			"{s:I, s:o, s:o}", "engine_bytes", (json_int_t)r->ph_eng[k], "dram_read_bytes",
			dram ? json_integer((json_int_t)r->ph_rd[k]) : json_null(), "dram_write_bytes",
			dram ? json_integer((json_int_t)r->ph_wr[k]) : json_null()));
	json_t *layers = r->pl_rd ? json_array() : NULL;
	for (int l = 0; layers && l < r->n_layers; l++)
		json_array_append_new(layers, json_pack(
			"{s:i, s:o, s:o, s:o, s:o}", "layer", l, "attention_dram_read_bytes",
			dram ? json_integer((json_int_t)r->pl_rd[2 * l]) : json_null(),
			"attention_dram_write_bytes",
			dram ? json_integer((json_int_t)r->pl_wr[2 * l]) : json_null(),
			"ffn_dram_read_bytes",
			dram ? json_integer((json_int_t)r->pl_rd[2 * l + 1]) : json_null(),
			"ffn_dram_write_bytes",
			dram ? json_integer((json_int_t)r->pl_wr[2 * l + 1]) : json_null()));
	if (layers)
		json_object_set_new(o, "layers", layers);
	return o;
}

/* ---- counters ------------------------------------------------------------------------------ */

static void counters_open(struct runner *r)
{
	const struct mw_protocol *p = r->p;
	struct prb_error perr;
	prb_error_clear(&perr);
	if (prb_system_open(&r->sys, NULL, &perr)) {
		snprintf(r->dram_reason, sizeof(r->dram_reason), "cannot read the PMU list: %.300s%s%.400s",
			 perr.source, perr.source[0] ? ": " : "", perr.text);
		snprintf(r->energy_reason, sizeof(r->energy_reason), "%s", r->dram_reason);
		return;
	}
	/* Opened before the session starts its threads, so inherit counts them too. */
	if (prb_set_new(&r->sset, r->sys, NULL) == 0) {
		int n_ok = 0;
		for (size_t i = 0; i < MW_RUN_N_SW; i++) {
			struct prb_error e2;
			prb_error_clear(&e2);
			n_ok += prb_set_add(r->sset, mw_run_sw_events[i].event, &r->sidx[i],
					    &e2) == 0;
		}
		size_t n = (size_t)prb_set_count(r->sset);
		r->sread0 = calloc(n ? n : 1, sizeof(*r->sread0));
		r->sread1 = calloc(n ? n : 1, sizeof(*r->sread1));
		if (!n_ok || !r->sread0 || !r->sread1 || prb_set_enable(r->sset)) {
			prb_set_free(r->sset);
			r->sset = NULL;
		}
	} else {
		r->sset = NULL;
	}
	r->dram = mw_run_dram_open(p, r->sys, r->dram_reason, sizeof(r->dram_reason));
	if (p->counters.energy == MW_NEED_OFF) {
		snprintf(r->energy_reason, sizeof(r->energy_reason),
			 "turned off by the protocol (counters.energy is \"off\")");
		return;
	}
	if (prb_set_new(&r->eset, r->sys, NULL)) {
		r->eset = NULL;
		snprintf(r->energy_reason, sizeof(r->energy_reason), "cannot create a counter set");
		return;
	}
	prb_error_clear(&perr);
	int rc = prb_set_add(r->eset, ENERGY_EVENT, &r->eidx, &perr);
	if (rc == 0 && prb_set_enable(r->eset) == 0) {
		r->ereadings = calloc((size_t)prb_set_count(r->eset), sizeof(*r->ereadings));
		if (r->ereadings)
			return;
	}
	snprintf(r->energy_reason, sizeof(r->energy_reason), "%s: %s", ENERGY_EVENT,
		 perr.text[0] ? perr.text : "the event could not be opened");
	prb_set_free(r->eset);
	r->eset = NULL;
}

static json_t *software_names(const struct runner *r)
{
	json_t *a = json_array();
	for (size_t i = 0; r->sset && a && i < MW_RUN_N_SW; i++)
		if (r->sidx[i] >= 0 && !prb_set_reason(r->sset, r->sidx[i])[0])
			json_array_append_new(a, json_string(mw_run_sw_events[i].event));
	return a;
}

static json_t *energy_block(const struct runner *r)
{
	if (!r->eset)
		return json_pack("{s:b, s:s}", "measured", 0, "reason", r->energy_reason);
	return json_pack("{s:b, s:n, s:[s]}", "measured", 1, "reason", "events", ENERGY_EVENT);
}

/* ---- the drift probe ----------------------------------------------------------------------- */

/* Read bandwidth in GB/s (10^9 bytes/s): the median of STREAM-style read passes over a working
 * set of 8x the last-level cache (at least 64 MiB), for about probe_ms. */
static int drift_probe(const struct runner *r, int threads, double *gbps, char *method, size_t mn,
		       char *why, size_t wn)
{
	struct eng_stream *s = NULL;
	struct eng_error eerr;
	uint64_t llc = 0;
	double rates[256];
	int n = 0, rc;
	eng_error_clear(&eerr);
	if (eng_llc_size(&llc, NULL, 0) || llc == 0)
		llc = 32u << 20;
	uint64_t bytes = llc * 8 > (64u << 20) ? llc * 8 : (64u << 20);
	struct eng_stream_options so = { .threads = threads, .bytes = bytes,
					 .kernels = r->p->engine.kernels };
	if ((rc = eng_stream_new(&s, &so, &eerr))) {
		snprintf(why, wn, "the bandwidth probe could not start: %.400s", eerr.text);
		return rc;
	}
	uint64_t t0 = mw_now_ns(), budget = (uint64_t)r->p->drift.probe_ms * 1000000u;
	while (n < 256 && (n < 3 || mw_now_ns() - t0 < budget) && !mw_run_stopped()) {
		struct eng_stream_sample smp;
		if ((rc = eng_stream_run(s, ENG_STREAM_READ, false, &smp))) {
			snprintf(why, wn, "the bandwidth probe failed: %s", strerror(-rc));
			goto out;
		}
		rates[n++] = (double)smp.bytes_read / smp.seconds / 1e9;
	}
	/* Insertion sort: n is small. */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && rates[j] < rates[j - 1]; j--) {
			double t = rates[j];
			rates[j] = rates[j - 1];
			rates[j - 1] = t;
		}
	*gbps = n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
	snprintf(method, mn, "median of %d read passes (eng_stream READ, %s kernels) over %.0f MiB "
		 "with %d threads, GB = 10^9 bytes", n, eng_stream_kernels(s),
		 (double)eng_stream_bytes(s) / 1048576.0, threads);
	rc = n ? 0 : -EINTR;
	if (!n)
		snprintf(why, wn, "interrupted");
out:
	eng_stream_free(s);
	return rc;
}

/* ---- model preparation --------------------------------------------------------------------- */

/* Removes what a killed generation left in the cache: "<name>.<pid>.tmp*" files whose writer
 * is gone. A live writer (another memwall generating the same model) keeps its file. */
static void remove_stale_tmp(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t len = strlen(name);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end = NULL;
		if (strncmp(e->d_name, name, len) || e->d_name[len] != '.')
			continue;
		long pid = strtol(e->d_name + len + 1, &end, 10);
		if (end == e->d_name + len + 1 || strncmp(end, ".tmp", 4) || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

int mw_runner_synth_path(const struct mw_protocol *p, char *path, size_t n, FILE *log,
			 struct mw_error *err)
{
	char dir[3800], tmp[4096];
	struct stat st;
	struct eng_error eerr;
	int rc;
	if ((rc = mw_cache_dir(dir, sizeof(dir))))
		return mw_error_set(err, rc, p->source, "model.synth",
				    "no cache folder: set MEMWALL_CACHE_DIR, XDG_CACHE_HOME or HOME");
	strncat(dir, "/synth", sizeof(dir) - strlen(dir) - 1);
	const char *arch = p->model.synth_arch, *quant = p->model.synth_quant;
	if (arch && quant) /* GGUF: the mix is part of the name */
		snprintf(path, n, "%s/%s-%s-%s-seed%llu.gguf", dir, arch, p->model.synth_shape,
			 quant, (unsigned long long)p->model.synth_seed);
	else
		snprintf(path, n, "%s/%s-seed%llu.bin", dir, p->model.synth_shape,
			 (unsigned long long)p->model.synth_seed);
	if (stat(path, &st) == 0)
		return 0;
	for (char *s = dir + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(dir, 0777);
		*s = '/';
	}
	if (mkdir(dir, 0777) && errno != EEXIST)
		return mw_error_set(err, -errno, dir, "model.synth", "cannot create the cache: %s",
				    strerror(errno));
	remove_stale_tmp(dir, strrchr(path, '/') + 1);
	if (log)
		fprintf(log, "memwall run: generating the synthetic %s checkpoint (seed %llu) into "
			     "%s: first use only\n", p->model.synth_shape,
			(unsigned long long)p->model.synth_seed, path);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	eng_error_clear(&eerr);
	rc = arch && quant ? eng_synth_gguf(tmp, arch, p->model.synth_shape, quant,
					    p->model.synth_seed, &eerr)
			   : eng_synth_llama2c(tmp, p->model.synth_shape, p->model.synth_seed, &eerr);
	if (rc) {
		unlink(tmp);
		return mw_error_set(err, rc, eerr.source[0] ? eerr.source : tmp, "model.synth",
				    "generating the synthetic model failed: %s", eerr.text);
	}
	/* Another memwall may have finished the same file meanwhile: theirs is identical. */
	if (rename(tmp, path)) {
		rc = -errno;
		unlink(tmp);
		return mw_error_set(err, rc, path, "model.synth", "cannot move into place: %s",
				    strerror(-rc));
	}
	return 0;
}

/* ---- the record ---------------------------------------------------------------------------- */

static json_t *u64_array(const uint64_t *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_integer((json_int_t)v[i]));
	return a;
}

static json_t *window_json(uint64_t tokens, uint64_t ns, uint64_t engine, const struct snap *a,
			   const struct snap *b)
{
	bool dram = a->dram && b->dram, energy = a->energy && b->energy;
	return json_pack("{s:I, s:I, s:I, s:o, s:o, s:o}", "tokens", (json_int_t)tokens, "ns",
			 (json_int_t)ns, "engine_bytes", (json_int_t)engine, "dram_read_bytes",
			 dram ? json_integer((json_int_t)prb_counter_delta(b->rd, a->rd, 64))
			      : json_null(),
			 "dram_write_bytes",
			 dram ? json_integer((json_int_t)prb_counter_delta(b->wr, a->wr, 64))
			      : json_null(),
			 "energy_j", energy ? mw_json_num(b->joules - a->joules) : json_null());
}

/* With a tokenizer, the first run's text goes to the log: a glance tells real weights (a
 * story) from broken ones (noise). It is not recorded: the token ids are. */
static void say_text(const struct mw_run_options *o, const struct eng_tokenizer *tok,
		     const struct runner *r, int prev)
{
	char text[241];
	size_t len = 0;
	for (size_t i = 0; i < r->n_dec && len < sizeof(text) - 1; i++) {
		const char *piece = eng_tokenizer_decode(tok, prev, r->ids[i]);
		prev = r->ids[i];
		for (; piece && *piece && len < sizeof(text) - 1; piece++)
			text[len++] = *piece == '\n' ? ' ' : *piece;
	}
	text[len] = '\0';
	mw_run_say(o, "text of run 1: %s%s", text, len == sizeof(text) - 1 ? "..." : "");
}

/* ---- the run ------------------------------------------------------------------------------- */

struct plan {
	int runs, warmups, decode, threads;
	char model_path[4096];
	char sha256[65];
	uint64_t file_bytes;
	int *prompt;
	size_t n_prompt;
};

/* GGUF files start with the magic "GGUF" (ggml's docs/gguf.md). */
/* A protocol's engine.load (validated against the schema's names). */
static enum eng_load_mode load_mode(const char *name)
{
	return !strcmp(name, "repack") ? ENG_LOAD_REPACK
	       : !strcmp(name, "huge-copy") ? ENG_LOAD_HUGE_COPY : ENG_LOAD_MMAP;
}

static bool file_is_gguf(const char *path)
{
	char magic[4] = { 0 };
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t n = fread(magic, 1, 4, f);
	fclose(f);
	return n == 4 && !memcmp(magic, "GGUF", 4);
}

static enum mw_run_status bad(struct mw_error *err, int code, const char *src, const char *field,
			      const char *text)
{
	mw_error_set(err, code, src, field, "%s", text);
	return MW_RUN_BAD_INPUT;
}

/* Preflight warnings about the environment, recorded and printed. */
static json_t *preflight(const struct runner *r, json_t *machine, uint64_t need_bytes,
			 struct mw_error *err, enum mw_run_status *status)
{
	json_t *warn = json_array();
	uint64_t avail = 0, need = 0, st = 0, sf = 0;
	double busy = NAN;
	char w[512];
	*status = MW_RUN_DONE;
	bool have_avail = mw_meminfo(NULL, "MemAvailable", &avail) == 0;
	bool short_mem = mw_memory_fits(need_bytes, &avail, &need) != 0;
	if (short_mem && r->o->force) {
		snprintf(w, sizeof(w), "%.0f MiB available, the model needs about %.0f MiB: run "
			 "anyway (--force); paging can distort every figure",
			 (double)avail / 1048576.0, (double)need / 1048576.0);
		json_array_append_new(warn, json_string(w));
	} else if (short_mem) {
		mw_error_set(err, -ENOMEM, "/proc/meminfo", "MemAvailable",
			     "%.0f MiB available, the model needs about %.0f MiB: close programs, "
			     "pick a smaller protocol, or give --force to run it anyway",
			     (double)avail / 1048576.0, (double)need / 1048576.0);
		*status = MW_RUN_ENVIRONMENT;
	}
	bool have_swap = mw_meminfo(NULL, "SwapTotal", &st) == 0 &&
			 mw_meminfo(NULL, "SwapFree", &sf) == 0;
	if (have_swap && st > sf) {
		snprintf(w, sizeof(w), "%.0f MiB of swap is in use: paging can distort latency and "
			 "DRAM traffic", (double)(st - sf) / 1048576.0);
		json_array_append_new(warn, json_string(w));
	}
	const char *gov = json_string_value(json_object_get(machine, "governor"));
	if (gov && strcmp(gov, "performance")) {
		snprintf(w, sizeof(w), "the CPU frequency governor is '%s', not 'performance': "
			 "tok/s will vary with the governor's decisions", gov);
		json_array_append_new(warn, json_string(w));
	}
	if (json_is_true(json_object_get(machine, "boost")))
		json_array_append_new(warn, json_string("turbo/boost is on: clock speed varies with "
							"temperature and load, and so does tok/s"));
	const char *thp = json_string_value(json_object_get(machine, "thp"));
	if (thp && strcmp(thp, "madvise")) {
		snprintf(w, sizeof(w), "transparent huge pages are '%s' (memwall expects "
			 "'madvise'): TLB behaviour differs from a default system", thp);
		json_array_append_new(warn, json_string(w));
	}
	if (mw_machine_busy_pct(200, &busy) == 0 && busy > 10.0) {
		snprintf(w, sizeof(w), "other processes kept %.0f%% of the CPUs busy during "
			 "preflight: they compete for cores and memory bandwidth", busy);
		json_array_append_new(warn, json_string(w));
	}
	size_t i;
	json_t *x;
	json_array_foreach(warn, i, x)
		mw_run_say(r->o, "warning: %s", json_string_value(x));
	return json_pack("{s:o, s:o, s:o, s:o}", "warnings", warn, "mem_available_bytes",
			 have_avail ? json_integer((json_int_t)avail) : json_null(),
			 "swap_used_bytes", have_swap ? json_integer((json_int_t)(st - sf)) : json_null(),
			 "busy_pct", mw_json_num(busy));
}

/* Swap that grew during the runs means pages went out under the measurement: one more
 * warning in pre (preflight's block), printed too. */
static void swap_check_after(const struct runner *r, json_t *pre)
{
	const json_t *before = json_object_get(pre, "swap_used_bytes");
	uint64_t st = 0, sf = 0;
	char w[256];
	if (!json_is_integer(before) || mw_meminfo(NULL, "SwapTotal", &st) ||
	    mw_meminfo(NULL, "SwapFree", &sf) || st <= sf ||
	    (json_int_t)(st - sf) <= json_integer_value(before))
		return;
	snprintf(w, sizeof(w), "swap in use grew by %.0f MiB during the runs: pages were written "
		 "out while they were measured",
		 (double)((json_int_t)(st - sf) - json_integer_value(before)) / 1048576.0);
	json_array_append_new(json_object_get(pre, "warnings"), json_string(w));
	mw_run_say(r->o, "warning: %s", w);
}

static int grow(struct runner *r, size_t n)
{
	r->cap = n;
	r->ids = calloc(n, sizeof(*r->ids));
	r->lat = calloc(n, sizeof(*r->lat));
	r->eng = calloc(n, sizeof(*r->eng));
	r->rd = calloc(n, sizeof(*r->rd));
	r->wr = calloc(n, sizeof(*r->wr));
	r->ej = calloc(n, sizeof(*r->ej));
	return r->ids && r->lat && r->eng && r->rd && r->wr && r->ej ? 0 : -ENOMEM;
}

/* Software counts from the run's start to now; null for an event that did not open. */
static json_t *software_json(struct runner *r)
{
	json_t *o = json_object();
	bool ok = r->sset && prb_set_read(r->sset, r->sread1) == 0;
	for (size_t i = 0; o && i < MW_RUN_N_SW; i++) {
		const struct prb_reading *a = ok ? &r->sread0[r->sidx[i]] : NULL;
		const struct prb_reading *b = ok ? &r->sread1[r->sidx[i]] : NULL;
		unsigned bad = PRB_READING_NOT_COUNTED | PRB_READING_UNAVAILABLE;
		bool have = ok && r->sidx[i] >= 0 && !((a->flags | b->flags) & bad);
		json_object_set_new(o, mw_run_sw_events[i].key,
				    have ? json_integer((json_int_t)(b->value - a->value))
					 : json_null());
	}
	return o;
}

/* One run: idle window, prefill, decode. Returns its record (complete or not). */
static json_t *run_once(struct runner *r, struct eng_session *sess, struct eng_sampler *samp,
			float *logits_copy, int vocab, const struct plan *pl, int index, bool warmup,
			int *rc_out)
{
	struct snap i0, i1;
	const float *logits = NULL;
	int rc = 0, pos = 0;
	bool complete = false;
	*rc_out = 0;

	/* Idle baseline: what the machine moves while memwall sleeps. */
	snap_take(r, &i0);
	mw_run_sleep_ms(r->p->idle_baseline_ms);
	snap_take(r, &i1);

	r->n_dec = 0;
	r->pre_engine = 0;
	r->dram_ok = r->energy_ok = true;
	r->phase = PH_PREFILL;
	if (r->sset && prb_set_read(r->sset, r->sread0))
		memset(r->sread0, 0, sizeof(*r->sread0) * (size_t)prb_set_count(r->sset));
	snap_take(r, &r->pre0);
	r->last = r->pre0;
	for (size_t i = 0; i < pl->n_prompt && !mw_run_stopped(); i++, pos++)
		if ((rc = eng_session_step(sess, pl->prompt[i], pos, &logits, NULL)))
			goto out;
	if (mw_run_stopped())
		goto out;
	struct snap pre1 = r->last;
	if (r->cur && r->dec0)
		memcpy(r->dec0, r->cur, sizeof(*r->cur));
	memset(r->ph_eng, 0, sizeof(r->ph_eng));
	memset(r->ph_rd, 0, sizeof(r->ph_rd));
	memset(r->ph_wr, 0, sizeof(r->ph_wr));
	for (int l = 0; r->pl_rd && l < 2 * r->n_layers; l++)
		r->pl_rd[l] = r->pl_wr[l] = 0;
	r->ph_dram_ok = true;
	r->phase = PH_DECODE;
	for (int i = 0; i < pl->decode && !mw_run_stopped(); i++, pos++) {
		memcpy(logits_copy, logits, (size_t)vocab * sizeof(float));
		r->fed = eng_sampler_sample(samp, logits_copy);
		if ((rc = eng_session_step(sess, r->fed, pos, &logits, NULL)))
			goto out;
	}
	complete = !mw_run_stopped() && r->n_dec == (size_t)pl->decode;
	json_t *sw = software_json(r);

	json_t *dec = window_json(r->n_dec, r->last.ns - pre1.ns, 0, &pre1, &r->last);
	uint64_t engsum = 0;
	for (size_t i = 0; i < r->n_dec; i++)
		engsum += r->eng[i];
	json_object_set_new(dec, "engine_bytes", json_integer((json_int_t)engsum));
	if (r->o->phases)
		json_object_set_new(dec, "phases", phases_json(r));
	if (!r->dram_ok) {
		json_object_set_new(dec, "dram_read_bytes", json_null());
		json_object_set_new(dec, "dram_write_bytes", json_null());
	}
	if (!r->energy_ok)
		json_object_set_new(dec, "energy_j", json_null());
	if (r->dram && r->dram_ok) {
		json_t *split = json_array();
		for (int k = 0; k < r->cur->n_instances; k++)
			json_array_append_new(split, json_pack(
				"{s:s, s:I, s:I}", "pmu", prb_dram_status(r->dram)->instances[k].pmu,
				"read_bytes", (json_int_t)(r->cur->inst[k].read.bytes - r->dec0->inst[k].read.bytes),
				"write_bytes", (json_int_t)(r->cur->inst[k].write.bytes - r->dec0->inst[k].write.bytes)));
		json_object_set_new(dec, "dram_instances", split);
	}
	json_t *ids = json_array(), *ej = json_array();
	for (size_t i = 0; i < r->n_dec; i++) {
		json_array_append_new(ids, json_integer(r->ids[i]));
		json_array_append_new(ej, mw_json_num(r->ej[i]));
	}
	json_t *toks = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "ids", ids, "latency_ns",
				 u64_array(r->lat, r->n_dec), "engine_bytes",
				 u64_array(r->eng, r->n_dec), "dram_read_bytes",
				 r->dram_ok ? u64_array(r->rd, r->n_dec) : json_null(),
				 "dram_write_bytes",
				 r->dram_ok ? u64_array(r->wr, r->n_dec) : json_null(), "energy_j",
				 r->energy_ok ? ej : json_null());
	if (!r->energy_ok)
		json_decref(ej);
	json_t *idle = window_json(0, i1.ns - i0.ns, 0, &i0, &i1);
	json_object_del(idle, "tokens");
	json_object_del(idle, "engine_bytes");
	json_object_set(idle, "window_ns", json_object_get(idle, "ns"));
	json_object_del(idle, "ns");
	return json_pack("{s:i, s:b, s:b, s:o, s:o, s:o, s:o, s:o, s:{}}", "index", index,
			 "warmup", warmup, "complete", complete, "idle", idle, "prefill",
			 window_json(pl->n_prompt, pre1.ns - r->pre0.ns, r->pre_engine, &r->pre0,
				     &pre1),
			 "decode", dec, "tokens", toks, "software", sw, "figures");
out:
	*rc_out = rc;
	if (!rc) {
		/* Interrupted in prefill: keep the run, with nothing decoded. */
		struct snap now = r->last;
		json_t *empty = json_pack("{s:[], s:[], s:[], s:n, s:n, s:n}", "ids", "latency_ns",
					  "engine_bytes", "dram_read_bytes", "dram_write_bytes",
					  "energy_j");
		json_t *idle0 = json_pack("{s:I}", "window_ns", (json_int_t)(i1.ns - i0.ns));
		return json_pack("{s:i, s:b, s:b, s:o, s:o, s:o, s:o, s:{}}", "index", index,
				 "warmup", warmup, "complete", 0, "idle", idle0, "prefill",
				 json_pack("{s:I, s:I, s:I}", "tokens", (json_int_t)pos, "ns",
					   (json_int_t)(now.ns - r->pre0.ns), "engine_bytes",
					   (json_int_t)r->pre_engine),
				 "decode", json_pack("{s:i, s:i, s:i}", "tokens", 0, "ns", 0,
						     "engine_bytes", 0),
				 "tokens", empty, "figures");
	}
	return NULL;
}

enum mw_run_status mw_runner_run(const struct mw_protocol *p, const struct mw_run_options *o,
				 json_t **out, struct mw_error *err)
{
	struct runner r = { .p = p, .o = o, .eidx = -1 };
	struct plan pl = { 0 };
	struct eng_model *model = NULL;
	struct eng_session *sess = NULL;
	struct eng_sampler *samp = NULL;
	struct eng_tokenizer *tok = NULL;
	struct eng_error eerr;
	json_t *doc = NULL, *runs = NULL, *machine = NULL, *pre = NULL;
	float *logits_copy = NULL;
	struct mw_run_signals sigs;
	enum mw_run_status status = MW_RUN_DONE;
	char drift_method[256] = "", drift_why[512] = "";
	double bw_before = NAN, bw_after = NAN;
	char started[32];
	int rc;

	*out = NULL;
	if (!strcmp(p->engine.kind, "external"))
		return mw_runner_external(p, o, out, err);
	eng_error_clear(&eerr);
	mw_run_signals_catch(&sigs);

	pl.runs = o->runs > 0 ? o->runs : p->runs;
	pl.warmups = p->warmup_runs;
	pl.decode = o->tokens > 0 ? o->tokens : p->decode_tokens;
	pl.threads = o->threads > 0 ? o->threads : p->engine.threads;

	if (strcmp(p->engine.kind, "builtin")) {
		mw_error_set(err, -ENOTSUP, p->source, "engine.kind",
			     "\"%s\" engines are not yet supported by memwall run (a later issue "
			     "adds them); use \"builtin\"", p->engine.kind);
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}

	/* The model: generated and cached when synthetic, else the protocol's file. */
	if (p->model.synth_shape) {
		if ((rc = mw_runner_synth_path(p, pl.model_path, sizeof(pl.model_path), o->log, err))) {
			status = rc == -EINVAL ? MW_RUN_BAD_INPUT : MW_RUN_ENVIRONMENT;
			goto out;
		}
	} else {
		snprintf(pl.model_path, sizeof(pl.model_path), "%s", p->model.path);
	}
	/* Refused before the model is hashed, mapped and populated: paging would distort every
	 * figure and can stall the machine. --force runs it anyway, and preflight records that.
	 * A file stat() cannot see is left to the hashing, which names the problem. */
	struct stat mst;
	uint64_t avail, need;
	if (!o->force && stat(pl.model_path, &mst) == 0 &&
	    mw_memory_fits((uint64_t)mst.st_size, &avail, &need)) {
		mw_error_set(err, -ENOMEM, "/proc/meminfo", "MemAvailable",
			     "%.0f MiB available, %s needs about %.0f MiB: close programs, pick a "
			     "smaller protocol, or give --force to run it anyway",
			     (double)avail / 1048576.0, pl.model_path, (double)need / 1048576.0);
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}
	mw_run_say(o, "hashing %s", pl.model_path);
	if ((rc = mw_sha256_file(pl.model_path, pl.sha256, &pl.file_bytes, err))) {
		status = MW_RUN_BAD_INPUT;
		goto out;
	}
	if (p->model.size_bytes >= 0 && (uint64_t)p->model.size_bytes != pl.file_bytes) {
		mw_error_set(err, -EINVAL, p->source, "model.size_bytes",
			     "%s has %llu bytes, the protocol pins %lld: an incomplete or different "
			     "download; fetch it again from %s", pl.model_path,
			     (unsigned long long)pl.file_bytes, (long long)p->model.size_bytes,
			     p->model.url ? p->model.url : "its source");
		status = MW_RUN_BAD_INPUT;
		goto out;
	}
	if (p->model.sha256 && strcmp(p->model.sha256, pl.sha256)) {
		mw_error_set(err, -EINVAL, p->source, "model.sha256",
			     "%s has sha256 %s, the protocol pins %s: a different or corrupted file",
			     pl.model_path, pl.sha256, p->model.sha256);
		status = MW_RUN_BAD_INPUT;
		goto out;
	}
	struct eng_model_options mopt = { .populate = true, .load = load_mode(p->engine.load) };
	if ((rc = eng_model_open(&model, pl.model_path, &mopt, &eerr))) {
		bool gguf = file_is_gguf(pl.model_path);
		if (gguf != !strcmp(p->model.format, "gguf")) {
			mw_error_set(err, -EINVAL, p->source, "model.format",
				     "says \"%s\" but %s is %s", p->model.format, pl.model_path,
				     gguf ? "a GGUF file" : "not a GGUF file");
			status = MW_RUN_BAD_INPUT;
		} else {
			mw_error_set(err, rc, pl.model_path, "model.path", "%s", eerr.text);
			status = MW_RUN_BAD_INPUT;
		}
		goto out;
	}
	const struct eng_model_info *mi = eng_model_info(model);
	if ((mi->format == ENG_FORMAT_GGUF) != !strcmp(p->model.format, "gguf")) {
		mw_error_set(err, -EINVAL, p->source, "model.format",
			     "says \"%s\" but %s is a %s file", p->model.format, pl.model_path,
			     mi->format == ENG_FORMAT_GGUF ? "GGUF" : "llama2.c");
		status = MW_RUN_BAD_INPUT;
		goto out;
	}

	/* The prompt: token ids as given, or the text through the tokenizer. */
	if (p->tokenizer.path) {
		char tsha[65];
		if ((rc = mw_sha256_file(p->tokenizer.path, tsha, NULL, err))) {
			status = MW_RUN_BAD_INPUT;
			goto out;
		}
		if (p->tokenizer.sha256 && strcmp(tsha, p->tokenizer.sha256)) {
			mw_error_set(err, -EINVAL, p->source, "tokenizer.sha256",
				     "%s has sha256 %s, the protocol pins %s", p->tokenizer.path, tsha,
				     p->tokenizer.sha256);
			status = MW_RUN_BAD_INPUT;
			goto out;
		}
		if ((rc = eng_tokenizer_open(&tok, p->tokenizer.path, mi->vocab_size, &eerr))) {
			mw_error_set(err, rc, p->tokenizer.path, "tokenizer.path", "%s", eerr.text);
			status = MW_RUN_BAD_INPUT;
			goto out;
		}
	}
	if (p->prompt) {
		int cap = (int)strlen(p->prompt) + 3, n = 0;
		pl.prompt = calloc((size_t)cap, sizeof(int));
		if (!pl.prompt || eng_tokenizer_encode(tok, p->prompt, true, false, pl.prompt, cap, &n)) {
			status = bad(err, -EINVAL, p->source, "prompt",
				     "the tokenizer cannot encode this prompt");
			goto out;
		}
		pl.n_prompt = (size_t)n;
	} else {
		pl.prompt = malloc(p->n_prompt_tokens * sizeof(int));
		if (!pl.prompt) {
			rc = -ENOMEM;
			status = MW_RUN_ENVIRONMENT;
			goto out;
		}
		memcpy(pl.prompt, p->prompt_tokens, p->n_prompt_tokens * sizeof(int));
		pl.n_prompt = p->n_prompt_tokens;
	}
	for (size_t i = 0; i < pl.n_prompt; i++)
		if (pl.prompt[i] >= mi->vocab_size) {
			mw_error_set(err, -EINVAL, p->source, "prompt_tokens",
				     "token %d is outside the model's vocabulary of %d", pl.prompt[i],
				     mi->vocab_size);
			status = MW_RUN_BAD_INPUT;
			goto out;
		}
	if ((int64_t)pl.n_prompt + pl.decode > mi->seq_len) {
		mw_error_set(err, -EINVAL, p->source, "decode_tokens",
			     "%zu prompt + %d decode tokens exceed the model's context of %d: "
			     "ask for fewer tokens", pl.n_prompt, pl.decode, mi->seq_len);
		status = MW_RUN_BAD_INPUT;
		goto out;
	}

	/* Pinning before the session starts its threads, which inherit the mask. */
	if (p->engine.n_cpus) {
		cpu_set_t set;
		CPU_ZERO(&set);
		for (size_t i = 0; i < p->engine.n_cpus; i++)
			CPU_SET(p->engine.cpus[i], &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			mw_error_set(err, -errno, p->source, "engine.cpus",
				     "cannot pin to these CPUs: %s", strerror(errno));
			status = MW_RUN_ENVIRONMENT;
			goto out;
		}
	}
	if (pl.threads <= 0)
		pl.threads = mw_cpus_allowed();

	/* Counters. A protocol that requires DRAM counters stops here without them. */
	counters_open(&r);
	if (mw_run_dram_check(p, o, r.dram != NULL, r.dram_reason, err)) {
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}
	if (!r.eset && p->counters.energy == MW_NEED_REQUIRED) {
		mw_error_set(err, -ENODEV, p->source, "counters.energy",
			     "energy counters are required by this protocol but unavailable: %s",
			     r.energy_reason);
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}
	r.cur = calloc(1, sizeof(*r.cur));
	r.dec0 = calloc(1, sizeof(*r.dec0));
	machine = mw_machine_describe(NULL);
	if (o->phases > 1) {
		r.n_layers = mi->n_layers;
		r.pl_rd = calloc(2 * (size_t)mi->n_layers, sizeof(*r.pl_rd));
		r.pl_wr = calloc(2 * (size_t)mi->n_layers, sizeof(*r.pl_wr));
	}
	if (!r.cur || !r.dec0 || !machine || grow(&r, (size_t)pl.decode) ||
	    (o->phases > 1 && (!r.pl_rd || !r.pl_wr))) {
		mw_error_set(err, -ENOMEM, "", "", "out of memory");
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}
	pre = preflight(&r, machine, mi->file_bytes, err, &status);
	if (status != MW_RUN_DONE)
		goto out;

	struct eng_hooks hooks = { .ctx = &r, .token = on_token,
				   .phase = o->phases ? on_phase : NULL };
	struct eng_session_options sopt = {
		.threads = pl.threads,
		.kernels = p->engine.kernels,
		.kv_type = ENG_KV_AUTO, /* GGUF: F16, as llama.cpp (the tensor table assumes it) */
		.ctx_len = (int)pl.n_prompt + pl.decode,
		.hooks = &hooks,
	};
	if ((rc = eng_session_new(&sess, model, &sopt, &eerr))) {
		mw_error_set(err, rc, pl.model_path, "engine", "cannot start a session: %s", eerr.text);
		status = MW_RUN_ENVIRONMENT;
		goto out;
	}
	struct eng_sampler_options samp_opt = { .temperature = (float)p->sampling.temperature,
						.topp = (float)p->sampling.topp,
						.seed = p->sampling.seed };
	logits_copy = malloc((size_t)mi->vocab_size * sizeof(float));
	if (!logits_copy || (rc = eng_sampler_new(&samp, mi->vocab_size, &samp_opt))) {
		mw_error_set(err, -EINVAL, p->source, "sampling", "the engine refused these settings");
		status = MW_RUN_BAD_INPUT;
		goto out;
	}

	mw_utc_now(started, sizeof(started), false);
	if (p->drift.probe_ms > 0 && drift_probe(&r, pl.threads, &bw_before, drift_method,
						 sizeof(drift_method), drift_why, sizeof(drift_why)))
		bw_before = NAN;
	if (!isnan(bw_before))
		mw_run_say(o, "bandwidth probe before the runs: %.1f GB/s", bw_before);

	runs = json_array();
	int total = pl.warmups + pl.runs;
	for (int i = 0; i < total && !mw_run_stopped(); i++) {
		bool warm = i < pl.warmups;
		/* The sampler restarts for each run so every run decodes the same tokens. */
		eng_sampler_free(samp);
		samp = NULL;
		if ((rc = eng_sampler_new(&samp, mi->vocab_size, &samp_opt)))
			break;
		json_t *run = run_once(&r, sess, samp, logits_copy, mi->vocab_size, &pl, i, warm, &rc);
		if (rc) {
			mw_error_set(err, rc, pl.model_path, "", "the engine failed in run %d: %s", i + 1,
				     strerror(-rc));
			status = MW_RUN_ENVIRONMENT;
			goto out;
		}
		const json_t *d = json_object_get(run, "decode");
		double secs = (double)json_integer_value(json_object_get(d, "ns")) * 1e-9;
		json_int_t nt = json_integer_value(json_object_get(d, "tokens"));
		mw_run_say(o, "run %d/%d%s: %lld tokens in %.3f s, %.2f tok/s%s", i + 1, total,
		    warm ? " (warm-up, not counted)" : "", (long long)nt, secs,
		    secs > 0 ? (double)nt / secs : 0.0,
		    json_is_true(json_object_get(run, "complete")) ? "" : " (interrupted)");
		json_array_append_new(runs, run);
		if (tok && i == 0)
			say_text(o, tok, &r, pl.prompt[pl.n_prompt - 1]);
	}
	if (!mw_run_stopped() && p->drift.probe_ms > 0 && !isnan(bw_before)) {
		if (drift_probe(&r, pl.threads, &bw_after, drift_method, sizeof(drift_method),
				drift_why, sizeof(drift_why)))
			bw_after = NAN;
		else
			mw_run_say(o, "bandwidth probe after the runs: %.1f GB/s", bw_after);
	} else if (mw_run_stopped()) {
		snprintf(drift_why, sizeof(drift_why), "interrupted before the closing bandwidth probe");
	}
	if (p->drift.probe_ms <= 0)
		snprintf(drift_why, sizeof(drift_why), "turned off by the protocol (drift.probe_ms is 0)");

	swap_check_after(&r, pre);

	/* The record. */
	char commit[128];
	bool dirty;
	mw_run_git_split(commit, sizeof(commit), &dirty);
	json_t *cmd = json_array();
	for (int i = 0; i < o->argc; i++)
		json_array_append_new(cmd, json_string(o->argv[i]));
	json_t *overrides = json_object();
	if (o->runs > 0)
		json_object_set_new(overrides, "runs", json_integer(o->runs));
	if (o->tokens > 0)
		json_object_set_new(overrides, "decode_tokens", json_integer(o->tokens));
	if (o->threads > 0)
		json_object_set_new(overrides, "threads", json_integer(o->threads));
	json_t *cpus = json_null();
	if (p->engine.n_cpus) {
		cpus = json_array();
		for (size_t i = 0; i < p->engine.n_cpus; i++)
			json_array_append_new(cpus, json_integer(p->engine.cpus[i]));
	}
	char name[256];
	if (p->model.synth_shape)
		snprintf(name, sizeof(name), "synthetic %s (seed %llu)", p->model.synth_shape,
			 (unsigned long long)p->model.synth_seed);
	else
		snprintf(name, sizeof(name), "%.200s", strrchr(pl.model_path, '/') ?
			 strrchr(pl.model_path, '/') + 1 : pl.model_path);
	bool drift_ok = !isnan(bw_before) && !isnan(bw_after);
	bool interrupted = mw_run_stopped() != 0;
	char why_incomplete[128];
	snprintf(why_incomplete, sizeof(why_incomplete), "interrupted by %s",
		 mw_run_stopped() == SIGTERM ? "SIGTERM" : "SIGINT (Ctrl-C)");
	doc = json_pack(
		"{s:s, s:s, s:b, s:o, s:s,"
		" s:{s:s, s:s, s:b, s:o, s:s, s:o},"
		" s:{s:s, s:s, s:s},"
		" s:{s:s, s:s, s:s, s:O, s:o},"
		" s:{s:s, s:s, s:s, s:I, s:s, s:b, s:o, s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i},"
		" s:I},"
		" s:{s:s, s:s, s:s, s:i, s:o},"
		" s:O, s:o,"
		" s:{s:o, s:o, s:o},"
		" s:{s:b, s:o, s:o, s:o, s:o, s:f},"
		" s:o, s:{}, s:{}}",
		"schema", MW_RESULT_SCHEMA_ID, "kind", "run", "complete", !interrupted,
		"incomplete_reason", interrupted ? json_string(why_incomplete) : json_null(),
		"created_utc", started,
		"memwall", "version", mw_version(), "git_commit", commit, "git_dirty", dirty, "command",
		cmd, "kernels", eng_session_kernels(sess), "environment", mw_environment_allowed(),
		"units", "MB", "10^6 bytes", "MiB", "2^20 bytes", "time",
		"ns unless the key names another unit",
		"protocol", "name", p->name, "source", p->source, "sha256", p->sha256, "document",
		p->doc, "overrides", overrides,
		"model", "format", p->model.format, "name", name, "path", pl.model_path, "file_bytes",
		(json_int_t)pl.file_bytes, "sha256", pl.sha256, "synthetic",
		mi->synthetic || p->model.synth_shape, "synth",
		p->model.synth_shape ? json_pack("{s:s, s:I}", "shape", p->model.synth_shape, "seed",
						 (json_int_t)p->model.synth_seed)
				     : json_null(),
		"arch", mi->arch ? mi->arch : "llama", "shape", "dim", mi->dim, "hidden_dim",
		mi->hidden_dim, "n_layers", mi->n_layers, "n_heads", mi->n_heads, "n_kv_heads",
		mi->n_kv_heads, "vocab_size", mi->vocab_size, "seq_len", mi->seq_len, "weight_bytes",
		(json_int_t)mi->weight_bytes,
		"engine", "kind", "builtin", "kernels", eng_session_kernels(sess), "load",
		p->engine.load, "threads",
		pl.threads, "cpus", cpus,
		"machine", machine, "preflight", pre,
		"counters", "dram", mw_run_dram_json(r.dram, r.dram_reason), "energy",
		energy_block(&r), "software", software_names(&r),
		"drift", "measured", drift_ok, "reason",
		drift_ok ? json_null() : json_string(drift_why[0] ? drift_why : "not measured"),
		"method", drift_method[0] ? json_string(drift_method) : json_null(), "before_gbps",
		mw_json_num(bw_before), "after_gbps", mw_json_num(bw_after), "tolerance_pct",
		p->drift.max_bandwidth_change_pct,
		"runs", runs, "summary", "acceptance");
	runs = NULL;
	pre = NULL;
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
	*out = doc;
	status = interrupted ? MW_RUN_INTERRUPTED : MW_RUN_DONE;
out:
	mw_run_signals_restore(&sigs);
	json_decref(runs);
	json_decref(machine);
	json_decref(pre);
	free(logits_copy);
	eng_sampler_free(samp);
	eng_session_free(sess);
	eng_tokenizer_close(tok);
	eng_model_close(model);
	prb_dram_close(r.dram);
	prb_set_free(r.eset);
	prb_system_close(r.sys);
	free(r.cur);
	free(r.dec0);
	free(r.ereadings);
	prb_set_free(r.sset);
	free(r.sread0);
	free(r.sread1);
	free(r.ids);
	free(r.lat);
	free(r.eng);
	free(r.rd);
	free(r.wr);
	free(r.ej);
	free(r.pl_rd);
	free(r.pl_wr);
	free(pl.prompt);
	return status;
}
