/* src/run/verify_matrix.c: `memwall verify --matrix`: five access patterns at four sizes, each
 * direction's counted bytes against the bytes the pattern must move (verify_matrix.h).
 *
 * The patterns follow likwid's accuracy tests (test/accuracy/likwid-accuracy.py with
 * TESTS/MEM.txt: load, store, copy, stream, triad, daxpy and ddot at four sizes, counted /
 * expected per pattern) and McCalpin's STREAM kernels. A plain store reads each line before
 * writing it (write-allocate), so the controller counts a read per written line, which
 * STREAM's own byte counts leave out: MEM.txt's WA_FACTOR is 2.0 for store, 1.5 for copy,
 * 1.3333 for stream (our triad: a = b + s c, three arrays) and 1.0 for its non-temporal
 * "*_mem_*" variants, exactly the totals the table below expects. Some CPUs skip part of the
 * write-allocate reads: Intel's SpecI2M turns a read for ownership into an ownership request
 * "when memory subsystem is heavily loaded" (Ice Lake-SP, HotChips 2020; G. Hager's blog,
 * blogs.fau.de/hager, on Ice Lake), and ARM cores from ThunderX2 on detect full-line writes.
 * The write-allocate cells keep the read likwid expects (10 %): on such a CPU they fail, and
 * the pattern's text says why. Sizes start at 4x the last-level cache (no pass fits in it)
 * and double to 32x (--size S: S to 8S).
 * Every cell is the sum over every instance, net of the idle rate, so the canary's placement
 * does not matter here.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "verify_matrix.h"
#include "metrics.h"

#define SIZES 4

/* The pattern table: what each streams and what the controllers must count of it. reads =
 * bytes_read + (write_allocate ? bytes_written : 0), writes = bytes_written. A direction that
 * expects nothing must stay at the idle rate: its threshold is then a limit in percent of the
 * other direction's bytes. */
static const struct pattern {
	const char *name;
	enum eng_stream_kind kind;
	bool nt;
	bool write_allocate;
	double read_pct, write_pct; /* thresholds, percent */
	const char *expect;
} patterns[] = {
	{ "read", ENG_STREAM_READ, false, false, MW_DRAMVERIFY_SUM_PCT, MW_DRAMVERIFY_IDLE_PCT,
	  "one array loaded: reads = the array; writes at the idle rate" },
	{ "write", ENG_STREAM_WRITE, false, true, MW_DRAMVERIFY_WA_PCT, MW_DRAMVERIFY_SUM_PCT,
	  "plain stores over one array: writes = the array, reads = the array again "
	  "(write-allocate; a CPU that skips it, Intel's SpecI2M under load or ARM's write "
	  "streaming, reads less: the CPU's doing, not the counter's)" },
	{ "nt-write", ENG_STREAM_WRITE, true, false, MW_DRAMVERIFY_IDLE_PCT, MW_DRAMVERIFY_SUM_PCT,
	  "non-temporal stores over one array: writes = the array; reads at the idle rate" },
	{ "copy", ENG_STREAM_COPY, false, true, MW_DRAMVERIFY_WA_PCT, MW_DRAMVERIFY_SUM_PCT,
	  "b = a with plain stores: reads = a + b (write-allocate), writes = b" },
	{ "triad", ENG_STREAM_TRIAD, false, true, MW_DRAMVERIFY_WA_PCT, MW_DRAMVERIFY_SUM_PCT,
	  "a = b + s c with plain stores: reads = b + c + a (write-allocate), writes = a" },
};

/* One direction of one cell: its check, and its JSON. */
static json_t *direction(json_t *checks, const char *pname, const char *size, const char *dir,
			 double expected, double other, double counted, enum prb_state st,
			 double pct)
{
	char name[160], subject[200];
	snprintf(name, sizeof(name), "matrix: %s %s: %s", pname, size, dir);
	snprintf(subject, sizeof(subject), "%s at %s (%s, matrix)", pname, size, dir);
	if (st != PRB_MEASURED)
		mw_verify_not_counted(checks, name, subject, st);
	else if (expected > 0)
		mw_verify_check(checks, name, subject, expected, counted, pct, "the expected bytes",
				"memwall");
	else
		mw_verify_check_idle(checks, name, subject, counted, other, pct);
	return json_pack("{s:f, s:o, s:o, s:f, s:s}", "expected_bytes", expected, "counted_bytes",
			 st == PRB_MEASURED ? mw_json_num(counted) : json_null(), "ratio",
			 st == PRB_MEASURED && expected > 0 ? mw_json_num(counted / expected)
							    : json_null(),
			 expected > 0 ? "threshold_pct" : "limit_pct", pct, "verdict",
			 mw_verify_passed(json_array_get(checks, json_array_size(checks) - 1)) ?
				 "pass" : "fail");
}

/* The cell of pattern p over the window [a, b] that streamed ss. */
static json_t *cell(struct mw_verify_meters *m, const struct pattern *p, const char *size,
		    int a, int b, const struct eng_stream_sample *ss, json_t *checks)
{
	double rd = (double)ss->bytes_read + (p->write_allocate ? (double)ss->bytes_written : 0);
	double wr = (double)ss->bytes_written;
	enum prb_state st;
	json_t *c = json_pack("{s:s, s:f}", "size", size, "seconds", ss->seconds);
	if (m->split) {
		double r = mw_verify_sum_net(m, PRB_DRAM_READ, a, b, &st);
		json_object_set_new(c, "read", direction(checks, p->name, size, "read", rd, wr, r,
							 st, p->read_pct));
		double w = mw_verify_sum_net(m, PRB_DRAM_WRITE, a, b, &st);
		json_object_set_new(c, "write", direction(checks, p->name, size, "write", wr, rd, w,
							  st, p->write_pct));
	} else {
		double t = mw_verify_sum_net(m, PRB_DRAM_TOTAL, a, b, &st);
		double pct = p->read_pct > p->write_pct ? p->read_pct : p->write_pct;
		json_object_set_new(c, "total", direction(checks, p->name, size, "total", rd + wr, 0,
							  t, st, pct));
	}
	return c;
}

#define N_PATTERNS (sizeof(patterns) / sizeof(patterns[0]))

/* One size's patterns, once per counter group (verify_meters.h): the readings that end
 * them, and what the first run streamed (every run streams the same arrays). */
struct size_run {
	int a, b[N_PATTERNS];
	int rc[N_PATTERNS];
	struct eng_stream_sample ss[N_PATTERNS];
};

/* Each pattern after a first reading, each ended by a reading; a failed pattern (other than
 * a kernel table without non-temporal stores) ends the run. 0, or the failure. */
static int run_patterns(struct mw_verify_meters *m, struct eng_stream *es, struct size_run *sr)
{
	int rc = 0;
	for (int g = 0; rc == 0 && g < m->n_groups; g++) {
		mw_verify_group_begin(m, g);
		sr->a = mw_verify_take(m);
		for (size_t i = 0; i < N_PATTERNS; i++) {
			struct eng_stream_sample ss = { 0 };
			const struct pattern *p = &patterns[i];
			int prc = eng_stream_run(es, p->kind, p->nt, &ss);
			sr->b[i] = mw_verify_take(m);
			if (g == 0) {
				sr->rc[i] = prc;
				sr->ss[i] = ss;
			}
			if (prc < 0 && prc != -ENOTSUP) {
				rc = prc;
				sr->rc[i] = prc;
				break;
			}
		}
		if (mw_verify_group_end(m) < 0 && rc == 0)
			rc = -EIO;
	}
	return rc;
}

/* One size: a stream of that size, then each pattern, each ended by a reading. 0 or -errno. */
static int one_size(struct mw_verify_meters *m, const struct mw_dramverify_options *o,
		    uint64_t bytes, const char *label, json_t *pats, json_t *checks, char *why,
		    size_t n, uint64_t *used)
{
	struct eng_stream *es = NULL;
	struct eng_error eerr = { 0 };
	struct eng_stream_options sopt = { .threads = o->threads, .bytes = bytes };
	struct size_run sr = { 0 };
	int rc = eng_stream_new(&es, &sopt, &eerr);
	if (rc < 0) {
		snprintf(why, n, "the matrix cannot stream %s: %s%s%s", label, eerr.source,
			 eerr.source[0] ? ": " : "", eerr.text);
		return rc;
	}
	*used = eng_stream_bytes(es);
	rc = run_patterns(m, es, &sr);
	eng_stream_free(es);
	for (size_t i = 0; i < N_PATTERNS; i++) {
		const struct pattern *p = &patterns[i];
		json_t *cells = json_object_get(json_array_get(pats, i), "cells");
		if (sr.rc[i] < 0 && sr.rc[i] != -ENOTSUP) {
			snprintf(why, n, "the matrix's %s pass at %s failed: %s", p->name, label,
				 strerror(-sr.rc[i]));
			return sr.rc[i];
		}
		if (sr.rc[i] == -ENOTSUP) /* no non-temporal stores in this kernel table */
			json_array_append_new(cells, json_pack("{s:s, s:s}", "size", label, "not_run",
				"this kernel table has no non-temporal stores"));
		else
			json_array_append_new(cells, cell(m, p, label, i ? sr.b[i - 1] : sr.a,
							  sr.b[i], &sr.ss[i], checks));
	}
	if (rc < 0)
		snprintf(why, n, "the matrix's counter groups read apart at %s", label);
	return rc;
}

json_t *mw_verify_matrix(struct mw_verify_meters *m, const struct mw_dramverify_options *o,
			 uint64_t llc, bool llc_known, json_t *checks, char *why, size_t n)
{
	uint64_t cache = llc_known ? llc : ENG_ROOF_LLC_FALLBACK;
	uint64_t base = o->bytes ? o->bytes : 4 * cache;
	json_t *pats = json_array(), *sizes = json_array();
	for (size_t i = 0; i < N_PATTERNS; i++) {
		const struct pattern *p = &patterns[i];
		json_array_append_new(pats, json_pack("{s:s, s:b, s:b, s:s, s:{s:f, s:f}, s:[]}",
			"name", p->name, "nontemporal", p->nt, "write_allocate", p->write_allocate,
			"expect", p->expect, "threshold", "read_pct", p->read_pct, "write_pct",
			p->write_pct, "cells"));
	}
	/* a stop (control.h) ends the matrix between sizes: verify then keeps nothing */
	for (int k = 0; k < SIZES && !mw_run_stopped(); k++) {
		char label[48];
		uint64_t bytes = base << k, used = 0;
		if (o->bytes)
			snprintf(label, sizeof(label), "%.1fMiB", (double)bytes / 1048576.0);
		else
			snprintf(label, sizeof(label), "%dxLLC", 4 << k);
		if (one_size(m, o, bytes, label, pats, checks, why, n, &used) < 0) {
			json_decref(pats);
			json_decref(sizes);
			return NULL;
		}
		json_array_append_new(sizes, json_pack("{s:s, s:I, s:o}", "label", label, "bytes",
			(json_int_t)used, "llc_multiple",
			llc_known ? mw_json_num((double)used / (double)llc) : json_null()));
	}
	return json_pack("{s:o, s:o, s:o, s:s}", "llc_bytes",
			 llc_known ? json_integer((json_int_t)llc) : json_null(), "sizes", sizes,
			 "patterns", pats, "basis", "counted: the sum over every instance, net of "
			 "the idle rate; expected: the pattern's loads and stores, plus a read per "
			 "written line for plain stores (write-allocate)");
}

static void print_dir(FILE *f, const json_t *d)
{
	const json_t *c = json_object_get(d, "counted_bytes");
	double e = json_number_value(json_object_get(d, "expected_bytes"));
	char txt[64];
	if (!json_is_number(c))
		snprintf(txt, sizeof(txt), "not counted");
	else if (e > 0)
		snprintf(txt, sizeof(txt), "%.3f (%.1f/%.1f MiB)", json_number_value(c) / e,
			 json_number_value(c) / 1048576.0, e / 1048576.0);
	else
		snprintf(txt, sizeof(txt), "idle (%+.1f MiB)", json_number_value(c) / 1048576.0);
	fprintf(f, " %-28s %-4s", txt,
		strcmp(json_string_value(json_object_get(d, "verdict")), "pass") ? "FAIL" : "ok");
}

void mw_dramverify_matrix_print(FILE *f, const json_t *matrix)
{
	const json_t *p, *c;
	size_t i, j;
	bool total = false;
	json_array_foreach(json_object_get(matrix, "patterns"), i, p)
		json_array_foreach(json_object_get(p, "cells"), j, c)
			total |= json_object_get(c, "total") != NULL;
	fprintf(f, "matrix: counted / expected bytes, net of the idle rate, summed over every "
		"instance\n%-9s %-10s %-33s %s\n", "pattern", "size",
		total ? "total" : "read", total ? "" : "write");
	json_array_foreach(json_object_get(matrix, "patterns"), i, p) {
		json_array_foreach(json_object_get(p, "cells"), j, c) {
			fprintf(f, "%-9s %-10s", json_string_value(json_object_get(p, "name")),
				json_string_value(json_object_get(c, "size")));
			if (json_is_string(json_object_get(c, "not_run")))
				fprintf(f, " not run: %s", json_string_value(json_object_get(c,
											"not_run")));
			else if (total)
				print_dir(f, json_object_get(c, "total"));
			else {
				print_dir(f, json_object_get(c, "read"));
				print_dir(f, json_object_get(c, "write"));
			}
			fputc('\n', f);
		}
	}
	json_array_foreach(json_object_get(matrix, "patterns"), i, p)
		fprintf(f, "  %-9s %s (thresholds: read %g %%, write %g %%)\n",
			json_string_value(json_object_get(p, "name")),
			json_string_value(json_object_get(p, "expect")),
			json_number_value(json_object_get(json_object_get(p, "threshold"), "read_pct")),
			json_number_value(json_object_get(json_object_get(p, "threshold"),
							  "write_pct")));
}
