/* tests/engine/test_pool.c: the engine's thread pool: every thread runs, barriers hold every thread
 * until all arrive, gather/release lets thread 0 act alone; pinned, thread t runs on the t-th
 * CPU of the caller's mask and the caller has its own mask between runs. Also meant for
 * ThreadSanitizer. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "runtime/pool.h"
#include "test.h"

#define MAX_THREADS 8
#define PHASES 50

struct job {
	struct eng_pool *pool;
	int n;
	int phase[MAX_THREADS]; /* each thread's own slot; read by others only after a barrier */
	_Atomic int ran;
	_Atomic int bad;
	int serial; /* written by thread 0 between gather and release */
};

static void work(void *arg, int tid)
{
	struct job *j = arg;
	atomic_fetch_add(&j->ran, 1);
	for (int p = 1; p <= PHASES; p++) {
		j->phase[tid] = p;
		if (tid == 0 && p % 2) {
			eng_pool_gather(j->pool);
			/* every other thread has finished phase p and is held */
			for (int t = 0; t < j->n; t++)
				if (j->phase[t] != p)
					atomic_fetch_add(&j->bad, 1);
			j->serial = p;
			eng_pool_release(j->pool);
		} else {
			eng_pool_barrier(j->pool, tid);
		}
		for (int t = 0; t < j->n; t++)
			if (j->phase[t] < p)
				atomic_fetch_add(&j->bad, 1);
		if (p % 2 && j->serial != p)
			atomic_fetch_add(&j->bad, 1);
		eng_pool_barrier(j->pool, tid); /* nobody writes phase p+1 while others read */
	}
}

static void run(int threads, int runs, enum eng_pin pin)
{
	struct eng_pool *pool = NULL;
	T_EQ_INT(eng_pool_new(&pool, threads, pin), 0);
	if (!pool)
		return;
	int n = threads < 1 ? 1 : threads;
	T_EQ_INT(eng_pool_threads(pool), n);
	for (int r = 0; r < runs; r++) {
		struct job j = { .pool = pool, .n = n };
		eng_pool_run(pool, work, &j);
		T_EQ_INT(atomic_load(&j.ran), n);
		T_EQ_INT(atomic_load(&j.bad), 0);
		for (int t = 0; t < n; t++)
			T_EQ_INT(j.phase[t], PHASES);
	}
	eng_pool_free(pool);
}

/* Each thread's CPU, read inside the run (sched_getcpu). */
struct where {
	int cpu[MAX_THREADS];
};

static void where_am_i(void *arg, int tid)
{
	((struct where *)arg)->cpu[tid] = sched_getcpu();
}

static void check_pinning(int threads)
{
	cpu_set_t before, after;
	int order[CPU_SETSIZE], n = 0;
	T_EQ_INT(sched_getaffinity(0, sizeof(before), &before), 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &before))
			order[n++] = c;
	struct eng_pool *pool = NULL;
	T_EQ_INT(eng_pool_new(&pool, threads, ENG_PIN_CPUS), 0);
	if (!pool || !n)
		return;
	struct where w;
	memset(&w, 0xff, sizeof(w));
	eng_pool_run(pool, where_am_i, &w);
	for (int t = 0; t < threads; t++) {
		/* the t-th CPU of the mask, wrapping: the test's own count of the mask */
		T_EQ_INT(eng_pool_cpu(pool, t), order[t % n]);
		T_EQ_INT(w.cpu[t], order[t % n]);
	}
	/* Between runs the caller has its own mask: a probe or a second pool sees every CPU. */
	T_EQ_INT(sched_getaffinity(0, sizeof(after), &after), 0);
	T_ASSERT(CPU_EQUAL(&before, &after));
	struct eng_pool *second = NULL;
	T_EQ_INT(eng_pool_new(&second, threads, ENG_PIN_CPUS), 0);
	for (int t = 0; second && t < threads; t++)
		T_EQ_INT(eng_pool_cpu(second, t), order[t % n]);
	eng_pool_free(second);
	eng_pool_free(pool);
	T_EQ_INT(sched_getaffinity(0, sizeof(after), &after), 0);
	T_ASSERT(CPU_EQUAL(&before, &after));

	T_EQ_INT(eng_pool_new(&pool, threads, ENG_PIN_NONE), 0);
	if (pool)
		T_EQ_INT(eng_pool_cpu(pool, 0), -1);
	eng_pool_free(pool);
}

static void check_pin_names(void)
{
	enum eng_pin p = ENG_PIN_NONE;
	T_EQ_INT(eng_pin_parse("cpus", &p), 0);
	T_EQ_INT(p, ENG_PIN_CPUS);
	T_EQ_STR(eng_pin_name(ENG_PIN_CPUS), "cpus");
	T_EQ_INT(eng_pin_parse("none", &p), 0);
	T_EQ_INT(p, ENG_PIN_NONE);
	T_EQ_STR(eng_pin_name(ENG_PIN_NONE), "none");
	T_EQ_INT(eng_pin_parse("CPUS", &p), -EINVAL);
	T_EQ_INT(eng_pin_parse("", &p), -EINVAL);
	T_EQ_INT(eng_pin_parse(NULL, &p), -EINVAL);
	T_EQ_INT(p, ENG_PIN_NONE);
	T_ASSERT(eng_pin_name((enum eng_pin)7) == NULL);
}

int main(void)
{
	run(0, 3, ENG_PIN_NONE);
	run(1, 10, ENG_PIN_NONE);
	run(2, 200, ENG_PIN_NONE);
	run(3, 20, ENG_PIN_NONE); /* more threads than this VM's cores: the futex path */
	run(MAX_THREADS, 5, ENG_PIN_NONE);
	run(2, 100, ENG_PIN_CPUS);
	run(3, 20, ENG_PIN_CPUS); /* more threads than CPUs: two share one */
	check_pinning(1);
	check_pinning(2);
	check_pinning(3);
	check_pin_names();
	eng_pool_free(NULL);
	return t_done();
}
