/* tests/test_load.c: the copying load modes (engine/hugecopy.c, gguf_model.c's fill): the
 * one-pass parallel repack gives, byte for byte, the file with each packed matrix put through
 * krn_x8_repack in place (the per-tensor repack this loader did before); huge-copy gives the
 * file as it is; a load stopped by the cancellation flag, before or during the fill, leaves no
 * mapping and no descriptor behind.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "gguf.h"
#include "model.h"
#include "quants/quants.h"
#include "test.h"

static char dir[] = "/tmp/mw-test-load-XXXXXX";

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (n > 0 && (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

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
	unsigned char *want = slurp(path, &len);
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

static volatile sig_atomic_t flag;

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
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	check_pack_tiled();
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s-%s.gguf", dir, models[i].shape, models[i].quant);
		if (eng_synth_gguf(path, models[i].arch, models[i].shape, models[i].quant, 7, &err)) {
			fprintf(stderr, "synth %s: %s\n", path, err.text);
			return 1;
		}
		check_image(path, ENG_LOAD_HUGE_COPY);
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
