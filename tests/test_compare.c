/* tests/test_compare.c: `memwall compare` exit codes on synthetic result pairs: a regression,
 * a non-regression, an improvement, a change within the threshold, and pairs it must refuse
 * (different protocols or machines, a malformed record) unless forced. */
#include <unistd.h>

#include "fixture_result.h"
#include "run.h"
#include "test.h"

static char dir[256];

static const struct fx_spec base = {
	.protocol = "pair", .cpu = "Test CPU", .runs = 5, .warmups = 1, .tokens = 64,
	.latency_ns = 20e6, .jitter = 0.005, .dram_bytes = 400e6, .instances = 2, .seed = 11,
};

static void write_pair(const struct fx_spec *a, const struct fx_spec *b, char *pa, char *pb)
{
	json_t *x = fx_record(a), *y = fx_record(b);
	fx_write(x, dir, "base.json", pa, 1024);
	fx_write(y, dir, "new.json", pb, 1024);
	json_decref(x);
	json_decref(y);
}

static struct t_output compare(const char *pa, const char *pb, const char *extra1,
			       const char *extra2)
{
	const char *argv[] = { "memwall", "compare", pa, pb, extra1, extra2, NULL };
	return t_run(argv);
}

static void test_same(void)
{
	char pa[1024], pb[1024];
	struct fx_spec b = base;
	b.seed = 12; /* same distribution, other noise */
	write_pair(&base, &b, pa, pb);
	struct t_output o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "| tok_per_s |");
	T_CONTAINS(o.out, "0 regressions");
	t_output_free(&o);
}

static void test_regression(void)
{
	char pa[1024], pb[1024];
	struct fx_spec b = base;
	b.seed = 12;
	b.latency_ns = 23e6; /* 13 % slower: tok/s down well beyond 5 %, far beyond the noise */
	write_pair(&base, &b, pa, pb);
	struct t_output o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.out, "REGRESSION");
	t_output_free(&o);
	/* The same change under a 20 % threshold is not a regression. */
	o = compare(pa, pb, "--max-regress", "20");
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "changed, within threshold");
	t_output_free(&o);
	/* More DRAM bytes per token is a regression too (lower is better). */
	b.latency_ns = base.latency_ns;
	b.dram_bytes = 480e6;
	write_pair(&base, &b, pa, pb);
	o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.out, "| dram_read_MB_per_token |");
	t_output_free(&o);
	/* Faster and leaner: an improvement, exit 0. */
	b.latency_ns = 17e6;
	b.dram_bytes = 350e6;
	write_pair(&base, &b, pa, pb);
	o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "improvement");
	t_output_free(&o);
}

/* A large shift that noise could explain is not significant: no regression. */
static void test_noisy(void)
{
	char pa[1024], pb[1024];
	struct fx_spec a = base, b = base;
	a.jitter = b.jitter = 0.4;
	a.runs = b.runs = 2;
	b.seed = 99;
	b.latency_ns = 21e6;
	write_pair(&a, &b, pa, pb);
	struct t_output o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
}

static void test_refusals(void)
{
	char pa[1024], pb[1024];
	struct fx_spec b = base;
	b.protocol = "other";
	b.latency_ns = 30e6;
	write_pair(&base, &b, pa, pb);
	struct t_output o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "different protocols: pair vs other");
	t_output_free(&o);
	o = compare(pa, pb, "--force", NULL);
	T_EQ_INT(o.status, 1); /* forced: compared, and 50 % slower is a regression */
	T_CONTAINS(o.out, "forced");
	t_output_free(&o);

	b = base;
	b.cpu = "Other CPU";
	write_pair(&base, &b, pa, pb);
	o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "machine.cpu_name differs");
	t_output_free(&o);

	FILE *f = fopen(pb, "w");
	fputs("{\"schema\": \"memwall-result/1\",", f);
	fclose(f);
	o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "not valid JSON");
	t_output_free(&o);
	o = compare(pa, NULL, NULL, NULL);
	T_EQ_INT(o.status, 2);
	t_output_free(&o);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mw-test-compare-XXXXXX");
	if (!mkdtemp(dir))
		t_skip("cannot create a scratch folder in /tmp");
	test_same();
	test_regression();
	test_noisy();
	test_refusals();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return t_done();
}
