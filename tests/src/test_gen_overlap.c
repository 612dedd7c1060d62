/* tests/src/test_gen_overlap.c: `memwall generate --load overlap` (src/cli/gen_overlap.c) and the
 * engine's state move under it (eng_session_adopt):
 *  - the move is exact: the KV bytes and positions of every sequence equal the source's, on a
 *    session of another context, thread count and prefill chunk over the repacked image; and
 *    a session over the same model steps to the source's logits, bit for bit;
 *  - a move between different shapes, KV types, sequence counts or too short a context is
 *    refused, err naming the field;
 *  - the command's logits at every position equal, bit for bit, what this test computes
 *    itself: the prompt and first token on a mapped model, the state moved onto a repacked
 *    one, the rest there (a long prompt: everything on the repacked model); the mapped
 *    model's own differ, so the switch is seen;
 *  - an image that fails or is cancelled leaves the session on the mapping, with the reason,
 *    and decoding goes on there as a mapped run's;
 *  - the image is built on the CPUs after the session's threads, on every CPU when the run
 *    needs it and none is left, and otherwise not at all (skipped, said).
 * The models are synthetic (eng_synth_gguf): stories15M q4_0, whose matrices the repack
 * interleaves, and stories260K (f32) for a shape that differs.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "gen_overlap.h"
#include "run.h"
#include "test.h"
#include "identity.h"

static char dir[] = "/tmp/mw-test-overlap-XXXXXX";
static char model[4200], other[4200];

static struct eng_model *open_model(const char *path, enum eng_load_mode mode)
{
	struct eng_model *m = NULL;
	struct eng_error err;
	struct eng_model_options mo = { .load = mode };
	eng_error_clear(&err);
	if (eng_model_open(&m, path, &mo, &err))
		fprintf(stderr, "%s: %s\n", path, err.text);
	T_ASSERT(m != NULL);
	return m;
}

static struct eng_session *open_session(struct eng_model *m, const struct eng_session_options *o)
{
	struct eng_session *s = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	if (eng_session_new(&s, m, o, &err))
		fprintf(stderr, "session: %s\n", err.text);
	T_ASSERT(s != NULL);
	return s;
}

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Every layer's keys and values of sequence q: dst's equal src's over src's positions. */
static void kv_equal(const struct eng_session *dst, const struct eng_session *src, int q,
		     int layers)
{
	int n = eng_session_pos(src, q);
	T_EQ_INT(eng_session_pos(dst, q), n);
	for (int l = 0; l < layers; l++) {
		const void *dk, *dv, *sk, *sv;
		size_t drow, srow;
		T_EQ_INT(eng_session_kv_view(dst, q, l, &dk, &dv, &drow), 0);
		T_EQ_INT(eng_session_kv_view(src, q, l, &sk, &sv, &srow), 0);
		T_EQ_INT((int)drow, (int)srow);
		T_ASSERT(memcmp(dk, sk, (size_t)n * srow) == 0);
		T_ASSERT(memcmp(dv, sv, (size_t)n * srow) == 0);
	}
}

static const int prompt[] = { 1, 300, 301, 302, 5000 };
#define N_PROMPT ((int)(sizeof(prompt) / sizeof(prompt[0])))

/* The move is exact, onto the image and onto the same model. */
static void adopt_exact(void)
{
	struct eng_model *mm = open_model(model, ENG_LOAD_MMAP);
	struct eng_model *rp = open_model(model, ENG_LOAD_REPACK);
	if (!mm || !rp)
		return;
	int layers = eng_model_info(mm)->n_layers, vocab = eng_model_info(mm)->vocab_size;
	struct eng_session_options o1 = { .threads = 1 };
	struct eng_session_options o2 = { .threads = 2, .prefill_chunk = 3, .ctx_len = 100 };
	struct eng_session *a = open_session(mm, &o1), *b = open_session(rp, &o2);
	struct eng_session *c = open_session(mm, &o2);
	struct eng_error err;
	const float *la, *lc;
	T_EQ_INT(eng_session_prefill(a, prompt, N_PROMPT, 0, &la, NULL), 0);
	T_EQ_INT(eng_session_step(a, 42, N_PROMPT, &la, NULL), 0);
	/* b has run positions of its own: the move forgets them. */
	T_EQ_INT(eng_session_prefill(b, prompt, 2, 0, NULL, NULL), 0);
	T_EQ_INT(eng_session_adopt(b, a, &err), 0);
	kv_equal(b, a, 0, layers);
	T_EQ_INT(eng_session_pos(b, 0), N_PROMPT + 1);
	T_EQ_INT(eng_session_pos(b, 1), -EINVAL);
	/* Position N_PROMPT + 2 is not next: refused as by any session. */
	T_EQ_INT(eng_session_step(b, 7, N_PROMPT + 2, &lc, NULL), -EINVAL);
	T_EQ_INT(eng_session_step(b, 7, N_PROMPT + 1, &lc, NULL), 0);

	/* Over the same model, the next steps give a's bits. */
	T_EQ_INT(eng_session_adopt(c, a, &err), 0);
	kv_equal(c, a, 0, layers);
	float *keep = malloc((size_t)vocab * sizeof(*keep));
	for (int k = 0; k < 3 && keep; k++) {
		int pos = N_PROMPT + 1 + k;
		T_EQ_INT(eng_session_step(a, 100 + k, pos, &la, NULL), 0);
		memcpy(keep, la, (size_t)vocab * sizeof(*keep));
		T_EQ_INT(eng_session_step(c, 100 + k, pos, &lc, NULL), 0);
		T_ASSERT(memcmp(keep, lc, (size_t)vocab * sizeof(*keep)) == 0);
	}
	free(keep);
	eng_session_free(a);
	eng_session_free(b);
	eng_session_free(c);
	eng_model_close(mm);
	eng_model_close(rp);
}

/* Each mismatch refused, err naming what differs; dst left as it was. */
static void adopt_refused(void)
{
	struct eng_model *mm = open_model(model, ENG_LOAD_MMAP);
	struct eng_model *sm = open_model(other, ENG_LOAD_MMAP);
	if (!mm || !sm)
		return;
	struct eng_session_options base = { .threads = 1 };
	struct eng_session_options f32 = { .threads = 1, .kv_type = ENG_KV_F32 };
	struct eng_session_options two = { .threads = 1, .n_seq = 2 };
	struct eng_session_options shortctx = { .threads = 1, .ctx_len = 3 };
	struct eng_session *src = open_session(mm, &base);
	T_EQ_INT(eng_session_prefill(src, prompt, N_PROMPT, 0, NULL, NULL), 0);
	static const struct {
		int which; /* 0: other shape, 1: f32 KV, 2: two sequences, 3: short context */
		const char *says;
	} cases[] = {
		{ 0, "its dim is 288, this session's 64" },
		{ 1, "KV cache" },
		{ 2, "its sequence count is 1, this session's 2" },
		{ 3, "holds 5 positions, this session's context 3" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct eng_session_options *o[] = { &base, &f32, &two, &shortctx };
		struct eng_session *dst = open_session(cases[i].which ? mm : sm, o[cases[i].which]);
		struct eng_error err;
		eng_error_clear(&err);
		if (!dst)
			continue;
		T_EQ_INT(eng_session_adopt(dst, src, &err), -EINVAL);
		T_CONTAINS(err.text, cases[i].says);
		T_CONTAINS(err.text, "cannot adopt the state of a session over");
		T_EQ_INT(eng_session_pos(dst, 0), 0);
		eng_session_free(dst);
	}
	eng_session_free(src);
	eng_model_close(mm);
	eng_model_close(sm);
}

/* Position pos's logits in a --logits file ("\"pos\": [v, v, ...]", %.9g: exact floats) into
 * out; false when absent or short. */
static bool file_logits(const char *json, int pos, float *out, int n)
{
	char key[32];
	snprintf(key, sizeof(key), "\"%d\": [", pos);
	const char *p = json ? strstr(json, key) : NULL;
	if (!p)
		return false;
	p += strlen(key);
	for (int i = 0; i < n; i++) {
		char *end;
		out[i] = strtof(p, &end);
		if (end == p)
			return false;
		p = end + (*end == ',');
	}
	return true;
}

/* `generate --load overlap --logits` against the test's own composition, bit for bit at every
 * position: the prompt (token by token, as --logits runs it) and token 1 on a mapped model,
 * then the state moved by hand (eng_session_adopt) onto a repacked one; or, with a prompt
 * longer than MW_OVERLAP_PROMPT_MAX, everything on the repacked one. The composition's
 * logits must differ from a mapped run's at some position, or the test could not see the
 * switch. */
static void command_logits(const int *ids, int n_prompt)
{
	enum { STEPS = 4 };
	struct eng_model *mm = open_model(model, ENG_LOAD_MMAP);
	struct eng_model *rp = open_model(model, ENG_LOAD_REPACK);
	if (!mm || !rp)
		return;
	bool long_prompt = n_prompt > MW_OVERLAP_PROMPT_MAX;
	int vocab = eng_model_info(mm)->vocab_size, n_pos = n_prompt + STEPS - 1;
	struct eng_session_options o = { .threads = 1 };
	struct eng_session *s = open_session(long_prompt ? rp : mm, &o);
	struct eng_session *plain = open_session(mm, &o);
	struct eng_sampler *smp = NULL;
	struct eng_sampler_options so = { .temperature = 0.8f, .topp = 0.9f, .seed = 5 };
	float *want = malloc((size_t)n_pos * (size_t)vocab * sizeof(float));
	float *got = malloc((size_t)vocab * sizeof(float));
	T_EQ_INT(eng_sampler_new(&smp, vocab, &so), 0);
	const float *l, *lm = NULL;
	int token = ids[0], generated = 0;
	bool switched = false; /* some position's logits differ from the mapped run's */
	for (int pos = 0; pos < n_pos && want && got && smp; pos++) {
		if (generated == 1 && !long_prompt) {
			struct eng_session *d = open_session(rp, &o);
			struct eng_error err;
			T_EQ_INT(eng_session_adopt(d, s, &err), 0);
			eng_session_free(s);
			s = d;
		}
		T_EQ_INT(eng_session_step(s, token, pos, &l, NULL), 0);
		T_EQ_INT(eng_session_step(plain, token, pos, &lm, NULL), 0);
		memcpy(want + (size_t)pos * (size_t)vocab, l, (size_t)vocab * sizeof(float));
		switched |= memcmp(l, lm, (size_t)vocab * sizeof(float)) != 0;
		if (pos + 1 < n_prompt) {
			token = ids[pos + 1];
		} else {
			memcpy(got, l, (size_t)vocab * sizeof(float));
			token = eng_sampler_sample(smp, got);
			generated++;
		}
	}
	/* (any position's: on the varied construction the last one's may agree to the bit) */
	T_ASSERT(switched);

	char list[256], path[4300];
	size_t j = 0;
	for (int i = 0; i < n_prompt; i++)
		j += (size_t)snprintf(list + j, sizeof(list) - j, "%s%d", i ? "," : "", ids[i]);
	snprintf(path, sizeof(path), "%s/logits.json", dir);
	const char *argv[] = { "memwall", "generate", "-m", model, "-n", "4", "--ids",
			       "--prompt-ids", list, "--temperature", "0.8", "--seed", "5", "--load",
			       "overlap", "--switch-at", "1", "--report-line", "--logits", path,
			       NULL };
	struct t_output r = t_run(argv);
	T_EQ_INT(r.status, 0);
	T_CONTAINS(r.err, "mode=overlap");
	T_CONTAINS(r.err, "image=used");
	T_CONTAINS(r.err, long_prompt ? "switch_after=0" : "switch_after=1");
	T_CONTAINS(r.err, "decode_after_switch_tok_s=");
	T_CONTAINS(r.err, long_prompt ? "overlap: a prompt over" : "overlap: first token on the "
		   "mapping");
	size_t len = 0;
	char *json = NULL;
	FILE *f = fopen(path, "r");
	if (f) {
		json = malloc(1 << 24);
		len = json ? fread(json, 1, (1 << 24) - 1, f) : 0;
		fclose(f);
		if (json)
			json[len] = '\0';
	}
	for (int pos = 0; pos < n_pos && want && got; pos++) {
		T_ASSERT(file_logits(json, pos, got, vocab));
		if (memcmp(got, want + (size_t)pos * (size_t)vocab, (size_t)vocab * sizeof(float)))
			T_FAIL_AT(__FILE__, __LINE__, "--load overlap, prompt of %d: position %d's "
				  "logits differ from the test's composition", n_prompt, pos);
	}
	free(json);
	t_output_free(&r);
	unlink(path);
	eng_sampler_free(smp);
	free(want);
	free(got);
	eng_session_free(s);
	eng_session_free(plain);
	eng_model_close(mm);
	eng_model_close(rp);
}

/* The value of key=N on a memwall-load line, -1 when absent. */
static long load_key(const char *err, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), " %s=", key);
	const char *p = err ? strstr(err, k) : NULL;
	return p ? strtol(p + strlen(k), NULL, 10) : -1;
}

/* Decoding never waits for the image: by default the switch falls wherever the image is
 * ready, and the ids are the same wherever it falls (--switch-at N fixes it at N tokens on
 * the mapping); the memwall-load line counts the tokens run on each. */
static void switch_anywhere(void)
{
	enum { N = 12 };
	char *ids_at1 = NULL;
	const char *at[] = { "1", "2", "5", NULL };
	for (int i = 0; i <= 3; i++) {
		const char *argv[] = { "memwall", "generate", "-m", model, "-n", "12", "--ids",
				       "--temperature", "0", "--load", "overlap", "--report-line",
				       i < 3 ? "--switch-at" : NULL, at[i], NULL };
		struct t_output r = t_run(argv);
		T_EQ_INT(r.status, 0);
		long on_map = load_key(r.err, "tokens_on_mapping");
		long on_img = load_key(r.err, "tokens_on_image");
		T_EQ_INT(on_map + on_img, N);
		if (i < 3) {
			T_CONTAINS(r.err, "image=used");
			T_EQ_INT(on_map, atol(at[i]));
			T_EQ_INT(load_key(r.err, "switch_after"), atol(at[i]));
		} else {
			/* wherever it fell: at least the first token ran on the mapping */
			T_ASSERT(on_map >= 1);
		}
		if (!ids_at1)
			ids_at1 = strdup(r.out ? r.out : "");
		else
			T_EQ_STR(r.out, ids_at1);
		t_output_free(&r);
	}
	free(ids_at1);
}

/* One token: the image is not needed, cancelled, and said so. */
static void one_token(void)
{
	const char *one[] = { "memwall", "generate", "-m", model, "-n", "1", "--ids", "--load",
			      "overlap", "--report-line", NULL };
	T_RUN_EXPECT(one, 0, NULL, T_LIST("image=unused", "no image needed (one token)"));
}

/* An image that fails (no such file) or is stopped: the session stays on the mapping, the
 * reason is kept, and the next tokens are a mapped run's. */
static void image_fails(void)
{
	struct eng_model *mm = open_model(model, ENG_LOAD_MMAP);
	if (!mm)
		return;
	int fds = count_fds();
	char bad[4300];
	snprintf(bad, sizeof(bad), "%s/no-such-model.gguf", dir);
	for (int stopped = 0; stopped < 2; stopped++) {
		struct mw_overlap ov = { 0 };
		struct eng_session_options o = { .threads = 1 };
		struct eng_model *m = open_model(model, ENG_LOAD_MMAP);
		struct eng_session *s = open_session(m, &o), *s0 = s;
		static atomic_int stop = 1;
		const float *la;
		ov.sopt = o;
		T_EQ_INT(mw_overlap_start(&ov, stopped ? model : bad, -1), 0);
		mw_overlap_launch(&ov, 0, true);
		/* The test's own flag replaces the overlap's: the image's fill sees it set. */
		if (stopped)
			eng_cancel_hook(&stop);
		T_EQ_INT(eng_session_prefill(s, prompt, N_PROMPT, 0, &la, NULL), 0);
		mw_overlap_switch(&ov, &m, &s, 1);
		if (stopped && ov.state == MW_IMAGE_USED) {
			/* The fill ended before the flag was set: nothing to check this time. */
			printf("image finished before the stop; stop not checked\n");
		} else {
			T_EQ_INT(ov.state, MW_IMAGE_FAILED);
			T_ASSERT(s == s0);
			T_CONTAINS(ov.why, stopped ? "stopped" : "no-such-model.gguf");
			T_EQ_INT(eng_model_load_report(m)->mode, ENG_LOAD_MMAP);
			/* Decoding goes on on the mapping: a fresh mapped session's bits. */
			struct eng_session *r = open_session(mm, &o);
			const float *lr;
			T_EQ_INT(eng_session_prefill(r, prompt, N_PROMPT, 0, &lr, NULL), 0);
			T_EQ_INT(eng_session_step(r, 9, N_PROMPT, &lr, NULL), 0);
			T_EQ_INT(eng_session_step(s, 9, N_PROMPT, &la, NULL), 0);
			T_ASSERT(memcmp(la, lr, (size_t)eng_model_info(m)->vocab_size *
						 sizeof(float)) == 0);
			eng_session_free(r);
		}
		eng_cancel_hook(NULL);
		mw_overlap_end(&ov);
		mw_overlap_end(&ov);
		eng_session_free(s);
		eng_model_close(m);
	}
	/* An image cancelled by mw_overlap_end, unused. */
	struct mw_overlap ov = { 0 };
	T_EQ_INT(mw_overlap_start(&ov, model, -1), 0);
	mw_overlap_launch(&ov, 0, true);
	mw_overlap_end(&ov);
	T_EQ_INT(ov.state, MW_IMAGE_UNUSED);
	T_EQ_INT(count_fds(), fds);
	eng_model_close(mm);
}

/* What a skipped image's summary says the session's threads take (launch_on). */
static const char *skip_says = "every CPU of the affinity mask";

/* One image launched for a session of `threads` threads (needed: the run waits for it), then
 * the switch after three tokens; the overlap's state, CPUs and fill threads are checked. */
static void launch_on(int threads, bool needed, enum mw_image_state want, const char *cpus,
		      int fill_threads)
{
	struct mw_overlap ov = { 0 };
	struct eng_session_options o = { .threads = 1 };
	struct eng_model *m = open_model(model, ENG_LOAD_MMAP);
	struct eng_session *s = open_session(m, &o), *s0 = s;
	int fds = count_fds();
	char fields[512];
	ov.sopt = o;
	T_EQ_INT(mw_overlap_start(&ov, model, -1), 0);
	mw_overlap_launch(&ov, threads, needed);
	mw_overlap_launch(&ov, threads, needed); /* once */
	if (want == MW_IMAGE_SKIPPED)
		T_ASSERT(!mw_overlap_ready(&ov));
	mw_overlap_switch(&ov, &m, &s, 3);
	T_EQ_INT(ov.state, want);
	T_EQ_STR(ov.cpus, cpus);
	mw_overlap_fields(&ov, 5, 0, 0, fields, sizeof(fields));
	if (want == MW_IMAGE_SKIPPED) {
		T_ASSERT(s == s0);
		T_EQ_INT(eng_model_load_report(m)->mode, ENG_LOAD_MMAP);
		T_CONTAINS(fields, " image=skipped image_ms=0.000 image_cpus=none "
				   "tokens_on_mapping=5 tokens_on_image=0");
		mw_overlap_explain(&ov, 5, 0, 0, fields, sizeof(fields));
		T_CONTAINS(fields, "no image: the session's threads take ");
		T_CONTAINS(fields, skip_says);
		T_CONTAINS(fields, "all 5 tokens ran on the mapping");
	} else {
		T_ASSERT(s != s0);
		T_EQ_INT(ov.image_threads, fill_threads);
		T_CONTAINS(fields, "tokens_on_mapping=3 tokens_on_image=2");
	}
	mw_overlap_end(&ov);
	T_EQ_INT(ov.state, want);
	T_EQ_INT(count_fds(), fds);
	eng_session_free(s);
	eng_model_close(m);
}

/* A cgroup v2 tree at dir/cg whose cpu.max allows `cpus` CPUs, named by $MEMWALL_CGROUP_ROOT
 * (src/base/cgroup.c reads it in place of /proc/self and /sys/fs/cgroup). */
static void quota_tree(double cpus)
{
	char root[4400], text[64];
	snprintf(root, sizeof(root), "%s/cg", dir);
	snprintf(text, sizeof(text), "%.0f 100000\n", cpus * 100000);
	t_cgroup_tree(root, text);
	setenv("MEMWALL_CGROUP_ROOT", root, 1);
}

/* The image under a CPU quota (n >= 2 CPUs in the mask, cpu[] their numbers): the quota is
 * shared by every thread, so the image takes only the whole CPUs it leaves beyond the
 * session's, where the mask alone would have given it more. */
static void image_quota(int n, const int *cpu, int on_all)
{
	char first[16], last[16];
	snprintf(first, sizeof(first), "%d", cpu[0]);
	snprintf(last, sizeof(last), "%d", cpu[n - 1]);
	/* n - 1 threads within a quota of n - 1 CPUs: none left, though the mask has one */
	quota_tree(n - 1);
	skip_says = "the whole CPUs of the cgroup's CPU quota";
	launch_on(n - 1, false, MW_IMAGE_SKIPPED, "none", 0);
	skip_says = "every CPU of the affinity mask";
	/* needed: every CPU of the mask, as without a quota */
	if (cpu[n - 1] - cpu[0] == n - 1) {
		char all[64];
		snprintf(all, sizeof(all), "%d-%d", cpu[0], cpu[n - 1]);
		launch_on(n - 1, true, MW_IMAGE_USED, all, on_all);
	}
	/* 1.5 CPUs and no session threads: one whole CPU, the mask's first, one fill thread */
	quota_tree(1.5);
	launch_on(0, false, MW_IMAGE_USED, first, 1);
	/* a quota above the mask: the mask's last CPU, as without one */
	quota_tree(n + 0.5);
	launch_on(n - 1, false, MW_IMAGE_USED, last, 1);
	unsetenv("MEMWALL_CGROUP_ROOT");
	char cmd[4400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/cg'", dir);
	T_EQ_INT(system(cmd), 0);
}

/* Where the image is built: the CPUs of the mask after the session's threads (the pool pins
 * thread t to the mask's t-th CPU), every CPU when none is left and the run needs it, no
 * image when none is left and it does not. */
static void image_cpus(void)
{
	cpu_set_t set;
	struct stat st;
	int cpu[CPU_SETSIZE], n = 0;
	char all[64];
	T_EQ_INT(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpu[n++] = c;
	T_EQ_INT(stat(model, &st), 0);
	long pieces = (long)((st.st_size + (2 << 20) - 1) / (2 << 20));
	/* the fill's threads: one per CPU of its mask, at most one per 2 MiB piece */
	int on_all = (int)(pieces < n ? pieces : n);
	if (n == 1)
		snprintf(all, sizeof(all), "%d", cpu[0]);
	else if (cpu[n - 1] - cpu[0] == n - 1)
		snprintf(all, sizeof(all), "%d-%d", cpu[0], cpu[n - 1]);
	else
		all[0] = '\0'; /* a mask with holes: its text is not checked */
	launch_on(n, false, MW_IMAGE_SKIPPED, "none", 0);
	launch_on(n + 3, false, MW_IMAGE_SKIPPED, "none", 0);
	if (all[0]) {
		launch_on(n, true, MW_IMAGE_USED, all, on_all);
		launch_on(0, false, MW_IMAGE_USED, all, on_all);
	}
	if (n < 2) {
		printf("one CPU in the mask: the image beside a session not checked\n");
		return;
	}
	char last[16];
	snprintf(last, sizeof(last), "%d", cpu[n - 1]);
	launch_on(n - 1, false, MW_IMAGE_USED, last, 1);
	launch_on(n - 1, true, MW_IMAGE_USED, last, 1);
	image_quota(n, cpu, on_all);
}

int main(void)
{
	/* before the scratch folder: t_run's skip further on would leave it behind */
	t_need_memwall();
	t_mkdtemp(dir);
	snprintf(model, sizeof(model), "%s/s15-q4_0.gguf", dir);
	snprintf(other, sizeof(other), "%s/s260k-f32.gguf", dir);
	struct eng_error err;
	eng_error_clear(&err);
	/* varied (issue 26): the logits compared bit for bit come from ids that change */
	if (t_id_synth_gguf(model, "llama", "stories15M", "q4_0", 3, ENG_SYNTH_VARIED) ||
	    t_id_synth_gguf(other, "llama", "stories260K", "f32", 3, ENG_SYNTH_VARIED)) {
		fprintf(stderr, "synth: %s\n", err.text);
		return 1;
	}
	adopt_exact();
	adopt_refused();
	image_cpus();
	int longp[MW_OVERLAP_PROMPT_MAX + 2];
	for (int i = 0; i < MW_OVERLAP_PROMPT_MAX + 2; i++)
		longp[i] = i ? 200 + 7 * i : 1;
	command_logits(prompt, N_PROMPT);
	command_logits(longp, MW_OVERLAP_PROMPT_MAX + 2);
	one_token();
	switch_anywhere();
	image_fails();
	unlink(model);
	unlink(other);
	rmdir(dir);
	return t_done();
}
