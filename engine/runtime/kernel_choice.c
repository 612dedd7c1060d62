/* engine/runtime/kernel_choice.c: which quant table runs each operation (engine.h's struct
 * eng_kernel_choice, issue 42): the classes of token counts, the checks on a choice's entries,
 * and a session's resolution of its choice into tables (internal.h's qpick). */

#include "internal.h"

_Static_assert(KRN_TYPE_COUNT <= ENG_KC_TYPES, "eng_kernel_choice must index every type id");
_Static_assert(ENG_KC_CLASSES == 4, "eng_kernel_class names four classes");

/* The token count each class is measured at; a call's class is the largest not above it. */
static const int class_tokens[ENG_KC_CLASSES] = { 1, 2, 4, 8 };

int eng_kernel_class(int n_tok)
{
	int c = 0;
	while (c + 1 < ENG_KC_CLASSES && n_tok >= class_tokens[c + 1])
		c++;
	return c;
}

int eng_kernel_class_tokens(int c)
{
	return c >= 0 && c < ENG_KC_CLASSES ? class_tokens[c] : 0;
}

const char *eng_type_name(uint32_t t)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	return tr ? tr->name : NULL;
}

const char *eng_quant_kernels_name(size_t i, const char *type, bool *x8)
{
	size_t n;
	const struct krn_quant_ops *const *all = krn_quant_ops_all(&n);
	int t = type ? krn_type_from_name(type) : -1;
	for (size_t k = 0; k < n; k++) {
		if (!all[k]->supported())
			continue;
		if (i-- == 0) {
			if (x8)
				*x8 = t >= 0 && krn_quant_x8_native(all[k], (uint32_t)t);
			return all[k]->name;
		}
	}
	return NULL;
}

/* The tables this build and CPU run with x8 kernels of their own for type t, for messages */
static const char *x8_tables(uint32_t t, char *buf, size_t len)
{
	size_t n, used = 0;
	const struct krn_quant_ops *const *all = krn_quant_ops_all(&n);
	buf[0] = '\0';
	for (size_t k = 0; k < n && used < len; k++) {
		if (!all[k]->supported() || !krn_quant_x8_native(all[k], t))
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", all[k]->name);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (!used)
		snprintf(buf, len, "none");
	return buf;
}

/* The table `name` for type t's x8 weights: 0 with *out, or the error a choice naming it gets */
static int x8_table(uint32_t t, const char *name, const struct krn_quant_ops **out,
		    struct eng_error *err)
{
	char names[128];
	const struct krn_quant_ops *ops = krn_quant_ops_find(name);
	if (!ops || !strcmp(name, "auto"))
		return eng_error_set(err, -ENOTSUP, "", ENG_NO_OFFSET,
				     "kernel choice for %s: quant table '%s' is unknown or not one "
				     "this CPU runs; the tables with x8 kernels for %s here: %s",
				     krn_type_traits(t)->name, name, krn_type_traits(t)->name,
				     x8_tables(t, names, sizeof(names)));
	if (!krn_quant_x8_native(ops, t))
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "kernel choice for %s: quant table '%s' has no x8 kernel of its "
				     "own for it, so it would not give the other tables' bits; the "
				     "tables with x8 kernels for %s here: %s",
				     krn_type_traits(t)->name, name, krn_type_traits(t)->name,
				     x8_tables(t, names, sizeof(names)));
	*out = ops;
	return 0;
}

int eng_kernel_choice_set(struct eng_kernel_choice *c, const char *type, int tokens,
			  const char *table, struct eng_error *err)
{
	int t = krn_type_from_name(type);
	if (t < 0 || !krn_x8_layout((uint32_t)t))
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "kernel choice: '%s' is not a weight type with an x8 layout "
				     "(q4_0, q4_1, q5_0, q5_1, q8_0, q2_K .. q6_K, f16, bf16)", type);
	int cl = eng_kernel_class(tokens);
	if (tokens != class_tokens[cl])
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "kernel choice for %s: %d tokens is not a count a choice is "
				     "made for (1, 2, 4 or 8)", type, tokens);
	const struct krn_quant_ops *ops;
	int rc = x8_table((uint32_t)t, table, &ops, err);
	if (rc)
		return rc;
	snprintf(c->table[t][cl], sizeof(c->table[t][cl]), "%s", ops->name);
	return 0;
}

int eng_kchoice_resolve(struct eng_session *s, const struct eng_kernel_choice *c,
		    struct eng_error *err)
{
	for (uint32_t t = 0; t < KRN_TYPE_COUNT; t++)
		for (int cl = 0; cl < ENG_KC_CLASSES; cl++) {
			s->qpick[t][cl] = s->qops;
			if (!c || !c->table[t][cl][0])
				continue;
			const char *name = c->table[t][cl];
			if (!memchr(name, '\0', sizeof(c->table[t][cl])) || !krn_type_traits(t))
				return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
						     "kernel choice: entry %u/%d is not a table of "
						     "a known type", t, cl);
			int rc = x8_table(t, name, &s->qpick[t][cl], err);
			if (rc)
				return rc;
			/* the session's own calls of the type must give the same bits too */
			if (!krn_quant_x8_native(s->qops, t))
				return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
						     "kernel choice for %s: the session's quant "
						     "table '%s' has no x8 kernel of its own for "
						     "it, so choosing '%s' for some token counts "
						     "would change results; run with the default "
						     "kernels or without the choice",
						     krn_type_traits(t)->name, s->qops->name, name);
		}
	return 0;
}

const char *eng_session_op_kernels(const struct eng_session *s, uint32_t type_id, int n_tok)
{
	if (type_id >= KRN_TYPE_COUNT)
		return s->qops->name;
	return s->qpick[type_id][eng_kernel_class(n_tok)]->name;
}

/* Adds m's type (and its delta's) to the set `seen` where it is in the x8 layout */
static void note_x8(const struct eng_mat *m, bool seen[KRN_TYPE_COUNT])
{
	if (m->data && m->x8 && m->type < KRN_TYPE_COUNT)
		seen[m->type] = true;
	if (m->delta)
		note_x8(m->delta, seen);
}

int eng_session_x8_types(const struct eng_session *s, uint32_t *types, int max)
{
	bool seen[KRN_TYPE_COUNT] = { false };
	const struct eng_model *m = s->m;
	for (int l = 0; l < m->info.n_layers; l++) {
		const struct eng_layer *L = &m->layers[l];
		const struct eng_mat *mats[] = { &L->wq, &L->wk,     &L->wv,   &L->wqkv,
						 &L->wo, &L->w_gate, &L->w_up, &L->w_down };
		for (size_t i = 0; i < sizeof(mats) / sizeof(mats[0]); i++)
			note_x8(mats[i], seen);
	}
	note_x8(&m->output, seen);
	int n = 0;
	for (uint32_t t = 0; t < KRN_TYPE_COUNT; t++) {
		if (!seen[t])
			continue;
		if (n < max)
			types[n] = t;
		n++;
	}
	return n;
}
