/* src/run/engine_builtin.c: memwall's own engine as a row of the run pipeline.
 *
 * Counters are read inside the engine's token hook, right after each step, so every decode
 * token gets its own latency, DRAM bytes and energy: the in-process view no outside tool has.
 * Windows follow one another without gaps: the decode window starts at the prefill's last
 * reading (the prompt runs in chunks, one token hook per chunk), and each token's latency runs
 * from the previous token's reading to its own (so it includes sampling the token it was
 * fed). Hence a window's totals are exactly the
 * sums of its tokens, which `memwall validate` checks. A figure that was not measured at some
 * token (a counter that did not run, a read that failed, a figure the backend does not
 * provide) makes that figure null for the whole run, with its state recorded. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "drift.h"
#include "engine.h"
#include "kernel_cache.h"
#include "machine.h"
#include "run_state.h"
#include "result.h"
#include "sha256.h"
#include "speculate.h"

/* A per-token byte figure over a run: values, and the first state that was not measured. */
struct series {
	uint64_t *v;
	enum prb_state state;
};

struct builtin {
	struct mw_run *run;
	struct eng_model *model;
	const struct eng_model_info *mi;
	double load_s;     /* eng_model_open's wall time */
	uint64_t first_ns; /* the first run's prefill: its prompt in, its first token's logits out */
	struct eng_tokenizer *tok;
	int *prompt;
	size_t n_prompt;
	struct eng_session *sess;
	/* the machine's kernel choice (kernel_cache.h), used when kuse.used */
	struct eng_kernel_choice kc;
	struct mw_kcache_use kuse;
	struct eng_hooks hooks; /* the session keeps a pointer to it */
	struct eng_sampler_options samp_opt;
	float *logits_copy;
	struct prb_set *sset; /* software events; NULL when none opened */
	int sidx[MW_N_SW];
	struct prb_reading *sread0, *sread1;

	/* The run in progress. */
	enum { PH_PREFILL, PH_DECODE } phase;
	struct mw_snap last, pre0, pre1; /* previous hook's reading, prefill start and end */
	struct prb_dram_sample delta;    /* scratch */
	uint64_t pre_engine;
	size_t n_dec, cap;     /* passes of the decode window (one token each when plain) */
	int *ids;              /* (decode * batch) the tokens decoded, pass by pass */
	size_t n_ids;
	int batch;             /* sequences (protocol batch) */
	bool multi;            /* passes yield several tokens: runs[].steps (batch, speculation) */
	uint32_t *step_tok, *step_drafted, *step_accepted; /* (decode) per pass */
	int *ctx, *pass;       /* speculation: the context, a verification's tokens */
	struct eng_sampler **samp; /* (batch) one sampler per sequence */
	uint64_t *lat, *eng;
	/* ReLU models and sparsity maps (issue 18 R1): the decode window's FFN activations
	 * (exact zeros of all), the down projections' all-zero column blocks, skipped bytes */
	bool sparsity;
	uint64_t act_zero, act_total, blk_zero, blk_total, skipped;
	/* engine_bytes split (decode.engine_split): weights, unique weights, KV read, written */
	uint64_t w_sum, wu_sum, kvr_sum, kvw_sum;
	struct series rd, wr, tot;
	double *ej;
	enum prb_state energy;

	/* --phases: decode bytes by engine phase, summed over the run's decode tokens. */
	struct mw_snap ph_begin;
	uint64_t ph_eng[ENG_PHASE_COUNT], ph_rd[ENG_PHASE_COUNT], ph_wr[ENG_PHASE_COUNT];
	bool ph_dram_ok;
	int n_layers;
	uint64_t *pl_rd, *pl_wr; /* (n_layers, 2): attention and FFN of each layer */

	struct mw_drift drift; /* the bandwidth probe, before and after the runs */
};

static void series_add(struct series *s, size_t i, struct prb_bytes b)
{
	if (b.state == PRB_MEASURED)
		s->v[i] = b.bytes;
	else if (s->state == PRB_MEASURED)
		s->state = b.state;
}

/* The engine's token hook: one reading per step. */
static void on_token(void *ctx, int pos, int token, const struct eng_step_bytes *bytes)
{
	struct builtin *b = ctx;
	struct mw_snap s;
	(void)pos;
	(void)token;
	mw_counters_read(&b->run->ctr, &s);
	uint64_t eng = bytes ? bytes->weights + bytes->kv_read + bytes->kv_write : 0;
	if (b->phase == PH_PREFILL) {
		b->pre_engine += eng;
	} else if (b->n_dec < b->cap) {
		size_t i = b->n_dec++;
		b->lat[i] = s.ns - b->last.ns;
		b->eng[i] = eng;
		if (s.dram_open) {
			mw_snap_dram_delta(&s, &b->last, &b->delta);
			series_add(&b->rd, i, b->delta.read);
			series_add(&b->wr, i, b->delta.write);
			series_add(&b->tot, i, b->delta.total);
		}
		if (s.energy == PRB_MEASURED && b->last.energy == PRB_MEASURED)
			b->ej[i] = s.joules - b->last.joules;
		else if (b->energy == PRB_MEASURED)
			b->energy = s.energy != PRB_MEASURED ? s.energy : b->last.energy;
		for (int k = 0; bytes && k < ENG_PHASE_COUNT; k++)
			b->ph_eng[k] += bytes->by_phase[k];
		if (bytes) {
			b->w_sum += bytes->weights;
			b->wu_sum += bytes->weights_unique;
			b->kvr_sum += bytes->kv_read;
			b->kvw_sum += bytes->kv_write;
			b->act_zero += bytes->act_zero;
			b->act_total += bytes->act_total;
			b->blk_zero += bytes->down_blocks_zero;
			b->blk_total += bytes->down_blocks;
			b->skipped += bytes->weights_skipped;
		}
	}
	b->last = s;
}

/* The engine's phase hook (--phases): a reading at every phase edge of a decode step; the
 * engine holds its other threads at the edge meanwhile, so each delta is one phase's. */
static void on_phase(void *ctx, enum eng_phase phase, int layer, bool begin)
{
	struct builtin *b = ctx;
	struct mw_snap s;
	if (b->phase != PH_DECODE || (unsigned)phase >= ENG_PHASE_COUNT)
		return;
	mw_counters_read(&b->run->ctr, &s);
	if (!begin && s.dram_open) {
		mw_snap_dram_delta(&s, &b->ph_begin, &b->delta);
		b->ph_dram_ok &= b->delta.read.state == PRB_MEASURED &&
				 b->delta.write.state == PRB_MEASURED;
		uint64_t rd = b->delta.read.bytes, wr = b->delta.write.bytes;
		b->ph_rd[phase] += rd;
		b->ph_wr[phase] += wr;
		if (b->pl_rd && layer >= 0 && layer < b->n_layers && phase != ENG_PHASE_CLASSIFIER) {
			b->pl_rd[2 * layer + (int)phase] += rd;
			b->pl_wr[2 * layer + (int)phase] += wr;
		}
	} else if (!begin) {
		b->ph_dram_ok = false;
	}
	b->ph_begin = s;
}

static json_t *opt_u64(bool have, uint64_t v)
{
	return have ? json_integer((json_int_t)v) : json_null();
}

static json_t *phases_json(const struct builtin *b)
{
	static const char *const names[ENG_PHASE_COUNT] = {
		[ENG_PHASE_ATTENTION] = "attention", [ENG_PHASE_FFN] = "ffn",
		[ENG_PHASE_CLASSIFIER] = "classifier",
	};
	bool dram = b->run->ctr.dram && b->ph_dram_ok;
	json_t *o = json_object();
	for (int k = 0; o && k < ENG_PHASE_COUNT; k++)
		json_object_set_new(o, names[k], json_pack(
			"{s:I, s:o, s:o}", "engine_bytes", (json_int_t)b->ph_eng[k],
			"dram_read_bytes", opt_u64(dram, b->ph_rd[k]), "dram_write_bytes",
			opt_u64(dram, b->ph_wr[k])));
	json_t *layers = b->pl_rd ? json_array() : NULL;
	for (int l = 0; layers && l < b->n_layers; l++)
		json_array_append_new(layers, json_pack(
			"{s:i, s:o, s:o, s:o, s:o}", "layer", l, "attention_dram_read_bytes",
			opt_u64(dram, b->pl_rd[2 * l]), "attention_dram_write_bytes",
			opt_u64(dram, b->pl_wr[2 * l]), "ffn_dram_read_bytes",
			opt_u64(dram, b->pl_rd[2 * l + 1]), "ffn_dram_write_bytes",
			opt_u64(dram, b->pl_wr[2 * l + 1])));
	if (layers)
		json_object_set_new(o, "layers", layers);
	return o;
}

/* ---- software counters ---------------------------------------------------------------------- */

/* Opened before the session starts its threads, so inherit counts them too. */
static void software_open(struct builtin *b)
{
	int n_ok = 0;
	if (prb_set_new(&b->sset, b->run->ctr.sys, NULL)) {
		b->sset = NULL;
		return;
	}
	for (size_t i = 0; i < MW_N_SW; i++) {
		struct prb_error e;
		prb_error_clear(&e);
		n_ok += prb_set_add(b->sset, mw_sw_events[i].event, &b->sidx[i], &e) == 0;
	}
	size_t n = (size_t)prb_set_count(b->sset);
	b->sread0 = calloc(n ? n : 1, sizeof(*b->sread0));
	b->sread1 = calloc(n ? n : 1, sizeof(*b->sread1));
	if (!n_ok || !b->sread0 || !b->sread1 || prb_set_enable(b->sset)) {
		prb_set_free(b->sset);
		b->sset = NULL;
	}
}

static json_t *software_names(const struct builtin *b)
{
	json_t *a = json_array();
	for (size_t i = 0; b->sset && a && i < MW_N_SW; i++)
		if (b->sidx[i] >= 0 && !prb_set_reason(b->sset, b->sidx[i])[0])
			json_array_append_new(a, json_string(mw_sw_events[i].event));
	return a;
}

/* Software counts from the run's start to now; null for an event that did not count. */
static json_t *software_json(struct builtin *b)
{
	json_t *o = json_object();
	bool ok = b->sset && prb_set_read(b->sset, b->sread1) == 0;
	for (size_t i = 0; o && i < MW_N_SW; i++) {
		const struct prb_reading *x = ok ? &b->sread0[b->sidx[i]] : NULL;
		const struct prb_reading *y = ok ? &b->sread1[b->sidx[i]] : NULL;
		unsigned bad = PRB_READING_NOT_COUNTED | PRB_READING_UNAVAILABLE;
		bool have = ok && b->sidx[i] >= 0 && !((x->flags | y->flags) & bad);
		json_object_set_new(o, mw_sw_events[i].key, opt_u64(have, have ? y->value - x->value : 0));
	}
	return o;
}

/* ---- preflight ---------------------------------------------------------------------------- */

/* Preflight warnings about the environment, recorded and printed; the run is refused when
 * the model does not fit in the memory available, unless --force. */
static enum mw_run_status preflight(struct builtin *b, struct mw_error *err)
{
	const struct mw_run_options *o = b->run->o;
	json_t *w = json_array();
	uint64_t avail = 0, need = 0, st = 0, sf = 0;
	bool have_avail = mw_meminfo(NULL, "MemAvailable", &avail) == 0;
	uint64_t kv = eng_kv_cache_bytes(b->mi, ENG_KV_AUTO, (int)b->n_prompt + b->run->plan.decode,
					 b->batch); /* the model and its cache (issue 28) */
	bool short_mem = mw_memory_fits(b->mi->file_bytes + kv, &avail, &need) != 0;
	if (short_mem && !o->force) {
		json_decref(w);
		mw_error_set(err, -ENOMEM, "/proc/meminfo", "MemAvailable",
			     "%.0f MiB available, the model and its KV cache need about %.0f MiB: "
			     "close programs, pick a smaller protocol, or give --force to run it "
			     "anyway",
			     (double)avail / 1048576.0, (double)need / 1048576.0);
		return MW_RUN_ENVIRONMENT;
	}
	if (short_mem)
		mw_warn(w, "%.0f MiB available, the model needs about %.0f MiB: run anyway (--force); "
		     "paging can distort every figure", (double)avail / 1048576.0,
		     (double)need / 1048576.0);
	bool have_swap = mw_meminfo(NULL, "SwapTotal", &st) == 0 &&
			 mw_meminfo(NULL, "SwapFree", &sf) == 0;
	if (have_swap && st > sf)
		mw_warn(w, "%.0f MiB of swap is in use: paging can distort latency and DRAM traffic",
		     (double)(st - sf) / 1048576.0);
	double busy = mw_machine_warnings(w, b->run->machine);
	size_t i;
	json_t *x;
	json_array_foreach(w, i, x)
		mw_run_say(o, "warning: %s", json_string_value(x));
	b->run->preflight = json_pack("{s:o, s:o, s:o, s:o}", "warnings", w, "mem_available_bytes",
				      opt_u64(have_avail, avail), "swap_used_bytes",
				      opt_u64(have_swap, st - sf), "busy_pct", mw_json_num(busy));
	return MW_RUN_DONE;
}

/* Swap that grew during the runs means pages went out under the measurement: one more
 * warning in preflight's block, printed too. */
static void swap_check_after(struct builtin *b)
{
	json_t *pre = b->run->preflight;
	const json_t *before = json_object_get(pre, "swap_used_bytes");
	uint64_t st = 0, sf = 0;
	if (!json_is_integer(before) || mw_meminfo(NULL, "SwapTotal", &st) ||
	    mw_meminfo(NULL, "SwapFree", &sf) || st <= sf ||
	    (json_int_t)(st - sf) <= json_integer_value(before))
		return;
	json_t *w = json_object_get(pre, "warnings");
	mw_warn(w, "swap in use grew by %.0f MiB during the runs: pages were written out while "
	     "they were measured",
	     (double)((json_int_t)(st - sf) - json_integer_value(before)) / 1048576.0);
	mw_run_say(b->run->o, "warning: %s",
		   json_string_value(json_array_get(w, json_array_size(w) - 1)));
}

/* ---- prepare: the model, the prompt, the CPUs ----------------------------------------------- */

static enum mw_run_status open_model(struct builtin *b, struct mw_error *err)
{
	const struct mw_plan *pl = &b->run->plan;
	struct eng_error eerr;
	int rc;
	eng_error_clear(&eerr);
	struct eng_model_options mopt = { .populate = true, .load = pl->p->engine.load };
	double t0 = mw_now_s();
	if ((rc = eng_model_open(&b->model, pl->model_path, &mopt, &eerr))) {
		mw_error_set(err, rc, pl->model_path, "model.path", "%s", eerr.text);
		return MW_RUN_BAD_INPUT;
	}
	b->load_s = mw_now_s() - t0;
	b->mi = eng_model_info(b->model);
	b->sparsity |= b->mi->ffn_act != ENG_ACT_SILU;
	return MW_RUN_DONE;
}

/* The prompt: token ids as given, or the text through the tokenizer. */
static enum mw_run_status open_prompt(struct builtin *b, struct mw_error *err)
{
	const struct mw_protocol *p = b->run->p;
	struct eng_error eerr;
	char tsha[65];
	int rc;
	eng_error_clear(&eerr);
	if (p->tokenizer.path) {
		if (mw_sha256_file(p->tokenizer.path, tsha, NULL, err))
			return MW_RUN_BAD_INPUT;
		if (p->tokenizer.sha256 && strcmp(tsha, p->tokenizer.sha256)) {
			mw_error_set(err, -EINVAL, p->source, "tokenizer.sha256",
				     "%s has sha256 %s, the protocol pins %s", p->tokenizer.path,
				     tsha, p->tokenizer.sha256);
			return MW_RUN_BAD_INPUT;
		}
		if ((rc = eng_tokenizer_open_model(&b->tok, b->model, p->tokenizer.path, &eerr))) {
			mw_error_set(err, rc, p->tokenizer.path, "tokenizer.path", "%s", eerr.text);
			return MW_RUN_BAD_INPUT;
		}
	}
	if (p->engine.context) {
		if (!(b->prompt = malloc((size_t)p->engine.context * sizeof(int)))) {
			mw_error_set(err, -ENOMEM, "", "", "out of memory");
			return MW_RUN_ENVIRONMENT;
		}
		mw_context_tokens(b->prompt, p->engine.context,
				  b->tok && eng_tokenizer_bos(b->tok) >= 0 ? eng_tokenizer_bos(b->tok)
									   : ENG_TOKEN_BOS,
				  b->mi->vocab_size, p->sampling.seed);
		b->n_prompt = (size_t)p->engine.context;
	} else if (p->prompt) {
		int cap = (int)strlen(p->prompt) + 3, n = 0;
		b->prompt = calloc((size_t)cap, sizeof(int));
		if (!b->prompt ||
		    eng_tokenizer_encode(b->tok, p->prompt, true, false, b->prompt, cap, &n)) {
			mw_error_set(err, -EINVAL, p->source, "prompt",
				     "the tokenizer cannot encode this prompt");
			return MW_RUN_BAD_INPUT;
		}
		b->n_prompt = (size_t)n;
	} else {
		b->prompt = malloc(p->n_prompt_tokens * sizeof(int));
		if (!b->prompt) {
			mw_error_set(err, -ENOMEM, "", "", "out of memory");
			return MW_RUN_ENVIRONMENT;
		}
		memcpy(b->prompt, p->prompt_tokens, p->n_prompt_tokens * sizeof(int));
		b->n_prompt = p->n_prompt_tokens;
	}
	return MW_RUN_DONE;
}

static enum mw_run_status check_prompt(const struct builtin *b, struct mw_error *err)
{
	const struct mw_protocol *p = b->run->p;
	int decode = b->run->plan.decode;
	for (size_t i = 0; i < b->n_prompt; i++)
		if (b->prompt[i] >= b->mi->vocab_size) {
			mw_error_set(err, -EINVAL, p->source, "prompt_tokens",
				     "token %d is outside the model's vocabulary of %d", b->prompt[i],
				     b->mi->vocab_size);
			return MW_RUN_BAD_INPUT;
		}
	/* engine.context may go past the trained context (RoPE extends): it measures bytes */
	if ((int64_t)b->n_prompt + decode <= b->mi->seq_len || p->engine.context)
		return MW_RUN_DONE;
	mw_error_set(err, -EINVAL, p->source, "decode_tokens",
		     "%zu prompt + %d decode tokens exceed the model's context of %d: ask for "
		     "fewer tokens", b->n_prompt, decode, b->mi->seq_len);
	return MW_RUN_BAD_INPUT;
}

static int alloc_buffers(struct builtin *b)
{
	size_t n = (size_t)b->run->plan.decode, nb = (size_t)b->batch;
	int k = b->run->p->speculative.draft_tokens;
	b->cap = n;
	b->ids = calloc(n * nb, sizeof(*b->ids));
	b->step_tok = calloc(n, sizeof(*b->step_tok));
	b->step_drafted = calloc(n, sizeof(*b->step_drafted));
	b->step_accepted = calloc(n, sizeof(*b->step_accepted));
	b->ctx = calloc(b->n_prompt + n + (size_t)k + 2, sizeof(*b->ctx));
	b->pass = calloc((size_t)k + 1, sizeof(*b->pass));
	b->samp = calloc(nb, sizeof(*b->samp));
	b->lat = calloc(n, sizeof(*b->lat));
	b->eng = calloc(n, sizeof(*b->eng));
	b->rd.v = calloc(n, sizeof(uint64_t));
	b->wr.v = calloc(n, sizeof(uint64_t));
	b->tot.v = calloc(n, sizeof(uint64_t));
	b->ej = calloc(n, sizeof(*b->ej));
	b->logits_copy = malloc((size_t)b->mi->vocab_size * nb * sizeof(float));
	if (b->run->o->phases > 1) {
		b->n_layers = b->mi->n_layers;
		b->pl_rd = calloc(2 * (size_t)b->n_layers, sizeof(*b->pl_rd));
		b->pl_wr = calloc(2 * (size_t)b->n_layers, sizeof(*b->pl_wr));
		if (!b->pl_rd || !b->pl_wr)
			return -ENOMEM;
	}
	return b->ids && b->lat && b->eng && b->rd.v && b->wr.v && b->tot.v && b->ej &&
	       b->logits_copy && b->step_tok && b->step_drafted && b->step_accepted && b->ctx &&
	       b->pass && b->samp ? 0 : -ENOMEM;
}

static enum mw_run_status builtin_prepare(struct mw_run *run, struct mw_error *err)
{
	struct builtin *b = calloc(1, sizeof(*b));
	enum mw_run_status st;
	run->state = b;
	if (!b) {
		mw_error_set(err, -ENOMEM, "", "", "out of memory");
		return MW_RUN_ENVIRONMENT;
	}
	b->run = run;
	b->batch = run->p->batch > 0 ? run->p->batch : 1;
	b->multi = b->batch > 1 || run->p->speculative.on;
	/* Only where zeros are the point, so a SiLU model's record is as it always was. */
	b->sparsity = run->p->engine.sparsity_map;
	if ((st = open_model(b, err)) != MW_RUN_DONE || (st = open_prompt(b, err)) != MW_RUN_DONE ||
	    (st = check_prompt(b, err)) != MW_RUN_DONE)
		return st;
	/* Pinning before the session starts its threads, which inherit the mask. */
	if (run->plan.pinned && sched_setaffinity(0, sizeof(run->plan.cpus), &run->plan.cpus)) {
		mw_error_set(err, -errno, run->p->source, "engine.cpus",
			     "cannot pin to these CPUs: %s", strerror(errno));
		return MW_RUN_ENVIRONMENT;
	}
	if (alloc_buffers(b)) {
		mw_error_set(err, -ENOMEM, "", "", "out of memory");
		return MW_RUN_ENVIRONMENT;
	}
	return MW_RUN_DONE;
}

/* ---- one run -------------------------------------------------------------------------------- */

static void run_reset(struct builtin *b)
{
	b->n_dec = 0;
	b->n_ids = 0;
	b->pre_engine = 0;
	b->act_zero = b->act_total = b->blk_zero = b->blk_total = b->skipped = 0;
	b->w_sum = b->wu_sum = b->kvr_sum = b->kvw_sum = 0;
	b->rd.state = b->wr.state = b->tot.state = PRB_MEASURED;
	b->energy = PRB_MEASURED;
	memset(b->ph_eng, 0, sizeof(b->ph_eng));
	memset(b->ph_rd, 0, sizeof(b->ph_rd));
	memset(b->ph_wr, 0, sizeof(b->ph_wr));
	for (int l = 0; b->pl_rd && l < 2 * b->n_layers; l++)
		b->pl_rd[l] = b->pl_wr[l] = 0;
	b->ph_dram_ok = true;
	if (b->sset && prb_set_read(b->sset, b->sread0))
		memset(b->sread0, 0, sizeof(*b->sread0) * (size_t)prb_set_count(b->sset));
}

/* A window between two readings: its length, tokens, engine bytes, DRAM and energy. */
static json_t *window_json(uint64_t tokens, uint64_t engine, const struct mw_snap *x,
			   const struct mw_snap *y, struct prb_dram_sample *scratch)
{
	bool energy = x->energy == PRB_MEASURED && y->energy == PRB_MEASURED;
	json_t *w = json_pack("{s:I, s:I, s:I, s:o}", "tokens", (json_int_t)tokens, "ns",
			      (json_int_t)(y->ns - x->ns), "engine_bytes", (json_int_t)engine,
			      "energy_j", energy ? mw_json_num(y->joules - x->joules) : json_null());
	if (x->dram_open && y->dram_open)
		prb_dram_sample_delta(&y->dram, &x->dram, scratch);
	if (w)
		mw_window_set_dram(w, x->dram_open && y->dram_open, scratch);
	return w;
}

static json_t *u64_array(const uint64_t *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_integer((json_int_t)v[i]));
	return a;
}

static json_t *series_json(const struct series *s, bool dram_open, size_t n)
{
	return dram_open && s->state == PRB_MEASURED ? u64_array(s->v, n) : json_null();
}

/* Per controller instance: the decode window's bytes, each figure with its state, and the
 * instance's multiplexing share of the window. */
static json_t *instances_json(struct builtin *b)
{
	prb_dram_sample_delta(&b->last.dram, &b->pre1.dram, &b->delta);
	return mw_dram_instances_json(prb_dram_status(b->run->ctr.dram), &b->delta);
}

/* The decode window: totals over the tokens, with every figure's state over the run. */
static json_t *decode_json(struct builtin *b)
{
	uint64_t engsum = 0;
	for (size_t i = 0; i < b->n_dec; i++)
		engsum += b->eng[i];
	json_t *dec = window_json(b->multi ? b->n_ids : b->n_dec, engsum, &b->pre1, &b->last,
				  &b->delta);
	if (dec && b->multi)
		json_object_set_new(dec, "steps", json_integer((json_int_t)b->n_dec));
	if (dec)
		json_object_set_new(dec, "engine_split", json_pack(
			"{s:I, s:I, s:I, s:I}", "weights", (json_int_t)b->w_sum, "weights_unique",
			(json_int_t)b->wu_sum, "kv_read", (json_int_t)b->kvr_sum, "kv_write",
			(json_int_t)b->kvw_sum));
	bool dram = b->run->ctr.dram != NULL;
	if (dram) {
		/* A figure not measured at one token is not measured for the run. */
		const struct series *s[3] = { &b->rd, &b->wr, &b->tot };
		static const char *const key[3] = { "dram_read_bytes", "dram_write_bytes",
						    "dram_total_bytes" };
		static const char *const fig[3] = { "read", "write", "total" };
		json_t *state = json_object_get(dec, "dram_state");
		for (int k = 0; k < 3; k++)
			if (s[k]->state != PRB_MEASURED) {
				json_object_set_new(dec, key[k], json_null());
				json_object_set_new(state, fig[k],
						    json_string(prb_state_name(s[k]->state)));
			}
		json_object_set_new(dec, "dram_instances", instances_json(b));
	}
	if (b->energy != PRB_MEASURED)
		json_object_set_new(dec, "energy_j", json_null());
	if (b->run->o->phases)
		json_object_set_new(dec, "phases", phases_json(b));
	if (b->sparsity)
		json_object_set_new(dec, "sparsity", json_pack(
			"{s:I, s:I, s:I, s:I, s:I}", "act_zero", (json_int_t)b->act_zero,
			"act_total", (json_int_t)b->act_total, "down_blocks_zero",
			(json_int_t)b->blk_zero, "down_blocks", (json_int_t)b->blk_total,
			"weights_skipped_bytes", (json_int_t)b->skipped));
	return dec;
}

static json_t *u32_array(const uint32_t *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_integer((json_int_t)v[i]));
	return a;
}

/* The per-pass figures (latency, engine and DRAM bytes, energy): under runs[].tokens with
 * one token per pass, else under runs[].steps with the tokens each pass yielded (and, for
 * speculation, its draft and what was accepted of it), tokens keeping only the ids. */
static json_t *tokens_json(const struct builtin *b, json_t *run)
{
	bool dram = b->run->ctr.dram != NULL;
	json_t *ids = json_array(), *ej = json_array();
	for (size_t i = 0; i < b->n_ids; i++)
		json_array_append_new(ids, json_integer(b->ids[i]));
	for (size_t i = 0; i < b->n_dec; i++)
		json_array_append_new(ej, mw_json_num(b->ej[i]));
	if (b->energy != PRB_MEASURED) {
		json_decref(ej);
		ej = json_null();
	}
	if (b->multi) {
		json_t *st = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "tokens",
				       u32_array(b->step_tok, b->n_dec), "latency_ns",
				       u64_array(b->lat, b->n_dec), "engine_bytes",
				       u64_array(b->eng, b->n_dec), "dram_read_bytes",
				       series_json(&b->rd, dram, b->n_dec), "dram_write_bytes",
				       series_json(&b->wr, dram, b->n_dec), "dram_total_bytes",
				       series_json(&b->tot, dram, b->n_dec), "energy_j", ej);
		if (st && b->run->p->speculative.on) {
			json_object_set_new(st, "drafted", u32_array(b->step_drafted, b->n_dec));
			json_object_set_new(st, "accepted", u32_array(b->step_accepted, b->n_dec));
		}
		json_object_set_new(run, "steps", st);
		return json_pack("{s:o}", "ids", ids);
	}
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "ids", ids, "latency_ns",
			 u64_array(b->lat, b->n_dec), "engine_bytes", u64_array(b->eng, b->n_dec),
			 "dram_read_bytes", series_json(&b->rd, dram, b->n_dec), "dram_write_bytes",
			 series_json(&b->wr, dram, b->n_dec), "dram_total_bytes",
			 series_json(&b->tot, dram, b->n_dec), "energy_j", ej);
}

/* A run stopped in prefill: kept, with nothing decoded. */
static json_t *stopped_run(struct builtin *b, int index, bool warmup, const json_t *idle, int pos)
{
	json_t *empty = json_pack("{s:[], s:[], s:[], s:n, s:n, s:n, s:n}", "ids", "latency_ns",
				  "engine_bytes", "dram_read_bytes", "dram_write_bytes",
				  "dram_total_bytes", "energy_j");
	return json_pack("{s:i, s:b, s:b, s:{s:O}, s:o, s:o, s:o, s:{}}", "index", index,
			 "warmup", warmup, "complete", 0, "idle", "window_ns",
			 json_object_get(idle, "window_ns"), "prefill",
			 json_pack("{s:I, s:I, s:I}", "tokens", (json_int_t)pos, "ns",
				   (json_int_t)(b->last.ns - b->pre0.ns), "engine_bytes",
				   (json_int_t)b->pre_engine),
			 "decode", json_pack("{s:i, s:i, s:i}", "tokens", 0, "ns", 0, "engine_bytes", 0),
			 "tokens", empty, "figures");
}

/* The prompt into every sequence's region of the cache, each in the session's chunks (the
 * token hook comes once per chunk, so pre_engine sums the prompts' engine bytes); each
 * sequence's last logits into its row of logits_copy. */
static int prefill_all(struct builtin *b)
{
	size_t vocab = (size_t)b->mi->vocab_size;
	int rc = 0;
	for (int q = 0; q < b->batch && !rc && !mw_run_stopped(); q++) {
		const float *logits; /* NULL when stopped (control.h) */
		rc = mw_run_prefill(b->sess, q, b->prompt, (int)b->n_prompt, &logits);
		if (!rc && logits)
			memcpy(b->logits_copy + (size_t)q * vocab, logits, vocab * sizeof(float));
	}
	return rc;
}

/* One token per pass: sample, step. */
static int decode_plain(struct builtin *b, int pos)
{
	size_t vocab = (size_t)b->mi->vocab_size;
	int rc = 0;
	for (int i = 0; i < b->run->plan.decode && !mw_run_stopped() && !rc; i++, pos++) {
		const float *logits;
		int t = eng_sampler_sample(b->samp[0], b->logits_copy);
		b->ids[b->n_ids++] = t;
		if (!(rc = eng_session_step(b->sess, t, pos, &logits, NULL)))
			memcpy(b->logits_copy, logits, vocab * sizeof(float));
	}
	return rc;
}

/* A batch: each pass one token of every sequence (eng_session_step_seqs), sequence q sampled
 * by its own sampler from its own row of logits. */
static int decode_batch(struct builtin *b, int pos)
{
	size_t vocab = (size_t)b->mi->vocab_size, n = (size_t)b->batch;
	int rc = 0, tok[64], at[64]; /* the protocol schema caps batch at 64 */
	for (int i = 0; i < b->run->plan.decode && !mw_run_stopped() && !rc; i++, pos++) {
		const float *logits;
		for (size_t q = 0; q < n; q++) {
			tok[q] = eng_sampler_sample(b->samp[q], b->logits_copy + q * vocab);
			at[q] = pos;
			b->ids[b->n_ids++] = tok[q];
		}
		rc = eng_session_step_seqs(b->sess, (int)n, NULL, tok, at, &logits, NULL);
		if (!rc) {
			memcpy(b->logits_copy, logits, n * vocab * sizeof(float));
			if (b->n_dec)
				b->step_tok[b->n_dec - 1] = (uint32_t)n;
		}
	}
	return rc;
}

/* Prompt-lookup speculation (src/run/speculate.c): each pass runs the context's last token
 * and a draft, and decodes that token and the accepted part of the draft, the tokens plain
 * decoding would feed; the model's next token waits for the next pass, as plain decoding's
 * sampled token does. So the ids equal plain greedy decoding's. */
static int decode_spec(struct builtin *b)
{
	const struct mw_protocol *p = b->run->p;
	int vocab = b->mi->vocab_size, decode = b->run->plan.decode, fed = 0, rc = 0;
	int ng_max = p->speculative.ngram ? p->speculative.ngram : 3;
	int ng_min = p->speculative.ngram ? p->speculative.ngram : 2, n_ctx = (int)b->n_prompt;
	memcpy(b->ctx, b->prompt, b->n_prompt * sizeof(int));
	b->ctx[n_ctx++] = mw_spec_argmax(b->logits_copy, vocab);
	while (fed < decode && !mw_run_stopped() && !rc) {
		int room = decode - fed - 1, n0 = n_ctx;
		int k = p->speculative.draft_tokens < room ? p->speculative.draft_tokens : room;
		struct mw_spec_pass ps;
		if ((rc = mw_spec_step(b->sess, vocab, b->ctx, &n_ctx, k, ng_min, ng_max, b->pass,
				       &ps)))
			break;
		for (int t = 0; t <= ps.accepted; t++)
			b->ids[b->n_ids++] = b->ctx[n0 - 1 + t];
		fed += ps.accepted + 1;
		if (b->n_dec) {
			b->step_tok[b->n_dec - 1] = (uint32_t)ps.accepted + 1;
			b->step_drafted[b->n_dec - 1] = (uint32_t)ps.drafted;
			b->step_accepted[b->n_dec - 1] = (uint32_t)ps.accepted;
		}
	}
	return rc;
}

/* One run: idle window, prefill, decode. Returns its record (complete or not); NULL with
 * *rc set when the engine failed. */
static json_t *run_once(struct builtin *b, int index, bool warmup, int *rc)
{
	struct mw_snap i0, i1;
	int pos = 0;

	/* Idle baseline: what the machine moves while memwall sleeps. */
	mw_counters_read(&b->run->ctr, &i0);
	mw_run_sleep_ms(b->run->p->idle_baseline_ms);
	mw_counters_read(&b->run->ctr, &i1);
	json_t *idle = window_json(0, 0, &i0, &i1, &b->delta);
	json_object_set(idle, "window_ns", json_object_get(idle, "ns"));
	json_object_del(idle, "ns");
	json_object_del(idle, "tokens");
	json_object_del(idle, "engine_bytes");

	run_reset(b);
	b->phase = PH_PREFILL;
	mw_counters_read(&b->run->ctr, &b->pre0);
	b->last = b->pre0;
	*rc = 0;
	if (!mw_run_stopped()) {
		*rc = prefill_all(b);
		pos = *rc || mw_run_stopped() ? 0 : (int)b->n_prompt;
	}
	if (*rc || mw_run_stopped()) {
		json_t *r = *rc ? NULL : stopped_run(b, index, warmup, idle, pos);
		json_decref(idle);
		return r;
	}
	b->pre1 = b->last;
	b->phase = PH_DECODE;
	*rc = b->run->p->speculative.on ? decode_spec(b)
	      : b->batch > 1		 ? decode_batch(b, pos)
					 : decode_plain(b, pos);
	if (*rc) {
		json_decref(idle);
		return NULL;
	}
	bool complete = !mw_run_stopped() &&
			b->n_ids == (size_t)b->run->plan.decode * (size_t)b->batch;
	json_t *r = json_pack("{s:i, s:b, s:b, s:o, s:o, s:o, s:o, s:{}}", "index", index,
			      "warmup", warmup, "complete", complete, "idle", idle, "prefill",
			      window_json(b->n_prompt * (size_t)b->batch, b->pre_engine, &b->pre0,
					  &b->pre1, &b->delta),
			      "decode", decode_json(b), "software", software_json(b), "figures");
	if (r)
		json_object_set_new(r, "tokens", tokens_json(b, r));
	return r;
}

/* ---- the runs ------------------------------------------------------------------------------- */

/* With a tokenizer, the first run's text goes to the log: a glance tells real weights (a
 * story) from broken ones (noise). It is not recorded: the token ids are. */
static void say_text(const struct builtin *b)
{
	char text[241];
	size_t len = 0;
	int prev = b->prompt[b->n_prompt - 1];
	/* A batch's ids go pass by pass: sequence 0's are every batch-th. */
	for (size_t i = 0; i < b->n_ids && len < sizeof(text) - 1; i += (size_t)b->batch) {
		const char *piece = eng_tokenizer_decode(b->tok, prev, b->ids[i]);
		prev = b->ids[i];
		for (; piece && *piece && len < sizeof(text) - 1; piece++)
			text[len++] = *piece == '\n' ? ' ' : *piece;
	}
	text[len] = '\0';
	mw_run_say(b->run->o, "text of run 1: %s%s", text, len == sizeof(text) - 1 ? "..." : "");
}

static void say_run(const struct builtin *b, const json_t *run, int i, int total, bool warm)
{
	const json_t *d = json_object_get(run, "decode");
	double secs = (double)json_integer_value(json_object_get(d, "ns")) * 1e-9;
	json_int_t nt = json_integer_value(json_object_get(d, "tokens"));
	mw_run_say(b->run->o, "run %d/%d%s: %lld tokens in %.3f s, %.2f tok/s%s", i + 1, total,
		   warm ? " (warm-up, not counted)" : "", (long long)nt, secs,
		   secs > 0 ? (double)nt / secs : 0.0,
		   json_is_true(json_object_get(run, "complete")) ? "" : " (interrupted)");
}

static enum mw_run_status start_session(struct builtin *b, struct mw_error *err)
{
	const struct mw_run_options *o = b->run->o;
	const struct mw_protocol *p = b->run->p;
	struct eng_error eerr;
	int rc;
	eng_error_clear(&eerr);
	b->hooks = (struct eng_hooks){ .ctx = b, .token = on_token,
				       .phase = o->phases ? on_phase : NULL };
	if ((rc = mw_kcache_for_session(p->engine.kernels, &b->kc, &b->kuse, err)))
		return MW_RUN_BAD_INPUT;
	if (b->kuse.ignored)
		mw_run_say(o, "%s", b->kuse.reason);
	struct eng_session_options sopt = {
		.threads = b->run->plan.threads,
		.pin = p->engine.pin,
		.kernels = p->engine.kernels,
		.kernel_choice = b->kuse.used ? &b->kc : NULL,
		.kv_type = ENG_KV_AUTO, /* GGUF: F16, as llama.cpp (the tensor table assumes it) */
		.ctx_len = (int)b->n_prompt + b->run->plan.decode,
		.hooks = &b->hooks,
		.sparsity_map = p->engine.sparsity_map,
		.attention = p->engine.attention,
		.n_seq = b->batch,
		.verify_tokens = p->speculative.on ? p->speculative.draft_tokens + 1 : 0,
	};
	if ((rc = eng_session_new(&b->sess, b->model, &sopt, &eerr))) {
		mw_error_set(err, rc, b->run->plan.model_path, "engine", "cannot start a session: %s",
			     eerr.text);
		return MW_RUN_ENVIRONMENT;
	}
	b->samp_opt = (struct eng_sampler_options){ .temperature = (float)p->sampling.temperature,
						    .topp = (float)p->sampling.topp,
						    .seed = p->sampling.seed };
	return MW_RUN_DONE;
}

static json_t *engine_json(const struct builtin *b)
{
	const struct mw_plan *pl = &b->run->plan;
	json_t *cpus = json_null();
	if (pl->pinned) {
		cpus = json_array();
		for (size_t i = 0; i < pl->p->engine.n_cpus; i++)
			json_array_append_new(cpus, json_integer(pl->p->engine.cpus[i]));
	}
	/* results/README.md: how the weights came in; the model is mapped with MAP_POPULATE
	 * here, so under mmap too every page is in when load_ms ends. */
	const struct eng_load_report *lr = eng_model_load_report(b->model);
	json_t *e = json_pack("{s:s, s:s, s:s, s:i, s:o, s:s, s:f, s:f, s:i, s:o}", "kind",
			      "builtin", "kernels", eng_session_kernels(b->sess), "load",
			      eng_load_mode_name(pl->p->engine.load), "threads", pl->threads, "cpus",
			      cpus, "pin", eng_pin_name(pl->p->engine.pin), "load_ms", b->load_s * 1e3,
			      "ttft_ms", b->load_s * 1e3 + (double)b->first_ns / 1e6, "load_threads",
			      lr->threads, "huge_page_bytes",
			      lr->mode == ENG_LOAD_MMAP || lr->huge_bytes < 0
				      ? json_null() : json_integer((json_int_t)lr->huge_bytes));
	/* The quant table beside the f32 one: on an AVX-512 CPU without VNNI/VBMI they differ. */
	if (e)
		json_object_set_new(e, "quant_kernels",
				    json_string(eng_session_quant_kernels(b->sess)));
	/* Which table ran each operation on the x8 weights, and where that choice came from
	 * (issue 42: the machine's measured kernel choice, or the default). */
	if (e) {
		json_object_set_new(e, "kernel_choice", mw_kcache_record(&b->kuse));
		json_object_set_new(e, "op_kernels", mw_kcache_op_kernels(b->sess));
	}
	/* Only what a protocol asked for, so a plain protocol's record is as it always was. */
	if (e && b->batch > 1)
		json_object_set_new(e, "batch", json_integer(b->batch));
	if (e && pl->p->speculative.on)
		json_object_set_new(e, "speculative", json_pack(
			"{s:s, s:i, s:i}", "mode", "lookup", "draft_tokens",
			pl->p->speculative.draft_tokens, "ngram", pl->p->speculative.ngram));
	if (e && pl->p->engine.sparsity_map)
		json_object_set_new(e, "sparsity_map", json_true());
	if (e && json_object_get(json_object_get(pl->p->doc, "engine"), "attention"))
		json_object_set_new(e, "attention",
				    json_string(eng_attention_name(pl->p->engine.attention)));
	if (e && pl->p->engine.context)
		json_object_set_new(e, "context", json_integer(pl->p->engine.context));
	return e;
}

static json_t *model_json(const struct builtin *b)
{
	const struct eng_model_info *mi = b->mi;
	return json_pack("{s:b, s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i}, s:I}", "synthetic",
			 mi->synthetic || b->run->p->model.synth_shape, "arch",
			 mi->arch ? mi->arch : "llama", "shape", "dim", mi->dim, "hidden_dim",
			 mi->hidden_dim, "n_layers", mi->n_layers, "n_heads", mi->n_heads,
			 "n_kv_heads", mi->n_kv_heads, "vocab_size", mi->vocab_size, "seq_len",
			 mi->seq_len, "weight_bytes", (json_int_t)mi->weight_bytes);
}

static enum mw_run_status builtin_execute(struct mw_run *run, struct mw_error *err)
{
	struct builtin *b = run->state;
	enum mw_run_status st;
	int rc = 0;

	software_open(b);
	if ((st = preflight(b, err)) != MW_RUN_DONE || (st = start_session(b, err)) != MW_RUN_DONE)
		return st;
	run->kernels = eng_session_kernels(b->sess);
	run->quant_kernels = eng_session_quant_kernels(b->sess);
	if (!(run->runs = json_array()))
		return MW_RUN_ENVIRONMENT;
	mw_drift_step(&b->drift, run, 0);
	int total = run->plan.warmups + run->plan.runs;
	for (int i = 0; i < total && !mw_run_stopped(); i++) {
		bool warm = i < run->plan.warmups;
		/* The samplers restart for each run so every run decodes the same tokens; sequence
		 * q of a batch samples with seed + q (as generate --batch). */
		for (int q = 0; q < b->batch; q++) {
			struct eng_sampler_options so = b->samp_opt;
			so.seed += (uint64_t)q;
			eng_sampler_free(b->samp[q]);
			b->samp[q] = NULL;
			if ((rc = eng_sampler_new(&b->samp[q], b->mi->vocab_size, &so))) {
				mw_error_set(err, -EINVAL, run->p->source, "sampling",
					     "the engine refused these settings");
				return MW_RUN_BAD_INPUT;
			}
		}
		json_t *one = run_once(b, i, warm, &rc);
		if (rc) {
			mw_error_set(err, rc, run->plan.model_path, "",
				     "the engine failed in run %d: %s", i + 1, strerror(-rc));
			return MW_RUN_ENVIRONMENT;
		}
		if (i == 0)
			b->first_ns = b->pre1.ns - b->pre0.ns;
		say_run(b, one, i, total, warm);
		json_array_append_new(run->runs, one);
		if (b->tok && i == 0)
			say_text(b);
	}
	mw_drift_step(&b->drift, run, 1);
	swap_check_after(b);
	run->engine = engine_json(b);
	run->model = model_json(b);
	run->software = software_names(b);
	return run->engine && run->model && run->drift ? MW_RUN_DONE : MW_RUN_ENVIRONMENT;
}

static void builtin_close(struct mw_run *run)
{
	struct builtin *b = run->state;
	if (!b)
		return;
	free(b->logits_copy);
	for (int q = 0; b->samp && q < b->batch; q++)
		eng_sampler_free(b->samp[q]);
	free(b->samp);
	free(b->step_tok);
	free(b->step_drafted);
	free(b->step_accepted);
	free(b->ctx);
	free(b->pass);
	eng_session_free(b->sess);
	eng_tokenizer_close(b->tok);
	eng_model_close(b->model);
	prb_set_free(b->sset);
	free(b->sread0);
	free(b->sread1);
	free(b->prompt);
	free(b->ids);
	free(b->lat);
	free(b->eng);
	free(b->rd.v);
	free(b->wr.v);
	free(b->tot.v);
	free(b->ej);
	free(b->pl_rd);
	free(b->pl_wr);
	free(b);
	run->state = NULL;
}

const struct mw_engine_row mw_engine_builtin = {
	.kind = MW_ENGINE_BUILTIN,
	.energy = true,
	.prepare = builtin_prepare,
	.execute = builtin_execute,
	.close = builtin_close,
};
