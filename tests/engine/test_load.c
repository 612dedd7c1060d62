/* tests/engine/test_load.c: the copying load modes (engine/hugecopy.c, gguf_model.c's fill): the
 * one-pass parallel repack gives, byte for byte, the file with each packed matrix put through
 * krn_x8_repack in place (the per-tensor repack this loader did before); huge-copy gives the
 * file as it is; a load stopped by the cancellation flag, before or during the fill, leaves no
 * mapping and no descriptor behind.
 *
 * The packers that re-encode bits are also checked against their layouts written out element
 * by element here.
 *
 * The models are synthetic (eng_synth_gguf): stories15M's embedding (32000 rows of q8_0,
 * 9.8 MB) spans several 2 MiB pieces, so one matrix is packed by several threads.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "format/gguf.h"
#include "model/model.h"
#include "quants/quants.h"
#include "test.h"
#include "identity.h"

static char dir[] = "/tmp/mw-test-load-XXXXXX";

/* The matrices of m the repack may have packed. */
static size_t model_mats(struct eng_model *m, struct eng_mat **out, size_t cap)
{
	size_t n = 0;
	out[n++] = &m->token_embd;
	if (!m->info.shared_classifier)
		out[n++] = &m->output;
	for (int l = 0; l < m->info.n_layers; l++) {
		struct eng_layer *L = &m->layers[l];
		struct eng_mat *lm[] = { &L->wq, &L->wk, &L->wv, &L->wqkv, &L->wo,
					 &L->w_gate, &L->w_up, &L->w_down };
		for (size_t i = 0; i < sizeof(lm) / sizeof(lm[0]) && n < cap; i++)
			if (lm[i]->data)
				out[n++] = lm[i];
	}
	return n;
}

/* Loads path with mode and compares its image with the file, every packed matrix put through
 * krn_x8_repack in a copy of the file. Returns how many matrices were packed. */
static int check_image(const char *path, enum eng_load_mode mode)
{
	size_t len = 0;
	unsigned char *want = t_slurp(path, &len);
	struct eng_model *m = NULL;
	struct eng_error err;
	int packed = 0;
	T_ASSERT(want != NULL);
	if (!want)
		return 0;
	struct eng_model_options mo = { .load = mode };
	T_EQ_INT(eng_model_open(&m, path, &mo, &err), 0);
	if (!m) {
		fprintf(stderr, "%s: %s\n", path, err.text);
		free(want);
		return 0;
	}
	const unsigned char *img = eng_gguf_base(m->gguf);
	T_ASSERT(img != want);
	static struct eng_mat *mats[4096];
	size_t n = model_mats(m, mats, 4096);
	for (size_t i = 0; i < n; i++) {
		struct eng_mat *w = mats[i];
		if (!w->x8)
			continue;
		T_EQ_INT(mode, ENG_LOAD_REPACK);
		size_t off = (size_t)((const unsigned char *)w->data - img);
		size_t cols = (size_t)w->cols, rows = (size_t)w->rows;
		void *tmp = malloc(krn_x8_repack_scratch(w->type, cols, rows));
		krn_x8_repack(w->type, want + off, cols, rows, tmp);
		free(tmp);
		packed++;
	}
	size_t first = len;
	for (size_t i = 0; i < len && first == len; i++)
		if (img[i] != want[i])
			first = i;
	if (first != len)
		T_FAIL_AT(__FILE__, __LINE__, "%s (%s): the image differs from the file repacked "
			  "tensor by tensor at byte %zu of %zu", path, eng_load_mode_name(mode),
			  first, len);
	const struct eng_load_report *r = eng_model_load_report(m);
	T_EQ_INT(r->mode, mode);
	T_ASSERT(r->threads >= 1);
	printf("%s %s: %d matrices packed, %d threads, %lld bytes in 2 MiB pages\n", path,
	       eng_load_mode_name(mode), packed, r->threads, (long long)r->huge_bytes);
	eng_model_close(m);
	free(want);
	return packed;
}

/* krn_x8_pack on every type with an x8 layout, rows wide enough to be tiled (KRN_X8_TILE_COLS;
 * Falcon-7B's ffn_down is, no synthetic model here is), the last tile shorter, packed group by
 * group in separate calls out of place: the bytes krn_x8_repack gives in place. The bytes are
 * random: packing moves and re-encodes bits without reading them as numbers. */
static void check_pack_tiled(void)
{
	int types = 0;
	for (uint32_t t = 0; t < KRN_TYPE_COUNT; t++) {
		if (!krn_x8_layout(t))
			continue;
		const struct krn_type_traits *tr = krn_type_traits(t);
		/* 2.25 tiles of blocks: two whole tiles and a short one */
		size_t n = (size_t)KRN_X8_TILE_COLS * 9 / 4 / tr->block_size * tr->block_size;
		size_t rows = 3 * KRN_X8, bytes = krn_row_size(t, n) * rows, tb;
		T_ASSERT(krn_x8_tiles(n / tr->block_size, tr->block_size, &tb) == 2);
		unsigned char *src = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
		void *tmp = malloc(krn_x8_repack_scratch(t, n, rows));
		srand(t + 1);
		for (size_t i = 0; i < bytes; i++)
			src[i] = (unsigned char)rand();
		memcpy(want, src, bytes);
		krn_x8_repack(t, want, n, rows, tmp);
		memset(got, 0xa5, bytes);
		krn_x8_pack(t, got, src, n, rows, 2, 3);
		krn_x8_pack(t, got, src, n, rows, 0, 2);
		if (memcmp(got, want, bytes))
			T_FAIL_AT(__FILE__, __LINE__, "type %s: krn_x8_pack differs from krn_x8_repack "
				  "on %zu x %zu", tr->name, rows, n);
		T_ASSERT(memcmp(src, want, bytes) != 0); /* the layout did move bytes */
		types++;
		free(src);
		free(want);
		free(got);
		free(tmp);
	}
	T_ASSERT(types >= 6);
}

/* ggml's 5- and 6-bit quants (0 .. 31, 0 .. 63) of a block, element by element, as its
 * dequantize_row_q5_0 / _q5_K / _q6_K read them: the test's own reading of the formats. */
static int q5_0_quant(const uint8_t *qh4, const uint8_t *qs, int i)
{
	uint32_t qh = qh4[0] | qh4[1] << 8 | qh4[2] << 16 | (uint32_t)qh4[3] << 24;
	return (qs[i % 16] >> (4 * (i / 16)) & 15) | (int)(qh >> i & 1) << 4;
}

static int q5_K_quant(const uint8_t *b, int i)
{
	const uint8_t *qh = b + 16, *qs = b + 48;
	int c = i / 64, j = i % 64;
	return (qs[32 * c + j % 32] >> (4 * (j / 32)) & 15) | (qh[j % 32] >> (2 * c + j / 32) & 1) << 4;
}

static int q6_K_quant(const uint8_t *b, int i)
{
	const uint8_t *ql = b, *qh = b + 128;
	int h = i / 128, s = i % 128 / 32, l = i % 32;
	return (ql[64 * h + 32 * (s & 1) + l] >> (4 * (s >> 1)) & 15) |
	       (qh[32 * h + l] >> (2 * s) & 3) << 4;
}

/* One packed block of the eight rows' blocks b[r], byte by byte as the layout comments of
 * x8_legacy.c and x8_kquants.c describe it, for the types whose packers re-encode bits. */
static void layout_q5(uint8_t *o, const uint8_t *const b[KRN_X8], size_t qh_at, size_t qs_at)
{
	for (int r = 0; r < KRN_X8; r++)
		for (int c = 0; c < 4; c++)
			for (int k = 0; k < 4; k++) {
				int a = q5_0_quant(b[r] + qh_at, b[r] + qs_at, 4 * c + k);
				int h = q5_0_quant(b[r] + qh_at, b[r] + qs_at, 16 + 4 * c + k);
				o[32 * c + 4 * r + k] = (uint8_t)(a | (h >> 2) << 5);
				o[128 + 4 * r + k] |= (uint8_t)((h & 3) << (2 * c));
			}
}

static void layout_block(uint32_t t, uint8_t *o, const uint8_t *const b[KRN_X8])
{
	size_t bs = krn_type_traits(t)->type_size;
	memset(o, 0, KRN_X8 * bs);
	for (int r = 0; r < KRN_X8; r++) {
		if (t == KRN_TYPE_Q6_K) {
			memcpy(o + 2 * r, b[r] + 208, 2);
			for (int s = 0; s < 16; s++)
				o[16 + 8 * s + r] = b[r][192 + s];
			for (int p = 0; p < 8; p++)
				for (int k = 0; k < 4; k++)
					for (int m = 0; m < 4; m++) {
						uint8_t *d = o + 144 + 192 * p + 4 * r + m;
						int a = q6_K_quant(b[r], 32 * p + 4 * k + m);
						int v = q6_K_quant(b[r], 32 * p + 16 + 4 * k + m);
						d[32 * k] = (uint8_t)(a | (v >> 4) << 6);
						d[128 + 32 * (k / 2)] |= (uint8_t)((v & 15) << (4 * (k % 2)));
					}
		} else if (t == KRN_TYPE_Q5_K) {
			memcpy(o + 2 * r, b[r], 2);
			memcpy(o + 16 + 2 * r, b[r] + 2, 2);
			for (int k = 0; k < 3; k++)
				memcpy(o + 32 + 32 * k + 4 * r, b[r] + 4 + 4 * k, 4);
			for (int q = 0; q < 8; q++)
				for (int c = 0; c < 4; c++)
					for (int m = 0; m < 4; m++) {
						uint8_t *d = o + 128 + 160 * q + 4 * r + m;
						int a = q5_K_quant(b[r], 64 * c + 4 * q + m);
						int h = q5_K_quant(b[r], 64 * c + 32 + 4 * q + m);
						d[32 * c] = (uint8_t)(a | (h >> 2) << 5);
						d[128] |= (uint8_t)((h & 3) << (2 * c));
					}
		} else if (t == KRN_TYPE_Q5_1) {
			memcpy(o + 2 * r, b[r], 2);
			memcpy(o + 16 + 2 * r, b[r] + 2, 2);
		} else {
			memcpy(o + 2 * r, b[r], 2);
		}
	}
	if (t == KRN_TYPE_Q5_0)
		layout_q5(o + 16, b, 2, 6);
	if (t == KRN_TYPE_Q5_1)
		layout_q5(o + 32, b, 4, 8);
}

/* The packers that re-encode bits (q5_0, q5_1, q5_K, q6_K: word vectors, x8_legacy.c and
 * x8_kquants.c) against the layouts written out element by element above, on random blocks;
 * and no packer reads past its blocks: the tensor ends at a page that cannot be read (a read
 * there, say a vector load wider than the last block, would crash the test). */
static void check_pack_layouts(void)
{
	static const uint32_t types[] = { KRN_TYPE_Q5_0, KRN_TYPE_Q5_1, KRN_TYPE_Q5_K,
					  KRN_TYPE_Q6_K };
	long pg = sysconf(_SC_PAGESIZE);
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		uint32_t t = types[ti];
		const struct krn_type_traits *tr = krn_type_traits(t);
		size_t nb = 3, n = nb * tr->block_size, rows = 2 * KRN_X8, bs = tr->type_size;
		size_t rb = krn_row_size(t, n), group = KRN_X8 * rb;
		size_t span = ((rows * rb + (size_t)pg - 1) / (size_t)pg + 1) * (size_t)pg;
		uint8_t *map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				    -1, 0);
		T_ASSERT(map != MAP_FAILED);
		if (map == MAP_FAILED)
			return;
		/* the tensor's last byte is the last before the guard page */
		uint8_t *src = map + span - (size_t)pg - rows * rb;
		T_EQ_INT(mprotect(map + span - (size_t)pg, (size_t)pg, PROT_NONE), 0);
		srand(100 + t);
		for (size_t i = 0; i < rows * rb; i++)
			src[i] = (uint8_t)rand();
		uint8_t *got = calloc(rows, rb), *want = calloc(1, KRN_X8 * bs);
		/* the groups in separate calls, the last first */
		krn_x8_pack(t, got, src, n, rows, 1, 2);
		krn_x8_pack(t, got, src, n, rows, 0, 1);
		for (size_t g = 0; g < rows / KRN_X8; g++)
			for (size_t i = 0; i < nb; i++) {
				const uint8_t *blk[KRN_X8];
				for (int r = 0; r < KRN_X8; r++)
					blk[r] = src + g * group + (size_t)r * rb + i * bs;
				layout_block(t, want, blk);
				size_t at = krn_x8_offset(rows, nb, tr->block_size, bs, g, i);
				if (memcmp(got + at, want, KRN_X8 * bs))
					T_FAIL_AT(__FILE__, __LINE__, "type %s: group %zu block %zu "
						  "packed otherwise than its layout says", tr->name, g,
						  i);
			}
		free(got);
		free(want);
		munmap(map, span);
	}
}

/* What a load of path could leave behind: open descriptors, mappings of the file, and
 * anonymous mappings of the copy's size (the file's rounded up to 2 MiB; the allocator's own
 * mappings, ASan's among them, come and go in other sizes). */
static int leftovers(const char *path)
{
	struct stat st;
	int n = 0;
	char line[4600];
	if (stat(path, &st))
		return -1;
	unsigned long copy = ((unsigned long)st.st_size + (2ul << 20) - 1) & ~((2ul << 20) - 1);
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		if (strstr(line, path) ||
		    (sscanf(line, "%lx-%lx", &a, &b) == 2 && b - a == copy && !strchr(line, '/')))
			n++;
	}
	if (f)
		fclose(f);
	DIR *d = opendir("/proc/self/fd");
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static atomic_int flag;

static void *raise_later(void *arg)
{
	long ns = *(long *)arg;
	nanosleep(&(struct timespec){ .tv_sec = 0, .tv_nsec = ns }, NULL);
	flag = SIGINT;
	return NULL;
}

/* Stopped before the fill and at several moments in it: -ECANCELED naming the step, or (too
 * late to stop) a whole model; either way nothing left behind once closed. */
static void check_cancel(const char *path)
{
	static long delays[] = { 0, 200000, 1000000, 3000000, 10000000 };
	struct eng_error err;
	eng_cancel_hook(&flag);
	for (int mode = ENG_LOAD_HUGE_COPY; mode <= ENG_LOAD_REPACK; mode++) {
		flag = SIGINT;
		int before = leftovers(path);
		struct eng_model *m = NULL;
		struct eng_model_options mo = { .load = (enum eng_load_mode)mode };
		T_EQ_INT(eng_model_open(&m, path, &mo, &err), -ECANCELED);
		T_ASSERT(m == NULL);
		T_CONTAINS(err.text, "stopped by a signal while reading the model");
		T_EQ_INT(leftovers(path), before);
		int stopped = 0;
		/* Round -1 unmeasured: glibc keeps the stacks of joined threads for the next ones
		 * (the timer's beside the fill's), a mapping that is not the loader's. */
		for (int i = -1; i < (int)(sizeof(delays) / sizeof(delays[0])); i++) {
			pthread_t th;
			flag = 0;
			before = leftovers(path);
			T_EQ_INT(pthread_create(&th, NULL, raise_later, &delays[i < 0 ? 4 : i]), 0);
			int rc = eng_model_open(&m, path, &mo, &err);
			pthread_join(th, NULL);
			T_ASSERT(rc == 0 || rc == -ECANCELED);
			T_ASSERT((rc == 0) == (m != NULL));
			eng_model_close(m);
			m = NULL;
			if (i < 0)
				continue;
			stopped += rc == -ECANCELED;
			T_EQ_INT(leftovers(path), before);
		}
		printf("%s: stopped %d of 5 timed loads\n", eng_load_mode_name(mode), stopped);
	}
	eng_cancel_hook(NULL);
}

/* Greedy logits under each load mode (issue 26), on the varied construction, whose ids
 * change at every step: huge-copy holds the file's bytes and runs the same kernels, so its
 * logits equal the mapping's bit for bit. Repack runs the x8 kernels, which add the same
 * integer block sums in another order: each dot product moves by a few float roundings
 * (2^-24 relative each), and a layer's input, rounded to q8_0 (steps of 1/127 of a block's
 * largest value), may then round one step the other way: a change of at most 1/127 = 7.9e-3
 * of that block's largest value, passed on by the layers after it. The check allows 1e-2 of
 * the largest |logit| and requires the same ids, which the construction's top-1 margin (over
 * 0.3 of the top logit, test_synth) keeps apart from such a change. */
#define LOAD_STEPS 32

static void load_logits(const char *path)
{
	static const enum eng_load_mode modes[] = { ENG_LOAD_MMAP, ENG_LOAD_HUGE_COPY,
						    ENG_LOAD_REPACK };
	int bos[1] = { 1 }, ids[3][LOAD_STEPS], vocab = 0;
	float *lg[3] = { NULL, NULL, NULL };
	struct eng_session_options o = { .threads = 1 };
	for (int i = 0; i < 3; i++)
		T_EQ_INT(t_id_greedy_file(path, modes[i], &o, bos, 1, LOAD_STEPS, ids[i], &lg[i],
					&vocab), 0);
	if (lg[0] && lg[1] && lg[2]) {
		size_t n = (size_t)LOAD_STEPS * (size_t)vocab;
		double big, d = t_id_max_diff(lg[0], lg[2], n, &big);
		T_EQ_INT(t_id_first_diff(ids[0], ids[1], LOAD_STEPS), -1);
		T_EQ_INT(t_id_first_diff(ids[0], ids[2], LOAD_STEPS), -1);
		T_ASSERT(!memcmp(lg[0], lg[1], n * sizeof(float)));
		T_ASSERT(d <= 1e-2 * big);
		printf("%s: %d distinct ids in %d; huge-copy's logits the mapping's bits, repack's "
		       "within %.3g of %.3g\n",
		       path, t_id_distinct(ids[0], LOAD_STEPS), LOAD_STEPS, d, big);
	}
	for (int i = 0; i < 3; i++)
		free(lg[i]);
}

int main(void)
{
	static const struct {
		const char *arch, *shape, *quant;
	} models[] = {
		{ "llama", "stories15M", "q8_0" },
		{ "llama", "stories15M", "q4_0" },
		{ "llama", "llama-tiny", "q5_0" },
		{ "llama", "llama-tiny", "q4_k_m" },
		{ "falcon", "falcon-tiny", "q4_k_m" },
	};
	struct eng_error err;
	char path[4200];
	int packed = 0;
	t_mkdtemp(dir);
	check_pack_tiled();
	check_pack_layouts();
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s-%s.gguf", dir, models[i].shape, models[i].quant);
		if (eng_synth_gguf(path, models[i].arch, models[i].shape, models[i].quant, 7, &err)) {
			fprintf(stderr, "synth %s: %s\n", path, err.text);
			return 1;
		}
		check_image(path, ENG_LOAD_HUGE_COPY);
		if (t_id_synth_gguf(path, models[i].arch, models[i].shape, models[i].quant, 7,
				  ENG_SYNTH_VARIED) == 0)
			load_logits(path);
		else
			T_ASSERT(0);
		packed += check_image(path, ENG_LOAD_REPACK);
		if (i == 0)
			check_cancel(path);
		unlink(path);
	}
	rmdir(dir);
	/* No x8 kernel in this CPU's table: the comparison held, but packed nothing. */
	if (!krn_quant_x8_native(krn_quant_ops_find(NULL), KRN_TYPE_Q8_0))
		t_skip("this CPU's quant table has no x8 kernel: nothing was repacked");
	T_ASSERT(packed > 0);
	return t_done();
}
