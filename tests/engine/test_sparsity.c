/* tests/engine/test_sparsity.c: ReLU FFN activations and the sparsity map (engine/sparsity.h, issue 18
 * R1). Synthetic ReLU and ReLU^2 models (llama2.c F32, GGUF Q8_0 and Q4_0, and Q8_0 repacked
 * into the x8 layout) run greedily dense and with the map (and F32 with per-neuron down
 * skipping): the ids are the same, the logits agree to rounding, and the bytes the map saves
 * are exactly the all-zero blocks' (or zero neurons') bytes plus the up rows of zero
 * activations, as this test recomputes them from the activations it reads back through the
 * ffn_act hook. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "test.h"

#define STEPS 12
#define BLOCK 32 /* the map's block: 32 columns for f32, q8_0 and q4_0 */

static char dir[] = "/tmp/mw-test-sparsity-XXXXXX";

/* What the hooks see in one step, recomputed from the activations. */
struct seen {
	uint64_t block_bytes; /* one block column's bytes in one row of the down projection */
	uint64_t tail_bytes;  /* the last, shorter block's (f32 rows not a multiple of 32) */
	int rows;             /* rows of the down projection (dim) */
	uint64_t zero, total, zero_blocks, blocks, skip_bytes;
	uint64_t up_row_bytes; /* one row of the up projection (dim columns) */
	bool x8_ok;            /* repacked: an up row may be skipped by 8-row groups */
	bool neuron;           /* per-neuron down skipping: dim floats per zero activation */
	/* up rows whose activations are all zero, by single rows and by groups of eight */
	uint64_t up1, up8;
	bool sparse, checked_all;
	int steps;
};

static void on_act(void *ctx, int layer, const float *act, int n)
{
	struct seen *s = ctx;
	(void)layer;
	for (int k = 0; k * BLOCK < n; k++) {
		int c1 = (k + 1) * BLOCK < n ? (k + 1) * BLOCK : n, z = 0;
		for (int c = k * BLOCK; c < c1; c++)
			z += act[c] == 0.0f;
		s->zero += (uint64_t)z;
		s->blocks++;
		if (z == c1 - k * BLOCK) {
			s->zero_blocks++;
			s->skip_bytes += (uint64_t)s->rows *
					 (c1 - k * BLOCK == BLOCK ? s->block_bytes : s->tail_bytes);
		}
	}
	s->total += (uint64_t)n;
	/* The up rows a map skips: those whose act(gate) is zero (a row; an 8-row group). */
	for (int g = 0; g < n; g += 8) {
		int z = 0, g1 = g + 8 < n ? g + 8 : n;
		for (int r = g; r < g1; r++)
			z += act[r] == 0.0f;
		s->up1 += (uint64_t)z;
		s->up8 += z == g1 - g ? (uint64_t)z : 0;
	}
}

static void on_token(void *ctx, int pos, int token, const struct eng_step_bytes *b)
{
	struct seen *s = ctx;
	(void)pos;
	(void)token;
	T_EQ_U64(b->act_zero, s->zero);
	T_EQ_U64(b->act_total, s->total);
	T_EQ_U64(b->down_blocks_zero, s->zero_blocks);
	T_EQ_U64(b->down_blocks, s->blocks);
	uint64_t up = b->up_rows_skipped;
	if (!s->sparse)
		T_EQ_U64(up, 0);
	else if (!(s->x8_ok && up == s->up8))
		T_EQ_U64(up, s->up1);
	/* down: the all-zero blocks, or one row of dim floats per zero activation */
	uint64_t down = s->neuron ? s->zero * (uint64_t)s->rows * 4 : s->skip_bytes;
	T_EQ_U64(b->weights_skipped, s->sparse ? down + up * s->up_row_bytes : 0);
	T_EQ_U64(b->gate_rows_skipped, 0);
	s->zero = s->total = s->zero_blocks = s->blocks = s->skip_bytes = s->up1 = s->up8 = 0;
	s->steps++;
}

/* Greedy run of STEPS tokens from BOS: ids, last logits, bytes per step. */
static void run(struct eng_model *m, bool sparse, int threads, struct seen *seen, int *ids,
		float *logits, struct eng_step_bytes *bytes, uint64_t *zero, uint64_t *acts,
		uint64_t *zblocks, uint64_t *blocks)
{
	const struct eng_model_info *info = eng_model_info(m);
	struct eng_hooks hooks = { .ctx = seen, .token = on_token, .ffn_act = on_act };
	struct eng_session_options opt = { .threads = threads, .hooks = &hooks,
					   .sparsity_map = sparse, .sparsity_neuron = seen->neuron };
	struct eng_session *s = NULL;
	struct eng_error err;
	seen->sparse = sparse;
	T_EQ_INT(eng_session_new(&s, m, &opt, &err), 0);
	if (!s)
		return;
	int token = 1;
	for (int pos = 0; pos < STEPS; pos++) {
		const float *lg;
		T_EQ_INT(eng_session_step(s, token, pos, &lg, &bytes[pos]), 0);
		int best = 0;
		for (int i = 1; i < info->vocab_size; i++)
			if (lg[i] > lg[best])
				best = i;
		ids[pos] = token = best;
		memcpy(logits + (size_t)pos * info->vocab_size, lg,
		       (size_t)info->vocab_size * sizeof(float));
		*zero += bytes[pos].act_zero;
		*acts += bytes[pos].act_total;
		*zblocks += bytes[pos].down_blocks_zero;
		*blocks += bytes[pos].down_blocks;
	}
	eng_session_free(s);
}

/* block_bytes: one 32-column block of one row of the down projection in its type. */
static void check_model(const char *path, enum eng_ffn_act act, enum eng_load_mode load,
			uint64_t block_bytes, uint64_t tail_bytes, bool neuron)
{
	struct eng_model_options mopt = { .load = load };
	struct eng_model *m = NULL;
	struct eng_error err;
	T_EQ_INT(eng_model_open(&m, path, &mopt, &err), 0);
	if (!m) {
		fprintf(stderr, "%s: %s\n", path, err.text);
		return;
	}
	const struct eng_model_info *info = eng_model_info(m);
	T_EQ_INT(info->ffn_act, act);
	T_ASSERT(info->synthetic);
	size_t nv = (size_t)info->vocab_size * STEPS;
	float *ld = malloc(nv * sizeof(float)), *ls = malloc(nv * sizeof(float));
	int id_d[STEPS], id_s[STEPS];
	struct eng_step_bytes bd[STEPS], bs[STEPS];
	uint64_t zd = 0, ad = 0, zbd = 0, bkd = 0, zs = 0, as = 0, zbs = 0, bks = 0;
	struct seen sd = { .block_bytes = block_bytes, .tail_bytes = tail_bytes,
			   .rows = info->dim, .up_row_bytes = (uint64_t)info->dim / 32 * block_bytes,
			   .x8_ok = load == ENG_LOAD_REPACK, .neuron = neuron };
	struct seen ss = sd;
	sd.neuron = false;
	run(m, false, 1, &sd, id_d, ld, bd, &zd, &ad, &zbd, &bkd);
	run(m, true, 2, &ss, id_s, ls, bs, &zs, &as, &zbs, &bks);
	T_EQ_INT(sd.steps, STEPS);
	T_EQ_INT(ss.steps, STEPS);
	float worst = 0.0f, scale = 0.0f;
	for (size_t i = 0; i < nv; i++) {
		float d = fabsf(ld[i] - ls[i]);
		worst = d > worst ? d : worst;
		scale = fabsf(ld[i]) > scale ? fabsf(ld[i]) : scale;
	}
	T_ASSERT(worst <= 1e-4f * (scale > 1.0f ? scale : 1.0f));
	for (int p = 0; p < STEPS; p++) {
		T_EQ_INT(id_s[p], id_d[p]);
		T_EQ_U64(bd[p].weights_skipped, 0);
		/* sparse bytes == dense bytes - the skipped blocks' bytes (recomputed in on_token) */
		T_EQ_U64(bs[p].weights, bd[p].weights - bs[p].weights_skipped);
		T_EQ_U64(bs[p].by_phase[ENG_PHASE_FFN],
			 bd[p].by_phase[ENG_PHASE_FFN] - bs[p].weights_skipped);
		T_EQ_U64(bs[p].act_zero, bd[p].act_zero); /* the same activations, up to rounding */
	}
	double zero_frac = (double)zs / (double)as, skip_frac = (double)zbs / (double)bks;
	fprintf(stderr, "%s (%s%s): zero fraction %.3f, block-skipped fraction %.3f, logits "
		"max diff %.2g\n", path, eng_ffn_act_name(act), neuron ? ", per neuron" : "",
		zero_frac, skip_frac, (double)worst);
	T_ASSERT(skip_frac <= zero_frac);
	T_ASSERT(zero_frac > 0.25 && zero_frac < 0.75); /* ReLU of the clustered rows: ~half */
	T_ASSERT(skip_frac > 0.15);                   /* the clusters make whole blocks zero */
	T_ASSERT(bs[STEPS - 1].weights_skipped > 0);
	free(ld);
	free(ls);
	eng_model_close(m);
}

/* SiLU models say so, have no zeros, and the map skips nothing. */
static void check_silu(const char *path)
{
	struct eng_model *m = NULL;
	struct eng_error err;
	T_EQ_INT(eng_model_open(&m, path, NULL, &err), 0);
	if (!m)
		return;
	T_EQ_INT(eng_model_info(m)->ffn_act, ENG_ACT_SILU);
	struct eng_session_options opt = { .threads = 1, .sparsity_map = true };
	struct eng_session *s = NULL;
	struct eng_step_bytes b;
	const float *lg;
	T_EQ_INT(eng_session_new(&s, m, &opt, &err), 0);
	T_EQ_INT(eng_session_step(s, 1, 0, &lg, &b), 0);
	T_EQ_U64(b.weights_skipped, 0);
	T_EQ_U64(b.down_blocks_zero, 0);
	eng_session_free(s);
	eng_model_close(m);
}

int main(void)
{
	struct eng_error err;
	char p[256];
	t_mkdtemp(dir);
	const char *name;
	T_EQ_INT(eng_ffn_act_parse("relu2", &(enum eng_ffn_act){ 0 }), 0);
	T_ASSERT(eng_ffn_act_parse("tanh", &(enum eng_ffn_act){ 0 }) < 0);
	T_EQ_STR(eng_ffn_act_name(ENG_ACT_RELU), "relu");

	/* llama2.c, F32: stories260K's hidden_dim 172 leaves a 12-column tail block. */
	snprintf(p, sizeof(p), "%s/relu.bin", dir);
	T_EQ_INT(eng_synth_llama2c_act(p, "stories260K", 1, ENG_ACT_RELU, &err), 0);
	check_model(p, ENG_ACT_RELU, ENG_LOAD_MMAP, 32 * 4, 12 * 4, false);
	check_model(p, ENG_ACT_RELU, ENG_LOAD_MMAP, 32 * 4, 12 * 4, true);
	unlink(p);
	snprintf(p, sizeof(p), "%s/relu2.bin", dir);
	T_EQ_INT(eng_synth_llama2c_act(p, "stories260K", 2, ENG_ACT_RELU2, &err), 0);
	check_model(p, ENG_ACT_RELU2, ENG_LOAD_MMAP, 32 * 4, 12 * 4, false);
	check_model(p, ENG_ACT_RELU2, ENG_LOAD_MMAP, 32 * 4, 12 * 4, true);
	unlink(p);
	/* the varied construction (issue 26): ids that change along the way */
	struct eng_synth_opts vo = { .construction = ENG_SYNTH_VARIED, .act = ENG_ACT_RELU };
	snprintf(p, sizeof(p), "%s/relu-varied.bin", dir);
	T_EQ_INT(eng_synth_llama2c_opts(p, "stories15M", 1, &vo, &err), 0);
	check_model(p, ENG_ACT_RELU, ENG_LOAD_MMAP, 32 * 4, 0, false);
	check_model(p, ENG_ACT_RELU, ENG_LOAD_MMAP, 32 * 4, 0, true);
	unlink(p);
	snprintf(p, sizeof(p), "%s/relu2-q8-varied.gguf", dir);
	vo.act = ENG_ACT_RELU2;
	T_EQ_INT(eng_synth_gguf_opts(p, "llama", "llama-tiny", "q8_0", 1, &vo, &err), 0);
	check_model(p, ENG_ACT_RELU2, ENG_LOAD_MMAP, 34, 0, false);
	check_model(p, ENG_ACT_RELU2, ENG_LOAD_REPACK, 34, 0, false);
	unlink(p);
	snprintf(p, sizeof(p), "%s/silu.bin", dir);
	T_EQ_INT(eng_synth_llama2c(p, "stories260K", 1, &err), 0);
	check_silu(p);
	unlink(p);
	T_ASSERT(eng_synth_llama2c_act(p, "stories260K", 1, ENG_ACT_GELU, &err) < 0);

	/* GGUF: Q8_0 (34-byte blocks), plain and repacked by eight rows, and Q4_0 (18). */
	snprintf(p, sizeof(p), "%s/relu-q8.gguf", dir);
	T_EQ_INT(eng_synth_gguf_act(p, "llama", "llama-tiny", "q8_0", 1, ENG_ACT_RELU, &err), 0);
	check_model(p, ENG_ACT_RELU, ENG_LOAD_MMAP, 34, 0, false);
	check_model(p, ENG_ACT_RELU, ENG_LOAD_REPACK, 34, 0, false);
	unlink(p);
	snprintf(p, sizeof(p), "%s/relu2-q4.gguf", dir);
	T_EQ_INT(eng_synth_gguf_act(p, "llama", "llama-tiny", "q4_0", 3, ENG_ACT_RELU2, &err), 0);
	check_model(p, ENG_ACT_RELU2, ENG_LOAD_MMAP, 18, 0, false);
	check_model(p, ENG_ACT_RELU2, ENG_LOAD_REPACK, 18, 0, false);
	unlink(p);
	name = "falcon";
	T_ASSERT(eng_synth_gguf_act(p, name, "falcon-tiny", "q8_0", 1, ENG_ACT_RELU, &err) < 0);
	/* Per-neuron down skipping needs F32 down projections: a clear refusal otherwise. */
	snprintf(p, sizeof(p), "%s/relu-q8.gguf", dir);
	T_EQ_INT(eng_synth_gguf_act(p, "llama", "llama-tiny", "q8_0", 1, ENG_ACT_RELU, &err), 0);
	struct eng_model *m = NULL;
	struct eng_session *s = NULL;
	T_EQ_INT(eng_model_open(&m, p, NULL, &err), 0);
	struct eng_session_options no = { .sparsity_map = true, .sparsity_neuron = true };
	T_ASSERT(m && eng_session_new(&s, m, &no, &err) == -ENOTSUP);
	T_ASSERT(strstr(err.text, "F32") && strstr(err.text, "q8_0"));
	eng_model_close(m);
	unlink(p);
	rmdir(dir);
	return t_done();
}
