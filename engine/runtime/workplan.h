/* engine/runtime/workplan.h: how a phase of the forward pass is cut into chunks that its
 * threads claim (forward.c's take). A pure function of the phase's shape, the thread count and
 * the first unclaimed item, so that tests/engine/test_workplan.c can check every thread count's plan
 * without the threads or the machine.
 *
 * The items are rows of a matrix (or heads, or tokens), claimed in groups of `align`: chunk
 * starts are multiples of align (16 rows: the kernels' row groups, whatever the thread count),
 * and a chunk holds whole groups but the matrix's last, which may be short. Two regimes, by how
 * many chunks of the smallest size `min` each thread would get:
 *
 * - Many (more than WORKPLAN_GUIDED_SHARES): OpenMP's "guided" schedule, each chunk half an even
 *   share of what is left, at least min, so threads start on long runs and finish on short
 *   ones, and a thread that the OS delays (a shared machine) holds the others at the barrier
 *   for one short chunk at most.
 * - Few (a stories110M matrix of a 128-token pass at 8 to 16 threads, a decode step's heads):
 *   the groups split into k * threads near-equal chunks (sizes differ by one group at most),
 *   k = the min-sized chunks each thread's share holds, 1 to WORKPLAN_GUIDED_SHARES. Chunks of
 *   at least min (as large as the shares allow) had left whole rounds uneven: 768 rows in
 *   chunks of 128 are 6 chunks, 10 of 16 threads idle for the phase; 2304 rows are 18 chunks,
 *   two of 16 threads doing two. Here every thread gets a chunk whenever the phase has a group
 *   per thread, the chunks are min or more whenever the shares allow, and each thread's work
 *   differs from another's by one group per chunk at most.
 */
#ifndef MEMWALL_ENGINE_WORKPLAN_H
#define MEMWALL_ENGINE_WORKPLAN_H

#include <stdbool.h>

/* Rows per chunk of a split matvec are a multiple of 16: 16 rows of any width start on a
 * 64-byte boundary whenever the matrix does, and a kernel that works on groups of rows sees the
 * same groups whatever the thread count, so results do not depend on it. */
#define ROW_ALIGN 16
/* The smallest chunk, in rows, where the shares allow: ~100 KB of a stories110M matrix, a few
 * microseconds of streaming, well above the cost of claiming it (one contended
 * compare-and-swap). */
#define MIN_CHUNK_ROWS 32
/* The smallest chunk of a pass of several tokens over quantized weights, where the shares
 * allow: each call of a multi-token kernel prepares every token's activation blocks again
 * (x8_legacy.h's per-block sums, x8_kquants.h's); at 2 threads that preparation had been 3.3%
 * of a stories110M q8_0 prefill with chunks of at least 32 rows, 2.2% with 128 (perf record -e
 * cpu-clock). F32 weights prepare nothing and keep MIN_CHUNK_ROWS. With more threads than a
 * matrix has 128-row chunks (16 threads, stories110M's 768-row wo and down: 6), the even split
 * below gives each thread a smaller one (48 rows) rather than leave threads idle. */
#define MIN_CHUNK_ROWS_TOKENS 128
/* Above this many min-sized chunks per thread the guided schedule runs (its last chunks' spread,
 * one min chunk, is then under a quarter of a thread's share); at or below, the even split. */
#define WORKPLAN_GUIDED_SHARES 4

/* The chunk [*a, *b) that the claim at item `next` of a phase of `items` items takes, with
 * `threads` threads claiming, chunk starts multiples of `align` (next is one: every chunk
 * ends on a multiple of align or at items) and chunks of at least `min` items where the
 * shares allow. False when nothing is left. One thread takes the rest whole. */
static inline bool workplan_chunk(int items, int align, int min, int threads, int next, int *a,
				  int *b)
{
	if (next >= items)
		return false;
	*a = next;
	if (threads <= 1) {
		*b = items;
		return true;
	}
	int groups = (items + align - 1) / align, g = next / align;
	int gmin = min > align ? (min + align - 1) / align : 1;
	int size;
	if (groups > WORKPLAN_GUIDED_SHARES * threads * gmin) {
		size = (items - next) / (2 * threads);
		size = (size + align - 1) / align * align;
		if (size < gmin * align)
			size = gmin * align;
	} else {
		/* n chunks of q groups, the first r of them one more */
		int k = groups / (threads * gmin);
		int n = (k > 1 ? k : 1) * threads;
		if (n > groups)
			n = groups;
		int q = groups / n, r = groups % n;
		size = (g < r * (q + 1) ? q + 1 : q) * align;
	}
	*b = items - next < size ? items : next + size;
	return true;
}

/* The attention phase of a pass claims units of (head, slice of its tokens), head by head,
 * each head's tokens cut into `slices` runs of about equal cost, so that heads * slices is a
 * multiple of the thread count and the even split above gives every thread the same number of
 * units: stories110M's 12 heads at 16 threads are 48 units, 3 a thread, where whole heads had
 * left 4 of 16 threads idle and 8 threads 2 heads against 1.5. Slices: threads / gcd(threads,
 * heads), at most one per token; 1 (whole heads) where heads divide among the threads. */
static inline int workplan_head_slices(int heads, int threads, int tokens)
{
	int a = threads, b = heads;
	while (b) {
		int t = a % b;
		a = b;
		b = t;
	}
	int slices = a > 0 ? threads / a : 1;
	return slices < tokens ? slices : tokens > 0 ? tokens : 1;
}

/* The first token of slice j (0 .. slices) of a pass's n tokens, token k attending pos[k] + 1
 * positions: the first k whose preceding tokens' positions reach j / slices of the total
 * (slice 0 starts at 0, slice `slices` at n). Slices are contiguous and in order; each costs
 * its share of the total within one token's positions. */
static inline int workplan_slice_start(int j, int slices, const int *pos, int n)
{
	long long total = 0, sum = 0;
	for (int k = 0; k < n; k++)
		total += pos[k] + 1;
	int k = 0;
	while (k < n && sum * slices < total * j)
		sum += pos[k++] + 1;
	return k;
}

#endif
