/* engine/runtime/pool.h: a persistent pool of threads that run one function together (SPMD), with a
 * cheap barrier between the phases of that function. Internal to engine/.
 *
 * The caller's thread is thread 0 and always takes part, so a pool of 1 starts no thread and
 * its barriers cost nothing. Waiting spins briefly, then sleeps on a futex, so a pool on a
 * shared or oversubscribed machine does not burn the cores it waits for.
 */
#ifndef MEMWALL_POOL_H
#define MEMWALL_POOL_H

#include "engine.h" /* enum eng_pin */

struct eng_pool;

typedef void (*eng_pool_fn)(void *arg, int tid);

/* Starts threads - 1 workers. With ENG_PIN_CPUS, thread t is pinned to the t-th CPU of the
 * caller's affinity mask as it is now (wrapping): the workers for their life, the caller's
 * thread (thread 0) for the length of each eng_pool_run, its own mask restored after. On
 * success *out is a new pool freed with eng_pool_free. */
int eng_pool_new(struct eng_pool **out, int threads, enum eng_pin pin);
void eng_pool_free(struct eng_pool *p);
int eng_pool_threads(const struct eng_pool *p);
/* The CPU thread tid is pinned to, or -1 when the pool is not pinned. */
int eng_pool_cpu(const struct eng_pool *p, int tid);

/* Runs fn(arg, tid) on every thread, tid 0 on the caller's; returns when all have returned. */
void eng_pool_run(struct eng_pool *p, eng_pool_fn fn, void *arg);

/* Inside fn: returns on each thread once every thread has called it. */
void eng_pool_barrier(struct eng_pool *p, int tid);

/* The same barrier in two halves, for thread 0 to act while the others are held: after
 * eng_pool_gather (thread 0 only) every other thread has arrived and waits; eng_pool_release
 * lets them go. Other threads call eng_pool_barrier as usual. */
void eng_pool_gather(struct eng_pool *p);
void eng_pool_release(struct eng_pool *p);

#endif
