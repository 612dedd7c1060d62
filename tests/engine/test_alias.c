/* tests/engine/test_alias.c: canonical + delta weights (engine/alias.h, issue 18 R3).
 *
 * Synthetic stories15M GGUF models (q8_0, core layers 2..3 sharing a canonical, q4_0 deltas):
 *  - synth: the same arguments give the same bytes; the metadata and tensor list say what
 *    alias.h says; the split form and the dense twin hold the same floats (f32, exact);
 *  - engine: the split model's logits, on the one-token, prefill-chunk and batched paths,
 *    plain and repacked (x8), against a reference model this test writes itself, whose core
 *    layers are W_c + D_l dequantized and added here, stored f32 (and against one without the
 *    deltas, to show the comparison can fail);
 *  - bytes: a step's weights and weights_unique against this test's sums over the tensor
 *    table;
 *  - headroom: mw_r3_measure's cosines of the reconstructed layers against this test's own;
 *  - bad files and bad options: a missing or misshapen delta names the file and the tensor.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "format/gguf.h"
#include "headroom.h"
#include "quants/quants.h"
#include "test.h"
#include "values.h"

#define PROMPT 8
static const int prompt[PROMPT] = { 1, 300, 301, 302, 303, 304, 305, 306 };
static char dir[] = "/tmp/mw-test-alias-XXXXXX";

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static int synth(const char *name, const char *quant, const char *spec, uint64_t seed)
{
	char p[512];
	struct eng_canonical_delta cd;
	struct eng_error err;
	path_of(p, sizeof(p), name);
	if (eng_canonical_delta_parse(spec, &cd, &err))
		return -EINVAL;
	/* varied (issue 26): the logits compared come from ids that change */
	struct eng_synth_opts o = { .construction = ENG_SYNTH_VARIED, .cd = &cd };
	int rc = eng_synth_gguf_opts(p, "llama", "stories15M", quant, seed, &o, &err);
	if (rc)
		fprintf(stderr, "synth %s: %s\n", name, err.text);
	return rc;
}

static bool same_file(const char *a, const char *b)
{
	char pa[512], pb[512];
	path_of(pa, sizeof(pa), a);
	path_of(pb, sizeof(pb), b);
	FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
	bool same = fa && fb;
	for (int ca = 0, cb = 0; same && ca != EOF;) {
		ca = fgetc(fa);
		cb = fgetc(fb);
		same = ca == cb;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* ---- Rewriting a GGUF file: the reference model and the bad files ------------------------ */

enum edit { E_REFERENCE, E_NO_DELTA, E_DROP, E_HALVE };

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* "blk.2.attn_q.delta" -> its canonical's tensor in g */
static const struct eng_gguf_tensor *canonical_of(const struct eng_gguf *g, const char *delta)
{
	char want[128];
	const char *kind = strchr(strchr(delta, '.') + 1, '.') + 1;
	snprintf(want, sizeof(want), "canonical.%.*s.weight", (int)(strlen(kind) - 6), kind);
	return eng_gguf_tensor_find(g, want);
}

/* Row r of tensor t in floats. */
static void row_f32(const struct eng_gguf_tensor *t, uint64_t r, float *out)
{
	size_t rb = krn_row_size(t->type, t->ne[0]);
	krn_type_traits(t->type)->to_float((const char *)t->data + r * rb, out, (size_t)t->ne[0]);
}

/* Copies src to dst with one edit: E_REFERENCE writes each delta's layer weight whole, f32,
 * W_c + D_l summed here (E_NO_DELTA: W_c alone), drops the canonicals and the
 * canonical_delta metadata; E_DROP leaves out tensor `name`; E_HALVE declares and writes
 * only the first half of its rows. */
static int rewrite(const char *src, const char *dst, enum edit e, const char *name)
{
	char ps[512], pd[512];
	struct eng_gguf *g = NULL;
	struct eng_gguf_writer *w = NULL;
	struct eng_error err;
	float *row = NULL, *tmp = NULL;
	int rc;
	path_of(ps, sizeof(ps), src);
	path_of(pd, sizeof(pd), dst);
	bool ref = e == E_REFERENCE || e == E_NO_DELTA;
	if ((rc = eng_gguf_open(&g, ps, NULL, &err)) ||
	    (rc = eng_gguf_writer_new(&w, pd, 0, &err)))
		goto out;
	for (uint64_t i = 0; !rc && i < eng_gguf_n_kv(g); i++) {
		const char *key;
		const struct eng_gguf_value *v = eng_gguf_kv(g, i, &key);
		if (!(ref && !strncmp(key, "memwall.canonical_delta.", 24)))
			rc = eng_gguf_writer_kv(w, key, v);
	}
	row = malloc(4096 * sizeof(float));
	tmp = malloc(4096 * sizeof(float));
	for (int pass = 0; !rc && pass < 2; pass++)
		for (uint64_t i = 0; !rc && i < eng_gguf_n_tensors(g); i++) {
			const struct eng_gguf_tensor *t = eng_gguf_tensor(g, i);
			bool named = name && !strcmp(t->name, name);
			if ((ref && !strncmp(t->name, "canonical.", 10)) || (e == E_DROP && named))
				continue;
			uint64_t ne[2] = { t->ne[0], t->ne[1] };
			if (ref && ends_with(t->name, ".delta")) {
				const struct eng_gguf_tensor *c = canonical_of(g, t->name);
				char wname[128];
				snprintf(wname, sizeof(wname), "%.*s.weight",
					 (int)(strlen(t->name) - 6), t->name);
				if (!pass) {
					rc = eng_gguf_writer_tensor(w, wname, KRN_TYPE_F32, 2, ne);
					continue;
				}
				for (uint64_t r = 0; !rc && r < ne[1]; r++) {
					row_f32(c, r, row);
					if (e == E_REFERENCE) {
						row_f32(t, r, tmp);
						for (uint64_t k = 0; k < ne[0]; k++)
							row[k] += tmp[k];
					}
					rc = eng_gguf_writer_data(w, row, ne[0] * sizeof(float));
				}
				continue;
			}
			if (e == E_HALVE && named)
				ne[1] /= 2;
			if (!pass)
				rc = eng_gguf_writer_tensor(w, t->name, t->type, t->n_dims, ne);
			else
				rc = eng_gguf_writer_data(w, t->data,
							  krn_row_size(t->type, ne[0]) * ne[1]);
		}
	if (!rc) {
		rc = eng_gguf_writer_commit(w, &err);
		w = NULL;
	}
out:
	if (rc)
		fprintf(stderr, "rewrite %s -> %s: %s\n", src, dst, err.text);
	eng_gguf_writer_abort(w);
	if (g)
		eng_gguf_close(g);
	free(row);
	free(tmp);
	return rc;
}

/* ---- Running the engine ------------------------------------------------------------------- */

enum path { P_ONE, P_PREFILL, P_BATCH };

/* Logits after each prompt position (P_PREFILL: the last only, in row PROMPT - 1), and the
 * last step's bytes (P_ONE). */
static int run(const char *name, enum eng_load_mode load, enum path p, float *logits, int vocab,
	       struct eng_step_bytes *bytes)
{
	char path[512];
	struct eng_model *m = NULL;
	struct eng_session *s = NULL;
	struct eng_error err;
	struct eng_model_options mo = { .load = load };
	struct eng_session_options so = { .threads = 2, .ctx_len = 32, .prefill_chunk = 4,
					  .n_seq = p == P_BATCH ? 2 : 1 };
	const float *lg;
	int rc;
	path_of(path, sizeof(path), name);
	if ((rc = eng_model_open(&m, path, &mo, &err)) || (rc = eng_session_new(&s, m, &so, &err))) {
		fprintf(stderr, "%s: %s\n", path, err.text);
		goto out;
	}
	for (int pos = 0; !rc && pos < PROMPT; pos++) {
		float *out = logits + (size_t)pos * (size_t)vocab;
		if (p == P_ONE) {
			rc = eng_session_step(s, prompt[pos], pos, &lg, bytes);
			if (!rc)
				memcpy(out, lg, (size_t)vocab * sizeof(float));
		} else if (p == P_BATCH) {
			int toks[2] = { prompt[pos], prompt[pos] }, ps[2] = { pos, pos };
			rc = eng_session_step_seqs(s, 2, NULL, toks, ps, &lg, NULL);
			/* both sequences see the same tokens: both rows are the single run's */
			if (!rc) {
				memcpy(out, lg + vocab, (size_t)vocab * sizeof(float));
				T_ASSERT(!memcmp(lg, lg + vocab, (size_t)vocab * sizeof(float)));
			}
		}
	}
	if (!rc && p == P_PREFILL) {
		rc = eng_session_prefill(s, prompt, PROMPT, 0, &lg, bytes);
		if (!rc)
			memcpy(logits + (size_t)(PROMPT - 1) * vocab, lg, (size_t)vocab * sizeof(float));
	}
out:
	eng_session_free(s);
	eng_model_close(m);
	return rc;
}

static double max_diff(const float *a, const float *b, size_t n)
{
	double d = 0;
	for (size_t i = 0; i < n; i++)
		d = fmax(d, fabs((double)a[i] - b[i]));
	return d;
}

/* The split model on every path and load against the reference written by this test. */
static void check_engine(const char *split, const char *ref, const char *nodelta)
{
	const int vocab = 32000;
	size_t n = (size_t)PROMPT * vocab;
	float *lr = calloc(n, sizeof(float)), *ln = calloc(n, sizeof(float)),
	      *ls = calloc(n, sizeof(float)), *l1 = calloc(n, sizeof(float));
	struct eng_step_bytes b;
	T_EQ_INT(run(ref, ENG_LOAD_MMAP, P_ONE, lr, vocab, &b), 0);
	T_EQ_INT(run(nodelta, ENG_LOAD_MMAP, P_ONE, ln, vocab, &b), 0);
	static const enum eng_load_mode loads[2] = { ENG_LOAD_MMAP, ENG_LOAD_REPACK };
	for (int li = 0; li < 2; li++) {
		T_EQ_INT(run(split, loads[li], P_ONE, l1, vocab, &b), 0);
		double d_ref = max_diff(l1, lr, n), d_nod = max_diff(l1, ln, n);
		fprintf(stderr, "%s one-token: max |logit - reference| %.5f, without deltas %.5f\n",
			li ? "repack" : "mmap", d_ref, d_nod);
		/* The deltas move the logits; the engine's canonical + delta must follow them. The
		 * reference runs f32 activations where the split model quantizes them to q8_0. */
		T_ASSERT(d_nod > 0.05);
		T_ASSERT(d_ref < 0.2 * d_nod);
		for (int pos = 0; pos < PROMPT; pos++)
			T_EQ_INT(t_argmax(l1 + (size_t)pos * vocab, vocab),
				 t_argmax(lr + (size_t)pos * vocab, vocab));
		/* The multi-token kernels give each token the one-token bits (engine.h). */
		memset(ls, 0, n * sizeof(float));
		T_EQ_INT(run(split, loads[li], P_PREFILL, ls, vocab, &b), 0);
		size_t last = (size_t)(PROMPT - 1) * vocab;
		T_ASSERT(!memcmp(ls + last, l1 + last, (size_t)vocab * sizeof(float)));
		T_EQ_INT(run(split, loads[li], P_BATCH, ls, vocab, &b), 0);
		T_ASSERT(!memcmp(ls, l1, n * sizeof(float)));
	}
	free(lr);
	free(ln);
	free(ls);
	free(l1);
}

/* ---- Bytes -------------------------------------------------------------------------------- */

/* A step's weight bytes by the tensor table's rules, from this test's own reading of it: the
 * embedding one row, a tied classifier the whole table, a canonical once per delta that uses
 * it (touched) or once (unique). */
static void table_bytes(const char *name, uint64_t *touched, uint64_t *unique,
			uint64_t *deltas)
{
	char p[512];
	struct eng_tensor_table *t = NULL;
	struct eng_error err;
	path_of(p, sizeof(p), name);
	*touched = *unique = *deltas = 0;
	T_EQ_INT(eng_tensors_from_file(p, &t, &err), 0);
	if (!t)
		return;
	bool tied = true;
	for (size_t i = 0; i < t->n; i++)
		tied &= strcmp(t->t[i].name, "output.weight") != 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct eng_tensor *x = &t->t[i];
		uint64_t b = x->file_bytes;
		if (!strcmp(x->name, "token_embd.weight")) {
			*touched += b / x->rows + (tied ? b : 0);
			*unique += b / x->rows + (tied ? b : 0);
		} else if (!strncmp(x->name, "canonical.", 10)) {
			/* users: the deltas of the same kind */
			char kind[96];
			snprintf(kind, sizeof(kind), ".%.*s.delta", (int)(strlen(x->name) - 17),
				 x->name + 10);
			uint64_t users = 0;
			for (size_t j = 0; j < t->n; j++)
				users += ends_with(t->t[j].name, kind);
			*touched += b * users;
			*unique += b;
		} else if (x->file_bytes) {
			*touched += b;
			*unique += b;
			if (ends_with(x->name, ".delta"))
				*deltas += b;
		}
	}
	eng_tensor_table_free(t);
}

static void check_bytes(const char *split, const char *dense)
{
	uint64_t touched, unique, deltas, dt, du, dd;
	table_bytes(split, &touched, &unique, &deltas);
	table_bytes(dense, &dt, &du, &dd);
	T_ASSERT(deltas > 0 && touched > unique);
	T_EQ_U64(du, dt);
	T_EQ_U64(dd, 0);
	/* The dense twin reads each shared layer whole in the canonical's type (q8_0 both). */
	T_EQ_U64(dt, touched - deltas);
	float *l = calloc((size_t)PROMPT * 32000, sizeof(float));
	struct eng_step_bytes b;
	T_EQ_INT(run(split, ENG_LOAD_MMAP, P_ONE, l, 32000, &b), 0);
	T_EQ_U64(b.weights, touched);
	T_EQ_U64(b.weights_unique, unique);
	T_EQ_INT(run(dense, ENG_LOAD_MMAP, P_ONE, l, 32000, &b), 0);
	T_EQ_U64(b.weights, dt);
	T_EQ_U64(b.weights_unique, dt);
	/* a prefill of two 4-token passes counts each canonical's repeats once per pass */
	T_EQ_INT(run(split, ENG_LOAD_REPACK, P_PREFILL, l, 32000, &b), 0);
	T_EQ_U64(b.weights - b.weights_unique, 2 * (touched - unique));
	free(l);
}

/* ---- Synth -------------------------------------------------------------------------------- */

static void check_synth_files(void)
{
	char p[512];
	struct eng_gguf *g = NULL;
	struct eng_error err;
	int64_t v;
	double f;
	struct eng_gguf_str s;
	T_EQ_INT(synth("split-again.gguf", "q8_0", "", 1), 0);
	T_EQ_INT(synth("split-seed2.gguf", "q8_0", "", 2), 0);
	T_ASSERT(same_file("split.gguf", "split-again.gguf"));
	T_ASSERT(!same_file("split.gguf", "split-seed2.gguf"));
	path_of(p, sizeof(p), "split.gguf");
	T_EQ_INT(eng_gguf_open(&g, p, NULL, &err), 0);
	if (!g)
		return;
	bool yes = false;
	T_EQ_INT(eng_gguf_get_bool(g, "memwall.synthetic", &yes, &err), 0);
	T_ASSERT(yes);
	T_EQ_INT(eng_gguf_get_str(g, "memwall.canonical_delta.form", &s, &err), 0);
	T_ASSERT(s.len == 5 && !memcmp(s.ptr, "split", 5));
	/* the contract's core zone of 6 layers: floor(2.4) .. floor(3.6) */
	T_EQ_INT(eng_gguf_get_int(g, "memwall.canonical_delta.first", &v, &err), 0);
	T_EQ_INT(v, 2);
	T_EQ_INT(eng_gguf_get_int(g, "memwall.canonical_delta.last", &v, &err), 0);
	T_EQ_INT(v, 3);
	T_EQ_INT(eng_gguf_get_float(g, "memwall.canonical_delta.rel_std", &f, &err), 0);
	T_NEAR(f, 0.05, 1e-7);
	const struct eng_gguf_tensor *c = eng_gguf_tensor_find(g, "canonical.ffn_down.weight");
	const struct eng_gguf_tensor *d = eng_gguf_tensor_find(g, "blk.3.ffn_down.delta");
	T_ASSERT(c && c->type == KRN_TYPE_Q8_0);
	T_ASSERT(d && d->type == KRN_TYPE_Q4_0);
	T_ASSERT(!eng_gguf_tensor_find(g, "blk.2.attn_q.weight"));
	T_ASSERT(!eng_gguf_tensor_find(g, "blk.4.attn_q.delta"));
	T_ASSERT(eng_gguf_tensor_find(g, "blk.4.attn_q.weight") != NULL);
	eng_gguf_close(g);
	g = NULL;
	path_of(p, sizeof(p), "dense.gguf");
	T_EQ_INT(eng_gguf_open(&g, p, NULL, &err), 0);
	if (g) {
		T_EQ_INT(eng_gguf_get_str(g, "memwall.canonical_delta.form", &s, &err), 0);
		T_ASSERT(s.len == 5 && !memcmp(s.ptr, "dense", 5));
		T_ASSERT(!eng_gguf_tensor_find(g, "canonical.attn_q.weight"));
		T_ASSERT(eng_gguf_tensor_find(g, "blk.2.attn_q.weight") != NULL);
		eng_gguf_close(g);
	}
}

/* f32 split (f32 deltas) and the f32 dense twin: W_c + D_l added here is the twin's row,
 * exactly; outside the shared layers the two files agree bit for bit. */
static void check_same_floats(void)
{
	char ps[512], pd[512];
	struct eng_gguf *gs = NULL, *gd = NULL;
	struct eng_error err;
	T_EQ_INT(synth("f32-split.gguf", "f32", "delta=f32", 1), 0);
	T_EQ_INT(synth("f32-dense.gguf", "f32", "dense", 1), 0);
	path_of(ps, sizeof(ps), "f32-split.gguf");
	path_of(pd, sizeof(pd), "f32-dense.gguf");
	T_EQ_INT(eng_gguf_open(&gs, ps, NULL, &err), 0);
	T_EQ_INT(eng_gguf_open(&gd, pd, NULL, &err), 0);
	if (!gs || !gd)
		goto out;
	const struct eng_gguf_tensor *c = eng_gguf_tensor_find(gs, "canonical.attn_v.weight");
	const struct eng_gguf_tensor *d = eng_gguf_tensor_find(gs, "blk.3.attn_v.delta");
	const struct eng_gguf_tensor *w = eng_gguf_tensor_find(gd, "blk.3.attn_v.weight");
	T_ASSERT(c && d && w);
	if (c && d && w) {
		const float *cf = c->data, *df = d->data, *wf = w->data;
		uint64_t bad = 0;
		double cc = 0, dd = 0;
		for (uint64_t i = 0; i < w->n_elements; i++) {
			bad += cf[i] + df[i] != wf[i];
			cc += (double)cf[i] * cf[i];
			dd += (double)df[i] * df[i];
		}
		T_EQ_U64(bad, 0);
		T_NEAR(sqrt(dd / cc), 0.05, 0.002); /* the documented rel_std */
	}
	const struct eng_gguf_tensor *a = eng_gguf_tensor_find(gs, "blk.1.ffn_up.weight");
	const struct eng_gguf_tensor *b = eng_gguf_tensor_find(gd, "blk.1.ffn_up.weight");
	T_ASSERT(a && b && a->n_bytes == b->n_bytes && !memcmp(a->data, b->data, a->n_bytes));
out:
	if (gs)
		eng_gguf_close(gs);
	if (gd)
		eng_gguf_close(gd);
}

/* ---- Headroom ----------------------------------------------------------------------------- */

static double cosine_of(const struct eng_gguf *g, int la, int lb, const char *kind)
{
	char na[96], nb[96];
	float ra[1024], rb[1024], t[1024];
	const struct eng_gguf_tensor *ta, *tb;
	double ab = 0, aa = 0, bb = 0;
	snprintf(na, sizeof(na), "blk.%d.%s.weight", la, kind);
	ta = eng_gguf_tensor_find(g, na);
	const struct eng_gguf_tensor *da = NULL, *db = NULL;
	if (!ta) {
		snprintf(na, sizeof(na), "blk.%d.%s.delta", la, kind);
		ta = da = eng_gguf_tensor_find(g, na);
	}
	snprintf(nb, sizeof(nb), "blk.%d.%s.weight", lb, kind);
	tb = eng_gguf_tensor_find(g, nb);
	if (!tb) {
		snprintf(nb, sizeof(nb), "blk.%d.%s.delta", lb, kind);
		tb = db = eng_gguf_tensor_find(g, nb);
	}
	if (!ta || !tb)
		return NAN;
	for (uint64_t r = 0; r < ta->ne[1]; r++) {
		row_f32(ta, r, ra);
		row_f32(tb, r, rb);
		if (da) {
			row_f32(canonical_of(g, da->name), r, t);
			for (uint64_t i = 0; i < ta->ne[0]; i++)
				ra[i] += t[i];
		}
		if (db) {
			row_f32(canonical_of(g, db->name), r, t);
			for (uint64_t i = 0; i < ta->ne[0]; i++)
				rb[i] += t[i];
		}
		for (uint64_t i = 0; i < ta->ne[0]; i++) {
			ab += (double)ra[i] * rb[i];
			aa += (double)ra[i] * ra[i];
			bb += (double)rb[i] * rb[i];
		}
	}
	return ab / sqrt(aa * bb);
}

static void check_headroom(void)
{
	static const char *const kinds[] = { "attn_q", "attn_k", "attn_v", "attn_output",
					     "ffn_gate", "ffn_up", "ffn_down" };
	char p[512];
	struct eng_tensor_table *t = NULL;
	struct eng_gguf *g = NULL;
	struct eng_error err;
	struct mw_r3 r3;
	path_of(p, sizeof(p), "split.gguf");
	T_EQ_INT(eng_tensors_from_file(p, &t, &err), 0);
	T_EQ_INT(eng_gguf_open(&g, p, NULL, &err), 0);
	if (!t || !g || mw_r3_measure(t, &r3)) {
		T_ASSERT(!"R3 measured");
		goto out;
	}
	/* The core zone of 6 layers is 2..3 and its threshold 0.95 (the reference's). */
	int core = 0, aliasable = 0, seen = 0;
	for (int lb = 2; lb <= 3; lb++)
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			double c = cosine_of(g, lb - 1, lb, kinds[k]);
			core++;
			aliasable += c >= 0.95;
			if (lb == 3) /* both share W_c: 1 / (1 + rel^2), quantization aside */
				T_NEAR(c, 1.0 / (1.0 + 0.05 * 0.05), 0.003);
			for (size_t i = 0; i < r3.n; i++)
				if (r3.pairs[i].layer == lb - 1 && !strcmp(r3.pairs[i].kind, kinds[k])) {
					seen++;
					T_NEAR(r3.pairs[i].cosine, c, 1e-9);
				}
		}
	T_EQ_INT(seen, core);
	T_EQ_INT(r3.core_blocks, core);
	T_EQ_INT(r3.core_aliasable, aliasable);
	T_NEAR(r3.aliasing_ratio, (double)aliasable / core, 1e-12);
	mw_r3_free(&r3);

	struct mw_r3_engine e;
	struct mw_error me;
	T_EQ_INT(mw_r3_engine_measure(p, &e, &me), 0);
	uint64_t touched, unique, deltas;
	table_bytes("split.gguf", &touched, &unique, &deltas);
	T_ASSERT(e.canonical);
	T_EQ_U64(e.touched, touched);
	T_EQ_U64(e.unique, unique);
	T_EQ_U64(e.dense, touched - deltas);
out:
	eng_tensor_table_free(t);
	if (g)
		eng_gguf_close(g);
}

/* ---- Bad files and options ---------------------------------------------------------------- */

static void expect_open_error(const char *name, const char *tensor)
{
	char p[512];
	struct eng_model *m = NULL;
	struct eng_error err;
	path_of(p, sizeof(p), name);
	eng_error_clear(&err);
	T_ASSERT(eng_model_open(&m, p, NULL, &err) < 0);
	T_CONTAINS(err.source, name);
	T_CONTAINS(err.text, tensor);
	eng_model_close(m);
}

static void check_bad(void)
{
	struct eng_canonical_delta cd;
	struct eng_error err;
	T_EQ_INT(rewrite("split.gguf", "no-delta.gguf", E_DROP, "blk.3.attn_k.delta"), 0);
	expect_open_error("no-delta.gguf", "blk.3.attn_k.delta");
	T_EQ_INT(rewrite("split.gguf", "no-canon.gguf", E_DROP, "canonical.ffn_up.weight"), 0);
	expect_open_error("no-canon.gguf", "canonical.ffn_up.weight");
	T_EQ_INT(rewrite("split.gguf", "half-delta.gguf", E_HALVE, "blk.2.ffn_gate.delta"), 0);
	expect_open_error("half-delta.gguf", "blk.2.ffn_gate.delta");
	/* q2_K's 256-element blocks do not divide stories15M's 288-wide rows */
	T_EQ_INT(synth("q2k.gguf", "q8_0", "delta=q2_K", 1), -EINVAL);
	T_EQ_INT(synth("far.gguf", "q8_0", "layers=4-9", 1), -EINVAL);
	char p[512];
	path_of(p, sizeof(p), "q2k.gguf");
	T_ASSERT(access(p, F_OK) != 0); /* nothing half-written is left */
	T_EQ_INT(eng_canonical_delta_parse("rel=0", &cd, &err), -EINVAL);
	T_CONTAINS(err.text, "rel=0");
	T_EQ_INT(eng_canonical_delta_parse("delta=q9_9", &cd, &err), -EINVAL);
	T_EQ_INT(eng_canonical_delta_parse("sideways", &cd, &err), -EINVAL);
	T_EQ_INT(eng_canonical_delta_parse("rel=0.1,delta=q4_0,layers=1-3,dense", &cd, &err), 0);
	T_NEAR(cd.rel_std, 0.1, 1e-12);
	T_EQ_STR(cd.delta_type, "q4_0");
	T_EQ_INT(cd.first, 1);
	T_EQ_INT(cd.last, 3);
	T_ASSERT(cd.dense);
}

int main(void)
{
	t_mkdtemp(dir);
	T_EQ_INT(synth("split.gguf", "q8_0", "", 1), 0);
	T_EQ_INT(synth("dense.gguf", "q8_0", "dense", 1), 0);
	/* deltas large enough (std 0.5 of W_c's) that leaving them out shows in the logits */
	T_EQ_INT(synth("big.gguf", "q8_0", "rel=0.5", 1), 0);
	T_EQ_INT(rewrite("big.gguf", "big-ref.gguf", E_REFERENCE, NULL), 0);
	T_EQ_INT(rewrite("big.gguf", "big-nodelta.gguf", E_NO_DELTA, NULL), 0);
	check_synth_files();
	check_same_floats();
	check_engine("big.gguf", "big-ref.gguf", "big-nodelta.gguf");
	check_bytes("split.gguf", "dense.gguf");
	check_headroom();
	check_bad();
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return t_done();
}
