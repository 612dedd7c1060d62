/* tests/test_pool.c: the engine's thread pool: every thread runs, barriers hold every thread
 * until all arrive, gather/release lets thread 0 act alone. Also meant for ThreadSanitizer. */
#include <stdatomic.h>

#include "pool.h"
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

static void run(int threads, int runs)
{
	struct eng_pool *pool = NULL;
	T_EQ_INT(eng_pool_new(&pool, threads, ENG_PIN_NONE), 0);
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

int main(void)
{
	run(0, 3);
	run(1, 10);
	run(2, 200);
	run(3, 20); /* more threads than this VM's cores: the futex path */
	run(MAX_THREADS, 5);
	eng_pool_free(NULL);
	return t_done();
}
