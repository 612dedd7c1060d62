/* engine/model/shapes.c: how llama-quantize types the tensors of the architectures' built-in
 * shapes (shapes.h).
 *
 * A shape is an architecture's hyperparameters and a layout its tensor list (both on its row
 * of arch.c, as llama.cpp's src/llama-model.cpp names and shapes them); a mix is a
 * llama_ftype. The type of each tensor follows llama.cpp's llama_tensor_get_type
 * (src/llama-quant.cpp) for the mixes listed here, without an imatrix, the row saying which
 * of its per-architecture rules apply (mix):
 *  - 1-D tensors stay F32; F32 and F16 mixes apply no rule.
 *  - output.weight (or token_embd.weight when there is no output): Q8_0 where the row says
 *    output_q8_0 (falcon) or for a row length not a multiple of 256, else Q6_K unless the mix
 *    is Q8_0.
 *  - Q4_K_M: attn_v, and falcon's fused attn_qkv, which llama.cpp counts as attn_v, get Q6_K in
 *    the use_more_bits layers; ffn_down follows the row's down rule: graded (falcon), Q6_K in
 *    the first 1/16 of the layers, Q5_K in the use_more_bits ones, else Q4_K; or Q6_K where
 *    use_more_bits. (The shared fixtures' tiny-falcon and tiny-llama Q4_K_M files agree.)
 *  - A row length no block of the chosen type divides: Q4_K -> Q5_0, Q5_K -> Q5_1,
 *    Q6_K -> Q8_0, and F16 if that still does not divide; any other type is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "quants.h"
#include "shapes.h"

/* llama_ftype values (llama.h). */
static const struct eng_mix mixes[] = {
	{ "f32", KRN_TYPE_F32, 0 },
	{ "f16", KRN_TYPE_F16, 1 },
	{ "q4_0", KRN_TYPE_Q4_0, 2 },
	{ "q8_0", KRN_TYPE_Q8_0, 7 },
	{ "q5_0", KRN_TYPE_Q5_0, 8 },
	{ "q4_k_m", KRN_TYPE_Q4_K, 15 },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const struct eng_shape *eng_shape_find(const char *arch, const char *name,
				       const struct eng_arch_desc **row)
{
	for (int k = 0; name && k < ENG_ARCH_COUNT; k++) {
		const struct eng_arch_desc *ad = eng_arch_row((enum eng_arch)k);
		if (arch && strcmp(arch, ad->info.name))
			continue;
		for (size_t i = 0; i < ad->n_shapes; i++)
			if (!strcasecmp(ad->shapes[i].name, name)) {
				if (row)
					*row = ad;
				return &ad->shapes[i];
			}
	}
	return NULL;
}

const struct eng_mix *eng_mix_find(const char *name)
{
	for (size_t i = 0; name && i < COUNT(mixes); i++)
		if (!strcasecmp(mixes[i].name, name))
			return &mixes[i];
	return NULL;
}

static void append(char *buf, size_t len, size_t *used, const char *s)
{
	int k = snprintf(buf + *used, len - *used, "%s%s", *used ? " " : "", s);
	if (k > 0 && (size_t)k < len - *used)
		*used += (size_t)k;
}

void eng_arch_shape_names(const char *arch, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int k = 0; k < ENG_ARCH_COUNT; k++) {
		const struct eng_arch_desc *ad = eng_arch_row((enum eng_arch)k);
		for (size_t i = 0; (!arch || !strcmp(arch, ad->info.name)) && i < ad->n_shapes; i++)
			append(buf, len, &used, ad->shapes[i].name);
	}
}

void eng_mix_names(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < COUNT(mixes); i++)
		append(buf, len, &used, mixes[i].name);
}

/* llama.cpp's use_more_bits: the first and last eighth of the layers and every third between. */
static bool use_more_bits(int i, int n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* llama_tensor_get_type for one 2-D tensor of shape s of architecture ad, before the
 * block-size fallback. */
static uint32_t mix_type(const struct eng_mix *mix, const struct eng_arch_desc *ad,
			 const struct eng_shape *s, enum eng_quant_rule rule, int layer, uint64_t ne0)
{
	uint32_t t = mix->base;
	if (!krn_type_traits(t)->is_quantized)
		return t; /* F32, F16: no rules */
	if (rule == ENG_RULE_OUTPUT || (rule == ENG_RULE_EMBD && s->tied)) {
		if (ad->mix.output_q8_0 || ne0 % KRN_QK_K)
			return KRN_TYPE_Q8_0;
		return t == KRN_TYPE_Q8_0 ? t : KRN_TYPE_Q6_K;
	}
	if (mix->file_type != 15) /* the rules below are Q4_K_M's */
		return t;
	if (rule == ENG_RULE_ATTN_V && use_more_bits(layer, s->layers))
		return KRN_TYPE_Q6_K;
	if (rule == ENG_RULE_FFN_DOWN && ad->mix.down == ENG_DOWN_GRADED)
		return layer < s->layers / 16	       ? KRN_TYPE_Q6_K
		       : use_more_bits(layer, s->layers) ? KRN_TYPE_Q5_K
							 : KRN_TYPE_Q4_K;
	if (rule == ENG_RULE_FFN_DOWN && use_more_bits(layer, s->layers))
		return KRN_TYPE_Q6_K;
	return t;
}

/* llama.cpp's fallback for a K-quant whose row length is not a multiple of 256. */
static const uint32_t kquant_fallback[KRN_TYPE_COUNT] = {
	[KRN_TYPE_Q4_K] = KRN_TYPE_Q5_0,
	[KRN_TYPE_Q5_K] = KRN_TYPE_Q5_1,
	[KRN_TYPE_Q6_K] = KRN_TYPE_Q8_0,
};

static uint64_t block_size(uint32_t type)
{
	return krn_type_traits(type)->block_size;
}

int eng_plan_new(struct eng_plan **out, const char *arch, const char *shape, const char *mix,
		 struct eng_error *err)
{
	char names[256];
	const struct eng_arch_desc *ad = NULL;
	const struct eng_shape *s = eng_shape_find(arch, shape, &ad);
	const struct eng_mix *m = eng_mix_find(mix);

	*out = NULL;
	if (arch && !eng_arch_lookup(arch))
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "unknown architecture '%s': choose one of %s", arch,
				     eng_arch_names());
	if (!s) {
		eng_arch_shape_names(arch, names, sizeof(names));
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "unknown shape '%s'%s%s: choose one of %s", shape ? shape : "",
				     arch ? " for " : "", arch ? arch : "", names);
	}
	if (!m) {
		eng_mix_names(names, sizeof(names));
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "unknown quantization '%s': choose one of %s", mix ? mix : "",
				     names);
	}
	const struct eng_arch_tensor *lay = ad->tensors;
	size_t n_lay = ad->n_tensors;
	struct eng_plan *p = calloc(1, sizeof(*p));
	if (p)
		p->t = calloc(n_lay * (size_t)s->layers, sizeof(*p->t));
	if (!p || !p->t) {
		eng_plan_free(p);
		return eng_error_set(err, -ENOMEM, "", ENG_NO_OFFSET, "out of memory");
	}
	p->arch = ad;
	p->shape = s;
	p->mix = m;
	const uint64_t head_dim = (uint64_t)(s->dim / s->heads);
	const uint64_t x[ENG_X_COUNT] = {
		[ENG_X_ONE] = 1,
		[ENG_X_DIM] = (uint64_t)s->dim,
		[ENG_X_Q] = (uint64_t)s->heads * head_dim,
		[ENG_X_HIDDEN] = (uint64_t)s->hidden,
		[ENG_X_KV] = (uint64_t)s->kv_heads * head_dim,
		[ENG_X_QKV] = (uint64_t)s->dim + 2u * (uint64_t)s->kv_heads * head_dim,
		[ENG_X_VOCAB] = (uint64_t)s->vocab,
	};
	/* Globals first, then layer by layer: the table lists the globals first. */
	for (int pass = 0; pass < 1 + s->layers; pass++) {
		for (size_t i = 0; i < n_lay; i++) {
			const struct eng_arch_tensor *lt = &lay[i];
			int layer = pass - 1;
			bool per_layer = lt->flags & ENG_T_LAYER;
			if (per_layer != (pass > 0) || (lt->rule == ENG_RULE_OUTPUT && s->tied))
				continue;
			struct eng_plan_tensor *t = &p->t[p->n++];
			/* The format string comes from arch.c's table, never from input. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
			snprintf(t->name, sizeof(t->name), lt->name, layer);
#pragma GCC diagnostic pop
			t->layer = per_layer ? layer : -1;
			t->cls = lt->cls;
			t->fill = lt->fill;
			t->ne[0] = x[lt->cols];
			t->ne[1] = x[lt->rows];
			t->n_dims = lt->rows == ENG_X_ONE ? 1 : 2;
			t->type = t->n_dims == 1 ? KRN_TYPE_F32
						 : mix_type(m, ad, s, lt->rule, layer, t->ne[0]);
			if (t->ne[0] % block_size(t->type) && kquant_fallback[t->type]) {
				t->type = kquant_fallback[t->type];
				if (t->ne[0] % block_size(t->type))
					t->type = KRN_TYPE_F16;
			}
			if (t->ne[0] % block_size(t->type)) {
				uint32_t bs = krn_type_traits(t->type)->block_size;
				const char *tn = krn_type_traits(t->type)->name;
				char what[ENG_GGUF_MAX_NAME];
				snprintf(what, sizeof(what), "%s", t->name);
				eng_plan_free(p);
				return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
						     "shape %s, quantization %s: tensor '%s' has rows "
						     "of %u values, not a multiple of %s's %u-value "
						     "block (llama-quantize refuses it too): choose "
						     "f32 or f16", s->name, m->name, what,
						     (unsigned)x[lt->cols], tn, bs);
			}
			t->bytes = krn_row_size(t->type, t->ne[0]) * t->ne[1];
			p->bytes += t->bytes;
		}
	}
	*out = p;
	return 0;
}

void eng_plan_free(struct eng_plan *p)
{
	if (!p)
		return;
	free(p->t);
	free(p);
}
