/* engine/tokenizer/merge.c: the merge queue (merge.h), a binary heap. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "merge.h"

static bool first(const struct tok_bigram *a, const struct tok_bigram *b)
{
	return a->prio < b->prio || (a->prio == b->prio && a->left < b->left);
}

int eng_tok_heap_push(struct tok_heap *h, struct tok_bigram b)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct tok_bigram *v = realloc(h->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	size_t i = h->n++;
	while (i && first(&b, &h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = b;
	return 0;
}

struct tok_bigram eng_tok_heap_pop(struct tok_heap *h)
{
	struct tok_bigram top = h->v[0], last = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && first(&h->v[c + 1], &h->v[c]))
			c++;
		if (!first(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
	return top;
}
