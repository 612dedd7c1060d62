/* src/analysis/roofline.c: roofline arithmetic, the plausibility check and the roofline chart
 * (roofline.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "embedded.h"
#include "roofline.h"

static const char *const verdict_names[] = {
	[MW_VERDICT_NOT_CHECKED] = "not checked",
	[MW_VERDICT_PLAUSIBLE] = "plausible",
	[MW_VERDICT_IMPLAUSIBLE] = "IMPLAUSIBLE",
	[MW_VERDICT_EXCESS] = "excess",
};

const char *mw_verdict_name(enum mw_verdict v)
{
	return (unsigned)v < sizeof(verdict_names) / sizeof(verdict_names[0]) ? verdict_names[v]
									       : "?";
}

static void list_instances(char *buf, size_t n, const char *const *inst, size_t k)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < k && used < n; i++) {
		int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", inst[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (!k)
		snprintf(buf, n, "(the record does not name them)");
}

void mw_plausibility_check(const struct mw_analytic *a, double measured_bytes,
			   const char *const *instances, size_t n_instances,
			   struct mw_plausibility *out)
{
	char inst[600];
	out->ratio = NAN;
	if (isnan(measured_bytes)) {
		out->verdict = MW_VERDICT_NOT_CHECKED;
		snprintf(out->text, sizeof(out->text), "no measured DRAM bytes to check");
		return;
	}
	if (!a->far_larger_than_llc || a->floor == 0) {
		out->verdict = MW_VERDICT_NOT_CHECKED;
		snprintf(out->text, sizeof(out->text),
			 "not checked: the weights read per token (%.1f MB) are not far larger than "
			 "the LLC (%s), so cache hits may legitimately keep DRAM traffic below them",
			 (double)a->weights / 1e6, a->llc_statement);
		return;
	}
	list_instances(inst, sizeof(inst), instances, n_instances);
	out->ratio = measured_bytes / (double)a->floor;
	if (out->ratio < MW_PLAUSIBLE_LOW) {
		out->verdict = MW_VERDICT_IMPLAUSIBLE;
		snprintf(out->text, sizeof(out->text),
			 "IMPLAUSIBLE: %.1f MB/token read from DRAM is %.2fx the analytic floor of "
			 "%.1f MB/token (%.1f MB of weights per decode step minus at most %.1f MB "
			 "that can stay cache-resident; %s). A decode step must stream those weights "
			 "from DRAM, so the counters probably missed memory controllers: counted "
			 "only %s",
			 measured_bytes / 1e6, out->ratio, (double)a->floor / 1e6,
			 (double)a->weights / 1e6, (double)a->llc / 1e6, a->llc_statement, inst);
	} else if (out->ratio > MW_PLAUSIBLE_HIGH) {
		out->verdict = MW_VERDICT_EXCESS;
		snprintf(out->text, sizeof(out->text),
			 "flagged: %.1f MB/token is %.2fx the analytic floor of %.1f MB/token: more "
			 "than %.1fx means traffic from elsewhere (other processes, the KV cache "
			 "(%.1f MB read at this position), write-allocate or prefetch overfetch); "
			 "counted %s",
			 measured_bytes / 1e6, out->ratio, (double)a->floor / 1e6, MW_PLAUSIBLE_HIGH,
			 (double)a->kv_read / 1e6, inst);
	} else {
		out->verdict = MW_VERDICT_PLAUSIBLE;
		snprintf(out->text, sizeof(out->text),
			 "plausible: %.1f MB/token is %.2fx the analytic floor of %.1f MB/token "
			 "(%s); counted %s",
			 measured_bytes / 1e6, out->ratio, (double)a->floor / 1e6, a->llc_statement,
			 inst);
	}
}

void mw_roofline_compute(const struct mw_analytic *a, const struct mw_roofline_inputs *in,
			 struct mw_roofline *out)
{
	out->max_tok_s_bw = isnan(in->bw_gbps) || a->total == 0
				    ? NAN : in->bw_gbps * 1e9 / (double)a->total;
	out->max_tok_s_compute = isnan(in->peak_flops) || a->flops <= 0
					 ? NAN : in->peak_flops / a->flops;
	if (isnan(out->max_tok_s_bw) && isnan(out->max_tok_s_compute)) {
		out->max_tok_s = NAN;
		out->bound = "none";
	} else if (isnan(out->max_tok_s_compute) ||
		   (!isnan(out->max_tok_s_bw) && out->max_tok_s_bw <= out->max_tok_s_compute)) {
		out->max_tok_s = out->max_tok_s_bw;
		out->bound = "memory";
	} else {
		out->max_tok_s = out->max_tok_s_compute;
		out->bound = "compute";
	}
	out->headroom = in->measured_tok_s > 0 ? out->max_tok_s / in->measured_tok_s : NAN;
	out->dram_efficiency = isnan(in->measured_bytes) || a->total == 0
				       ? NAN : in->measured_bytes / (double)a->total;
}

void mw_roofline_batch(const struct mw_analytic *a, const struct mw_roofline_inputs *in, int n,
		       struct mw_roofline_point *out)
{
	mw_analytic_batch(a, n, &out->b);
	out->tok_s_memory = isnan(in->bw_gbps) ? NAN : in->bw_gbps * 1e9 / out->b.bytes;
	out->tok_s_compute = isnan(in->peak_flops) || a->flops <= 0 ? NAN
								     : in->peak_flops / a->flops;
	bool mem = !isnan(out->tok_s_memory), cmp = !isnan(out->tok_s_compute);
	out->bound = !mem && !cmp ? "none"
		     : !cmp || (mem && out->tok_s_memory <= out->tok_s_compute) ? "memory"
										   : "compute";
	out->tok_s = !strcmp(out->bound, "memory") ? out->tok_s_memory
		     : !strcmp(out->bound, "compute") ? out->tok_s_compute : NAN;
}

static void cell(FILE *f, double v, int prec, const char *unit)
{
	if (isnan(v))
		fputs(" n/a |", f);
	else
		fprintf(f, " %.*f%s |", prec, v, unit);
}

void mw_roofline_batch_print(FILE *f, const struct mw_analytic *a,
			     const struct mw_roofline_inputs *in, const int *ns, size_t count)
{
	struct mw_roofline_point p0;
	fprintf(f, "\n### Batched decode: the predicted curve (analytic, MB = 10^6 bytes)\n\n"
		   "| N | weights MB/token | KV MB/token | MB/token | GFLOP/step | memory roof "
		   "tok/s | compute roof tok/s | predicted tok/s | bound | speedup vs N=%d |\n"
		   "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n", ns[0]);
	mw_roofline_batch(a, in, ns[0], &p0);
	for (size_t i = 0; i < count; i++) {
		struct mw_roofline_point p;
		mw_roofline_batch(a, in, ns[i], &p);
		fprintf(f, "| %d |", ns[i]);
		cell(f, p.b.weight_bytes / 1e6, 3, "");
		cell(f, p.b.kv_bytes / 1e6, 4, "");
		cell(f, p.b.bytes / 1e6, 3, "");
		cell(f, p.b.step_flops / 1e9, 3, "");
		cell(f, p.tok_s_memory, 1, "");
		cell(f, p.tok_s_compute, 1, "");
		cell(f, p.tok_s, 1, "");
		fprintf(f, " %s |", p.bound);
		/* Without roofs the speedup is the memory-bound one: bytes per token fall. */
		cell(f, isnan(p.tok_s) ? p0.b.bytes / p.b.bytes : p.tok_s / p0.tok_s, 2, "x");
		fputc('\n', f);
	}
	fprintf(f, "\nWeights (less the embedding, read once per token) are shared by the N "
		   "sequences of a step; the KV cache is each sequence's own; FLOPs per token do not "
		   "change, so the compute roof is the same for every N.%s\n",
		isnan(in->bw_gbps) && isnan(in->peak_flops)
			? " No roof is known: the speedup column is the memory-bound one, MB/token "
			  "at N=1 over MB/token at N."
			: "");
}

/* ---- The chart ------------------------------------------------------------------------------- */

int mw_gnuplot_charts(const char *dir, const char *vars, const char *const *scripts, size_t n,
		      struct mw_error *err)
{
	static const char *const formats[] = { "png", "svg" };
	char path[4200];
	size_t len = strlen(vars) + 1;
	for (size_t i = 0; i < n; i++) {
		const struct mw_embedded *e = mw_embedded_find(scripts[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, scripts[i]);
		FILE *f = fopen(path, "w");
		if (!e || !f || fwrite(e->data, 1, e->len, f) != e->len) {
			if (f)
				fclose(f);
			return mw_error_set(err, -EIO, path, "", "cannot write the gnuplot script");
		}
		if (fclose(f))
			return mw_error_set(err, -EIO, path, "", "cannot write the gnuplot script");
		len += 2 * (strlen(scripts[i]) + 40);
	}
	/* One process for every chart and format: a gnuplot start (its libraries and fonts) was
	 * most of a small chart's cost, and report --plot started ten (issue 44). `reset`
	 * between charts returns every setting to its default; variables (vars) stay. */
	char *cmd = malloc(len);
	if (!cmd)
		return mw_error_set(err, -ENOMEM, "gnuplot", "", "out of memory");
	size_t k = (size_t)snprintf(cmd, len, "%s", vars);
	for (size_t i = 0; i < n; i++)
		for (size_t f = 0; f < 2; f++)
			k += (size_t)snprintf(cmd + k, len - k, "; fmt='%s'; load '%s'; reset",
					      formats[f], scripts[i]);
	pid_t pid = fork();
	if (pid < 0) {
		free(cmd);
		return mw_error_set(err, -errno, "gnuplot", "", "cannot fork: %s", strerror(errno));
	}
	if (pid == 0) {
		if (chdir(dir))
			_exit(126);
		execlp("gnuplot", "gnuplot", "-e", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	int st = 0;
	if (waitpid(pid, &st, 0) < 0)
		return mw_error_set(err, -errno, "gnuplot", "", "wait failed: %s", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return mw_error_set(err, -ENOENT, "gnuplot", "", "gnuplot is not installed: "
				    "scripts/bootstrap.sh installs it (gnuplot-nox)");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return mw_error_set(err, -EIO, dir, "", "gnuplot failed on %s%s (its messages "
				    "are above)", scripts[0], n > 1 ? " or the charts after it" : "");
	return 0;
}

void mw_gnuplot_quote(char *out, size_t n, const char *s)
{
	size_t j = 0;
	if (n < 3)
		return;
	out[j++] = '\'';
	for (; *s && j + 3 < n; s++) {
		if (*s == '\'')
			out[j++] = '\'';
		out[j++] = *s;
	}
	out[j++] = '\'';
	out[j] = '\0';
}

int mw_roofline_plot(const struct mw_analytic *a, const struct mw_roofline_inputs *in,
		     const char *label, const char *dir, FILE *log, struct mw_error *err)
{
	char path[4200], qlabel[1300], vars[4096];
	double ai = a->flops / (double)a->total; /* FLOPs per byte of the analytic step */
	int rc;

	if (mkdir(dir, 0777) && errno != EEXIST)
		return mw_error_set(err, -errno, dir, "", "cannot create: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/roofline.dat", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return mw_error_set(err, -errno, path, "", "cannot write: %s", strerror(errno));
	/* Points: label, FLOPs per byte, attained GFLOP/s. The analytic point sits on the roof;
	 * the measured one at measured tok/s, with the measured bytes when there are some. */
	fprintf(f, "# label flops_per_byte gflops\n");
	struct mw_roofline r;
	mw_roofline_compute(a, in, &r);
	if (!isnan(r.max_tok_s))
		fprintf(f, "\"roof (analytic step)\" %.9g %.9g\n", ai, r.max_tok_s * a->flops / 1e9);
	if (in->measured_tok_s > 0) {
		double mai = isnan(in->measured_bytes) ? ai : a->flops / in->measured_bytes;
		fprintf(f, "\"measured%s\" %.9g %.9g\n",
			isnan(in->measured_bytes) ? " (analytic bytes)" : " (DRAM bytes)", mai,
			in->measured_tok_s * a->flops / 1e9);
	}
	if (fclose(f))
		return mw_error_set(err, -EIO, path, "", "cannot write");
	mw_gnuplot_quote(qlabel, sizeof(qlabel), label);
	snprintf(vars, sizeof(vars), "label=%s; bw=%.9g; peak=%.9g; ai=%.9g", qlabel,
		 isnan(in->bw_gbps) ? 0 : in->bw_gbps,
		 isnan(in->peak_flops) ? 0 : in->peak_flops / 1e9, ai);
	const char *const script[] = { "roofline.gp" };
	if ((rc = mw_gnuplot_charts(dir, vars, script, 1, err)))
		return rc;
	if (log)
		fprintf(log, "memwall roofline: wrote %s/roofline.png\nmemwall roofline: wrote "
			"%s/roofline.svg\n", dir, dir);
	return 0;
}
