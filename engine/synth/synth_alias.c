/* engine/synth/synth_alias.c: what a synthetic canonical + delta model holds (alias.h, "Writing
 * them"): the option string, the list of tensors to write, and their rows. synth_gguf.c
 * writes them like any other tensor. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/alias.h"
#include "quants.h"
#include "rng.h"

#define MATRIX_STD 0.02f /* synth_gguf.c's, llama2.c model.py's init */

int eng_canonical_delta_parse(const char *spec, struct eng_canonical_delta *out,
			      struct eng_error *err)
{
	static char type_name[16];
	char buf[256], *save = NULL;
	*out = (struct eng_canonical_delta){ .rel_std = ENG_CD_REL_STD, .first = -1, .last = -1 };
	if (!spec || !*spec)
		return 0;
	if (strlen(spec) >= sizeof(buf))
		return eng_error_set(err, -EINVAL, "--canonical-delta", ENG_NO_OFFSET,
				     "the spec is too long");
	strcpy(buf, spec);
	for (char *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
		char *end = NULL;
		if (!strcmp(it, "dense") || !strcmp(it, "split")) {
			out->dense = it[0] == 'd';
		} else if (!strncmp(it, "rel=", 4)) {
			out->rel_std = strtod(it + 4, &end);
			if (end == it + 4 || *end || !(out->rel_std > 0 && out->rel_std <= 1))
				return eng_error_set(err, -EINVAL, "--canonical-delta", ENG_NO_OFFSET,
						     "'%s': rel is std(delta) / std(canonical), a "
						     "number in (0, 1], e.g. rel=0.05", it);
		} else if (!strncmp(it, "delta=", 6)) {
			if (strcmp(it + 6, "auto") && krn_type_from_name(it + 6) < 0)
				return eng_error_set(err, -EINVAL, "--canonical-delta", ENG_NO_OFFSET,
						     "'%s': not a ggml type name (e.g. q8_0, q4_0, "
						     "q2_K, or auto)", it);
			snprintf(type_name, sizeof(type_name), "%s", it + 6);
			out->delta_type = type_name;
		} else if (!strncmp(it, "layers=", 7) &&
			   sscanf(it + 7, "%d-%d", &out->first, &out->last) == 2 &&
			   out->first >= 0 && out->last >= out->first) {
			continue;
		} else {
			return eng_error_set(err, -EINVAL, "--canonical-delta", ENG_NO_OFFSET,
					     "'%s': give rel=R, delta=TYPE, layers=A-B, dense or "
					     "split, separated by commas", it);
		}
	}
	return 0;
}

/* FNV-1a of the name after "blk.N.": the same for a kind in every layer. */
static uint64_t kind_hash(const char *name)
{
	const char *k = name;
	int used = 0, layer;
	if (sscanf(name, "blk.%d.%n", &layer, &used) == 1 && used > 0)
		k = name + used;
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 0x100000001b3ull;
	return h;
}

/* The delta's type for canonical type base. */
static int delta_type(const struct eng_canonical_delta *cd, uint32_t base, uint32_t *out)
{
	if (cd->delta_type && strcmp(cd->delta_type, "auto")) {
		int t = krn_type_from_name(cd->delta_type);
		if (t < 0)
			return -EINVAL;
		*out = (uint32_t)t;
	} else {
		*out = eng_alias_delta_type(base);
	}
	return 0;
}

int eng_alias_plan(const struct eng_plan *p, const struct eng_canonical_delta *cd,
	       struct alias_out **out, size_t *n, struct eng_error *err)
{
	int L = p->shape->layers, first = 4 * L / 10, last = 6 * L / 10;
	struct alias_out *o = calloc(2 * p->n + 1, sizeof(*o));
	*out = NULL;
	*n = 0;
	if (!o)
		return eng_error_set(err, -ENOMEM, "", ENG_NO_OFFSET, "out of memory");
	if (cd && cd->first >= 0) {
		first = cd->first;
		last = cd->last;
	}
	if (cd && (last >= L || first > last)) {
		free(o);
		return eng_error_set(err, -EINVAL, "--canonical-delta", ENG_NO_OFFSET,
				     "layers=%d-%d: shape %s has layers 0..%d", first, last,
				     p->shape->name, L - 1);
	}
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct eng_plan_tensor *t = &p->t[i];
		bool shared = cd && t->layer >= first && t->layer <= last &&
			      t->fill == ENG_FILL_MATRIX && t->n_dims == 2;
		o[k] = (struct alias_out){ .t = *t, .index = i, .role = ALIAS_PLAIN,
					   .kind = kind_hash(t->name) };
		if (!shared) {
			k++;
			continue;
		}
		if (cd->dense) {
			o[k++].role = ALIAS_SUM;
			continue;
		}
		if (t->layer == first) { /* the canonical, in the first shared layer's type */
			o[k].role = ALIAS_CANON;
			o[k].t.layer = -1;
			char fmt[ENG_GGUF_MAX_NAME + 16], canon[ENG_GGUF_MAX_NAME + 16];
			snprintf(fmt, sizeof(fmt), "blk.%%d.%s", t->name + strcspn(t->name + 4, ".") + 5);
			eng_alias_names(fmt, canon, NULL);
			size_t len = strlen(canon);
			if (len >= sizeof(o[k].t.name)) { /* ggml's 64-byte names */
				free(o);
				return eng_error_set(err, -EINVAL, t->name, ENG_NO_OFFSET,
						     "the canonical's name '%s' is too long", canon);
			}
			memcpy(o[k].t.name, canon, len + 1);
			k++;
			o[k] = o[k - 1];
			o[k].t = *t;
		}
		uint32_t dt = 0;
		size_t rb = 0;
		if (!delta_type(cd, t->type, &dt))
			rb = krn_row_size(dt, t->ne[0]);
		if (!rb) {
			const struct krn_type_traits *tr = krn_type_traits(dt);
			free(o);
			return eng_error_set(err, -EINVAL, t->name, ENG_NO_OFFSET,
					     "delta type %s: its %u-element blocks do not divide the "
					     "row length %" PRIu64 "; pick another (q8_0 and q4_0 "
					     "take any multiple of 32)", tr ? tr->name : "?",
					     tr ? tr->block_size : 0, t->ne[0]);
		}
		char fmt[ENG_GGUF_MAX_NAME + 16], delta[ENG_GGUF_MAX_NAME + 16];
		snprintf(fmt, sizeof(fmt), "blk.%%d.%s", t->name + strcspn(t->name + 4, ".") + 5);
		eng_alias_names(fmt, NULL, delta);
		o[k].role = ALIAS_DELTA;
		o[k].t.type = dt;
		o[k].t.bytes = (uint64_t)rb * t->ne[1];
		o[k].kind = kind_hash(t->name);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(o[k].t.name, sizeof(o[k].t.name), delta, t->layer);
#pragma GCC diagnostic pop
		k++;
	}
	*out = o;
	*n = k;
	return 0;
}

/* Uniform on [-a, a] has standard deviation a / sqrt(3). */
static void fill_uniform(float *row, size_t n, uint64_t mix, float std, bool add)
{
	struct eng_rng rng;
	eng_rng_seed(&rng, eng_splitmix64(&mix));
	float a = std * sqrtf(3.0f);
	for (size_t i = 0; i < n; i++) {
		float v = a * (2.0f * eng_rng_float(&rng) - 1.0f);
		row[i] = add ? row[i] + v : v;
	}
}

static void canon_row(float *row, size_t n, uint64_t seed, uint64_t kind, uint64_t r)
{
	uint64_t mix = seed ^ 0x2545f4914f6cdd1dull ^ kind;
	mix ^= eng_splitmix64(&mix) + r * 0xbf58476d1ce4e5b9ull;
	fill_uniform(row, n, mix, MATRIX_STD, false);
}

static void delta_row(float *row, size_t n, uint64_t seed, uint64_t kind, int l, uint64_t r,
		      float std, bool add)
{
	uint64_t mix = seed ^ 0x94d049bb133111ebull ^ kind ^ ((uint64_t)l + 1) << 48;
	mix ^= eng_splitmix64(&mix) + r * 0xbf58476d1ce4e5b9ull;
	fill_uniform(row, n, mix, std, add);
}

void eng_alias_row(float *row, const struct alias_out *o, uint64_t seed, float rel_std, uint64_t r)
{
	size_t n = (size_t)o->t.ne[0];
	if (o->role == ALIAS_CANON || o->role == ALIAS_SUM)
		canon_row(row, n, seed, o->kind, r);
	if (o->role == ALIAS_DELTA || o->role == ALIAS_SUM)
		delta_row(row, n, seed, o->kind, o->t.layer, r, rel_std * MATRIX_STD,
			  o->role == ALIAS_SUM);
}
