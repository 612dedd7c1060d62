/* src/cli/cmd_bandwidth.c: `memwall bandwidth`, the memory-bandwidth probe: the roofline's yardstick.
 *
 * Runs the engine's streaming kernels (engine.h, "Memory streaming") with pinned threads over
 * a working set of at least 8x the last-level cache, several times each, and reports the best
 * and the median GB/s of every kernel at every thread count. The best read-only figure is the
 * roof an engine that streams its weights is measured against (scripts/bench-engine.sh).
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "engine.h"
#include "mw.h"
#include "opt.h"
#include "stats.h"
#include "text.h"
#include "verbs.h"

#define VERB "bandwidth"
#define MAX_THREADS MW_THREADS_MAX
#define MAX_REPS 10000
#define LLC_MULTIPLE ENG_ROOF_LLC_MULTIPLE /* working set >= 8x LLC: the requirement */
#define LLC_FALLBACK ENG_ROOF_LLC_FALLBACK /* when sysfs does not describe the caches */
#define GB 1e9
#define MAX_TABLES 8

/* The kernel variants, in report order. `group` is what --kernel selects. */
static const struct variant {
	const char *name;
	const char *group;
	enum eng_stream_kind kind;
	bool nontemporal;
} variants[] = {
	{ "read", "read", ENG_STREAM_READ, false },
	{ "copy", "copy", ENG_STREAM_COPY, false },
	{ "copy-nt", "copy", ENG_STREAM_COPY, true },
	{ "triad", "triad", ENG_STREAM_TRIAD, false },
	{ "triad-nt", "triad", ENG_STREAM_TRIAD, true },
};
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))

struct figure {
	const struct variant *v;
	const char *table;      /* kernel table that ran it, e.g. "avx2"; static storage */
	int threads;
	bool measured;          /* false: the kernel table has no such variant */
	double best, median;    /* GB/s */
	struct eng_stream_sample last;
	double *samples;        /* (reps) GB/s, owned */
};

struct options {
	int threads[MAX_THREADS];
	int n_threads;
	uint64_t bytes;
	int reps;
	const char *group;
	const char *kernels;
	bool hugepages;
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall bandwidth [-t N | --threads LIST] [--size MiB] [--reps N]\n"
		"                         [--kernel read|copy|triad|all] [--kernels auto|ref|avx2|...]\n"
		"                         [--no-hugepages] [--json]\n\n"
		"Measures memory bandwidth with pinned threads: read-only, copy and triad kernels\n"
		"(STREAM's), plain and non-temporal-store variants. Reports the best and the median\n"
		"GB/s of each, and the best read-only figure, which is the roofline's yardstick.\n"
		"The read kernel runs with every vector kernel table this CPU supports (each has its\n"
		"own loop, and the roof is the best of them); copy and triad with the best table.\n\n"
		"  -t, --threads LIST  thread counts: N, a list 1,2 or a range 1-4 (default: 1 and\n"
		"                      every CPU this process may use, no more than its cgroup's CPU\n"
		"                      quota); one pinned thread per CPU\n"
		"  --size MiB          working set of each run, all arrays together (default: %dx the\n"
		"                      last-level cache from sysfs, or %dx %llu MiB if sysfs is silent)\n"
		"  --reps N            timed runs per kernel after one warm-up run (default 10)\n"
		"  --kernel K          read, copy, triad or all (default all)\n"
		"  --kernels T         one kernel table for every kernel (default: see above)\n"
		"  --no-hugepages      leave the buffers to the system's THP policy; by default they\n"
		"                      are madvise(MADV_HUGEPAGE)'d, because 2 MiB pages read fastest\n"
		"                      and a roof is the best memory can do (the report says how many\n"
		"                      huge pages the kernel actually gave)\n"
		"  --json              one JSON object on stdout instead of the table\n\n"
		"GB = 1e9 bytes. Bytes counted per run are those the kernel loads plus those it stores\n"
		"(STREAM's convention); the write-allocate reads that plain stores cause are not\n"
		"counted, which is why copy-nt and triad-nt can exceed copy and triad.\n",
		LLC_MULTIPLE, LLC_MULTIPLE, LLC_FALLBACK >> 20);
}

/* Bytes of this process's anonymous memory in transparent huge pages, from
 * /proc/self/smaps_rollup (Documentation/filesystems/proc.rst); -1 when it cannot be read. The
 * stream buffers are by far the largest anonymous mappings here, so this says whether the
 * kernel honoured MADV_HUGEPAGE. */
static int64_t anon_huge_bytes(void)
{
	char line[256];
	long long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : (int64_t)kb * 1024;
}

/* "2", "1,2", "1-4", "1,2-3": ascending or not, each count in [1, MAX_THREADS]. */
static int parse_threads(const char *text, struct options *o)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", text);
	o->n_threads = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		long lo, hi;
		char *dash = strchr(tok, '-');
		if (dash)
			*dash = '\0';
		if (mw_parse_long(tok, 1, MAX_THREADS, &lo) < 0)
			return -EINVAL;
		hi = lo;
		if (dash && (mw_parse_long(dash + 1, lo, MAX_THREADS, &hi) < 0))
			return -EINVAL;
		for (long t = lo; t <= hi; t++) {
			if (o->n_threads == MAX_THREADS)
				return -EINVAL;
			o->threads[o->n_threads++] = (int)t;
		}
	}
	return o->n_threads ? 0 : -EINVAL;
}

static int parse_args(int argc, char **argv, struct options *o, bool *help)
{
	enum { OPT_SIZE = 256, OPT_REPS, OPT_KERNEL, OPT_KERNELS, OPT_HUGEPAGES, OPT_NO_HUGEPAGES,
	       OPT_JSON };
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "reps", required_argument, NULL, OPT_REPS },
		{ "kernel", required_argument, NULL, OPT_KERNEL },
		{ "kernels", required_argument, NULL, OPT_KERNELS },
		{ "hugepages", no_argument, NULL, OPT_HUGEPAGES },
		{ "no-hugepages", no_argument, NULL, OPT_NO_HUGEPAGES },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "t:h", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case 't':
			if (parse_threads(optarg, o) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--threads '%s': want N, a list such as 1,2 or a "
					       "range such as 1-4, each from 1 to %d",
					       optarg, MAX_THREADS);
			break;
		case OPT_SIZE:
			if (mw_parse_long(optarg, 1, 1L << 20, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--size '%s': want a whole number of MiB from 1 to "
					       "1048576",
					       optarg);
			o->bytes = (uint64_t)v << 20;
			break;
		case OPT_REPS:
			if (mw_parse_long(optarg, 1, MAX_REPS, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--reps '%s': want a whole number from 1 to %d", optarg,
					       MAX_REPS);
			o->reps = (int)v;
			break;
		case OPT_KERNEL:
			if (strcmp(optarg, "read") && strcmp(optarg, "copy") &&
			    strcmp(optarg, "triad") && strcmp(optarg, "all"))
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--kernel '%s': want read, copy, triad or all", optarg);
			o->group = optarg;
			break;
		case OPT_KERNELS:
			o->kernels = optarg;
			break;
		case OPT_HUGEPAGES:
			o->hugepages = true;
			break;
		case OPT_NO_HUGEPAGES:
			o->hugepages = false;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case 'h':
			*help = true;
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	return mw_opt_none_left(&op);
}

/* One warm-up run (page-table and TLB state, clocks ramping up), then reps timed runs. */
static int measure(struct eng_stream *s, struct figure *f, int reps)
{
	struct eng_stream_sample r;
	int rc = eng_stream_run(s, f->v->kind, f->v->nontemporal, &r);
	if (rc == -ENOTSUP)
		return 0; /* f->measured stays false */
	if (rc < 0)
		return rc;
	for (int i = 0; i < reps; i++) {
		rc = eng_stream_run(s, f->v->kind, f->v->nontemporal, &r);
		if (rc < 0)
			return rc;
		f->samples[i] = (double)(r.bytes_read + r.bytes_written) / r.seconds / GB;
	}
	struct mw_stats st;
	mw_stats_compute(f->samples, (size_t)reps, &st);
	f->best = st.max;
	f->median = st.median;
	f->last = r;
	f->measured = true;
	return 0;
}

/* The figure with the highest best GB/s at `threads`, among read-only kernels or all. */
static const struct figure *best_of(const struct figure *figs, size_t n, int threads,
				    bool read_only)
{
	const struct figure *best = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct figure *f = &figs[i];
		if (f->threads != threads || !f->measured ||
		    (read_only && f->v->kind != ENG_STREAM_READ))
			continue;
		if (!best || f->best > best->best)
			best = f;
	}
	return best;
}

static json_t *figure_json(const struct figure *f, int reps)
{
	json_t *samples = json_array();
	for (int i = 0; i < reps; i++)
		json_array_append_new(samples, json_real(f->samples[i]));
	return json_pack("{s:s, s:s, s:i, s:b, s:f, s:f, s:I, s:I, s:o}", "kernel", f->v->name,
			 "table", f->table, "threads", f->threads, "nontemporal", f->v->nontemporal, "best_gbps",
			 f->best, "median_gbps", f->median, "bytes_read",
			 (json_int_t)f->last.bytes_read, "bytes_written",
			 (json_int_t)f->last.bytes_written, "samples_gbps", samples);
}

static json_t *summary_json(const struct figure *f)
{
	if (!f)
		return json_null();
	return json_pack("{s:i, s:s, s:s, s:f, s:f}", "threads", f->threads, "kernel",
			 f->v->name, "table", f->table, "best_gbps", f->best, "median_gbps",
			 f->median);
}

static void print_json(const struct options *o, uint64_t ws, int64_t huge,
		       uint64_t llc, const char *llc_source, const struct figure *figs, size_t n)
{
	json_t *runs = json_array(), *roof = json_array(), *best = json_array();
	for (size_t i = 0; i < n; i++)
		if (figs[i].measured)
			json_array_append_new(runs, figure_json(&figs[i], o->reps));
	for (int t = 0; t < o->n_threads; t++) {
		json_array_append_new(roof, summary_json(best_of(figs, n, o->threads[t], true)));
		json_array_append_new(best, summary_json(best_of(figs, n, o->threads[t], false)));
	}
	json_t *root = json_pack(
		"{s:s, s:s, s:I, s:I, s:o, s:i, s:i, s:b, s:o, s:s, s:s, s:o, s:o, s:o}",
		"tool", "memwall bandwidth",
		"version", mw_version(),
		"working_set_bytes", (json_int_t)ws,
		"llc_bytes", (json_int_t)llc,
		"llc_source", llc_source ? json_string(llc_source) : json_null(),
		"llc_multiple", LLC_MULTIPLE,
		"reps", o->reps,
		"hugepages", o->hugepages,
		"anon_huge_bytes", huge >= 0 ? json_integer(huge) : json_null(),
		"unit", "GB/s, GB = 1e9 bytes",
		"bytes_counted",
		"bytes loaded + bytes stored by the kernel; write-allocate reads not counted",
		"runs", runs,
		"roof_read", roof,
		"best", best);
	json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	fputc('\n', stdout);
	json_decref(root);
}

static void print_table(const struct options *o, uint64_t ws, int64_t huge,
			uint64_t llc, const char *llc_source, const struct figure *figs, size_t n)
{
	printf("memwall bandwidth: working set %.1f MiB per run", (double)ws / (1 << 20));
	if (llc_source)
		printf(" (LLC %.1f MiB from %s)\n", (double)llc / (1 << 20), llc_source);
	else
		printf(" (LLC size not in sysfs: assumed %.1f MiB)\n", (double)llc / (1 << 20));
	printf("%d timed runs per kernel after 1 warm-up, threads pinned one per CPU\n", o->reps);
	printf("pages: %s; ", o->hugepages ? "MADV_HUGEPAGE" : "system THP policy");
	if (huge >= 0)
		printf("the kernel gave %.1f MiB of the buffers' %.1f MiB as 2 MiB pages\n",
		       (double)huge / (1 << 20), (double)ws / (1 << 20));
	else
		printf("huge-page coverage not measured (/proc/self/smaps_rollup unreadable)\n");
	printf("GB = 1e9 bytes; counted: bytes loaded + bytes stored (write-allocate reads not "
	       "counted)\n\n");
	printf("%-10s %-7s %7s %11s %13s\n", "kernel", "table", "threads", "best GB/s",
	       "median GB/s");
	for (size_t i = 0; i < n; i++) {
		const struct figure *f = &figs[i];
		if (f->measured)
			printf("%-10s %-7s %7d %11.2f %13.2f\n", f->v->name, f->table, f->threads,
			       f->best, f->median);
		else
			printf("%-10s %-7s %7d %11s %13s  (no non-temporal stores in this table)\n",
			       f->v->name, f->table, f->threads, "-", "-");
	}
	putchar('\n');
	for (int t = 0; t < o->n_threads; t++) {
		const struct figure *r = best_of(figs, n, o->threads[t], true);
		const struct figure *b = best_of(figs, n, o->threads[t], false);
		if (r)
			printf("roof (read) at %d thread%s: %.2f GB/s best, %.2f median, kernel %s "
			       "(%s)\n",
			       o->threads[t], o->threads[t] == 1 ? "" : "s", r->best, r->median,
			       r->v->name, r->table);
		if (b)
			printf("best of all kernels at %d thread%s: %.2f GB/s best, %.2f median, "
			       "kernel %s (%s)\n",
			       o->threads[t], o->threads[t] == 1 ? "" : "s", b->best, b->median,
			       b->v->name, b->table);
	}
}

int mw_cmd_bandwidth(int argc, char **argv)
{
	struct options o = { .reps = 10, .group = "all", .hugepages = true };
	struct figure *figs = NULL;
	struct eng_stream *s = NULL;
	size_t n_figs = 0;
	bool help = false;
	int rc = parse_args(argc, argv, &o, &help);
	if (rc != MW_EXIT_OK || help) {
		if (help)
			usage(stdout);
		return rc;
	}

	char capped[1024];
	int ncpu = mw_cpus_allowed(), dflt = mw_cpus_default(capped, sizeof(capped));
	if (o.n_threads == 0) {
		o.threads[o.n_threads++] = 1;
		if (dflt > 1)
			o.threads[o.n_threads++] = dflt;
		if (capped[0])
			fprintf(stderr, "memwall bandwidth: threads: %s\n", mw_esc(capped));
	}
	for (int t = 0; t < o.n_threads; t++)
		if (o.threads[t] > ncpu)
			return mw_fail(MW_EXIT_USAGE, VERB,
				       "--threads: %d threads asked, but this process may run on "
				       "%d CPUs (one pinned thread per CPU)",
				       o.threads[t], ncpu);

	uint64_t llc = 0;
	char llc_path[256];
	bool llc_known = eng_llc_size(&llc, llc_path, sizeof(llc_path)) == 0;
	if (!llc_known)
		llc = LLC_FALLBACK;
	if (!o.bytes)
		o.bytes = eng_roof_bytes(NULL, NULL); /* the drift probe's rule too */
	if (o.bytes < LLC_MULTIPLE * llc)
		fprintf(stderr,
			"memwall bandwidth: warning: --size %llu MiB is below %dx the LLC (%llu "
			"MiB): caches will inflate the figures\n",
			(unsigned long long)(o.bytes >> 20), LLC_MULTIPLE,
			(unsigned long long)((LLC_MULTIPLE * llc) >> 20));

	/* Tables: the one asked for, or every vector table this CPU runs (best first; the scalar
	 * reference is a correctness tool, its read is latency-bound, not a bandwidth figure). */
	const char *tables[MAX_TABLES];
	size_t n_tables = 0;
	if (o.kernels) {
		tables[n_tables++] = o.kernels;
	} else {
		for (const char *name; n_tables < MAX_TABLES &&
				       (name = eng_kernels_name(n_tables)) && strcmp(name, "ref");)
			tables[n_tables++] = name;
		if (n_tables == 0)
			tables[n_tables++] = "ref";
	}

	figs = calloc((size_t)o.n_threads * N_VARIANTS * n_tables, sizeof(*figs));
	if (!figs)
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	uint64_t ws = 0;
	int64_t huge = INT64_MAX; /* the least huge-page coverage seen over the thread counts */
	for (int t = 0; t < o.n_threads; t++) {
		struct eng_error err;
		eng_error_clear(&err);
		struct eng_stream_options so = { .threads = o.threads[t], .bytes = o.bytes,
						 .kernels = tables[0], .hugepages = o.hugepages };
		rc = eng_stream_new(&s, &so, &err);
		if (rc < 0) {
			rc = mw_fail(rc == -EINVAL ? MW_EXIT_USAGE : MW_EXIT_ENV, VERB, "%s: %s",
				     err.source[0] ? err.source : "stream",
				     err.text[0] ? err.text : strerror(-rc));
			goto out;
		}
		ws = eng_stream_bytes(s);
		int64_t h = anon_huge_bytes();
		huge = h < huge ? h : huge;
		for (size_t i = 0; i < N_VARIANTS; i++) {
			if (strcmp(o.group, "all") && strcmp(o.group, variants[i].group))
				continue;
			size_t nt = variants[i].kind == ENG_STREAM_READ ? n_tables : 1;
			for (size_t k = 0; k < nt; k++) {
				struct figure *f = &figs[n_figs++];
				*f = (struct figure){ .v = &variants[i], .threads = o.threads[t] };
				rc = eng_stream_set_kernels(s, tables[k], &err);
				if (rc < 0) {
					rc = mw_fail(MW_EXIT_USAGE, VERB, "%s: %s", err.source,
						     err.text);
					goto out;
				}
				f->table = eng_stream_kernels(s);
				f->samples = calloc((size_t)o.reps, sizeof(double));
				rc = f->samples ? measure(s, f, o.reps) : -ENOMEM;
				if (rc < 0) {
					rc = mw_fail(MW_EXIT_ENV, VERB, "%s (%s) with %d thread%s: %s",
						     variants[i].name, f->table, o.threads[t],
						     o.threads[t] == 1 ? "" : "s",
						     strerror(-rc));
					goto out;
				}
			}
		}
		eng_stream_free(s);
		s = NULL;
	}
	if (o.json)
		print_json(&o, ws, huge, llc, llc_known ? llc_path : NULL, figs, n_figs);
	else
		print_table(&o, ws, huge, llc, llc_known ? llc_path : NULL, figs, n_figs);
	rc = MW_EXIT_OK;
out:
	eng_stream_free(s);
	for (size_t i = 0; i < n_figs; i++)
		free(figs[i].samples);
	free(figs);
	return rc;
}
