/* tests/fuzz/fuzz_seeds.c: writes the seed corpus of one fuzz target, made from the real
 * fixtures at test time (never copied into the repository).
 *
 *   fuzz_seeds TARGET OUTDIR
 *
 * Sources: $MEMWALL_SHARED (../shared: stories260K.bin, tokenizer.bin, the GGUF fixtures,
 * llama.cpp's recorded output), $MEMWALL_TEST_DATA (tests/data) and $MEMWALL_SOURCE_ROOT
 * (protocols/, results/). A source that is absent is skipped: the committed seeds in
 * tests/fuzz/seeds/ still give the fuzzer a start. Large fixtures are cut down to what the
 * parser reads (headers, a 512-token vocabulary, GGUF metadata with one block per tensor),
 * because libFuzzer mutates best on small inputs. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters.h"
#include "bundle.h"
#include "fixture_result.h"
#include "format/gguf.h"
#include "format/llama2c.h"
#include "quants/quants.h"
#include "sha256.h"

static const char *outdir;

/* snprintf into buf that exits on truncation: a cut path would read the wrong file. */
#define PATHF(buf, ...)                                                                         \
	do {                                                                                       \
		if (snprintf((buf), sizeof(buf), __VA_ARGS__) >= (int)sizeof(buf)) {               \
			fprintf(stderr, "fuzz_seeds: path too long\n");                             \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
static int n_written;

static char *path_in(const char *env, const char *rel)
{
	static char buf[4][4096];
	static int k;
	const char *root = getenv(env);
	if (!root || !*root)
		return NULL;
	k = (k + 1) % 4;
	PATHF(buf[k], "%s/%s", root, rel);
	return buf[k];
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = path ? fopen(path, "rb") : NULL;
	uint8_t *buf = NULL;
	size_t cap = 0;
	*len = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (cap - *len < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		size_t n = fread(buf + *len, 1, cap - *len, f);
		if (!n)
			break;
		*len += n;
	}
	fclose(f);
	return buf;
}

/* Writes a seed: prefix (may be NULL) then body. */
static void seed(const char *name, const void *prefix, size_t plen, const void *body, size_t len)
{
	char path[4600];
	PATHF(path, "%s/%s", outdir, name);
	FILE *f = fopen(path, "wb");
	if (!f || (plen && fwrite(prefix, 1, plen, f) != plen) ||
	    (len && fwrite(body, 1, len, f) != len) || fclose(f)) {
		perror(path);
		exit(1);
	}
	n_written++;
}

/* Calls fn for every regular file directly in dir (sorted). */
static void each_file(const char *dir, void (*fn)(const char *path, const char *name))
{
	struct dirent **names = NULL;
	int n = dir ? scandir(dir, &names, NULL, alphasort) : -1;
	for (int i = 0; i < n; i++) {
		char path[4600];
		struct stat st;
		PATHF(path, "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode))
			fn(path, names[i]->d_name);
		free(names[i]);
	}
	free(names);
}

/* ---- llama2c: the real stories260K header, cut short and shrunk into whole tiny models */

static void llama2c_model(const char *name, const uint8_t *hdr, bool v1, bool shared)
{
	/* Shrunk from the real shape (64, 172, 5, 8, 4, 512, 512) to (8, 12, 1, 2, 1, 16, 4): the
	 * same ratios of heads, a layout of a few KB. */
	struct l2c_config c = { .version = v1, .dim = 8, .hidden_dim = 12, .n_layers = 1,
				.n_heads = 2, .n_kv_heads = 1, .vocab_size = 16, .seq_len = 4,
				.shared_classifier = shared };
	struct l2c_layout lay;
	if (eng_l2c_layout_compute(&lay, &c, name, NULL))
		abort();
	uint8_t *b = calloc(1, lay.end);
	int32_t h[7] = { c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
			 shared || v1 ? c.vocab_size : -c.vocab_size, c.seq_len };
	if (v1) {
		uint32_t magic = L2C_MAGIC;
		int32_t version = 1;
		memcpy(b, &magic, 4);
		memcpy(b + 4, &version, 4);
		memcpy(b + 8, h, sizeof(h));
		b[36] = shared;
	} else {
		memcpy(b, h, sizeof(h));
	}
	/* weights: the real file's first floats, repeated */
	for (uint64_t off = lay.header_bytes; off + 4 <= lay.end; off += 4)
		memcpy(b + off, hdr + L2C_LEGACY_HEADER_BYTES + (off % 200) / 4 * 4, 4);
	seed(name, NULL, 0, b, lay.end);
	free(b);
}

static void gguf_from(const char *file, const uint8_t *prefix, size_t plen);

static void seeds_llama2c(void)
{
	size_t len;
	uint8_t *real = slurp(path_in("MEMWALL_SHARED", "models/stories260K.bin"), &len);
	uint8_t fallback[256] = { 0 };
	if (real && len >= 256) {
		seed("stories260K-header-28", NULL, 0, real, 28);
		seed("stories260K-header-256", NULL, 0, real, 256);
	}
	const uint8_t *hdr = real && len >= 256 ? real : fallback;
	llama2c_model("tiny-legacy-shared", hdr, false, true);
	llama2c_model("tiny-legacy-unshared", hdr, false, false);
	llama2c_model("tiny-v1-shared", hdr, true, true);
	llama2c_model("tiny-v1-unshared", hdr, true, false);
	free(real);
	/* eng_model_open hands a file with GGUF's magic to the GGUF model loader */
	gguf_from("tiny-llama-F32.gguf", NULL, 0);
	gguf_from("tiny-falcon-Q8_0.gguf", NULL, 0);
}

/* ---- gguf: each fixture's metadata, with every tensor cut to one block */

static void gguf_from(const char *file, const uint8_t *prefix, size_t plen)
{
	char src[512], dst[4600];
	PATHF(src, "fixtures/gguf/models/%s", file);
	const char *path = path_in("MEMWALL_SHARED", src);
	struct eng_gguf *g = NULL;
	struct eng_gguf_writer *w = NULL;
	struct eng_error err;
	if (!path || eng_gguf_open(&g, path, NULL, &err))
		return;
	PATHF(dst, "%s/%s", outdir, file);
	if (eng_gguf_writer_new(&w, dst, eng_gguf_alignment(g), &err))
		goto out;
	for (uint64_t i = 0; i < eng_gguf_n_kv(g); i++) {
		const char *key;
		const struct eng_gguf_value *v = eng_gguf_kv(g, i, &key);
		if (strcmp(key, "general.alignment") && eng_gguf_writer_kv(w, key, v))
			goto out;
	}
	uint64_t total = 0;
	for (uint64_t i = 0; i < eng_gguf_n_tensors(g); i++) {
		const struct eng_gguf_tensor *t = eng_gguf_tensor(g, i);
		const struct krn_type_traits *tr = krn_type_traits(t->type);
		uint64_t ne[ENG_GGUF_MAX_DIMS] = { tr->block_size, 1, 1, 1 };
		if (eng_gguf_writer_tensor(w, t->name, t->type, t->n_dims, ne))
			goto out;
		total += tr->type_size;
	}
	/* the tensors' first blocks, real bytes */
	for (uint64_t i = 0; i < eng_gguf_n_tensors(g); i++) {
		const struct eng_gguf_tensor *t = eng_gguf_tensor(g, i);
		if (eng_gguf_writer_data(w, t->data, krn_type_traits(t->type)->type_size))
			goto out;
	}
	(void)total;
	if (eng_gguf_writer_commit(w, &err) == 0 && !prefix)
		n_written++;
	w = NULL;
	if (prefix) { /* the tokenizer target's input: flags and text, then the file */
		size_t tlen;
		uint8_t *tiny = slurp(dst, &tlen);
		if (tiny)
			seed(file, prefix, plen, tiny, tlen);
		free(tiny);
		goto out;
	}
	/* and the real header alone: every tensor then lies past the end */
	size_t len;
	uint8_t *raw = slurp(path, &len);
	PATHF(dst, "%s-header", file);
	if (raw)
		seed(dst, NULL, 0, raw, eng_gguf_data_offset(g) < 16384 ? eng_gguf_data_offset(g)
									: 16384);
	free(raw);
out:
	eng_gguf_writer_abort(w);
	eng_gguf_close(g);
}

static void seeds_gguf(void)
{
	gguf_from("tiny-llama-F32.gguf", NULL, 0);
	gguf_from("tiny-llama-Q4_K_M.gguf", NULL, 0);
	gguf_from("tiny-falcon-Q8_0.gguf", NULL, 0);
}

/* ---- tokenizer: flags, text, NUL, then the first 512 tokens of Llama 2's tokenizer.bin */

static void seeds_tokenizer(void)
{
	size_t len, off = 4;
	uint8_t *real = slurp(path_in("MEMWALL_SHARED", "models/tokenizer.bin"), &len);
	if (!real || len < 4)
		goto out;
	for (int n = 0; n < 512 && off + 8 <= len; n++) {
		int32_t plen;
		memcpy(&plen, real + off + 4, 4);
		if (plen < 0 || off + 8 + (size_t)plen > len)
			goto out;
		off += 8 + (size_t)plen;
	}
	static const struct {
		const char *name;
		uint8_t flags;
		const char *text;
	} texts[] = {
		{ "tok512-once", 1, "Once upon a time" },
		{ "tok512-utf8", 3, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
		{ "tok512-bytes", 0, "\x01\x7f\xff" },
		{ "tok512-empty", 1, "" },
		{ "tok512-short-buffer", 8, "the the the" },
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		size_t tl = strlen(texts[i].text);
		uint8_t *pre = malloc(tl + 2);
		pre[0] = texts[i].flags;
		memcpy(pre + 1, texts[i].text, tl + 1);
		seed(texts[i].name, pre, tl + 2, real, off);
		free(pre);
	}
out:
	free(real);
	/* GGUF tokenizers: SentencePiece (llama) and byte-level BPE with merges (falcon) */
	static const uint8_t llama_text[] = "\x01Hello world, \xc3\xa9t\xc3\xa9 <s> 123";
	static const uint8_t falcon_text[] = "\x03>>TITLE<< hello  world\n\t!";
	gguf_from("tiny-llama-F32.gguf", llama_text, sizeof(llama_text));
	gguf_from("tiny-falcon-Q8_0.gguf", falcon_text, sizeof(falcon_text));
}

/* ---- protocol and result: the shipped files and records made as the runner makes them */

static void copy_file(const char *path, const char *name)
{
	size_t len;
	uint8_t *b = slurp(path, &len);
	if (b)
		seed(name, NULL, 0, b, len);
	free(b);
}

static void copy_json(const char *path, const char *name)
{
	size_t n = strlen(name);
	if (n > 5 && !strcmp(name + n - 5, ".json"))
		copy_file(path, name);
}

static void seeds_protocol(void)
{
	each_file(path_in("MEMWALL_SOURCE_ROOT", "protocols"), copy_json);
	each_file(path_in("MEMWALL_TEST_DATA", "protocols/good"), copy_json);
	each_file(path_in("MEMWALL_TEST_DATA", "protocols/bad"), copy_json);
}

static void seeds_result(void)
{
	static const struct t_fx_spec specs[] = {
		{ "p", "cpu", 2, 1, 4, 1e6, 0.01, 0, 0, 1 },
		{ "p", "cpu", 2, 0, 3, 2e6, 0.02, 5e6, 2, 2 },
		{ "q", "cpu", 1, 0, 1, 5e5, 0.0, 1e6, 1, 3 },
	};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		char name[64], path[4600];
		json_t *doc = t_fx_record(&specs[i]);
		PATHF(name, "fixture-%zu.json", i);
		t_fx_write(doc, outdir, name, path, sizeof(path));
		json_decref(doc);
		n_written++;
	}
	each_file(path_in("MEMWALL_SOURCE_ROOT", "results/reference"), copy_json);
}

/* ---- sysfs: one seed per recorded PMU, its files joined by newlines as fuzz_sysfs reads them */

static void sysfs_pmu(const char *machine, const char *pmu_path, const char *pmu)
{
	static const char *const parts[] = { "type", "cpumask", "format/event", "format/umask" };
	char text[8192] = "", p[4600], name[256], alias[256] = "";
	size_t n = 0;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t len;
		PATHF(p, "%s/%s", pmu_path, parts[i]);
		uint8_t *b = slurp(p, &len);
		while (b && len && (b[len - 1] == '\n' || b[len - 1] == ' '))
			len--;
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%.*s\n", b ? (int)len : 0,
				      b ? (const char *)b : "");
		free(b);
	}
	/* the first event alias with its .scale and .unit */
	struct dirent **ev = NULL;
	PATHF(p, "%s/events", pmu_path);
	int ne = scandir(p, &ev, NULL, alphasort);
	for (int i = 0; i < ne; i++) {
		if (!alias[0] && ev[i]->d_name[0] != '.' && !strchr(ev[i]->d_name, '.'))
			snprintf(alias, sizeof(alias), "%s", ev[i]->d_name);
		free(ev[i]);
	}
	free(ev);
	static const char *const suffix[] = { "", ".scale", ".unit" };
	for (size_t i = 0; i < 3; i++) {
		size_t len = 0;
		uint8_t *b = NULL;
		if (alias[0]) {
			PATHF(p, "%s/events/%s%s", pmu_path, alias, suffix[i]);
			b = slurp(p, &len);
		}
		while (b && len && (b[len - 1] == '\n' || b[len - 1] == ' '))
			len--;
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%.*s\n", b ? (int)len : 0,
				      b ? (const char *)b : "");
		free(b);
	}
	/* terms: the alias itself when there is one, else a raw encoding */
	n += (size_t)snprintf(text + n, sizeof(text) - n, "%s",
			      alias[0] ? "alias" : "event=0x1,umask=0x2");
	PATHF(name, "%s-%s", machine, pmu);
	seed(name, NULL, 0, text, n < sizeof(text) ? n : sizeof(text) - 1);
}

static void seeds_sysfs(void)
{
	const char *root = path_in("MEMWALL_TEST_DATA", "sysfs");
	struct dirent **m = NULL;
	int nm = root ? scandir(root, &m, NULL, alphasort) : -1;
	for (int i = 0; i < nm; i++) {
		char dev[4600];
		PATHF(dev, "%s/%s/bus/event_source/devices", root, m[i]->d_name);
		struct dirent **p = NULL;
		int np = m[i]->d_name[0] == '.' ? -1 : scandir(dev, &p, NULL, alphasort);
		for (int k = 0; k < np; k++) {
			char pmu[4800];
			PATHF(pmu, "%s/%s", dev, p[k]->d_name);
			if (p[k]->d_name[0] != '.')
				sysfs_pmu(m[i]->d_name, pmu, p[k]->d_name);
			free(p[k]);
		}
		free(p);
		free(m[i]);
	}
	free(m);
}

/* ---- adapters: every recorded output, once per adapter row (the selector byte) */

static void adapter_seeds(const char *path, const char *name)
{
	size_t len, n_adapters;
	uint8_t *b = slurp(path, &len);
	mw_adapter_list(&n_adapters);
	for (size_t i = 0; b && i < n_adapters; i++) {
		uint8_t sel = (uint8_t)i;
		char seed_name[512];
		PATHF(seed_name, "%s-%zu", name, i);
		seed(seed_name, &sel, 1, b, len);
	}
	free(b);
}

static void seeds_adapters(void)
{
	each_file(path_in("MEMWALL_TEST_DATA", "llamacpp"), adapter_seeds);
	each_file(path_in("MEMWALL_TEST_DATA", "llamacpp/invalid"), adapter_seeds);
	each_file(path_in("MEMWALL_SHARED", "fixtures/llamacpp-output"), adapter_seeds);
}

/* Bundles as `memwall bundle` writes them (from fixture records; charts where gnuplot is
 * installed), unzipped: fuzz_bundle gzips its input itself. */
static void seeds_bundle(void)
{
	static const struct t_fx_spec spec = { "p", "cpu", 2, 0, 3, 2e6, 0.02, 5e6, 2, 2 };
	char dir[] = "/tmp/mw-fuzz-seeds-XXXXXX", rec[4200], out[4200], cmd[9000];
	if (!mkdtemp(dir))
		return;
	json_t *doc = t_fx_record(&spec);
	PATHF(rec, "%s/r.json", dir);
	PATHF(out, "%s/b.tar.gz", dir);
	struct mw_error err;
	const char *paths[1] = { rec };
	if (doc && json_dump_file(doc, rec, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) == 0 &&
	    mw_bundle_write(paths, 1, out, NULL, &err) == 0) {
		size_t len;
		char raw[4300];
		PATHF(raw, "%s/b.tar", dir);
		PATHF(cmd, "gzip -dc '%s' > '%s'", out, raw);
		if (system(cmd) == 0) {
			uint8_t *b = slurp(raw, &len);
			if (b)
				seed("bundle.tar", NULL, 0, b, len);
			free(b);
		}
	}
	json_decref(doc);
	PATHF(cmd, "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "fuzz_seeds: could not remove %s\n", dir);
}

/* Maps of fuzz_sparsity_map's shape (2 layers, hidden_dim 8), as sparsity-calibrate writes
 * them, and one cut short. */
static void seeds_sparsity_map(void)
{
	static const char *const maps[] = {
		"memwall-sparsity-map 2\nlayers 2 hidden 8 dim 4 tokens 5\n"
		"model act=relu vocab=32 bytes=1024 fnv=0123456789abcdef\n"
		"layer 0 0 1 2 3 4 5 0 5\nlayer 1 5 5 0 0 1 1 2 2\n",
		"memwall-sparsity-map 2\nlayers 2 hidden 8 dim 4 tokens 1\nmodel act=silu\n"
		"layer 0 0 0 0 0 0 0 0 1\nlayer 1 1 1 1 1 1 1 1 1\n",
		"memwall-sparsity-map 2\nlayers 2 hidden 8 dim 4 tokens 9\nmodel x\nlayer 0 1 2\n",
	};
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		char name[32];
		PATHF(name, "map-%zu.txt", i);
		seed(name, NULL, 0, maps[i], strlen(maps[i]));
	}
}

/* Calibration stores: an entry under fuzz_calibration's machine (key sha256("fuzz-machine"),
 * its fingerprint), fresh and plausible, and one of another machine. */
static void seeds_calibration(void)
{
	char sha[65], now[32], *text;
	mw_sha256_hex("fuzz-machine", 12, sha);
	mw_utc_now(now, sizeof(now), false);
	json_t *store = json_pack(
		"{s:s, s:{s:{s:s, s:{s:s, s:i}, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f},"
		" s:[{s:s, s:i, s:f, s:f}]}, s:{s:s, s:{s:s}, s:{s:n, s:n, s:n}, s:{s:n, s:n, s:n}}}}",
		"schema", "memwall-calibration/1", "machines", sha, "created_utc", now,
		"fingerprint", "cpu_name", "Fuzz CPU", "cpu_model", 17, "error_pct", "read", 10.0,
		"write", -5.0, "total", 8.0, "factor", "read", 1 / 1.1, "write", 1 / 0.95, "total",
		1 / 1.08, "instances", "pmu", "uncore_imc_0", "cpu", 0, "share_pct", 50.0, "factor",
		1.0, "other", "created_utc", "2026-01-01T00:00:00Z", "fingerprint", "cpu_name",
		"Other", "error_pct", "read", "write", "total", "factor", "read", "write", "total");
	if (store && (text = json_dumps(store, JSON_INDENT(1)))) {
		seed("store.json", NULL, 0, text, strlen(text));
		free(text);
	}
	json_decref(store);
}

/* Hash caches (fuzz_hash_cache.c; "KEY" stands for the hashed file's key): an entry that
 * serves, one with a wrong digest, the six-number layout of before issue 43, a cache of 300
 * entries (past the 256 kept), lines cut short, NUL bytes, signs and overflowing numbers, and
 * a cache over the size limit. */
static void seeds_hash_cache(void)
{
	static const char *const small[] = {
		"",
		"KEY ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad model.bin\n",
		"KEY 0000000000000000000000000000000000000000000000000000000000000000 model.bin\n",
		"KEY BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD x\n",
		"1 2 3 1700000000 5 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad "
		"old-layout\n",
		"KEY ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		"KEY ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n",
		"-1 -2 -3 -4 -5 -6 -7 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad x\n",
		"99999999999999999999999 1 3 1 1 1 1 "
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad x\n",
		"\n\n\t \n",
	};
	char name[64];
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++) {
		PATHF(name, "cache-%zu.tsv", i);
		seed(name, NULL, 0, small[i], strlen(small[i]));
	}
	static const char nul[] = "KEY ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad "
				  "a\0b\n";
	seed("cache-nul.tsv", NULL, 0, nul, sizeof(nul) - 1);
	size_t cap = 300 * 120 + 1, at = 0;
	char *many = malloc(cap);
	if (!many)
		abort();
	for (int i = 0; i < 300; i++)
		at += (size_t)snprintf(many + at, cap - at, "%d %d 3 1 2 3 4 "
				       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad "
				       "f%d\n", 7, 1000 + i, i);
	seed("cache-300.tsv", NULL, 0, many, at);
	free(many);
	size_t big = (2u << 20) + 1;
	char *over = malloc(big);
	if (!over)
		abort();
	memset(over, 'x', big);
	seed("cache-over-limit.tsv", NULL, 0, over, big);
	free(over);
}

/* Verification stores: entries under fuzz_verify_store's machine (key sha256("fuzz-machine"))
 * on the sim layer as verify writes them, one passed and one failed, and entries that lie:
 * dated in the future, "pass" over a failed check, a layer other than their key. */
static void seeds_verify_store(void)
{
	char sha[65], now[32], name[64], *text;
	mw_sha256_hex("fuzz-machine", 12, sha);
	mw_utc_now(now, sizeof(now), false);
	static const struct {
		const char *verdict, *check, *layer, *created;
	} entries[] = {
		{ "pass", "pass", "sim", NULL },
		{ "fail", "fail", "sim", NULL },
		{ "pass", "fail", "sim", NULL },
		{ "pass", "pass", "syscall", NULL },
		{ "pass", "pass", "sim", "2999-01-01T00:00:00Z" },
		{ "pass", "pass", "sim", "2026-01-01T00:00:00Z" },
	};
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		json_t *store = json_pack(
			"{s:s, s:{s:{s:{s:s, s:s, s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}}}}",
			"schema", "memwall-verification-store/1", "machines", sha, "sim", "schema",
			"memwall-verification/1", "created_utc",
			entries[i].created ? entries[i].created : now, "verdict", entries[i].verdict,
			"layer", entries[i].layer, "fingerprint_sha256", sha, "backend",
			"intel_imc_free", "checks", "name", "read pass: sum", "verdict",
			entries[i].check, "message", "read pass, read, sum: memwall counted 1.00x");
		PATHF(name, "store-%zu.json", i);
		if (store && (text = json_dumps(store, JSON_INDENT(1)))) {
			seed(name, NULL, 0, text, strlen(text));
			free(text);
		}
		json_decref(store);
	}
}

static const struct {
	const char *target;
	void (*make)(void);
} targets[] = {
	{ "llama2c", seeds_llama2c },   { "gguf", seeds_gguf },	    { "tokenizer", seeds_tokenizer },
	{ "protocol", seeds_protocol }, { "result", seeds_result }, { "sysfs", seeds_sysfs },
	{ "adapters", seeds_adapters }, { "bundle", seeds_bundle },
	{ "sparsity_map", seeds_sparsity_map }, { "calibration", seeds_calibration },
	{ "hash_cache", seeds_hash_cache },
	{ "verify_store", seeds_verify_store },
};

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fuzz_seeds TARGET OUTDIR\n");
		return 2;
	}
	outdir = argv[2];
	if (mkdir(outdir, 0755) && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		if (!strcmp(argv[1], targets[i].target)) {
			targets[i].make();
			printf("%s: %d seeds in %s\n", argv[1], n_written, outdir);
			return 0;
		}
	fprintf(stderr, "fuzz_seeds: unknown target '%s'\n", argv[1]);
	return 2;
}
