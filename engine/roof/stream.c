/* engine/roof/stream.c: stream a known number of bytes through memory with pinned threads.
 *
 * The yardstick of `memwall bandwidth` (src/cli/cmd_bandwidth.c) and of counter calibration. Each
 * worker owns one mapping, pinned to one CPU and first-touched by that worker, and runs the ops
 * table's stream kernels over it. Timing: the workers meet at a spinning barrier right before
 * they read the clock, so a run measures from the first worker's start to the last worker's
 * end without the caller's wake-up latency (tens of microseconds for a futex wake, which would
 * be ~1% of a 256 MiB read at 40 GB/s).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "kernels.h"

#define PAGE 4096u
/* A worker's buffer is a whole number of these, so TRIAD's thirds and COPY's halves are whole
 * pages: no two arrays share a page or a cache line. */
#define SLICE_UNIT (3u * 2u * PAGE)
/* WRITE's source: one block that stays in the L1 data cache (32 KiB or more on every CPU the
 * kernels run on), copied over the array block by block, so the stores reach memory and the
 * loads never leave the core. */
#define FILL_FLOATS 4096u /* 16 KiB */

/* A barrier on a mutex and a condition variable whose party count may shrink before use (when
 * a worker could not be started); pthread_barrier_t cannot. For the slow edges only: start of
 * a run, end of a run, start-up and shutdown. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int parties;
	int arrived;
	unsigned gen;
};

struct worker {
	struct eng_stream *s;
	pthread_t tid;
	int cpu;
	float *buf;        /* (slice_bytes / 4) floats, mmap'd by this worker */
	float *fill;       /* (FILL_FLOATS) WRITE's source, allocated by this worker */
	double t0, t1;     /* this worker's start and end of the last run, seconds */
	float sink;        /* stream_read's result, kept so the loads are not dead */
	int err;           /* start-up failure, -errno */
};

struct eng_stream {
	const struct krn_ops *ops;
	int threads;
	size_t slice_bytes;        /* per worker */
	bool hugepages;
	struct worker *w;          /* (threads) */
	int started;               /* workers whose thread exists */
	struct gate start, done;
	/* The job, written by the caller before `start` opens. */
	enum eng_stream_kind kind;
	bool nontemporal;
	bool quit;
	/* The spinning barrier the workers pass right before reading the clock. */
	atomic_int spin_arrived;
	atomic_uint spin_gen;
};

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void gate_init(struct gate *g, int parties)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->parties = parties;
	g->arrived = 0;
	g->gen = 0;
}

static void gate_destroy(struct gate *g)
{
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
}

static void gate_wait(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	unsigned gen = g->gen;
	if (++g->arrived >= g->parties) {
		g->arrived = 0;
		g->gen++;
		pthread_cond_broadcast(&g->cv);
	} else {
		while (gen == g->gen)
			pthread_cond_wait(&g->cv, &g->mu);
	}
	pthread_mutex_unlock(&g->mu);
}

static void gate_shrink(struct gate *g, int parties)
{
	pthread_mutex_lock(&g->mu);
	g->parties = parties;
	pthread_mutex_unlock(&g->mu);
}

/* All workers arrive, then all leave within a few hundred nanoseconds of each other. Yields
 * after a while so an oversubscribed machine still makes progress. */
static void spin_barrier(struct eng_stream *s)
{
	unsigned gen = atomic_load_explicit(&s->spin_gen, memory_order_acquire);
	if (atomic_fetch_add_explicit(&s->spin_arrived, 1, memory_order_acq_rel) == s->threads - 1) {
		atomic_store_explicit(&s->spin_arrived, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->spin_gen, 1, memory_order_release);
		return;
	}
	for (unsigned spins = 0; atomic_load_explicit(&s->spin_gen, memory_order_acquire) == gen;
	     spins++)
		if (spins > 10000)
			sched_yield();
}

/* The arrays of one kind inside a worker's slice; n floats each. */
static size_t layout(const struct eng_stream *s, const struct worker *w, enum eng_stream_kind kind,
		     float **a, float **b, float **c)
{
	static const unsigned arrays[ENG_STREAM_KIND_COUNT] = {
		[ENG_STREAM_READ] = 1, [ENG_STREAM_COPY] = 2, [ENG_STREAM_TRIAD] = 3,
		[ENG_STREAM_WRITE] = 1,
	};
	size_t n = s->slice_bytes / arrays[kind] / sizeof(float);
	*a = w->buf;
	*b = w->buf + n;
	*c = w->buf + 2 * n;
	return n;
}

static void run_kernel(struct eng_stream *s, struct worker *w)
{
	const struct krn_ops *k = s->ops;
	float *a, *b, *c;
	size_t n = layout(s, w, s->kind, &a, &b, &c);
	switch (s->kind) {
	case ENG_STREAM_READ:
		w->sink += k->stream_read(a, n);
		break;
	case ENG_STREAM_COPY:
		(s->nontemporal ? k->stream_copy_nt : k->stream_copy)(b, a, n);
		break;
	case ENG_STREAM_TRIAD:
		(s->nontemporal ? k->stream_triad_nt : k->stream_triad)(a, b, c, 3.0f, n);
		break;
	case ENG_STREAM_WRITE:
		for (size_t i = 0; i < n; i += FILL_FLOATS)
			(s->nontemporal ? k->stream_copy_nt : k->stream_copy)(
				a + i, w->fill, n - i < FILL_FLOATS ? n - i : FILL_FLOATS);
		break;
	case ENG_STREAM_KIND_COUNT:
		break;
	}
}

/* Pins itself, maps and first-touches its slice. Every value is 1.0f, so READ sums stay
 * finite and TRIAD (a = b + 3c, b and c never written) keeps writing 4.0f. */
static int worker_setup(struct worker *w)
{
	struct eng_stream *s = w->s;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (rc)
		return -rc;
	void *p = mmap(NULL, s->slice_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	w->buf = p;
	if (s->hugepages && madvise(p, s->slice_bytes, MADV_HUGEPAGE) != 0)
		return -errno;
	size_t n = s->slice_bytes / sizeof(float);
	for (size_t i = 0; i < n; i++)
		w->buf[i] = 1.0f;
	if (!(w->fill = aligned_alloc(64, FILL_FLOATS * sizeof(float))))
		return -ENOMEM;
	for (size_t i = 0; i < FILL_FLOATS; i++)
		w->fill[i] = 1.0f;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct eng_stream *s = w->s;
	w->err = worker_setup(w);
	gate_wait(&s->done);
	for (;;) {
		gate_wait(&s->start);
		if (s->quit)
			break;
		spin_barrier(s);
		w->t0 = now_seconds();
		run_kernel(s, w);
		w->t1 = now_seconds();
		gate_wait(&s->done);
	}
	return NULL;
}

/* The i-th CPU of the caller's affinity mask, for i in [0, *count); *count receives how many. */
static int cpus_allowed(int *cpus, int max, int *count)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -errno;
	*count = 0;
	for (int c = 0; c < CPU_SETSIZE && *count < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[(*count)++] = c;
	return 0;
}

static const struct krn_ops *find_table(const char *name, struct eng_error *err)
{
	const struct krn_ops *ops = krn_ops_find(name);
	if (!ops)
		eng_error_set(err, -EINVAL, "kernels", ENG_NO_OFFSET,
			      "kernel table '%s' is unknown or not supported by this CPU",
			      name ? name : "auto");
	return ops;
}

int eng_stream_new(struct eng_stream **out, const struct eng_stream_options *opt,
		   struct eng_error *err)
{
	struct eng_stream *s = NULL;
	int *cpus = NULL;
	int rc = 0, ncpu = 0;
	int threads = opt->threads > 0 ? opt->threads : 1;

	*out = NULL;
	const struct krn_ops *ops = find_table(opt->kernels, err);
	if (!ops)
		return -EINVAL;
	cpus = calloc(CPU_SETSIZE, sizeof(*cpus));
	if (!cpus)
		return -ENOMEM;
	rc = cpus_allowed(cpus, CPU_SETSIZE, &ncpu);
	if (rc < 0)
		goto out;
	if (threads > ncpu) {
		rc = eng_error_set(err, -EINVAL, "threads", ENG_NO_OFFSET,
				   "%d threads asked, but this process may run on %d CPUs; one "
				   "pinned thread per CPU at most",
				   threads, ncpu);
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = -ENOMEM;
		goto out;
	}
	s->w = calloc((size_t)threads, sizeof(*s->w));
	if (!s->w) {
		free(s);
		s = NULL;
		rc = -ENOMEM;
		goto out;
	}
	s->ops = ops;
	s->threads = threads;
	s->hugepages = opt->hugepages;
	/* Rounded up, so a working set asked as "at least 8x the LLC" stays at least that. */
	uint64_t per = (opt->bytes + (uint64_t)threads - 1) / (uint64_t)threads;
	uint64_t slice = (per + SLICE_UNIT - 1) / SLICE_UNIT * SLICE_UNIT;
	s->slice_bytes = slice > SLICE_UNIT ? (size_t)slice : SLICE_UNIT;
	gate_init(&s->start, threads + 1);
	gate_init(&s->done, threads + 1);

	for (int i = 0; i < threads; i++) {
		s->w[i] = (struct worker){ .s = s, .cpu = cpus[i] };
		rc = -pthread_create(&s->w[i].tid, NULL, worker_main, &s->w[i]);
		if (rc < 0) {
			eng_error_set(err, rc, "threads", ENG_NO_OFFSET,
				      "could not start worker %d: %s", i, strerror(-rc));
			gate_shrink(&s->start, i + 1);
			gate_shrink(&s->done, i + 1);
			break;
		}
		s->started++;
	}
	gate_wait(&s->done); /* every started worker has set itself up */
	for (int i = 0; i < s->started && rc == 0; i++)
		if (s->w[i].err < 0)
			rc = eng_error_set(err, s->w[i].err, "stream", ENG_NO_OFFSET,
					   "worker %d (CPU %d) could not pin itself or map %zu "
					   "bytes: %s",
					   i, s->w[i].cpu, s->slice_bytes, strerror(-s->w[i].err));
	if (rc < 0) {
		eng_stream_free(s);
		s = NULL;
	}
out:
	free(cpus);
	*out = s;
	return rc;
}

void eng_stream_free(struct eng_stream *s)
{
	if (!s)
		return;
	if (s->started) {
		s->quit = true;
		gate_wait(&s->start);
		for (int i = 0; i < s->started; i++)
			pthread_join(s->w[i].tid, NULL);
	}
	for (int i = 0; i < s->threads; i++) {
		if (s->w[i].buf)
			munmap(s->w[i].buf, s->slice_bytes);
		free(s->w[i].fill);
	}
	gate_destroy(&s->start);
	gate_destroy(&s->done);
	free(s->w);
	free(s);
}

const char *eng_stream_kernels(const struct eng_stream *s)
{
	return s->ops->name;
}

const char *eng_kernels_name(size_t i)
{
	size_t n = 0;
	const struct krn_ops *const *all = krn_ops_all(&n);
	for (size_t j = 0; j < n; j++)
		if (all[j]->supported() && i-- == 0)
			return all[j]->name;
	return NULL;
}

int eng_stream_set_kernels(struct eng_stream *s, const char *kernels, struct eng_error *err)
{
	const struct krn_ops *ops = find_table(kernels, err);
	if (!ops)
		return -EINVAL;
	s->ops = ops; /* the workers read it after the next run's gate, which orders this store */
	return 0;
}

uint64_t eng_stream_bytes(const struct eng_stream *s)
{
	return (uint64_t)s->slice_bytes * (uint64_t)s->threads;
}

int eng_stream_run(struct eng_stream *s, enum eng_stream_kind kind, bool nontemporal,
		   struct eng_stream_sample *out)
{
	/* Arrays read and written per element, by kind. */
	static const unsigned reads[ENG_STREAM_KIND_COUNT] = {
		[ENG_STREAM_READ] = 1, [ENG_STREAM_COPY] = 1, [ENG_STREAM_TRIAD] = 2,
		[ENG_STREAM_WRITE] = 0, /* its source block never leaves L1: no memory read */
	};
	static const unsigned writes[ENG_STREAM_KIND_COUNT] = {
		[ENG_STREAM_READ] = 0, [ENG_STREAM_COPY] = 1, [ENG_STREAM_TRIAD] = 1,
		[ENG_STREAM_WRITE] = 1,
	};
	if ((unsigned)kind >= ENG_STREAM_KIND_COUNT)
		return -EINVAL;
	bool have_nt = ((kind == ENG_STREAM_COPY || kind == ENG_STREAM_WRITE) &&
			s->ops->stream_copy_nt) ||
		       (kind == ENG_STREAM_TRIAD && s->ops->stream_triad_nt);
	if (nontemporal && !have_nt)
		return -ENOTSUP;

	s->kind = kind;
	s->nontemporal = nontemporal;
	gate_wait(&s->start);
	gate_wait(&s->done);

	double t0 = s->w[0].t0, t1 = s->w[0].t1;
	for (int i = 1; i < s->threads; i++) {
		t0 = s->w[i].t0 < t0 ? s->w[i].t0 : t0;
		t1 = s->w[i].t1 > t1 ? s->w[i].t1 : t1;
	}
	float *a, *b, *c;
	uint64_t n = layout(s, &s->w[0], kind, &a, &b, &c) * (uint64_t)s->threads;
	out->seconds = t1 - t0;
	out->bytes_read = n * sizeof(float) * reads[kind];
	out->bytes_written = n * sizeof(float) * writes[kind];
	return 0;
}

/* Reads a whole small sysfs file into buf as a NUL-terminated string without the newline. */
static int read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return n ? 0 : -ENODATA;
}

/* The cache size format of Documentation/ABI/testing/sysfs-devices-system-cpu: "32768K";
 * "M" and plain bytes are accepted too. */
static uint64_t parse_size(const char *text)
{
	char *end = NULL;
	unsigned long long v = strtoull(text, &end, 10);
	if (end == text)
		return 0;
	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end != '\0')
		return 0;
	return v;
}

int eng_llc_size(uint64_t *bytes, char *source, size_t source_len)
{
	char path[128], text[64];
	int best_level = 0;
	*bytes = 0;
	for (int i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (read_small(path, text, sizeof(text)) < 0)
			continue;
		int level = atoi(text);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		if (read_small(path, text, sizeof(text)) < 0 || !strcmp(text, "Instruction"))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (level <= best_level || read_small(path, text, sizeof(text)) < 0)
			continue;
		uint64_t size = parse_size(text);
		if (!size)
			continue;
		best_level = level;
		*bytes = size;
		if (source)
			snprintf(source, source_len, "%s", path);
	}
	return *bytes ? 0 : -ENOENT;
}

uint64_t eng_roof_bytes(uint64_t *llc, bool *llc_known)
{
	uint64_t c = 0;
	bool known = eng_llc_size(&c, NULL, 0) == 0 && c > 0;
	if (!known)
		c = ENG_ROOF_LLC_FALLBACK;
	if (llc)
		*llc = c;
	if (llc_known)
		*llc_known = known;
	return ENG_ROOF_LLC_MULTIPLE * c;
}
