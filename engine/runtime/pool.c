/* engine/runtime/pool.c: the thread pool and its barrier (see pool.h).
 *
 * A central barrier released by thread 0: the others count themselves in on `arrived` and wait
 * for `release` to change; thread 0 waits for the count, resets it and bumps `release`. The same
 * bump starts the next run, so a run costs one release and one gather. Waiters spin for a
 * short while (a phase of a decode step lasts tens of microseconds, so the next one is usually
 * near), then sleep on a futex (futex(2); the sleeper count makes a wake free when nobody sleeps,
 * the pattern of Drepper's "Futexes Are Tricky").
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pool.h"

/* Spin iterations before sleeping. A pause takes from a few ns (bare metal) to 50 ns (this
 * project's VM, where it may trap to the hypervisor), so this is about 10 to 100 us: longer
 * than a phase's imbalance or the sampling between two steps, short enough not to hold a core
 * that an oversubscribed machine needs. */
#define SPINS 2000

#if defined(__x86_64__) || defined(__i386__)
static inline void cpu_relax(void) { __builtin_ia32_pause(); }
#elif defined(__aarch64__)
static inline void cpu_relax(void) { __asm__ __volatile__("yield"); }
#else
static inline void cpu_relax(void) { }
#endif

/* A word threads wait on, alone in its cache line so spinning does not slow its neighbours. */
struct word {
	_Alignas(64) _Atomic uint32_t value;
	_Atomic uint32_t sleepers;
};

struct eng_pool {
	int n;
	pthread_t *threads;
	int started; /* workers created, for eng_pool_free after a partial start */
	struct word arrived;
	struct word release;
	eng_pool_fn fn; /* the current run, published by the bump of release */
	void *arg;
	bool stop;
	bool pinned;          /* thread t runs on cpus[t] */
	cpu_set_t caller_set; /* the caller's affinity when the pool was made */
	int cpus[];           /* (n) */
};

struct worker {
	struct eng_pool *pool;
	int tid;
};

static void futex_wait(_Atomic uint32_t *addr, uint32_t old)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, old, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Returns once w->value differs from old. */
static void word_wait(struct word *w, uint32_t old)
{
	for (int i = 0; i < SPINS; i++) {
		if (atomic_load_explicit(&w->value, memory_order_acquire) != old)
			return;
		cpu_relax();
	}
	/* seq_cst on both sides: either the waker sees a sleeper or the sleeper sees the change. */
	atomic_fetch_add(&w->sleepers, 1);
	while (atomic_load(&w->value) == old)
		futex_wait(&w->value, old);
	atomic_fetch_sub(&w->sleepers, 1);
}

static void word_wake(struct word *w)
{
	if (atomic_load(&w->sleepers))
		futex_wake(&w->value);
}

/* A worker arrives at a barrier (or at the end of a run) and waits for thread 0's release. */
static void arrive_and_wait(struct eng_pool *p)
{
	/* Read before arriving: thread 0 cannot bump release until this thread has arrived. */
	uint32_t gen = atomic_load(&p->release.value);
	atomic_fetch_add(&p->arrived.value, 1);
	word_wake(&p->arrived);
	word_wait(&p->release, gen);
}

/* Thread t on the t-th CPU of the caller's mask (wrapping when there are more threads than
 * CPUs), as llama.cpp's --cpu-mask and eng_stream do: a thread that stays on its CPU keeps its
 * L1/L2 and its slice of the rows, and the barrier's cache lines bounce between fixed cores.
 * Returns false, pinning nothing, when the mask cannot be read. */
static bool plan_cpus(struct eng_pool *p)
{
	if (sched_getaffinity(0, sizeof(p->caller_set), &p->caller_set))
		return false;
	int n = 0, order[CPU_SETSIZE];
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &p->caller_set))
			order[n++] = c;
	if (!n)
		return false;
	for (int t = 0; t < p->n; t++)
		p->cpus[t] = order[t % n];
	return true;
}

static void pin_self(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	/* Advice in effect: a refused pin (a cgroup's cpuset changed under us) leaves the thread
	 * free to run anywhere, which is slower, never wrong. */
	(void)pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct eng_pool *p = w->pool;
	int tid = w->tid;
	free(w);
	if (p->pinned)
		pin_self(p->cpus[tid]);
	/* release starts at 0 and only thread 0 bumps it, after eng_pool_new has returned. */
	uint32_t gen = 0;
	for (;;) {
		word_wait(&p->release, gen);
		if (p->stop)
			break;
		p->fn(p->arg, tid);
		gen = atomic_load(&p->release.value);
		atomic_fetch_add(&p->arrived.value, 1);
		word_wake(&p->arrived);
	}
	return NULL;
}

void eng_pool_gather(struct eng_pool *p)
{
	uint32_t want = (uint32_t)p->n - 1, v;
	while ((v = atomic_load(&p->arrived.value)) != want)
		word_wait(&p->arrived, v);
	atomic_store(&p->arrived.value, 0);
}

void eng_pool_release(struct eng_pool *p)
{
	atomic_fetch_add(&p->release.value, 1);
	word_wake(&p->release);
}

void eng_pool_barrier(struct eng_pool *p, int tid)
{
	if (p->n == 1)
		return;
	if (tid == 0) {
		eng_pool_gather(p);
		eng_pool_release(p);
	} else {
		arrive_and_wait(p);
	}
}

/* The caller's thread is thread 0 only inside a run: pinned for the run, its own mask back
 * after, so whatever it does between runs (a bandwidth probe that reads its mask to place
 * its own threads, a second pool) sees the mask it set. Three syscalls a run, a few
 * microseconds against a decode step's milliseconds. */
static bool pin_caller(const struct eng_pool *p, cpu_set_t *saved)
{
	if (!p->pinned || pthread_getaffinity_np(pthread_self(), sizeof(*saved), saved))
		return false;
	pin_self(p->cpus[0]);
	return true;
}

void eng_pool_run(struct eng_pool *p, eng_pool_fn fn, void *arg)
{
	cpu_set_t saved;
	bool pinned = pin_caller(p, &saved);
	if (p->n == 1) {
		fn(arg, 0);
	} else {
		p->fn = fn;
		p->arg = arg;
		eng_pool_release(p); /* publishes fn and arg: workers read them after the bump */
		fn(arg, 0);
		eng_pool_gather(p);
	}
	if (pinned)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
}

int eng_pool_threads(const struct eng_pool *p)
{
	return p->n;
}

int eng_pool_cpu(const struct eng_pool *p, int tid)
{
	return p->pinned && tid >= 0 && tid < p->n ? p->cpus[tid] : -1;
}


int eng_pool_new(struct eng_pool **out, int threads, enum eng_pin pin)
{
	struct eng_pool *p = NULL;
	int rc = 0;

	*out = NULL;
	if (threads < 1)
		threads = 1;
	p = calloc(1, sizeof(*p) + (size_t)threads * sizeof(p->cpus[0]));
	if (!p) {
		rc = -ENOMEM;
		goto out;
	}
	p->n = threads;
	p->pinned = pin == ENG_PIN_CPUS && plan_cpus(p);
	p->threads = calloc((size_t)threads, sizeof(*p->threads));
	if (!p->threads) {
		rc = -ENOMEM;
		goto out;
	}
	for (int t = 1; t < threads; t++) {
		struct worker *w = malloc(sizeof(*w));
		if (!w) {
			rc = -ENOMEM;
			goto out;
		}
		*w = (struct worker){ .pool = p, .tid = t };
		int e = pthread_create(&p->threads[t], NULL, worker_main, w);
		if (e) {
			free(w);
			rc = -e;
			goto out;
		}
		p->started++;
	}
	*out = p;
	p = NULL;
out:
	eng_pool_free(p);
	return rc;
}

void eng_pool_free(struct eng_pool *p)
{
	if (!p)
		return;
	if (p->started) {
		p->stop = true;
		eng_pool_release(p);
		for (int t = 1; t <= p->started; t++)
			pthread_join(p->threads[t], NULL);
	}
	free(p->threads);
	free(p);
}

static const char *const pin_names[] = { [ENG_PIN_CPUS] = "cpus", [ENG_PIN_NONE] = "none" };
static_assert(sizeof(pin_names) / sizeof(pin_names[0]) == ENG_PIN_NONE + 1,
	      "a name for every enum eng_pin");

const char *eng_pin_name(enum eng_pin p)
{
	return (unsigned)p < sizeof(pin_names) / sizeof(pin_names[0]) ? pin_names[p] : NULL;
}

int eng_pin_parse(const char *name, enum eng_pin *out)
{
	for (size_t i = 0; name && i < sizeof(pin_names) / sizeof(pin_names[0]); i++)
		if (!strcmp(name, pin_names[i])) {
			*out = (enum eng_pin)i;
			return 0;
		}
	return -EINVAL;
}
