/* tests/engine/test_kernel_choice.c: the kernel choice (engine/runtime/kernel_choice.c, issue
 * 42): a session may run a type's x8 weights on another quant table for some token counts.
 *
 * 1. What makes that safe: every table this CPU runs with x8 kernels of its own for a type
 *    gives the same bits as every other, for one token (matvec_x8) and for several
 *    (krn_quant_matmul), over token counts that cross the kernels' register blocks (2, 4),
 *    the unpacked chunks (8 and more) and a chunk's end (17), on rows of one tile and of
 *    several. Here (AVX2 only) one table has x8 kernels, and the part says so; under SIMDe
 *    (tests/engine/avx512-simde.sh) avx512 is compared with avx2.
 * 2. The classes of token counts, and eng_kernel_choice_set's refusals: a type without an x8
 *    layout, a count that is no class's own, a table unknown here, one without x8 kernels.
 * 3. A session with a choice: it reports the table of each operation, and runs prompts and
 *    batched steps of every class to the bits of a session without one (each table with x8
 *    kernels for all the model's types, on all classes and on all but each one in turn); a
 *    choice naming a table without x8 kernels is refused.
 */
#include <errno.h>
#include <unistd.h>

#include "engine.h"
#include "test.h"
#include "identity.h"
#include "quants/quants.h"

static uint64_t rng = 42;
static float next_unit(void) /* uniform in [-1, 1) */
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

/* ---- 1. The tables agree ------------------------------------------------------------------ */

#define ROWS (4 * KRN_X8)
#define TOK_MAX 17

/* The tables this CPU runs with x8 kernels of their own for t, into tab; their count */
static int x8_tables(uint32_t t, const struct krn_quant_ops **tab, int max)
{
	size_t n;
	const struct krn_quant_ops *const *all = krn_quant_ops_all(&n);
	int k = 0;
	for (size_t i = 0; i < n && k < max; i++)
		if (all[i]->supported() && krn_quant_x8_native(all[i], t))
			tab[k++] = all[i];
	return k;
}

/* y[TOK_MAX][ROWS] of table ops for nt tokens (nt == 1: its matvec_x8) */
static void run_table(const struct krn_quant_ops *ops, uint32_t t, float *y, const uint8_t *w,
		      const uint8_t *aq, size_t ab, size_t nt, size_t n)
{
	if (nt == 1)
		krn_quant_matvec_x8(ops, t, y, w, ROWS, aq, n, 0, ROWS);
	else
		krn_quant_matmul(ops, t, true, y, ROWS, w, ROWS, aq, ab, nt, n, 0, ROWS);
}

static void check_tables_agree(void)
{
	static const uint32_t types[] = { KRN_TYPE_Q4_0, KRN_TYPE_Q4_1, KRN_TYPE_Q5_0,
					  KRN_TYPE_Q5_1, KRN_TYPE_Q8_0, KRN_TYPE_Q2_K,
					  KRN_TYPE_Q3_K, KRN_TYPE_Q4_K, KRN_TYPE_Q5_K,
					  KRN_TYPE_Q6_K, KRN_TYPE_F16,  KRN_TYPE_BF16 };
	static const size_t lengths[] = { 768, 12544 }, tokens[] = { 1, 2, 3, 4, 5, 8, 9, 17 };
	int compared = 0;
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		uint32_t t = types[k];
		const struct krn_type_traits *tr = krn_type_traits(t);
		const struct krn_quant_ops *tab[8];
		int n_tab = x8_tables(t, tab, 8);
		if (n_tab < 2) {
			printf("  %s: %d table%s with x8 kernels on this CPU (%s): nothing to "
			       "compare\n", tr->name, n_tab, n_tab == 1 ? "" : "s",
			       n_tab ? tab[0]->name : "none");
			continue;
		}
		for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
			size_t n = lengths[l], rb = krn_row_size(t, n);
			size_t ab = krn_row_size(tr->vec_dot_type, n);
			float *f = malloc(n * sizeof(float));
			float *y0 = malloc(sizeof(float) * ROWS * TOK_MAX);
			float *y1 = malloc(sizeof(float) * ROWS * TOK_MAX);
			uint8_t *w = malloc(ROWS * rb), *aq = malloc(TOK_MAX * ab);
			uint8_t *tmp = malloc(krn_x8_repack_scratch(t, n, ROWS));
			T_ASSERT(f && y0 && y1 && w && aq && tmp);
			for (size_t r = 0; r < ROWS; r++) {
				for (size_t i = 0; i < n; i++)
					f[i] = (r % 5 == 3 ? 3.0f : 0.05f) * next_unit();
				tr->from_float_ref(f, w + r * rb, n);
			}
			krn_x8_repack(t, w, n, ROWS, tmp);
			for (size_t j = 0; j < TOK_MAX; j++) {
				for (size_t i = 0; i < n; i++)
					f[i] = (j % 3 ? 2.0f : 40.0f) * next_unit();
				tab[0]->quantize_act[tr->vec_dot_type](f, aq + j * ab, n);
			}
			for (size_t c = 0; c < sizeof(tokens) / sizeof(tokens[0]); c++) {
				size_t nt = tokens[c];
				run_table(tab[0], t, y0, w, aq, ab, nt, n);
				for (int i = 1; i < n_tab; i++) {
					run_table(tab[i], t, y1, w, aq, ab, nt, n);
					for (size_t j = 0; j < nt; j++)
						if (memcmp(y0 + j * ROWS, y1 + j * ROWS,
							   ROWS * sizeof(float)))
							T_FAIL_AT(__FILE__, __LINE__,
								  "%s n %zu, %zu tokens, token %zu: "
								  "%s's bits differ from %s's",
								  tr->name, n, nt, j, tab[i]->name,
								  tab[0]->name);
					t_checks++;
					compared++;
				}
			}
			free(f);
			free(y0);
			free(y1);
			free(w);
			free(aq);
			free(tmp);
		}
		printf("  %s: %d tables with x8 kernels, the same bits\n", tr->name, n_tab);
	}
	printf("tables agree: %d comparisons\n", compared);
}

/* ---- 2. Classes and entries ---------------------------------------------------------------- */

static void check_classes(void)
{
	/* the largest class count (1, 2, 4, 8) not above n */
	static const int n_of[] = { 1, 2, 3, 4, 5, 7, 8, 9, 64, 128 };
	static const int want[] = { 0, 1, 1, 2, 2, 2, 3, 3, 3, 3 };
	for (size_t i = 0; i < sizeof(n_of) / sizeof(n_of[0]); i++)
		T_EQ_INT(eng_kernel_class(n_of[i]), want[i]);
	for (int c = 0; c < ENG_KC_CLASSES; c++)
		T_EQ_INT(eng_kernel_class_tokens(c), 1 << c);
	T_EQ_INT(eng_kernel_class_tokens(-1), 0);
	T_EQ_INT(eng_kernel_class_tokens(ENG_KC_CLASSES), 0);
}

/* A table this CPU runs without x8 kernels for type, or NULL */
static const char *table_without_x8(const char *type)
{
	const char *name;
	bool x8;
	for (size_t i = 0; (name = eng_quant_kernels_name(i, type, &x8)); i++)
		if (!x8)
			return name;
	return NULL;
}

static void check_entries(void)
{
	struct eng_kernel_choice c;
	struct eng_error err;
	memset(&c, 0, sizeof(c));
	bool x8;
	const char *def = eng_quant_kernels_name(0, "q4_0", &x8);
	T_ASSERT(def != NULL);
	if (!def)
		return;
	if (x8) {
		T_EQ_INT(eng_kernel_choice_set(&c, "q4_0", 2, def, &err), 0);
		T_EQ_STR(c.table[KRN_TYPE_Q4_0][1], def);
		T_EQ_STR(c.table[KRN_TYPE_Q4_0][0], "");
	}
	T_EQ_INT(eng_kernel_choice_set(&c, "q9_9", 2, def, &err), -EINVAL);
	T_ASSERT(strstr(err.text, "'q9_9'") != NULL);
	T_EQ_INT(eng_kernel_choice_set(&c, "f32", 1, def, &err), -EINVAL);
	T_ASSERT(strstr(err.text, "x8 layout") != NULL);
	T_EQ_INT(eng_kernel_choice_set(&c, "q4_0", 3, def, &err), -EINVAL);
	T_ASSERT(strstr(err.text, "1, 2, 4 or 8") != NULL);
	T_EQ_INT(eng_kernel_choice_set(&c, "q4_0", 1, "nonesuch", &err), -ENOTSUP);
	T_ASSERT(strstr(err.text, "'nonesuch'") != NULL);
	const char *no_x8 = table_without_x8("q4_0");
	if (no_x8) {
		T_EQ_INT(eng_kernel_choice_set(&c, "q4_0", 4, no_x8, &err), -EINVAL);
		T_ASSERT(strstr(err.text, "no x8 kernel") != NULL);
	}
	T_EQ_STR(c.table[KRN_TYPE_Q4_0][2], ""); /* the refusals left it alone */
}

/* ---- 3. Sessions with a choice --------------------------------------------------------------- */

#define STEPS 3
#define N_SEQ 4

/* A pass of each class: sequence 0's 9-token prompt (8 and more), sequence 1's 2-token one
 * (2-3), sequences 2 and 3's one token each (1), then STEPS steps of all N_SEQ (4-7). lg
 * receives the prompts' logits, then each step's every sequence (vocab floats each). */
static int run_session(struct eng_model *m, const struct eng_kernel_choice *c, float *lg,
		       struct eng_error *err)
{
	struct eng_session_options o = { .threads = 1, .n_seq = N_SEQ, .kernel_choice = c };
	struct eng_session *s = NULL;
	size_t vocab = (size_t)eng_model_info(m)->vocab_size;
	const float *out;
	int rc;
	if ((rc = eng_session_new(&s, m, &o, err)))
		return rc;
	static const int prompt[9] = { 1, 7, 8, 9, 10, 11, 12, 13, 14 };
	static const int len[N_SEQ] = { 9, 2, 1, 1 };
	int pos[N_SEQ], tok[N_SEQ];
	for (int q = 0; q < N_SEQ; q++) {
		T_EQ_INT(eng_session_prefill_seq(s, q, prompt + q, len[q], 0, &out, NULL), 0);
		memcpy(lg + (size_t)q * vocab, out, sizeof(float) * vocab);
		pos[q] = len[q];
	}
	for (int k = 0; k < STEPS; k++) {
		for (int q = 0; q < N_SEQ; q++)
			tok[q] = 20 + 3 * k + q;
		T_EQ_INT(eng_session_step_seqs(s, N_SEQ, NULL, tok, pos, &out, NULL), 0);
		memcpy(lg + (size_t)(N_SEQ + k * N_SEQ) * vocab, out,
		       sizeof(float) * vocab * N_SEQ);
		for (int q = 0; q < N_SEQ; q++)
			pos[q]++;
	}
	eng_session_free(s);
	return 0;
}

/* With every class of every x8 type on table `table` but class `cl` on the default (or all of
 * them on it, cl < 0), the session's reports and bits */
static void check_choice(struct eng_model *m, const uint32_t *types, int n_types,
			 const char *table, int cl, const float *want, float *got, size_t count)
{
	struct eng_kernel_choice c;
	struct eng_error err;
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < n_types; i++)
		for (int k = 0; k < ENG_KC_CLASSES; k++)
			if (k != cl)
				T_EQ_INT(eng_kernel_choice_set(&c, eng_type_name(types[i]),
							       eng_kernel_class_tokens(k), table,
							       &err),
					 0);
	struct eng_session_options o = { .threads = 1, .kernel_choice = &c };
	struct eng_session *s = NULL;
	T_EQ_INT(eng_session_new(&s, m, &o, &err), 0);
	if (s) {
		for (int i = 0; i < n_types; i++)
			for (int n = 1; n <= 9; n++) {
				int k = eng_kernel_class(n);
				T_EQ_STR(eng_session_op_kernels(s, types[i], n),
					 k == cl ? eng_session_quant_kernels(s) : table);
			}
		eng_session_free(s);
	}
	T_EQ_INT(run_session(m, &c, got, &err), 0);
	T_ASSERT(!memcmp(want, got, count * sizeof(float)));
	printf("  choice of %s (class %d left to the default): the default's bits\n", table, cl);
}

static void check_sessions(void)
{
	static char dir[] = "/tmp/mw-test-kchoice-XXXXXX";
	char path[4200];
	struct eng_model *m = NULL;
	struct eng_error err;
	T_ASSERT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/s15m.gguf", dir);
	struct eng_model_options mo = { .load = ENG_LOAD_REPACK };
	if (t_id_synth_gguf(path, "llama", "stories15M", "q4_k_m", 3, ENG_SYNTH_VARIED) ||
	    eng_model_open(&m, path, &mo, &err)) {
		T_FAIL_AT(__FILE__, __LINE__, "the synthetic model did not open");
		goto out;
	}
	uint32_t types[ENG_KC_TYPES];
	struct eng_session *s = NULL;
	struct eng_session_options o = { .threads = 1 };
	T_EQ_INT(eng_session_new(&s, m, &o, &err), 0);
	int n_types = s ? eng_session_x8_types(s, types, ENG_KC_TYPES) : 0;
	T_ASSERT(n_types > 0); /* q4_k_m repacked: q4_K, q6_K and the like */
	for (int i = 0; s && i < n_types; i++)
		for (int n = 1; n <= 9; n++) /* no choice: the session's table everywhere */
			T_EQ_STR(eng_session_op_kernels(s, types[i], n),
				 eng_session_quant_kernels(s));
	eng_session_free(s);
	int vocab = eng_model_info(m)->vocab_size;
	size_t count = (size_t)vocab * (N_SEQ + STEPS * N_SEQ);
	float *want = malloc(count * sizeof(float)), *got = malloc(count * sizeof(float));
	T_ASSERT(want && got);
	T_EQ_INT(run_session(m, NULL, want, &err), 0);
	/* every table with x8 kernels for all the model's x8 types, each class in turn left to
	 * the default */
	const char *name;
	for (size_t i = 0; (name = eng_quant_kernels_name(i, NULL, NULL)); i++) {
		bool all = true, x8;
		for (int k = 0; k < n_types; k++) {
			eng_quant_kernels_name(i, eng_type_name(types[k]), &x8);
			all = all && x8;
		}
		if (!all)
			continue;
		for (int cl = -1; cl < ENG_KC_CLASSES; cl++)
			check_choice(m, types, n_types, name, cl, want, got, count);
	}
	/* a table without x8 kernels of its own for a type is refused at the entry, and a
	 * struct filled by hand with one is refused by the session */
	const char *no_x8 = table_without_x8(eng_type_name(types[0]));
	if (no_x8) {
		struct eng_kernel_choice c;
		memset(&c, 0, sizeof(c));
		snprintf(c.table[types[0]][1], sizeof(c.table[types[0]][1]), "%s", no_x8);
		struct eng_session_options ob = { .threads = 1, .kernel_choice = &c };
		T_EQ_INT(eng_session_new(&s, m, &ob, &err), -EINVAL);
		T_ASSERT(strstr(err.text, "no x8 kernel") != NULL);
	}
	free(want);
	free(got);
out:
	eng_model_close(m);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	check_tables_agree();
	check_classes();
	check_entries();
	check_sessions();
	return t_done();
}
