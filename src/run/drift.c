/* src/run/drift.c: the bandwidth drift probe (drift.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "drift.h"
#include "engine.h"
#include "metrics.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Read bandwidth in GB/s (10^9 bytes/s), measured as `memwall bandwidth --kernel read` does
 * (the roof a record's roofline uses, src/record/record_view.c): eng_stream's read kernel of the
 * protocol's table ("auto": the best this CPU runs, bandwidth's first) over eng_roof_bytes
 * in buffers advised for 2 MiB pages, by pinned threads; the median of the passes that fit in
 * about probe_ms. Before, the probe read 4 KiB pages over max(8x LLC, 64 MiB) and reported
 * 17-21 GB/s where `memwall bandwidth` gave 29-33 on the same VM (issue 16). */
static int probe(const struct mw_run *run, double *gbps, char *method, size_t mn, char *why,
		 size_t wn)
{
	const struct mw_protocol *p = run->p;
	struct eng_stream *s = NULL;
	struct eng_error eerr;
	double rates[256];
	int n = 0, rc;
	eng_error_clear(&eerr);
	struct eng_stream_options so = { .threads = run->plan.threads,
					 .bytes = eng_roof_bytes(NULL, NULL),
					 .kernels = p->engine.kernels, .hugepages = true };
	if ((rc = eng_stream_new(&s, &so, &eerr))) {
		snprintf(why, wn, "the bandwidth probe could not start: %.400s", eerr.text);
		return rc;
	}
	uint64_t t0 = mw_now_ns(), budget = (uint64_t)p->drift.probe_ms * 1000000u;
	while (n < 256 && (n < 3 || mw_now_ns() - t0 < budget) && !mw_run_stopped()) {
		struct eng_stream_sample smp;
		if ((rc = eng_stream_run(s, ENG_STREAM_READ, false, &smp))) {
			snprintf(why, wn, "the bandwidth probe failed: %s", strerror(-rc));
			goto out;
		}
		rates[n++] = (double)smp.bytes_read / smp.seconds / 1e9;
	}
	qsort(rates, (size_t)n, sizeof(rates[0]), cmp_double);
	if (n)
		*gbps = n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
	snprintf(method, mn, "median of %d read passes (eng_stream READ, %s kernels, as memwall "
		 "bandwidth --kernel read) over %.0f MiB in 2 MiB pages with %d pinned threads, "
		 "GB = 10^9 bytes", n, eng_stream_kernels(s),
		 (double)eng_stream_bytes(s) / 1048576.0, run->plan.threads);
	rc = n ? 0 : -EINTR;
	if (!n)
		snprintf(why, wn, "interrupted");
out:
	eng_stream_free(s);
	return rc;
}

void mw_drift_step(struct mw_drift *d, struct mw_run *run, int when)
{
	const struct mw_protocol *p = run->p;
	double *bw = d->gbps;
	if (when == 0) {
		d->method[0] = d->why[0] = '\0';
		bw[1] = NAN;
	}
	bw[when] = NAN;
	if (p->drift.probe_ms <= 0)
		snprintf(d->why, sizeof(d->why), "turned off by the protocol (drift.probe_ms is 0)");
	else if (mw_run_stopped())
		snprintf(d->why, sizeof(d->why), "interrupted before the closing bandwidth probe");
	else if ((when == 0 || !isnan(bw[0])) &&
		 probe(run, &bw[when], d->method, sizeof(d->method), d->why, sizeof(d->why)) == 0)
		mw_run_say(run->o, "bandwidth probe %s the runs: %.1f GB/s",
			   when ? "after" : "before", bw[when]);
	else
		bw[when] = NAN;
	if (when == 0)
		return;
	bool ok = !isnan(bw[0]) && !isnan(bw[1]);
	json_decref(run->drift);
	run->drift = json_pack("{s:b, s:o, s:o, s:o, s:o, s:f}", "measured", ok, "reason",
			       ok ? json_null() : json_string(d->why[0] ? d->why : "not measured"),
			       "method", d->method[0] ? json_string(d->method) : json_null(),
			       "before_gbps", mw_json_num(bw[0]), "after_gbps", mw_json_num(bw[1]),
			       "tolerance_pct", p->drift.max_bandwidth_change_pct);
}
