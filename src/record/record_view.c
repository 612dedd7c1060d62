/* src/record/record_view.c: the reader of a result record's fields for the analysis
 * (record_view.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "jschema.h"
#include "record_view.h"
#include "sha256.h"

/* ---- Typed accessors ------------------------------------------------------------------------ */

/* A read of one record: its name for messages, and the first error met (later reads go on,
 * so a caller checks once, at the end). */
struct rd {
	const char *source;
	struct mw_error *err;
	int rc; /* 0, -EINVAL or -ENOMEM */
};

static void field_name(char *out, size_t n, const char *where, const char *path)
{
	snprintf(out, n, "%s%s%s", where, *where && *path ? "." : "", path);
}

/* A field of the wrong type (what jansson's unpack says, "Expected integer, got string"), or
 * absent where the record's own structure needs it. */
static void rd_fail(struct rd *r, const char *where, const char *path, const char *what)
{
	char field[320]; /* mw_error_set keeps what fits its field */
	if (r->rc)
		return;
	field_name(field, sizeof(field), where, path);
	r->rc = mw_error_set(r->err, -EINVAL, r->source, field,
			     "%s: the record does not follow results/result.schema.json here (it "
			     "was edited, or is not memwall's); `memwall validate` checks the "
			     "whole record", what);
}

static void rd_nomem(struct rd *r)
{
	if (!r->rc)
		r->rc = mw_error_set(r->err, -ENOMEM, r->source, "", "out of memory");
}

/* The value at path below o (keys joined by '.'; "" is o itself), or NULL when a key is
 * missing or its value is null: records write null for "not measured". A step through
 * something that is not an object is a wrong type. where names o for messages. */
static const json_t *rd_at(struct rd *r, const json_t *o, const char *where, const char *path)
{
	const char *p = path;
	char key[128], what[96];
	while (o && !json_is_null(o) && *p) {
		if (!json_is_object(o)) {
			int at = (int)(p > path ? p - path - 1 : 0); /* the path up to o */
			snprintf(key, sizeof(key), "%.*s", at, path);
			snprintf(what, sizeof(what), "Expected object, got %s",
				 mw_json_type_name(o));
			rd_fail(r, where, key, what);
			return NULL;
		}
		size_t n = strcspn(p, ".");
		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		o = json_object_get(o, key);
		p += n + (p[n] == '.');
	}
	return json_is_null(o) ? NULL : o;
}

/* json_unpack of one value: its format checks the type and converts ("F": an integer or a
 * real as a double). jansson's object formats ("{s?I, s?F}") would read a block at once, but
 * their error does not name the key at fault, so each field is unpacked alone, its path
 * kept for the message. */
static bool rd_unpack(struct rd *r, const json_t *o, const char *where, const char *path,
		      const char *fmt, void *out)
{
	const json_t *v = rd_at(r, o, where, path);
	json_error_t je;
	if (!v)
		return false;
	/* jansson's unpack takes a json_t * but does not change it (with "F", "I", "s", "b") */
	if (json_unpack_ex((json_t *)(uintptr_t)v, &je, 0, fmt, out)) {
		rd_fail(r, where, path, je.text);
		return false;
	}
	return true;
}

/* Each: true when the field is there with its type; false when absent (*out NAN, 0, NULL or
 * false) or of another type (r's error). */
static bool rd_num(struct rd *r, const json_t *o, const char *where, const char *path,
		   double *out)
{
	*out = NAN;
	return rd_unpack(r, o, where, path, "F", out);
}

static bool rd_int(struct rd *r, const json_t *o, const char *where, const char *path,
		   json_int_t *out)
{
	*out = 0;
	return rd_unpack(r, o, where, path, "I", out);
}

static bool rd_str(struct rd *r, const json_t *o, const char *where, const char *path,
		   const char **out)
{
	*out = NULL;
	return rd_unpack(r, o, where, path, "s", out);
}

static bool rd_bool(struct rd *r, const json_t *o, const char *where, const char *path,
		    bool *out)
{
	int b = 0;
	bool ok = rd_unpack(r, o, where, path, "b", &b);
	*out = b;
	return ok;
}

/* An integer the record's structure needs: absent is an error too. */
static void rd_need_int(struct rd *r, const json_t *o, const char *where, const char *path,
			json_int_t *out, const char *why)
{
	if (!rd_int(r, o, where, path, out))
		rd_fail(r, where, path, why);
}

static const json_t *rd_container(struct rd *r, const json_t *o, const char *where,
				  const char *path, json_type type)
{
	const json_t *v = rd_at(r, o, where, path);
	char what[96];
	if (!v || json_typeof(v) == type)
		return v;
	snprintf(what, sizeof(what), "Expected %s, got %s",
		 type == JSON_ARRAY ? "array" : "object", mw_json_type_name(v));
	rd_fail(r, where, path, what);
	return NULL;
}

static const json_t *rd_array(struct rd *r, const json_t *o, const char *where,
			      const char *path)
{
	return rd_container(r, o, where, path, JSON_ARRAY);
}

/* A figure of summary.metrics ({unit, measured, mean, reason}); "measured": true needs its
 * mean. */
struct metric {
	bool present, measured;
	double mean;        /* NAN when not measured */
	const char *unit, *reason;
};

static void rd_metric(struct rd *r, const json_t *doc, const char *name, struct metric *m)
{
	char where[128];
	snprintf(where, sizeof(where), "summary.metrics.%s", name);
	const json_t *o = rd_container(r, doc, "", where, JSON_OBJECT);
	memset(m, 0, sizeof(*m));
	m->mean = NAN;
	if (!o)
		return;
	m->present = true;
	rd_bool(r, o, where, "measured", &m->measured);
	rd_str(r, o, where, "unit", &m->unit);
	rd_str(r, o, where, "reason", &m->reason);
	if (!rd_num(r, o, where, "mean", &m->mean) && m->measured)
		rd_fail(r, where, "mean", "missing: a figure marked \"measured\": true needs its "
			"mean");
	if (!m->measured)
		m->mean = NAN;
}

/* ---- The roofline's view --------------------------------------------------------------------- */

bool mw_path_is_record(const char *path)
{
	size_t n = strlen(path);
	if (n > 5 && !strcmp(path + n - 5, ".json"))
		return true;
	int rc, c = ' ';
	FILE *f = mw_file_fopen(path, "file", "", MW_FILE_ANY_SIZE, &rc, NULL);
	while (f && (c = fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '\t' || c == '\r'))
		;
	if (f)
		fclose(f);
	return c == '{';
}

/* The largest cache in machine.caches (the records' sysfs copy). */
static void view_llc(struct rd *r, const json_t *doc, struct mw_record_view *v)
{
	const json_t *caches = rd_array(r, doc, "", "machine.caches"), *c;
	json_int_t level = 0;
	size_t i;
	json_array_foreach(caches, i, c) {
		char where[64];
		json_int_t size, lv;
		snprintf(where, sizeof(where), "machine.caches[%zu]", i);
		bool have = rd_int(r, c, where, "size_bytes", &size);
		rd_int(r, c, where, "level", &lv);
		if (have && size > 0 && (uint64_t)size > v->llc_bytes) {
			v->llc_bytes = (uint64_t)size;
			level = lv;
		}
	}
	if (v->llc_bytes)
		snprintf(v->llc_source, sizeof(v->llc_source), "the record's machine.caches, L%lld",
			 (long long)level);
}

/* Mean decode position over the measured runs: prompt tokens + (decode tokens - 1) / 2. */
static void view_pos(struct rd *r, const json_t *doc, struct mw_record_view *v)
{
	const json_t *runs = rd_array(r, doc, "", "runs"), *run;
	json_int_t nb;
	size_t i;
	/* A batch's windows count every sequence's tokens; each sits at its own positions
	 * (engine.batch sequences of the same lengths). */
	double batch = rd_int(r, doc, "", "engine.batch", &nb) ? (double)nb : 1;
	v->tokens_per_pass = 1;
	json_array_foreach(runs, i, run) {
		char where[32];
		bool warmup;
		double pre, dec, steps;
		snprintf(where, sizeof(where), "runs[%zu]", i);
		rd_bool(r, run, where, "warmup", &warmup);
		bool have = rd_num(r, run, where, "prefill.tokens", &pre);
		have &= rd_num(r, run, where, "decode.tokens", &dec);
		rd_num(r, run, where, "decode.steps", &steps);
		if (warmup || !have || dec < 1)
			continue;
		v->tokens_per_pass = steps > 0 ? dec / steps : 1;
		pre /= batch;
		dec /= batch;
		v->pos = (int)(pre + (dec - 1) / 2);
		snprintf(v->pos_statement, sizeof(v->pos_statement),
			 "position %d: the middle of the decode window (%.0f prompt + %.0f decode "
			 "tokens)", v->pos, pre, dec);
		return;
	}
	double tokens, runs_n;
	rd_num(r, doc, "", "summary.tokens_measured", &tokens);
	rd_num(r, doc, "", "summary.runs_measured", &runs_n);
	int dec = !isnan(tokens) && runs_n > 0 ? (int)(tokens / runs_n) : 0;
	v->pos = dec > 0 ? (dec - 1) / 2 : 0;
	snprintf(v->pos_statement, sizeof(v->pos_statement),
		 "position %d: the middle of %d decode tokens; the record gives no prompt length, "
		 "so the prompt is taken as empty (the KV share is then a lower bound)",
		 v->pos, dec);
}

/* The measured DRAM bytes and tok/s, with what was read or why nothing was. */
static void view_measured(struct rd *r, const json_t *doc, struct mw_record_view *v)
{
	const char *basis, *dram_reason, *layer;
	struct metric bytes, mb, tps, cal;
	/* The bytes MB/token counts: reads, or the total where the backend has no read/write
	 * split (counters.dram.mb_per_token_basis). Either is checked against the analytic read
	 * bytes; a total can only be larger, so a total below the floor is still IMPLAUSIBLE. */
	rd_str(r, doc, "", "counters.dram.mb_per_token_basis", &basis);
	rd_str(r, doc, "", "counters.dram.reason", &dram_reason);
	rd_bool(r, doc, "", "counters.dram.measured", &v->dram_counted);
	bool total = basis && !strcmp(basis, "total");
	const char *bytes_key = total ? "dram_total_bytes_per_token" : "dram_read_bytes_per_token";
	rd_metric(r, doc, bytes_key, &bytes);
	rd_metric(r, doc, total ? "dram_total_MB_per_token" : "dram_read_MB_per_token", &mb);
	v->measured_bytes = NAN;
	if (bytes.measured) {
		v->measured_bytes = bytes.mean;
		snprintf(v->measured_note, sizeof(v->measured_note), "summary.metrics.%s.mean",
			 bytes_key);
	} else if (mb.measured) {
		bool ambiguous = mb.unit && strstr(mb.unit, "2^20") && strstr(mb.unit, "10^6");
		/* When the source does not say, the larger reading (MiB) is checked: an
		 * IMPLAUSIBLE verdict then holds under either. */
		v->measured_bytes = mb.mean * (ambiguous ? 1048576.0 : 1e6);
		if (ambiguous)
			snprintf(v->measured_note, sizeof(v->measured_note),
				 "%.6g MB/token as published, unit not stated: checked as MiB "
				 "(%.1f MB), the larger reading; read as 10^6 bytes it is %.1f MB",
				 mb.mean, mb.mean * 1.048576, mb.mean);
		else
			snprintf(v->measured_note, sizeof(v->measured_note),
				 "%.6g MB/token (10^6 bytes)", mb.mean);
	} else {
		const char *why = mb.present ? mb.reason : bytes.reason;
		snprintf(v->measured_note, sizeof(v->measured_note), "%s",
			 why ? why : dram_reason ? dram_reason : "the record has no DRAM figure");
	}

	rd_str(r, doc, "", "counters.dram.layer", &layer);
	v->simulated = layer && !strcmp(layer, "sim");
	/* The calibrated estimate, where a calibration applied: the record derived it (its
	 * summary's dram_MB_per_token_calibrated), with the calibration's error beside it. */
	rd_metric(r, doc, "dram_MB_per_token_calibrated", &cal);
	v->calibrated_bytes = v->cal_error_pct = NAN;
	if (cal.measured && !isnan(v->measured_bytes)) {
		v->calibrated_bytes = cal.mean * 1e6;
		rd_num(r, doc, "", "counters.dram.calibration_error_pct", &v->cal_error_pct);
	}

	rd_metric(r, doc, "tok_per_s", &tps);
	v->measured_tok_s = tps.mean;
	if (!tps.measured)
		snprintf(v->tok_s_note, sizeof(v->tok_s_note), "%s",
			 !tps.present ? "the record has no summary.metrics.tok_per_s"
			 : tps.reason ? tps.reason : "the record's tok/s is not measured");

	const json_t *inst = rd_array(r, doc, "", "counters.dram.instances");
	for (size_t i = 0; i < json_array_size(inst); i++) {
		char where[64];
		const char *s;
		snprintf(where, sizeof(where), "counters.dram.instances[%zu]", i);
		if (rd_str(r, json_array_get(inst, i), where, "", &s) &&
		    v->n_instances < sizeof(v->instances) / sizeof(v->instances[0]))
			v->instances[v->n_instances++] = s;
	}
}

/* The protocol's roofline inputs, where it gives them, are what its author measured the
 * machine at; they come before the run's own probe and the record's caches. */
static void view_roofs(struct rd *r, const json_t *doc, struct mw_record_view *v)
{
	double proto_bw, proto_llc;
	const char *method;
	rd_num(r, doc, "", "protocol.document.roofline.bandwidth_gbps", &proto_bw);
	rd_num(r, doc, "", "protocol.document.roofline.llc_bytes", &proto_llc);
	rd_str(r, doc, "", "drift.method", &method);
	if (!isnan(proto_llc) && proto_llc > 0) {
		v->llc_bytes = (uint64_t)proto_llc;
		snprintf(v->llc_source, sizeof(v->llc_source),
			 "the protocol's roofline.llc_bytes");
	}
	rd_num(r, doc, "", "drift.before_gbps", &v->bw_gbps);
	if (!isnan(proto_bw) && proto_bw > 0) {
		v->bw_gbps = proto_bw;
		snprintf(v->bw_source, sizeof(v->bw_source), "the protocol's roofline.bandwidth_gbps");
	} else if (!isnan(v->bw_gbps)) {
		snprintf(v->bw_source, sizeof(v->bw_source), "the record's bandwidth probe (%s)",
			 method ? method : "drift.before_gbps");
	}
}

int mw_record_view_load(const json_t *doc, const char *source, struct mw_record_view *v,
			struct eng_tensor_table **table, struct mw_error *err)
{
	struct rd r = { .source = source, .err = err };
	struct eng_error eerr;
	const char *kind, *name;
	json_int_t threads;
	int rc;
	struct stat st;

	*table = NULL;
	memset(v, 0, sizeof(*v));
	rd_str(&r, doc, "", "kind", &kind);
	v->reference = kind && !strcmp(kind, "reference");
	rd_str(&r, doc, "", "model.path", &v->model_path);
	rd_str(&r, doc, "", "model.name", &name);
	rd_bool(&r, doc, "", "model.synthetic", &v->synthetic);
	if (rd_int(&r, doc, "", "engine.threads", &threads) && threads > 0 && threads <= 1 << 20)
		v->threads = (int)threads;
	view_pos(&r, doc, v);
	view_llc(&r, doc, v);
	view_measured(&r, doc, v);
	view_roofs(&r, doc, v);
	if (r.rc)
		return r.rc;

	const char *path = v->model_path;
	eng_error_clear(&eerr);
	if (path && stat(path, &st) == 0) {
		if ((rc = eng_tensors_from_file(path, table, &eerr)))
			return mw_error_set(err, rc, eerr.source, "model.path", "%s", eerr.text);
	} else if (name && (rc = eng_tensors_from_shape(name, table, &eerr)) == 0) {
		/* a description of the file, for a record whose model is not at hand */
	} else {
		return mw_error_set(err, -ENOENT, source, path ? "model.path" : "model.name",
				    "the model file %s is not here and no built-in shape matches "
				    "'%s': give the model file instead of the record",
				    path ? path : "(none recorded)", name ? name : "?");
	}
	return 0;
}

/* ---- The model it measured ------------------------------------------------------------------- */

int mw_record_model_check(const json_t *doc, const char *source, const char *model_path,
			  bool hash, const struct eng_tensor_table *t, struct mw_error *err)
{
	struct rd r = { .source = source, .err = err };
	const char *name, *want;
	json_int_t fb;
	struct stat st;
	rd_str(&r, doc, "", "model.name", &name);
	bool have_fb = rd_int(&r, doc, "", "model.file_bytes", &fb);
	rd_str(&r, doc, "", "model.sha256", &want);
	const json_t *shape = rd_container(&r, doc, "", "model.shape", JSON_OBJECT);
	if (r.rc)
		return r.rc;
	if (model_path && have_fb && stat(model_path, &st) == 0 && (json_int_t)st.st_size != fb)
		return mw_error_set(err, -EINVAL, source, "model.file_bytes",
				    "the record measured %s, a file of %lld bytes; %s has %lld: give "
				    "this model's record, or the record's model", name ? name : "?",
				    (long long)fb, model_path, (long long)st.st_size);
	if (model_path && hash && want && strlen(want) == 64) {
		char got[65];
		int rc = mw_sha256_file_cached(model_path, got, NULL, NULL, err);
		if (rc)
			return rc;
		if (strcmp(got, want))
			return mw_error_set(err, -EINVAL, source, "model.sha256",
					    "the record measured %s (sha256 %.16s...), not %s "
					    "(sha256 %.16s...): give this model's record, or the "
					    "record's model", name ? name : "?", want, model_path, got);
	}
	if (!t || !shape)
		return 0;
	const struct {
		const char *key;
		int have;
	} f[] = { { "dim", t->info.dim }, { "hidden_dim", t->info.hidden_dim },
		  { "n_layers", t->info.n_layers }, { "n_heads", t->info.n_heads },
		  { "n_kv_heads", t->info.n_kv_heads }, { "vocab_size", t->info.vocab_size } };
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		json_int_t v;
		if (!rd_int(&r, shape, "model.shape", f[i].key, &v)) {
			if (r.rc)
				return r.rc;
			continue;
		}
		if (v != f[i].have) {
			char field[64];
			snprintf(field, sizeof(field), "model.shape.%s", f[i].key);
			return mw_error_set(err, -EINVAL, source, field,
					    "the record measured %s with %s %lld; %s has %s %d: "
					    "give this model's record, or the record's model",
					    name ? name : "?", f[i].key, (long long)v, t->source,
					    f[i].key, f[i].have);
		}
	}
	return 0;
}

/* ---- Attribution's runs ---------------------------------------------------------------------- */

/* decode.phases of a run (`memwall run --phases`): each phase's engine bytes (written always)
 * and DRAM bytes (null when not read at the markers), and with =layers each layer's. */
static void read_phases(struct rd *r, const json_t *run, const char *where,
			struct mw_attribution_run *out)
{
	static const char *const layer_keys[MW_LAYER_FIGURES] = {
		[MW_LAYER_ATTN_READ] = "attention_dram_read_bytes",
		[MW_LAYER_ATTN_WRITE] = "attention_dram_write_bytes",
		[MW_LAYER_FFN_READ] = "ffn_dram_read_bytes",
		[MW_LAYER_FFN_WRITE] = "ffn_dram_write_bytes",
	};
	char path[128];
	json_int_t x, y;
	out->phases = true;
	rd_need_int(r, run, where, "decode.tokens", &x, "missing: a run with phases needs its "
		    "decode token count");
	out->decode_tokens = x;
	for (int k = 0; k < MW_PHASE_COUNT; k++) {
		struct mw_attribution_phase *p = &out->phase[k];
		snprintf(path, sizeof(path), "decode.phases.%s.engine_bytes", mw_phase_name(k));
		rd_need_int(r, run, where, path, &x, "missing: every recorded phase has its "
			    "engine-accounted bytes");
		p->engine_bytes = x;
		snprintf(path, sizeof(path), "decode.phases.%s.dram_read_bytes", mw_phase_name(k));
		p->dram = rd_int(r, run, where, path, &x);
		snprintf(path, sizeof(path), "decode.phases.%s.dram_write_bytes", mw_phase_name(k));
		p->dram &= rd_int(r, run, where, path, &y);
		p->dram_read = p->dram ? x : 0;
		p->dram_write = p->dram ? y : 0;
	}
	const json_t *layers = rd_array(r, run, where, "decode.phases.layers");
	out->n_layers = json_array_size(layers);
	if (!out->n_layers)
		return;
	if (!(out->layers = calloc(out->n_layers, sizeof(*out->layers)))) {
		out->n_layers = 0;
		rd_nomem(r);
		return;
	}
	for (size_t l = 0; l < out->n_layers; l++) {
		struct mw_attribution_layer *ly = &out->layers[l];
		snprintf(path, sizeof(path), "%s.decode.phases.layers[%zu]", where, l);
		ly->dram = true;
		for (int k = 0; k < MW_LAYER_FIGURES; k++) {
			ly->dram &= rd_int(r, json_array_get(layers, l), path, layer_keys[k], &x);
			ly->bytes[k] = x;
		}
		if (!ly->dram)
			memset(ly->bytes, 0, sizeof(ly->bytes));
	}
}

static void read_run(struct rd *r, const json_t *run, const char *where,
		     struct mw_attribution_run *out)
{
	json_int_t x;
	rd_int(r, run, where, "prefill.tokens", &x);
	out->prefill_tokens = x;
	const json_t *eng = rd_array(r, run, where, "tokens.engine_bytes");
	size_t n = json_array_size(eng);
	if (n && !(out->engine_bytes = calloc(n, sizeof(*out->engine_bytes)))) {
		rd_nomem(r);
		return;
	}
	out->n_tokens = n;
	for (size_t i = 0; i < n; i++) {
		char at[96];
		snprintf(at, sizeof(at), "%s.tokens.engine_bytes[%zu]", where, i);
		rd_need_int(r, json_array_get(eng, i), at, "", &x, "missing: every decode token "
			    "has its engine-accounted bytes");
		out->engine_bytes[i] = x;
	}
	if (rd_container(r, run, where, "decode.phases", JSON_OBJECT))
		read_phases(r, run, where, out);
}

int mw_record_attribution_read(const json_t *doc, const char *source,
			       struct mw_attribution_input *in, struct mw_error *err)
{
	struct rd r = { .source = source, .err = err };
	struct metric rdm, wrm;
	const char *reason, *layer;
	const json_t *runs, *run;
	size_t i;

	memset(in, 0, sizeof(*in));
	runs = rd_array(&r, doc, "", "runs");
	if (json_array_size(runs) &&
	    !(in->runs = calloc(json_array_size(runs), sizeof(*in->runs))))
		return mw_error_set(err, -ENOMEM, source, "", "out of memory");
	/* The measured runs: neither warm-up nor cut short. */
	json_array_foreach(runs, i, run) {
		char where[32];
		bool warmup, complete;
		snprintf(where, sizeof(where), "runs[%zu]", i);
		rd_bool(&r, run, where, "warmup", &warmup);
		rd_bool(&r, run, where, "complete", &complete);
		if (!warmup && complete)
			read_run(&r, run, where, &in->runs[in->n_runs++]);
	}
	rd_metric(&r, doc, "dram_read_bytes_per_token", &rdm);
	rd_metric(&r, doc, "dram_write_bytes_per_token", &wrm);
	rd_str(&r, doc, "", "counters.dram.reason", &reason);
	rd_str(&r, doc, "", "counters.dram.layer", &layer);
	in->dram_read = rdm.measured;
	in->dram_read_mean = rdm.mean;
	in->dram_write = wrm.measured;
	in->dram_write_mean = wrm.mean;
	in->dram_reason = rdm.reason ? rdm.reason : reason;
	in->simulated = layer && !strcmp(layer, "sim");
	if (r.rc)
		mw_record_attribution_free(in);
	return r.rc;
}

void mw_record_attribution_free(struct mw_attribution_input *in)
{
	for (size_t i = 0; in->runs && i < in->n_runs; i++) {
		free(in->runs[i].engine_bytes);
		free(in->runs[i].layers);
	}
	free(in->runs);
	in->runs = NULL;
	in->n_runs = 0;
}
