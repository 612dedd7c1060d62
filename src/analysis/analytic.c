/* src/analysis/analytic.c: the analytic model of a decode step (analytic.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "analytic.h"

uint64_t mw_analytic_kv_bytes(int n_layers, int n_kv_heads, int head_dim, int elem_bytes,
			      uint64_t positions)
{
	/* K and V: two vectors of n_kv_heads x head_dim per layer and position. */
	return 2u * (uint64_t)n_layers * (uint64_t)n_kv_heads * (uint64_t)head_dim *
	       (uint64_t)elem_bytes * positions;
}

/* Bytes per element of the cache types the table may name (ggml ids: f32 0, f16 1, bf16 30). */
static int kv_elem_of(uint32_t type_id)
{
	return type_id == 0 ? 4 : 2;
}

int mw_analytic_compute(const struct eng_tensor_table *t, const struct mw_analytic_options *o,
			struct mw_analytic *out)
{
	const struct eng_model_info *in = &t->info;
	*out = (struct mw_analytic){ 0 };
	if (in->n_layers <= 0 || in->n_heads <= 0 || t->head_dim <= 0 || o->pos < 0)
		return -EINVAL;
	out->kv_elem_bytes = o->kv_elem_bytes > 0 ? o->kv_elem_bytes : kv_elem_of(t->kv_type_id);
	out->act_elem_bytes = o->act_elem_bytes > 0 ? o->act_elem_bytes : 4;

	uint64_t layer0_outputs = 0;
	double matrix_flops = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct eng_tensor *e = &t->t[i];
		out->weights += e->step_bytes;
		out->by_class[e->cls] += e->step_bytes;
		if (e->cls == ENG_TENSOR_EMBEDDING) {
			out->embedding_row += e->step_bytes;
			continue; /* a lookup: no arithmetic */
		}
		if (e->rows > 1)
			matrix_flops += 2.0 * (double)e->rows * (double)e->cols;
		if (e->layer == 0 && e->rows > 1)
			layer0_outputs += e->rows;
	}
	uint64_t positions = (uint64_t)o->pos + 1;
	out->kv_read = mw_analytic_kv_bytes(in->n_layers, in->n_kv_heads, t->head_dim,
					    out->kv_elem_bytes, positions);
	out->kv_write = mw_analytic_kv_bytes(in->n_layers, in->n_kv_heads, t->head_dim,
					     out->kv_elem_bytes, 1);
	out->total = out->weights + out->kv_read + out->kv_write;

	/* Residual stream and normed input, each projection's output, and the attention output
	 * that feeds the output projection (heads x head_dim). */
	uint64_t q_dim = (uint64_t)in->n_heads * (uint64_t)t->head_dim;
	out->activation_elems_layer = 2u * (uint64_t)in->dim + layer0_outputs + q_dim;
	out->activation_layer = out->activation_elems_layer * (uint64_t)out->act_elem_bytes;
	out->attention_scores = (uint64_t)in->n_heads * positions * 4u; /* softmax in f32 */

	/* Per layer and head: q.k over the cached positions, then the weighted sum of V. */
	out->flops = matrix_flops + 4.0 * (double)in->n_layers * (double)q_dim * (double)positions;

	if (o->llc_bytes) {
		out->llc = o->llc_bytes;
		snprintf(out->llc_statement, sizeof(out->llc_statement), "LLC %.1f MiB (%s)",
			 (double)o->llc_bytes / 1048576.0,
			 o->llc_source && *o->llc_source ? o->llc_source : "given");
	} else {
		out->llc = MW_LLC_UNKNOWN_BOUND;
		snprintf(out->llc_statement, sizeof(out->llc_statement),
			 "LLC size unknown: assumed %.0f MiB, more than any client CPU's, so the "
			 "floor is a lower bound", (double)MW_LLC_UNKNOWN_BOUND / 1048576.0);
	}
	out->floor = out->weights > out->llc ? out->weights - out->llc : 0;
	out->far_larger_than_llc = out->weights / 4 >= out->llc;
	return 0;
}

void mw_analytic_batch(const struct mw_analytic *a, double n, struct mw_analytic_batch *out)
{
	double shared = (double)(a->weights - a->embedding_row);
	n = n > 0 ? n : 1;
	out->n = n;
	out->weight_bytes = shared / n + (double)a->embedding_row;
	out->kv_bytes = (double)(a->kv_read + a->kv_write);
	out->bytes = out->weight_bytes + out->kv_bytes;
	out->step_bytes = out->bytes * n;
	out->step_flops = a->flops * n;
}

double mw_analytic_spec_bytes(const struct mw_analytic *a, int k, double acc,
			      double *tokens_per_pass)
{
	double yield = acc >= 1.0 ? k + 1.0 : (1.0 - pow(acc, k + 1.0)) / (1.0 - acc);
	double pass = (double)(a->weights - a->embedding_row) +
		      (k + 1.0) * (double)(a->embedding_row + a->kv_read + a->kv_write);
	if (tokens_per_pass)
		*tokens_per_pass = yield;
	return pass / yield;
}

void mw_analytic_per_pass(struct mw_analytic *a, double n)
{
	struct mw_analytic_batch b;
	if (!(n > 1))
		return;
	mw_analytic_batch(a, n, &b);
	a->weights = (uint64_t)llround(b.weight_bytes);
	a->total = a->weights + a->kv_read + a->kv_write;
	a->floor = (uint64_t)llround((double)a->floor / n);
}
