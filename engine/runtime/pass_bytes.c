/* engine/runtime/pass_bytes.c: the engine-accounted bytes of a pass of the forward (forward.c's
 * run_pass), from the session's per-phase sums (session.c's count_step_bytes) and the pass's
 * tokens, positions and sparsity counts; apart from forward.c, which the layout check's
 * 1,000 lines would otherwise hold. */

#include "internal.h"

/* Engine-accounted bytes of the pass just run (engine.h, struct eng_step_bytes): each weight
 * once, however many tokens shared it, an embedding row per token, the classifier only when it
 * ran, and each token's cache reads and writes. */
void eng_pass_bytes(const struct eng_session *s, struct eng_step_bytes *b)
{
	uint64_t layers = (uint64_t)s->n_layers, n = (uint64_t)s->n_tok, cells = 0;
	memset(b, 0, sizeof(*b));
	/* Each token reads its own sequence's cache up to its position. */
	for (int t = 0; t < s->n_tok; t++)
		cells += (uint64_t)s->tpos[t] + 1;
	b->kv_read = cells * layers * s->kv_pos_bytes;
	b->kv_write = n * layers * s->kv_pos_bytes;
	b->by_phase[ENG_PHASE_ATTENTION] = n * s->emb_row_bytes + s->att_bytes;
	b->by_phase[ENG_PHASE_FFN] = s->ffn_bytes;
	b->by_phase[ENG_PHASE_CLASSIFIER] = s->want_logits ? s->cls_bytes : 0;
	/* The down-projection blocks (or rows) and the gate and up rows the sparsity map
	 * skipped were not read (engine/runtime/sparsity.c, ffn_up_sparse). */
	b->by_phase[ENG_PHASE_FFN] -= s->skipped_bytes;
	for (int t = 0; t < s->n_threads; t++) {
		const struct worker *w = &s->workers[t];
		b->by_phase[ENG_PHASE_FFN] -= w->row_skip_bytes;
		b->weights_skipped += w->row_skip_bytes;
		b->gate_rows_skipped += w->gate_skip;
		b->up_rows_skipped += w->up_skip;
		b->map_misses += w->misses;
	}
	b->weights = b->by_phase[ENG_PHASE_ATTENTION] + b->by_phase[ENG_PHASE_FFN] +
		     b->by_phase[ENG_PHASE_CLASSIFIER];
	b->weights_skipped += s->skipped_bytes;
	b->weights_unique = b->weights - (s->m->alias ? s->m->alias->reuse_bytes : 0);
	if (s->map_applies && n == 1) { /* a gated block counts its zeros (arch_llama.c) */
		const struct eng_mat *down = &s->m->layers[0].w_down;
		b->act_zero = s->act_zero;
		b->act_total = layers * (uint64_t)s->hidden_dim;
		b->down_blocks_zero = s->down_blocks_zero;
		b->down_blocks = layers * (uint64_t)eng_sparse_blocks(down);
	}
	b->by_phase[ENG_PHASE_ATTENTION] += b->kv_read + b->kv_write;
}
