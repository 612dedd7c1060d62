/* engine/tokenizer/merge.h: the queue of candidate merges both byte-pair encoders pop
 * (SentencePiece's and GPT-2 BPE's in tokenizer_gguf.c, llama2.c's in tokenizer.c). Internal
 * to engine/tokenizer/.
 *
 * A merge loop pushes every adjacent pair of symbols that may merge, pops the best, merges it
 * and pushes the pairs it now makes with its neighbours: O(n log n) for n symbols, where
 * rescanning every pair after each merge (llama2.c's run.c) is O(n^2). A pair is not taken
 * out of the queue when one of its sides changes: it carries a stamp of what it was made of,
 * and the loop skips it when it pops one that no longer holds. */
#ifndef MEMWALL_TOKENIZER_MERGE_H
#define MEMWALL_TOKENIZER_MERGE_H

#include <stddef.h>
#include <stdint.h>

struct tok_bigram {
	double prio;     /* lower pops first; on a tie, the lower left (the leftmost pair) */
	int left, right; /* the symbols' indexes */
	uint32_t stamp;  /* the loop's staleness check: what the two sides were when pushed */
};

struct tok_heap {
	struct tok_bigram *v; /* (cap), a binary min-heap of n */
	size_t n, cap;
};

/* Adds b; 0 or -ENOMEM. */
int eng_tok_heap_push(struct tok_heap *h, struct tok_bigram b);
/* Takes out the first pair; h->n must be at least 1. */
struct tok_bigram eng_tok_heap_pop(struct tok_heap *h);

#endif
