/* src/cli/cmd_synth.c: `memwall synth`: write a deterministic synthetic model (real shape, seeded
 * random weights), marked as synthetic so every report names it so.
 *
 * The architectures are the engine's (engine.h, eng_arch_at): each is written as GGUF, and as a
 * llama2.c checkpoint where its row says llama2c, which is then its default format; --quant
 * picks GGUF. A new file format is a row of `formats` and its write function.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "file.h"
#include "mw.h"
#include "opt.h"
#include "verbs.h"

#define VERB "synth"

struct synth_request {
	const char *arch, *shape, *out, *quant, *format;
	long seed;
	bool force;
	enum eng_ffn_act act;
	struct eng_synth_sparsity sp; /* --relu-sparsity, --dead-fraction */
	bool stats;                   /* either was given */
	bool cd_on;                 /* --canonical-delta */
	struct eng_canonical_delta cd;
	enum eng_synth_construction construction; /* --construction */
};

static struct eng_synth_opts opts_of(const struct synth_request *r)
{
	return (struct eng_synth_opts){ .construction = r->construction, .act = r->act,
					.sp = r->stats ? &r->sp : NULL,
					.cd = r->cd_on ? &r->cd : NULL };
}

static int write_llama2c(const struct synth_request *r, struct eng_error *err)
{
	struct eng_synth_opts o = opts_of(r);
	return eng_synth_llama2c_opts(r->out, r->shape, (uint64_t)r->seed, &o, err);
}

static int write_gguf(const struct synth_request *r, struct eng_error *err)
{
	struct eng_synth_opts o = opts_of(r);
	return eng_synth_gguf_opts(r->out, r->arch, r->shape, r->quant, (uint64_t)r->seed, &o,
				   err);
}

/* SIGINT and SIGTERM set this; the engine's writers check it between chunks (eng_cancel_hook)
 * and remove their temporary file, which the default action would leave behind. */
static atomic_int stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
	signal(sig, SIG_DFL); /* a second one kills */
}

/* The file formats synth writes. */
static const struct synth_format {
	const char *name;        /* --format's name */
	const char *description; /* the file format it writes */
	bool quant;              /* takes --quant (GGUF); else float32 only */
	int (*write)(const struct synth_request *r, struct eng_error *err);
} formats[] = {
	{ "llama2c", "llama2.c ak42 v1, float32", false, write_llama2c },
	{ "gguf", "GGUF", true, write_gguf },
};

/* Whether architecture a is written in format f: GGUF always, llama2.c where its row says. */
static bool writes(const struct eng_arch_info *a, const struct synth_format *f)
{
	return f->quant || a->llama2c;
}

/* f's shapes of a, space-separated, into buf. */
static void shape_list(const struct eng_arch_info *a, const struct synth_format *f, char *buf,
		       size_t len)
{
	if (f->quant)
		eng_arch_shape_names(a->name, buf, len);
	else
		eng_synth_llama2c_shape_names(buf, len);
}

/* Appends text to buf (len bytes, *used of them taken), truncating. */
static void append(char *buf, size_t len, size_t *used, const char *text)
{
	int k = snprintf(buf + *used, len - *used, "%s", text);
	if (k > 0)
		*used += (size_t)k < len - *used ? (size_t)k : len - *used - 1;
}

/* The architectures whose activation may be chosen (more than one in acts), and their
 * choices: "llama: silu (default) relu relu2". */
static void act_choices(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < eng_arch_count(); i++) {
		const struct eng_arch_info *a = eng_arch_at(i);
		if (!(a->acts & (a->acts - 1)))
			continue; /* one activation: no choice */
		append(buf, len, &used, used ? "; " : "");
		append(buf, len, &used, a->name);
		append(buf, len, &used, ":");
		for (int x = 0; x < ENG_ACT_COUNT; x++)
			if (a->acts & (1u << x)) {
				append(buf, len, &used, " ");
				append(buf, len, &used, eng_ffn_act_name((enum eng_ffn_act)x));
				append(buf, len, &used, x == (int)a->act ? " (default)" : "");
			}
	}
}

static void usage(FILE *f)
{
	char acts[256];
	act_choices(acts, sizeof(acts));
	fprintf(f, "usage: memwall synth [--arch ARCH] --shape SHAPE [--quant Q] [--format F] -o FILE "
		   "[--seed S] [--activation A] [--canonical-delta[=SPEC]] [--construction C] "
		   "[--force]\n\n"
		   "Writes a deterministic synthetic model: the real shape, seeded random weights of\n"
		   "a realistic scale (norm weights near 1). The same arguments give the same bytes.\n"
		   "The file is marked synthetic, and every report on it says so. A GGUF file gets\n"
		   "the per-tensor types llama-quantize gives the real model for that quantization\n"
		   "(Falcon-7B Q4_K_M: mostly Q5_0, since 4544 is not a multiple of 256) and a\n"
		   "synthetic tokenizer of the real vocabulary size.\n\n"
		   "  --arch ARCH     architecture (default %s; below)\n"
		   "  --shape SHAPE   one of the architecture's shapes (below)\n"
		   "  --quant Q       GGUF quantization: f32 f16 q8_0 q4_0 q5_0 q4_k_m (implies GGUF)\n"
		   "  --format F      llama2c or gguf (default: the architecture's first, below)\n"
		   "  -o, --output F  file to write (atomically: a temporary file, then a rename)\n"
		   "  --seed S        seed (default 1)\n"
		   "  --activation A  the FFN activation, for an architecture that has a choice\n"
		   "                  (%s); ReLU\n"
		   "                  models get gate rows in clusters of 32 that are zero together\n"
		   "                  on ~42%% of tokens (~50%% of activations are exactly zero), for\n"
		   "                  generate --sparsity-map (engine/runtime/sparsity.h)\n",
		eng_arch_at(0)->name, acts);
	fprintf(f, "  --relu-sparsity P  (relu/relu2) aim live neurons' zero fraction at P:\n"
		   "                  residual channel 0 is a constant 1 that gate rows weigh as a\n"
		   "                  bias, set for a Gaussian pre-activation (the measured fraction\n"
		   "                  differs: generate --report-line gives it). Published: ~90%%\n"
		   "                  zeros in ReLU-fied Llama (ProSparse, Song et al. 2024)\n"
		   "  --dead-fraction F  (relu/relu2) neurons (chosen per row from the seed)\n"
		   "                  with a -10 sigma bias: they never fire in practice, their rows\n"
		   "                  are not zero (dead neurons: Voita et al. 2023, OPT)\n"
		   "  --canonical-delta[=SPEC]  GGUF: the core-zone layers (floor(0.4 L)..floor(0.6 L))\n"
		   "                  share one canonical W_c per matrix, each storing a delta D_l\n"
		   "                  (W_l = W_c + D_l; issue 18 R3, engine/alias.h). SPEC, comma-\n"
		   "                  separated: rel=R (std(D)/std(W_c), default 0.05: adjacent\n"
		   "                  layers' cosine 0.9975), delta=TYPE (default by base type:\n"
		   "                  f32/f16 -> q8_0, q8_0/q5_0/q4_0 -> q4_0, q4_K -> q2_K),\n"
		   "                  layers=A-B, and split (default: W_c once + compact deltas) or\n"
		   "                  dense (the baseline twin: each W_l whole, same floats)\n"
		   "  --construction C  varied (default) or legacy. varied: layer 0's attention\n"
		   "                  and the embedding carry a fixed random \"language\": the next\n"
		   "                  token is a function of the current and the previous one, so\n"
		   "                  greedy decoding gives ~64 distinct ids in 64 and a broken\n"
		   "                  attention changes them (engine/synth/varied.h). legacy: every\n"
		   "                  matrix random, the bytes earlier versions wrote (greedy output\n"
		   "                  repeats one token)\n"
		   "  --force         replace FILE when it exists (only a regular file is ever\n"
		   "                  replaced: a device, a FIFO or a folder is refused)\n\n"
		   "architectures (format, shapes, default quantization):\n");
	for (size_t i = 0; i < eng_arch_count(); i++)
		for (size_t k = 0; k < sizeof(formats) / sizeof(formats[0]); k++) {
			const struct eng_arch_info *a = eng_arch_at(i);
			char shapes[256];
			if (!writes(a, &formats[k]))
				continue;
			shape_list(a, &formats[k], shapes, sizeof(shapes));
			fprintf(f, "  %-8s %-8s %s; shapes: %s%s%s\n", a->name, formats[k].name,
				formats[k].description, shapes,
				formats[k].quant ? "; default --quant " : "",
				formats[k].quant ? a->synth_quant : "");
		}
	fprintf(f, "\nexample: memwall synth --arch falcon --shape falcon-7b --quant q4_k_m "
		   "-o falcon7b-q4km-synthetic.gguf\n");
}

/* The format for the request: the asked one, else GGUF when a quantization is asked for, else
 * the architecture's first (llama2.c where it writes it); NULL for an architecture the engine
 * does not run or a format it is not written in. */
static const struct synth_format *find_format(const struct synth_request *r)
{
	const struct eng_arch_info *a = eng_arch_lookup(r->arch);
	const char *want = r->format ? r->format : r->quant ? "gguf" : NULL;
	for (size_t k = 0; a && k < sizeof(formats) / sizeof(formats[0]); k++)
		if (writes(a, &formats[k]) && (!want || !strcmp(formats[k].name, want)))
			return &formats[k];
	return NULL;
}

/* What may be written at r->out: nothing there, or a regular file with --force. */
static int target_check(const struct synth_request *r)
{
	struct stat st;
	if (lstat(r->out, &st)) {
		if (errno == ENOENT)
			return 0;
		return mw_fail(MW_EXIT_ENV, VERB, "%s: %s", r->out, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return mw_fail(MW_EXIT_USAGE, VERB, "%s is %s: synth writes only regular files and "
			       "never replaces anything else; name a new file", r->out,
			       mw_file_kind(st.st_mode));
	if (!r->force)
		return mw_fail(MW_EXIT_USAGE, VERB, "%s exists: give --force to replace it, or name "
			       "a new file", r->out);
	return 0;
}

/* Renames tmp onto r->out: without --force only if nothing is there (RENAME_NOREPLACE, or
 * link where the filesystem lacks it); with it, only over a regular file (checked again: the
 * target may have changed during the write). */
static int move_into_place(const char *tmp, const struct synth_request *r)
{
	int code = target_check(r);
	if (code)
		return code;
	if (r->force ? rename(tmp, r->out) == 0
		     : renameat2(AT_FDCWD, tmp, AT_FDCWD, r->out, RENAME_NOREPLACE) == 0)
		return 0;
	if (!r->force && (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) &&
	    link(tmp, r->out) == 0) {
		unlink(tmp);
		return 0;
	}
	return mw_fail(errno == EEXIST ? MW_EXIT_USAGE : MW_EXIT_ENV, VERB,
		       "cannot move the model into place at %s: %s", r->out, strerror(errno));
}

/* The options that pick a model variant, against each other, the architecture and the
 * format. */
static int check_variants(const struct synth_request *r, const struct synth_format *w)
{
	const struct eng_arch_info *a = eng_arch_lookup(r->arch);
	if (r->act != ENG_ACT_SILU && !(a->acts & (1u << r->act))) {
		char acts[256];
		act_choices(acts, sizeof(acts));
		return mw_fail(MW_EXIT_USAGE, VERB, "--activation %s: %s's FFN is %s only; the "
			       "architectures with a choice: %s", eng_ffn_act_name(r->act), a->name,
			       eng_ffn_act_name(a->act), acts);
	}
	if (r->stats && r->act == ENG_ACT_SILU)
		return mw_fail(MW_EXIT_USAGE, VERB, "--relu-sparsity and --dead-fraction need "
			       "--activation relu or relu2");
	if (r->cd_on && !w->quant)
		return mw_fail(MW_EXIT_USAGE, VERB, "--canonical-delta writes GGUF only: add "
			       "--format gguf (or --quant Q)");
	if (r->stats && r->cd_on)
		return mw_fail(MW_EXIT_USAGE, VERB, "--relu-sparsity and --dead-fraction do not "
			       "combine with --canonical-delta");
	return 0;
}

/* The line that says what was written. */
static void print_written(const struct synth_request *rq, const struct synth_format *w,
			  double seconds)
{
	const struct synth_request r = *rq;
	struct stat st;
	long long bytes = stat(r.out, &st) == 0 ? (long long)st.st_size : -1;
	printf("wrote %s: SYNTHETIC model (random weights, not trained), arch %s, shape %s, "
	       "seed %ld, construction %s, %s%s%s%s%s%s, %lld bytes in %.1f s\n",
	       r.out, r.arch, r.shape, r.seed, eng_synth_construction_name(r.construction),
	       w->description, r.quant ? " " : "",
	       r.quant ? r.quant : "", r.act ? ", activation " : "",
	       r.act ? eng_ffn_act_name(r.act) : "",
	       !r.cd_on ? "" : r.cd.dense ? ", canonical+delta dense twin" : ", canonical+delta",
	       bytes, seconds);
}

int mw_cmd_synth(int argc, char **argv)
{
	enum { O_ARCH = 256, O_SHAPE, O_SEED, O_QUANT, O_FORMAT, O_FORCE, O_ACT, O_CD, O_RELU_SP,
	       O_DEAD, O_CONSTRUCTION };
	static const struct option longopts[] = {
		{ "arch", required_argument, NULL, O_ARCH },
		{ "shape", required_argument, NULL, O_SHAPE },
		{ "quant", required_argument, NULL, O_QUANT },
		{ "format", required_argument, NULL, O_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, O_SEED },
		{ "force", no_argument, NULL, O_FORCE },
		{ "activation", required_argument, NULL, O_ACT },
		{ "relu-sparsity", required_argument, NULL, O_RELU_SP },
		{ "dead-fraction", required_argument, NULL, O_DEAD },
		{ "canonical-delta", optional_argument, NULL, O_CD },
		{ "construction", required_argument, NULL, O_CONSTRUCTION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct synth_request r = { .arch = eng_arch_at(0)->name, .seed = 1, .sp = { -1.0, 0.0 } };
	int c;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "o:h", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case O_ARCH: r.arch = optarg; break;
		case O_SHAPE: r.shape = optarg; break;
		case O_QUANT: r.quant = optarg; break;
		case O_FORMAT: r.format = optarg; break;
		case 'o': r.out = optarg; break;
		case O_FORCE: r.force = true; break;
		case O_ACT:
			if (eng_ffn_act_parse(optarg, &r.act))
				return mw_fail(MW_EXIT_USAGE, VERB, "--activation %s: give one of "
					       "the architecture's (see --help)", optarg);
			break;
		case O_RELU_SP:
		case O_DEAD:
			if (mw_parse_double(optarg, 0.0, 0.999,
					    c == O_DEAD ? &r.sp.dead_fraction : &r.sp.relu_sparsity))
				return mw_fail(MW_EXIT_USAGE, VERB, "--%s %s: give a fraction in "
					       "[0, 0.999]", c == O_DEAD ? "dead-fraction" :
					       "relu-sparsity", optarg);
			r.stats = true;
			break;
		case O_CD: {
			struct eng_error e;
			eng_error_clear(&e);
			if (eng_canonical_delta_parse(optarg, &r.cd, &e))
				return mw_fail(MW_EXIT_USAGE, VERB, "%s: %s", e.source, e.text);
			r.cd_on = true;
			break;
		}
		case O_CONSTRUCTION:
			if (eng_synth_construction_parse(optarg, &r.construction))
				return mw_fail(MW_EXIT_USAGE, VERB, "--construction %s: give varied "
					       "or legacy", optarg);
			break;
		case O_SEED:
			if (mw_parse_long(optarg, 0, INT64_MAX, &r.seed))
				return mw_fail(MW_EXIT_USAGE, VERB, "--seed %s: give a number >= 0",
					       optarg);
			break;
		case 'h':
			usage(stdout);
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (mw_opt_none_left(&op))
		return MW_EXIT_USAGE;
	if (!r.shape || !r.out)
		return mw_fail(MW_EXIT_USAGE, VERB, "give --shape SHAPE and -o FILE (see --help)");

	const struct synth_format *w = find_format(&r);
	if (!w)
		return mw_fail(MW_EXIT_USAGE, VERB, "--arch %s%s%s: unknown architecture or format "
			       "(see --help)", r.arch, r.format ? " --format " : "",
			       r.format ? r.format : "");
	if (r.quant && !w->quant)
		return mw_fail(MW_EXIT_USAGE, VERB, "--quant: the %s format has no quantization "
			       "choice (use --format gguf)", w->name);
	if (!r.quant && w->quant)
		r.quant = eng_arch_lookup(r.arch)->synth_quant;
	int code = check_variants(&r, w);
	if (code)
		return code;
	code = target_check(&r);
	if (code)
		return code;
	/* The engine writes (and renames into) a name of ours beside the target; only then is
	 * it moved onto the target, which is never something that is not ours to replace. */
	char tmp[4096];
	const char *slash = strrchr(r.out, '/');
	snprintf(tmp, sizeof(tmp), "%.*s.mw-synth-%ld-%s", slash ? (int)(slash - r.out + 1) : 0,
		 r.out, (long)getpid(), slash ? slash + 1 : r.out);
	struct synth_request rt = r;
	rt.out = tmp;
	struct eng_error err;
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	eng_error_clear(&err);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	eng_cancel_hook(&stop_signal);
	double t0 = mw_now_s();
	int rc = w->write(&rt, &err);
	double seconds = mw_now_s() - t0;
	eng_cancel_hook(NULL);
	if (!strcmp(err.source, tmp)) /* messages name the file the user asked for */
		snprintf(err.source, sizeof(err.source), "%s", r.out);
	/* A signal that came after the engine's last check still stops us: the file is not in
	 * place yet, and the handlers stay until it is, so nothing half-done is left behind. */
	if (rc == 0 && stop_signal)
		rc = -ECANCELED;
	if (rc == 0)
		code = move_into_place(tmp, &r);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (rc == -ECANCELED) { /* the shell's convention: 128 + the signal */
		unlink(tmp);
		mw_fail(MW_EXIT_ENV, VERB, "%s: stopped by %s after %.1f s: nothing was written "
			"(the partial file was removed)", r.out,
			stop_signal == SIGTERM ? "SIGTERM" : "SIGINT (Ctrl-C)", seconds);
		return 128 + (stop_signal ? stop_signal : SIGINT);
	}
	if (rc) { /* a bad name is usage; anything else is the file system's */
		unlink(tmp);
		return mw_fail(rc == -EINVAL ? MW_EXIT_USAGE : MW_EXIT_ENV, VERB, "%s%s%s", err.source,
			       err.source[0] ? ": " : "", err.text);
	}
	if (code) {
		unlink(tmp);
		return code;
	}
	print_written(&r, w, seconds);
	return MW_EXIT_OK;
}
