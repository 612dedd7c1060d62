/* engine/roof/peak.c: the compute roof of the roofline (Williams, Waterman and Patterson, "Roofline",
 * CACM 2009): what the decode step's own kernel does per second when memory is not the limit.
 *
 * Each thread runs the kernel the engine would use for the weight type (krn_ops' matvec_f32
 * for f32 weights, the quant table's vec_dot through krn_quant_matvec otherwise) over a few
 * rows small enough to stay in L1, again and again for the time asked, pinned to the i-th CPU
 * of the caller's affinity mask. A multiply-add counts as 2 FLOPs, as the analytic model
 * counts them. */
#include <errno.h>
#include <stdatomic.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "kernels.h"
#include "quants.h"

/* 4 rows of 1024 elements: 16 KiB of f32 weights plus the activation, inside any L1D. */
#define PEAK_ROWS 4
#define PEAK_COLS 1024

struct worker {
	const struct krn_ops *ops;
	const struct krn_quant_ops *qops; /* NULL: f32 weights through ops */
	uint32_t type;
	const void *w, *xq;
	const float *x;
	int cpu;
	double seconds;
	atomic_int *go; /* 1: start, -1: give up (another thread could not start) */
	uint64_t calls;
	double elapsed;
	float sink;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	float y[PEAK_ROWS];
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	int go;
	while (!(go = atomic_load(w->go)))
		sched_yield();
	if (go < 0)
		return NULL;
	double t0 = now_s(), t;
	do {
		for (int i = 0; i < 64; i++) {
			if (w->qops)
				krn_quant_matvec(w->qops, w->type, y, w->w, w->xq, PEAK_COLS, 0,
						 PEAK_ROWS);
			else
				w->ops->matvec_f32(y, w->w, w->x, PEAK_COLS, 0, PEAK_ROWS);
			w->sink += y[i % PEAK_ROWS];
		}
		w->calls += 64;
		t = now_s();
	} while (t - t0 < w->seconds);
	w->elapsed = t - t0;
	return NULL;
}

int eng_peak_measure(const char *kernels, uint32_t type_id, int threads, double seconds,
		     struct eng_peak *out, struct eng_error *err)
{
	const struct krn_ops *ops = krn_ops_find(kernels);
	const struct krn_quant_ops *qops = NULL;
	const struct krn_type_traits *tr = krn_type_traits(type_id);
	struct worker *ws = NULL;
	pthread_t *tids = NULL;
	atomic_int go = 0;
	float *x = NULL;
	void *wbuf = NULL, *xq = NULL;
	int cpus[CPU_SETSIZE], n_cpus = 0, started = 0, rc = 0;
	cpu_set_t set;

	memset(out, 0, sizeof(*out));
	if (threads <= 0)
		threads = 1;
	if (!ops || !tr)
		return eng_error_set(err, -ENOTSUP, "", ENG_NO_OFFSET,
				     "no %s kernels for weight type %u on this CPU",
				     kernels ? kernels : "auto", type_id);
	if (type_id != KRN_TYPE_F32) {
		qops = krn_quant_ops_find(kernels);
		if (!qops || !qops->vec_dot[type_id] || !tr->from_float_ref ||
		    !qops->quantize_act[tr->vec_dot_type])
			return eng_error_set(err, -ENOTSUP, "", ENG_NO_OFFSET,
					     "no dot-product kernel for weight type %s", tr->name);
	}
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[n_cpus++] = c;
	if (threads > n_cpus)
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "%d threads but only %d CPUs are allowed", threads, n_cpus);

	size_t row_bytes = krn_row_size(type_id, PEAK_COLS);
	const struct krn_type_traits *act = krn_type_traits(tr->vec_dot_type);
	x = malloc(PEAK_ROWS * PEAK_COLS * sizeof(float));
	wbuf = aligned_alloc(64, (PEAK_ROWS * row_bytes + 63) / 64 * 64);
	xq = aligned_alloc(64, ((act ? krn_row_size(tr->vec_dot_type, PEAK_COLS) : 0) + 64 + 63) /
				       64 * 64);
	ws = calloc((size_t)threads, sizeof(*ws));
	tids = calloc((size_t)threads, sizeof(*tids));
	if (!x || !wbuf || !xq || !ws || !tids) {
		rc = eng_error_set(err, -ENOMEM, "", ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	/* Values in [-1, 1): any operands do; these keep the sums finite. */
	for (size_t i = 0; i < PEAK_ROWS * PEAK_COLS; i++)
		x[i] = (float)((i * 2654435761u) % 2048u) / 1024.0f - 1.0f;
	if (qops) {
		for (int r = 0; r < PEAK_ROWS; r++)
			tr->from_float_ref(x + (size_t)r * PEAK_COLS, (char *)wbuf + r * row_bytes,
					   PEAK_COLS);
		qops->quantize_act[tr->vec_dot_type](x, xq, PEAK_COLS);
	} else {
		memcpy(wbuf, x, PEAK_ROWS * PEAK_COLS * sizeof(float));
	}
	for (int i = 0; i < threads; i++) {
		ws[i] = (struct worker){ .ops = ops, .qops = qops, .type = type_id, .w = wbuf,
					 .xq = xq, .x = x, .cpu = cpus[i], .seconds = seconds,
					 .go = &go };
		if (pthread_create(&tids[i], NULL, work, &ws[i])) {
			rc = eng_error_set(err, -EAGAIN, "", ENG_NO_OFFSET, "cannot start a thread");
			break;
		}
		started++;
	}
	atomic_store(&go, rc ? -1 : 1);
	double flops = 0, longest = 0;
	for (int i = 0; i < started; i++) {
		pthread_join(tids[i], NULL);
		flops += (double)ws[i].calls * 2.0 * PEAK_ROWS * PEAK_COLS;
		longest = fmax(longest, ws[i].elapsed);
	}
	if (!rc) {
		out->flops = longest > 0 ? flops / longest : 0;
		out->threads = threads;
		out->seconds = longest;
		if (qops)
			snprintf(out->kernel, sizeof(out->kernel), "%s vec_dot %s x %s", qops->name,
				 tr->name, act ? act->name : "?");
		else
			snprintf(out->kernel, sizeof(out->kernel), "%s matvec_f32", ops->name);
	}
out:
	free(x);
	free(wbuf);
	free(xq);
	free(ws);
	free(tids);
	return rc;
}
