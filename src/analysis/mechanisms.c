/* src/analysis/mechanisms.c: projection, prediction and measurement per mechanism
 * (mechanisms.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mechanisms.h"

static json_t *num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* The first tier of the projections file whose requirements name rule: AIOS projects tiers,
 * not mechanisms one by one. */
static json_t *projection(const json_t *proj, const char *rule)
{
	size_t i;
	json_t *p;
	char text[600];
	json_array_foreach(json_object_get(proj, "projections"), i, p) {
		const char *req = json_string_value(json_object_get(p, "requirements"));
		const char *tier = json_string_value(json_object_get(p, "tier"));
		const json_t *range = json_object_get(p, "range_pct");
		if (!req || !tier || !strstr(req, rule) || json_array_size(range) != 2)
			continue;
		snprintf(text, sizeof(text), "tier %s (%s): %.0f-%.0f %% less MB/token, for the "
			 "tier's requirements together against an unoptimized baseline; AIOS gives "
			 "no figure for %s alone (%s)", tier, req,
			 json_number_value(json_array_get(range, 0)),
			 json_number_value(json_array_get(range, 1)), rule,
			 json_string_value(json_object_get(proj, "source")) ?
			 json_string_value(json_object_get(proj, "source")) : "projections file");
		return json_pack("{s:s, s:s, s:O}", "kind", "projection (AIOS's, not a "
				 "measurement)", "text", text, "range_pct", range);
	}
	return json_pack("{s:s, s:s, s:n}", "kind", "projection", "text",
			 "none in the projections file", "range_pct");
}

static json_t *figure(const char *kind, double pct, const char *text)
{
	return json_pack("{s:s, s:o, s:s}", "kind", kind, "reduction_pct", num(pct), "text", text);
}

#define PREDICTION "prediction (memwall's analytic, not a measurement)"
#define MEASUREMENT "measurement (engine-accounted bytes)"
#define NOT_MEASURED "not measured"

/* Per-step bytes of the layers' tensors of one kind ("w3" in llama2.c, "ffn_up.weight" in
 * GGUF: the name after "layers.N." or "blk.N."). */
static double layer_kind_bytes(const struct eng_tensor_table *t, const char *l2c,
			       const char *gguf)
{
	double n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const char *dot = strchr(t->t[i].name, '.');
		dot = dot ? strchr(dot + 1, '.') : NULL;
		const char *k = dot ? dot + 1 : t->t[i].name;
		if (t->t[i].layer >= 0 && (!strcmp(k, l2c) || !strcmp(k, gguf)))
			n += (double)t->t[i].step_bytes;
	}
	return n;
}

static void r1(const struct mw_mech_inputs *in, json_t **pred, json_t **meas)
{
	char p[1100], m[1100];
	double down = (double)mw_down_bytes(in->t), total = (double)in->a->total;
	double up = layer_kind_bytes(in->t, "w3", "ffn_up.weight");
	double gate = layer_kind_bytes(in->t, "w1", "ffn_gate.weight");
	const struct mw_r1 *r = in->r1;
	if (!r) {
		snprintf(p, sizeof(p), "no prediction: R1's activations were not measured (%.700s)",
			 in->r1_reason);
		*pred = figure(PREDICTION, NAN, p);
		snprintf(m, sizeof(m), "not measured: needs forward passes with the sparsity map "
			 "(%.700s)", in->r1_reason);
		*meas = figure(NOT_MEASURED, NAN, m);
		return;
	}
	uint64_t zeros = 0, n = 0;
	for (int l = 0; l < r->n_layers; l++) {
		zeros += r->layer[l].zeros;
		n += r->layer[l].n;
	}
	double zf = n ? (double)zeros / (double)n : NAN;
	snprintf(p, sizeof(p), "FFN up and down projections are %.1f %% of a dense decode "
		 "step's bytes (analytic, %.0f + %.0f of %.0f B) x the exact-zero fraction of the "
		 "activations, %.2f %% (measured by R1 above): the exact saving if every zero "
		 "activation skipped its up row and down column (the gate must be read to know: a "
		 "static map of dead neurons also skips gate rows, %.1f %% more at most, not "
		 "exactly). Ceiling, every FFN matrix skipped: %.1f %%",
		 100 * (down + up) / total, up, down, total, 100 * zf, 100 * gate / total,
		 100 * (down + up + gate) / total);
	*pred = figure(PREDICTION, 100 * (down + up) / total * zf, p);
	if (!r->map_applies) {
		*meas = figure(NOT_MEASURED, NAN, "not measured: the engine's sparsity map covers "
			       "llama-architecture models only (needs a ReLU llama model and "
			       "--sparsity-map)");
		return;
	}
	snprintf(m, sizeof(m), "the engine's sparsity map (generate --sparsity-map) on R1's %zu "
		 "steps skipped %llu of %llu B: up rows of zero activations (exact) and all-zero "
		 "down-projection column blocks, %llu of %llu (the block granularity is where "
		 "this falls short of the prediction; --sparsity-neuron on F32 models and a static "
		 "map, --sparsity-map=MAP, go further: see README's R1 section)%s", r->tokens, (unsigned long long)r->skipped_bytes,
		 (unsigned long long)r->dense_bytes, (unsigned long long)r->down_blocks_zero,
		 (unsigned long long)r->down_blocks,
		 r->skipped_bytes ? "" : "; a SiLU model has no exact zeros to skip, a ReLU model "
		 "(memwall synth --activation relu) does");
	*meas = figure(MEASUREMENT, r->dense_bytes ? 100.0 * (double)r->skipped_bytes /
			(double)r->dense_bytes : NAN, m);
}

/* R2's measured column: each given measurement against this engine's formula at its context
 * (C + 1 positions attended) and the contract's at C. The engine reads every cached byte at
 * every step, so the engine-accounted reduction is 0 %: whether those reads come from the LLC
 * or DRAM shows only in DRAM counters. */
static void r2_measured(const struct mw_mech_inputs *in, json_t **meas)
{
	const struct eng_tensor_table *t = in->t;
	char m[1200];
	size_t o = 0;
	if (!in->n_r2) {
		*meas = figure(NOT_MEASURED, NAN, "not measured: give headroom --kv-read C=BYTES "
			       "(kv_read_per_token of generate --context C -n 2 --report-line, or "
			       "scripts/bench-kv.sh); engine-accounted bytes count every KV read "
			       "whether the cache holds it or not, a KV read served from L3 shows "
			       "only in DRAM counters");
		return;
	}
	bool agree = true;
	o += (size_t)snprintf(m, sizeof(m), "engine-accounted KV bytes read per decode token "
			      "(generate --context C):");
	for (size_t i = 0; i < in->n_r2 && o < sizeof(m); i++) {
		const struct mw_r2_measured *r = &in->r2[i];
		uint64_t want = mw_analytic_kv_bytes(t->info.n_layers, t->info.n_kv_heads,
						     t->head_dim, in->a->kv_elem_bytes,
						     (uint64_t)r->context + 1);
		uint64_t contract = (uint64_t)t->info.n_layers * (uint64_t)t->info.n_kv_heads *
				    (uint64_t)t->head_dim * (uint64_t)r->context * 4;
		agree = agree && want == r->kv_read;
		o += (size_t)snprintf(m + o, sizeof(m) - o, " C=%d: %llu B (this engine's formula "
				      "at C + 1 positions: %llu B%s; contract at C: %llu B);",
				      r->context, (unsigned long long)r->kv_read,
				      (unsigned long long)want, want == r->kv_read ? ", equal"
				      : ", DIFFERENT: another cache type or model?",
				      (unsigned long long)contract);
	}
	if (o < sizeof(m))
		snprintf(m + o, sizeof(m) - o, " the engine reads all of them every step, so the "
			 "engine-accounted reduction is 0 %%%s; DRAM counters say how many came from "
			 "DRAM", agree ? "" : " (a measurement disagrees with the formula: check "
			 "--kv against the run's cache type)");
	*meas = figure(MEASUREMENT, 0.0, m);
}

/* R2's prediction. The contract claims KV DRAM reads fall to 0 once the cache fits L3. A
 * decode step reads every weight and then the whole cache, so with an LRU-like LLC the cache
 * survives from one step to the next only if the whole working set does: memwall predicts 0
 * KV bytes from DRAM when weights + KV <= LLC (a saving of the KV's share of the step), and
 * all of them otherwise (the weights' stream evicts the cache: 0 %). The figure is the
 * longest context's. */
static void r2(const struct mw_mech_inputs *in, json_t **pred, json_t **meas)
{
	static const int ctx[] = MW_MECH_R2_CONTEXTS;
	const struct eng_tensor_table *t = in->t;
	double w = (double)in->a->weights, mib = 1048576.0;
	char p[1400];
	size_t o = 0;
	double pct = NAN;
	o += (size_t)snprintf(p + o, sizeof(p) - o, "KV bytes read per token at context C "
			      "(analytic, %d B per element, this engine's) vs the contract's "
			      "L x H_kv x d_head x C x 4; KV reads leave DRAM only if the whole "
			      "working set, %.2f MiB of weights + the cache, fits the LLC (%.1f "
			      "MiB%s), else the weights' stream evicts the cache and every KV byte "
			      "comes from DRAM:", in->a->kv_elem_bytes, w / mib,
			      (double)in->llc / mib, in->llc ? "" : ", unknown: taken as fitting "
			      "nothing");
	for (size_t i = 0; i < sizeof(ctx) / sizeof(ctx[0]) && o < sizeof(p); i++) {
		uint64_t kv = mw_analytic_kv_bytes(t->info.n_layers, t->info.n_kv_heads,
						   t->head_dim, in->a->kv_elem_bytes,
						   (uint64_t)ctx[i]);
		uint64_t contract = (uint64_t)t->info.n_layers * (uint64_t)t->info.n_kv_heads *
				    (uint64_t)t->head_dim * (uint64_t)ctx[i] * 4;
		bool fits = in->llc && w + (double)kv <= (double)in->llc;
		double share = 100.0 * (double)kv / (w + (double)kv);
		pct = fits ? share : 0;
		o += (size_t)snprintf(p + o, sizeof(p) - o, " %dK: %.2f MiB (contract %.2f MiB), "
				      "working set %.2f MiB %s, KV from DRAM %s, %.1f %% less;",
				      ctx[i] / 1024, (double)kv / mib, (double)contract / mib,
				      (w + (double)kv) / mib, fits ? "fits" : "does not fit",
				      fits ? "0 B" : "all", fits ? share : 0.0);
	}
	if (t->info.seq_len < 4096 && o < sizeof(p))
		snprintf(p + o, sizeof(p) - o, " (the model's own context is %d: longer ones are "
			 "the formula's)", t->info.seq_len);
	*pred = figure(PREDICTION, pct, p);
	r2_measured(in, meas);
}

/* R3's measurement: the engine's bytes for one decode step of a canonical + delta model
 * (engine/alias.h) against its dense twin's. Touched bytes (canonical once per layer, plus
 * deltas) count what the matmuls read; unique bytes (each canonical once per step) are what
 * DRAM serves only if the canonicals stay in the LLC between the layers that share them, so
 * the measured reduction is the unique figure when they stay, else the touched one. They
 * stay only if the LLC holds the canonicals and everything streamed between two uses of one:
 * a layer's deltas (delta_bytes over the sharing layers) and its own matrices (the rest of
 * the unique bytes, spread over the layers: the embedding's and classifier's rows count in,
 * which makes the test stricter, not looser). */
static void r3_measured(const struct mw_mech_inputs *in, json_t **meas)
{
	char m[900];
	const struct mw_r3_engine *e = in->r3_engine;
	if (!e || !e->canonical) {
		*meas = figure(NOT_MEASURED, NAN, e ? "not measured: this model stores every layer "
			       "whole; write a canonical + delta model with memwall synth "
			       "--canonical-delta (and its twin with --canonical-delta=dense)"
			       : "not measured: the engine did not run the model");
		return;
	}
	double dense = (double)e->dense, touched = 100 * (dense - (double)e->touched) / dense,
	       unique = 100 * (dense - (double)e->unique) / dense;
	uint64_t users = (uint64_t)(e->info.last - e->info.first + 1);
	uint64_t canon = e->info.canonical_bytes, deltas = e->info.delta_bytes;
	uint64_t own = e->unique > canon + deltas ? e->unique - canon - deltas : 0;
	uint64_t between = deltas / (users ? users : 1) +
			   own / (uint64_t)(e->n_layers > 0 ? e->n_layers : 1);
	bool fits = in->llc && canon + between <= in->llc;
	snprintf(m, sizeof(m), "one decode step, layers %d..%d canonical + delta: %llu B touched "
		 "(%+.2f %% vs the dense twin's %.0f B: each layer still reads the canonical, and "
		 "the deltas come on top), %llu B unique (%+.2f %%: each canonical once); the "
		 "canonicals (%llu B) and the %llu B streamed between two uses of one (a layer's "
		 "deltas and own matrices) %s the LLC (%s%.1f MiB), so the DRAM-relevant figure is "
		 "the %s one", e->info.first, e->info.last, (unsigned long long)e->touched, -touched,
		 dense, (unsigned long long)e->unique, -unique, (unsigned long long)canon,
		 (unsigned long long)between, fits ? "fit" : "do not fit",
		 in->llc ? "" : "unknown: taken as ", (double)in->llc / 1048576.0,
		 fits ? "unique" : "touched");
	*meas = figure(MEASUREMENT, fits ? unique : touched, m);
}

static void r3(const struct mw_mech_inputs *in, json_t **pred, json_t **meas)
{
	char p[900];
	const struct mw_r3 *r = in->r3;
	if (!r) {
		snprintf(p, sizeof(p), "no prediction: %.800s", in->r3_reason);
		*pred = figure(PREDICTION, NAN, p);
	} else {
		double total = (double)in->a->total;
		snprintf(p, sizeof(p), "core zone (layers %d..%d): %llu B per step (analytic); its "
			 "aliasable blocks, %d of %d by cosine of the model's own tensors "
			 "(aliasing ratio %.1f %%), carry %llu B: stored once as a canonical they "
			 "would save at most that, %.2f %% of %.0f B (deltas counted as free)",
			 r->core_first, r->core_last, (unsigned long long)r->core_bytes,
			 r->core_aliasable, r->core_blocks, 100 * r->aliasing_ratio,
			 (unsigned long long)r->core_aliasable_bytes,
			 100 * (double)r->core_aliasable_bytes / total, total);
		const struct mw_r3_engine *e = in->r3_engine;
		size_t o = strlen(p);
		if (e && e->canonical && o < sizeof(p))
			snprintf(p + o, sizeof(p) - o, "; this file already stores layers %d..%d as "
				 "canonical + delta, so those bytes are its deltas' (run the dense twin, "
				 "synth --canonical-delta=dense, for the prediction before the split)",
				 e->info.first, e->info.last);
		*pred = figure(PREDICTION, 100 * (double)r->core_aliasable_bytes / total, p);
	}
	r3_measured(in, meas);
}

static void r4(const struct mw_mech_inputs *in, json_t **pred, json_t **meas)
{
	char p[900];
	const struct mw_r4 *r = in->r4;
	uint64_t engine = r->engine_bytes + r->attention_bytes;
	bool fits = in->l2 && r->contract_bytes <= in->l2 && engine <= in->l2;
	snprintf(p, sizeof(p), "one layer's activations: %llu B by the contract's formula, %llu B "
		 "in this engine's f32 buffers plus %llu B of attention weights at %d positions, "
		 "against L2 %s%.0f KiB: %s", (unsigned long long)r->contract_bytes,
		 (unsigned long long)r->engine_bytes, (unsigned long long)r->attention_bytes,
		 r->positions, in->l2 ? "" : "unknown ", (double)in->l2 / 1024.0,
		 fits ? "both fit, so there is no activation spill to remove: 0 %"
		      : "no prediction (a spill's bytes are not in the analytic model)");
	*pred = figure(PREDICTION, fits ? 0.0 : NAN, p);
	*meas = figure(NOT_MEASURED, NAN, "not measured: activation traffic is not in the "
		       "engine's accounting (it counts weights and KV); a spill shows only in DRAM "
		       "counters");
}

static void r5(const struct mw_mech_inputs *in, json_t **pred, json_t **meas)
{
	*pred = figure(PREDICTION, 0.0, "0 % dense: this engine reads every weight once per "
		       "decode step whatever their order in the file, so frequency ordering "
		       "changes no engine-accounted byte of a dense step. With a sparsity map it "
		       "can only matter at block granularity (32-column down blocks, 8-row x8 "
		       "groups): per-row up skipping and per-neuron down skipping are exact in any "
		       "order (README, R1 and R5)");
	*meas = figure(NOT_MEASURED, NAN, in->manifest
		       ? "not measured: a manifest is present, but the engine does not read one"
		       : "not measured: no frequency-ordered checkpoint (no manifest beside the "
			 "model)");
}

json_t *mw_mechanisms_build(const struct mw_mech_inputs *in)
{
	static const struct {
		const char *rule, *name;
		void (*fn)(const struct mw_mech_inputs *, json_t **, json_t **);
	} rows[] = {
		{ "R1", "activation sparsity: skip weight columns of exact-zero activations", r1 },
		{ "R2", "bounded KV: a cache small enough to stay in L3", r2 },
		{ "R3", "canonical + delta weights in the core zone", r3 },
		{ "R4", "activations per layer within L2", r4 },
		{ "R5", "frequency-ordered checkpoint", r5 },
	};
	json_t *out = json_array();
	for (size_t i = 0; out && i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *pred = NULL, *meas = NULL;
		rows[i].fn(in, &pred, &meas);
		json_array_append_new(out, json_pack("{s:s, s:s, s:o, s:o, s:o}", "rule",
						     rows[i].rule, "mechanism", rows[i].name,
						     "projection", projection(in->proj, rows[i].rule),
						     "prediction", pred, "measurement", meas));
	}
	return out;
}
