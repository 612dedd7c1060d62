/* tests/test_synth.c: synthetic checkpoints: deterministic bytes from the seed, the marker the
 * loader reports, realistic value ranges, atomic writing, and the `memwall synth` verb. */
#include <errno.h>
#include <unistd.h>

#include "engine.h"
#include "model/model.h"
#include "run.h"
#include "test.h"

static char dir[] = "/tmp/mw-test-synth-XXXXXX";

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *buf = malloc(*len);
	if (buf && fread(buf, 1, *len, f) != *len) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void path_in(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void test_deterministic(void)
{
	char a[4200], b[4200], c[4200];
	path_in(a, sizeof(a), "a.bin");
	path_in(b, sizeof(b), "b.bin");
	path_in(c, sizeof(c), "c.bin");
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_synth_llama2c(a, "stories260K", 7, &err), 0);
	T_EQ_INT(eng_synth_llama2c(b, "stories260K", 7, &err), 0);
	T_EQ_INT(eng_synth_llama2c(c, "stories260K", 8, &err), 0);
	size_t la = 0, lb = 0, lc = 0;
	unsigned char *da = slurp(a, &la), *db = slurp(b, &lb), *dc = slurp(c, &lc);
	T_ASSERT(da && db && dc);
	T_EQ_U64(la, lb);
	T_EQ_U64(la, lc);
	T_ASSERT(da && db && !memcmp(da, db, la));
	T_ASSERT(da && dc && memcmp(da + 256, dc + 256, la - 256) != 0);
	T_ASSERT(da && strstr((const char *)da + 64, "memwall-synthetic seed=7 shape=stories260K"));

	struct eng_model *m = NULL;
	T_EQ_INT(eng_model_open(&m, a, NULL, &err), 0);
	if (m) {
		const struct eng_model_info *info = eng_model_info(m);
		T_ASSERT(info->synthetic);
		/* RMSNorm weights near 1; matrices with standard deviation near 0.02. */
		double lo = 10, hi = -10, sum = 0, sq = 0;
		for (int i = 0; i < info->dim * info->n_layers; i++) {
			lo = fmin(lo, m->w.rms_att[i]);
			hi = fmax(hi, m->w.rms_att[i]);
		}
		T_ASSERT(lo >= 0.95 && hi <= 1.05 && hi > lo);
		size_t n = (size_t)info->dim * (size_t)info->dim * (size_t)info->n_layers;
		for (size_t i = 0; i < n; i++) {
			sum += m->w.wq[i];
			sq += (double)m->w.wq[i] * m->w.wq[i];
		}
		T_NEAR(sum / (double)n, 0.0, 0.001);
		T_NEAR(sqrt(sq / (double)n), 0.02, 0.001);
		eng_model_close(m);
	}
	free(da);
	free(db);
	free(dc);
	unlink(a);
	unlink(b);
	unlink(c);
}

static void test_errors(void)
{
	char p[4200];
	struct eng_error err;
	eng_error_clear(&err);
	path_in(p, sizeof(p), "x.bin");
	T_EQ_INT(eng_synth_llama2c(p, "stories1B", 1, &err), -EINVAL);
	T_CONTAINS(err.text, "unknown shape 'stories1B'");
	T_CONTAINS(err.text, "stories110M");
	T_ASSERT(access(p, F_OK) != 0);
	path_in(p, sizeof(p), "no/such/dir/x.bin");
	T_ASSERT(eng_synth_llama2c(p, "stories260K", 1, &err) < 0);
	T_CONTAINS(err.text, "cannot create");
}

static void test_verb(void)
{
	char p[4200];
	path_in(p, sizeof(p), "verb.bin");
	const char *argv[] = { "memwall", "synth", "--shape", "stories260K", "-o", p,
			       "--seed", "5", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "SYNTHETIC");
	T_CONTAINS(o.out, "stories260K");
	t_output_free(&o);
	/* Nothing left beside it: the temporary file was renamed. */
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "test $(ls %s | wc -l) -eq 1", dir);
	T_EQ_INT(system(cmd), 0);
	unlink(p);

	const char *bad[] = { "memwall", "synth", "--shape", "nope", "-o", p, NULL };
	o = t_run(bad);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "unknown shape 'nope'");
	t_output_free(&o);
	const char *arch[] = { "memwall", "synth", "--arch", "mamba", "--shape", "stories260K",
			       "-o", p, NULL };
	o = t_run(arch);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "unknown architecture");
	t_output_free(&o);
	const char *none[] = { "memwall", "synth", NULL };
	o = t_run(none);
	T_EQ_INT(o.status, 2);
	t_output_free(&o);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	test_deterministic();
	test_errors();
	test_verb();
	rmdir(dir);
	return t_done();
}
