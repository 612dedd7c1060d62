/* src/record/record_view.h: the one reader of a result record's fields for the analysis.
 *
 * analysis/ computes on typed inputs and reads no JSON; the record's fields are read here, once
 * per caller, into those inputs: the roofline's view of a record (below) and attribution's
 * runs and DRAM figures (analysis/attribution.h). Every field is read with its type checked:
 * a field of the wrong type is an error naming the record, the field's path
 * ("runs[2].decode.phases.ffn.engine_bytes"), what it is and what was expected, never a silent
 * NAN or 0 that a caller would print as a number. A field the record may lack (a reference
 * record has no runs, a run without counters no DRAM figure) is absent, and the reader says
 * why in the note beside the figure; JSON null is absent (records write null for "not
 * measured"). A field that the record's own structure needs (a mean beside "measured": true,
 * engine_bytes in a recorded phase) is an error when absent. */
#ifndef MEMWALL_RECORD_VIEW_H
#define MEMWALL_RECORD_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "attribution.h"
#include "engine.h"
#include "mw.h"

/* True when path names a result record (a .json file, or one whose first byte is '{'), not
 * a model file. */
bool mw_path_is_record(const char *path);

/* A result record's view for the roofline and headroom: its measured figures, its recorded
 * bandwidth probe and the inputs of its analytic model. Strings are borrowed from the record
 * (valid while it lives) or held here. */
struct mw_record_view {
	bool reference;          /* kind "reference" */
	bool synthetic;          /* model.synthetic */
	const char *model_path;  /* model.path; NULL when the record gives none */
	int threads;             /* engine.threads; 0 when the record does not say */
	int pos;                 /* mean decode position */
	char pos_statement[256];
	uint64_t llc_bytes;      /* from machine.caches; 0 when the record does not say */
	char llc_source[256];
	double tokens_per_pass;  /* decode tokens per engine pass (a batch's N, speculation's
				  * yield; runs[].steps); 1 without steps */
	double measured_bytes;   /* DRAM read bytes per token (the larger reading when the
				  * record's MB unit is ambiguous); NAN when not measured */
	char measured_note[512]; /* the unit read, or why not measured */
	bool dram_counted;       /* counters.dram.measured */
	bool simulated;          /* counters.dram.layer "sim": the bytes are the simulated PMU's,
				  * never to be called measured */
	double calibrated_bytes; /* dram_MB_per_token_calibrated's mean in bytes (the counted
				  * figure times the calibration's factor); NAN when none applies */
	double cal_error_pct;    /* counters.dram.calibration_error_pct; NAN when none applies or
				  * the record gives no error */
	double measured_tok_s;   /* summary.metrics.tok_per_s.mean; NAN when not measured */
	char tok_s_note[512];    /* why measured_tok_s is NAN; "" otherwise */
	double bw_gbps;          /* the record's bandwidth roof; NAN when none */
	char bw_source[512];     /* where bw_gbps comes from, or why there is none */
	const char *instances[16]; /* counters.dram.instances */
	size_t n_instances;
};

/* Reads doc's view into *v and describes its model: from the model file at model.path, else
 * a built-in shape matching model.name; *table is new (eng_tensor_table_free). 0; -EINVAL
 * with err naming source and the field when a field has the wrong type; -ENOENT when the
 * model can be described neither way; the engine's error when the file cannot be read. */
int mw_record_view_load(const json_t *doc, const char *source, struct mw_record_view *v,
			struct eng_tensor_table **table, struct mw_error *err);

/* Whether doc's model is the model at hand: model_path (NULL: none) against model.file_bytes
 * and, when hash is true, model.sha256; the table t (NULL: none) against model.shape (dim,
 * hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size). What the record does not say is
 * not checked. 0, or -EINVAL with err naming source, the field that differs (or has the wrong
 * type), both values and the fix; -errno when model_path cannot be hashed. */
int mw_record_model_check(const json_t *doc, const char *source, const char *model_path,
			  bool hash, const struct eng_tensor_table *t, struct mw_error *err);

/* Reads what attribution needs of doc into *in: its complete measured runs (engine bytes per
 * decode token, prefill length, phases) and its DRAM figures per token. 0, or -EINVAL with err
 * naming source and the field; -ENOMEM. *in owns its arrays until
 * mw_record_attribution_free, which is safe on a zeroed or failed *in; strings are borrowed
 * from doc. */
int mw_record_attribution_read(const json_t *doc, const char *source,
			       struct mw_attribution_input *in, struct mw_error *err);
void mw_record_attribution_free(struct mw_attribution_input *in);

#endif
