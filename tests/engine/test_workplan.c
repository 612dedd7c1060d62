/* tests/engine/test_workplan.c: the forward pass's work plan (engine/runtime/workplan.h), the chunks
 * that the threads of a phase claim, on stories110M's shapes at 1 to 16 threads, with no
 * threads: the claims are simulated, round-robin (thread 0, 1, ..., T - 1, 0, ...), and again
 * with every thread claiming as soon as it is free, at one speed. For each phase of a decode
 * step (1 token) and of a 128-token pass: the chunks cover the phase's items exactly once,
 * start on the alignment, hold at least the minimum where every thread can have one that
 * large, every thread gets one whenever the phase has an aligned group per thread, and no
 * thread's share is much past an even one; and a pass's attention, in units of a head's slice
 * of tokens, the same, with each thread's positions attended against an even share. Issue 30:
 * 768-row matrices in chunks of at least 128 rows had left 10 of 16 threads idle, and 12
 * whole heads 4 of 16. */
#include "runtime/workplan.h"
#include "test.h"

/* stories110M (llama2.c's, `memwall synth --shape stories110m`): stated here, not read from
 * the engine. */
enum { DIM = 768, HIDDEN = 2048, HEADS = 12, KV_HEADS = 12, VOCAB = 32000 };
#define HEAD_SIZE (DIM / HEADS)
#define QKV_ROWS (DIM + 2 * KV_HEADS * HEAD_SIZE) /* q | k | v: 2304 */

#define MAX_THREADS 16
#define MAX_ITEMS VOCAB

struct phase {
	const char *name;
	int items, align, min;
};

static unsigned char seen[MAX_ITEMS];

/* Round-robin claims of p at `threads` threads: every check but the balance. */
static void check_round_robin(const struct phase *p, int threads, int tokens)
{
	int got[MAX_THREADS] = { 0 }, next = 0, claims = 0, a, b, short_chunks = 0;
	memset(seen, 0, sizeof(seen));
	while (workplan_chunk(p->items, p->align, p->min, threads, next, &a, &b)) {
		int t = claims++ % threads;
		T_EQ_INT(a, next);
		T_ASSERT(b > a && b <= p->items);
		if (a % p->align)
			T_FAIL_AT(__FILE__, __LINE__, "%s, %d tokens, %d threads: chunk [%d, %d) "
				  "starts off the %d-item alignment", p->name, tokens, threads,
				  a, b, p->align);
		/* at least min wherever every thread can have a chunk of min (the last chunk of a
		 * phase whose items are not a multiple of the chunk may be short) */
		if (b < p->items && b - a < p->min && p->items >= threads * p->min)
			short_chunks++;
		for (int i = a; i < b && i < MAX_ITEMS; i++)
			seen[i]++;
		got[t]++;
		next = b;
		if (claims > p->items) {
			T_FAIL_AT(__FILE__, __LINE__, "%s: more claims than items", p->name);
			break;
		}
	}
	T_EQ_INT(next, p->items);
	int twice = 0, never = 0;
	for (int i = 0; i < p->items; i++) {
		twice += seen[i] > 1;
		never += seen[i] == 0;
	}
	if (twice || never || short_chunks)
		T_FAIL_AT(__FILE__, __LINE__, "%s, %d tokens, %d threads: %d items claimed twice, "
			  "%d never, %d chunks under the minimum of %d", p->name, tokens, threads,
			  twice, never, short_chunks, p->min);
	t_checks++;
	/* every thread has work when the phase has an aligned group for each */
	if (p->items >= threads * p->align)
		for (int t = 0; t < threads; t++)
			if (!got[t])
				T_FAIL_AT(__FILE__, __LINE__,
					  "%s, %d tokens, %d threads (%d items, chunks of at "
					  "least %d): thread %d got no chunk of %d claimed",
					  p->name, tokens, threads, p->items, p->min, t, claims);
}

/* Claims by whichever thread is free first (the lowest number on a tie), each chunk's time its
 * items: the longest thread's items against an even share, which is at least
 * ceil(groups / threads) aligned groups (one thread holds that many whatever the plan). */
static void check_balance(const struct phase *p, int threads, int tokens, double *worst)
{
	long busy[MAX_THREADS] = { 0 };
	int next = 0, a, b;
	for (;;) {
		int t = 0;
		for (int u = 1; u < threads; u++)
			if (busy[u] < busy[t])
				t = u;
		if (!workplan_chunk(p->items, p->align, p->min, threads, next, &a, &b))
			break;
		busy[t] += b - a;
		next = b;
	}
	long longest = 0;
	for (int t = 0; t < threads; t++)
		longest = busy[t] > longest ? busy[t] : longest;
	int groups = (p->items + p->align - 1) / p->align;
	long even = (long)((groups + threads - 1) / threads) * p->align;
	if (even > p->items)
		even = p->items;
	double ratio = (double)longest / (double)even;
	if (ratio > *worst)
		*worst = ratio;
	/* A quarter over the even share: the old plan (chunks of at least 128 rows) had the
	 * 2304-row QKV phase at 16 threads at 256 rows against 144, 2048 rows at 12 threads at
	 * 256 against 176, 768 rows at 16 threads at 128 against 48. */
	t_checks++;
	if (ratio > 1.25)
		T_FAIL_AT(__FILE__, __LINE__, "%s, %d tokens, %d threads: the longest thread has "
			  "%ld of %d items, %.2f times an even share of %ld", p->name, tokens,
			  threads, longest, p->items, ratio, even);
}

/* A pass's attention over an F16 cache: units of (head, slice of its tokens), head-major,
 * claimed as phases are; each thread's units' cost (the positions its tokens attend, counted
 * here) against an even share of the whole, at most a quarter over it. The old plan (whole
 * heads) left 4 of 16 threads without a head and had 2 heads on some of 8 threads against
 * 1.5. */
static void check_attention(int threads, int tokens, int pos0, double *worst)
{
	int pos[256], slices = workplan_head_slices(HEADS, threads, tokens);
	for (int k = 0; k < tokens; k++)
		pos[k] = pos0 + k;
	T_ASSERT(slices >= 1 && slices <= tokens);
	T_EQ_INT(HEADS * slices % threads == 0 || slices == tokens, 1);
	/* the slices: in order, from token 0 to the last, each within one token's positions
	 * (pos0 + tokens) of an even share of the head's */
	long total = 0, max_tok = pos0 + tokens;
	for (int k = 0; k < tokens; k++)
		total += pos[k] + 1;
	T_EQ_INT(workplan_slice_start(0, slices, pos, tokens), 0);
	T_EQ_INT(workplan_slice_start(slices, slices, pos, tokens), tokens);
	for (int j = 0; j < slices; j++) {
		int k0 = workplan_slice_start(j, slices, pos, tokens),
		    k1 = workplan_slice_start(j + 1, slices, pos, tokens);
		long cost = 0;
		for (int k = k0; k < k1; k++)
			cost += pos[k] + 1;
		T_ASSERT(k0 <= k1);
		if (labs(cost * slices - total) > max_tok * slices)
			T_FAIL_AT(__FILE__, __LINE__, "%d tokens from %d, slice %d of %d: %ld of "
				  "%ld positions", tokens, pos0, j, slices, cost, total);
	}
	int units = HEADS * slices;
	struct phase p = { "attention units", units, 1, (units + threads - 1) / threads };
	check_round_robin(&p, threads, tokens);
	/* each thread's cost, claims in round-robin order */
	long cost[MAX_THREADS] = { 0 };
	int next = 0, a, b, claims = 0;
	while (workplan_chunk(p.items, p.align, p.min, threads, next, &a, &b)) {
		for (int u = a; u < b; u++) {
			int j = u % slices;
			for (int k = workplan_slice_start(j, slices, pos, tokens);
			     k < workplan_slice_start(j + 1, slices, pos, tokens); k++)
				cost[claims % threads] += pos[k] + 1;
		}
		claims++;
		next = b;
	}
	long most = 0;
	for (int t = 0; t < threads; t++)
		most = cost[t] > most ? cost[t] : most;
	double ratio = (double)most * threads / ((double)total * HEADS);
	if (ratio > *worst)
		*worst = ratio;
	t_checks++;
	if (ratio > 1.25)
		T_FAIL_AT(__FILE__, __LINE__, "attention, %d tokens from %d, %d threads: the "
			  "busiest thread attends %ld positions, %.2f times an even share", tokens,
			  pos0, threads, most, ratio);
}

int main(void)
{
	static const int thread_counts[] = { 1, 2, 3, 4, 8, 12, 16 };
	static const int token_counts[] = { 1, 128 };
	double worst = 0.0;
	T_EQ_INT(QKV_ROWS, 2304);
	for (size_t i = 0; i < sizeof(token_counts) / sizeof(token_counts[0]); i++) {
		int tokens = token_counts[i];
		/* a product over several tokens of quantized weights keeps larger chunks */
		int min = tokens > 1 ? MIN_CHUNK_ROWS_TOKENS : MIN_CHUNK_ROWS;
		for (size_t j = 0; j < sizeof(thread_counts) / sizeof(thread_counts[0]); j++) {
			int threads = thread_counts[j];
			const struct phase phases[] = {
				{ "q|k|v", QKV_ROWS, ROW_ALIGN, min },
				{ "wo", DIM, ROW_ALIGN, min },
				{ "gate and up", HIDDEN, ROW_ALIGN, min },
				{ "down", DIM, ROW_ALIGN, min },
				/* decode's, a prefill's last token's (one token), a
				 * verification's or a batch's (every token) */
				{ "classifier, one token", VOCAB, ROW_ALIGN, MIN_CHUNK_ROWS },
				{ "classifier, every token", VOCAB, ROW_ALIGN, min },
				/* attention: one claim's heads, the session's heads_share */
				{ "attention heads", HEADS, 1, (HEADS + threads - 1) / threads },
			};
			for (size_t k = 0; k < sizeof(phases) / sizeof(phases[0]); k++) {
				check_round_robin(&phases[k], threads, tokens);
				check_balance(&phases[k], threads, tokens, &worst);
			}
		}
	}
	double worst_att = 0.0;
	for (size_t j = 0; j < sizeof(thread_counts) / sizeof(thread_counts[0]); j++)
		for (int pos0 = 0; pos0 <= 100; pos0 += 100) {
			check_attention(thread_counts[j], 128, pos0, &worst_att);
			check_attention(thread_counts[j], 9, pos0, &worst_att);
		}
	printf("workplan: the longest thread at most %.3f times an even share; attention %.3f\n",
	       worst, worst_att);
	return t_done();
}
