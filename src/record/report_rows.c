/* src/record/report_rows.c: `report --format jsonl` and `--format sql`: one line or one row per
 * metric of a record, in the spirit of llama-bench's jsonl and sql outputs (the record's context,
 * then the figure), so many records concatenate into one file or one table.
 *
 * The columns are data: one table below feeds both formats, and results/README.md documents each
 * column. SQL types are those SQLite and PostgreSQL share. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jschema.h"
#include "provenance.h"
#include "report_rows.h"

enum col_from {
	FROM_DOC,     /* path is a dotted path in the record */
	FROM_METRIC,  /* path is a key of the metric's summary object */
	FROM_SHA,     /* the record's sha256, when the caller knows it */
	FROM_NAME,    /* the metric's name */
	FROM_PROV,    /* path is a key of mw_provenance_json (the DRAM figures' provenance) */
};

static const struct {
	const char *name;
	const char *sql_type;
	enum col_from from;
	const char *path;
} cols[] = {
	{ "record_sha256", "TEXT", FROM_SHA, NULL },
	{ "created_utc", "TEXT", FROM_DOC, "created_utc" },
	{ "memwall_version", "TEXT", FROM_DOC, "memwall.version" },
	{ "kind", "TEXT", FROM_DOC, "kind" },
	{ "complete", "INTEGER", FROM_DOC, "complete" },
	{ "acceptance", "TEXT", FROM_DOC, "acceptance.status" },
	{ "protocol", "TEXT", FROM_DOC, "protocol.name" },
	{ "model", "TEXT", FROM_DOC, "model.name" },
	{ "model_sha256", "TEXT", FROM_DOC, "model.sha256" },
	{ "model_synthetic", "INTEGER", FROM_DOC, "model.synthetic" },
	{ "backend", "TEXT", FROM_DOC, "engine.kind" },
	{ "kernels", "TEXT", FROM_DOC, "engine.kernels" },
	{ "threads", "INTEGER", FROM_DOC, "engine.threads" },
	{ "cpu_name", "TEXT", FROM_DOC, "machine.cpu_name" },
	{ "logical_cpus", "INTEGER", FROM_DOC, "machine.logical_cpus" },
	{ "mem_total_bytes", "BIGINT", FROM_DOC, "machine.mem_total_bytes" },
	{ "memory_config", "TEXT", FROM_DOC, "machine.memory_config" },
	{ "kernel", "TEXT", FROM_DOC, "machine.kernel.release" },
	{ "dram_backend", "TEXT", FROM_DOC, "counters.dram.backend" },
	{ "dram_source", "TEXT", FROM_PROV, "dram_source" },
	{ "dram_layer", "TEXT", FROM_PROV, "dram_layer" },
	{ "dram_caveat", "TEXT", FROM_PROV, "dram_caveat" },
	{ "dram_calibrated", "INTEGER", FROM_PROV, "calibrated" },
	{ "calibration_error_pct", "DOUBLE PRECISION", FROM_PROV, "calibration_error_pct" },
	{ "dram_verification", "TEXT", FROM_PROV, "verification" },
	{ "metric", "TEXT", FROM_NAME, NULL },
	{ "unit", "TEXT", FROM_METRIC, "unit" },
	{ "measured", "INTEGER", FROM_METRIC, "measured" },
	{ "n", "INTEGER", FROM_METRIC, "n" },
	{ "mean", "DOUBLE PRECISION", FROM_METRIC, "mean" },
	{ "sd", "DOUBLE PRECISION", FROM_METRIC, "sd" },
	{ "cv_pct", "DOUBLE PRECISION", FROM_METRIC, "cv_pct" },
	{ "median", "DOUBLE PRECISION", FROM_METRIC, "median" },
	{ "min", "DOUBLE PRECISION", FROM_METRIC, "min" },
	{ "max", "DOUBLE PRECISION", FROM_METRIC, "max" },
	{ "ci95_low", "DOUBLE PRECISION", FROM_METRIC, "ci95_low" },
	{ "ci95_high", "DOUBLE PRECISION", FROM_METRIC, "ci95_high" },
	{ "reason", "TEXT", FROM_METRIC, "reason" },
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))


/* Column i's value for one metric: a new reference (json null when absent). */
static json_t *value(size_t i, const json_t *doc, const json_t *prov, const char *sha,
		     const char *name, const json_t *metric)
{
	const json_t *v = NULL;
	switch (cols[i].from) {
	case FROM_SHA:
		return sha ? json_string(sha) : json_null();
	case FROM_NAME:
		return json_string(name);
	case FROM_DOC:
		v = mw_json_at(doc, cols[i].path);
		break;
	case FROM_METRIC:
		v = json_object_get(metric, cols[i].path);
		break;
	case FROM_PROV:
		v = json_object_get(prov, cols[i].path);
		break;
	}
	if (!v || (json_is_real(v) && !isfinite(json_real_value(v))))
		return json_null();
	return json_incref((json_t *)(uintptr_t)v);
}

static void sql_string(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static void sql_value(FILE *f, const json_t *v)
{
	if (json_is_string(v)) {
		sql_string(f, json_string_value(v));
	} else if (json_is_integer(v)) {
		fprintf(f, "%lld", (long long)json_integer_value(v));
	} else if (json_is_real(v)) {
		fprintf(f, "%.17g", json_real_value(v));
	} else if (json_is_boolean(v)) {
		fputs(json_is_true(v) ? "1" : "0", f);
	} else if (json_is_object(v) || json_is_array(v)) {
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
		if (s)
			sql_string(f, s);
		else
			fputs("NULL", f);
		free(s);
	} else {
		fputs("NULL", f);
	}
}

void mw_report_rows(FILE *f, const json_t *doc, const char *sha256, bool sql)
{
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	const char *name;
	json_t *x;
	struct mw_provenance p;
	mw_provenance_of(doc, &p);
	json_t *prov = mw_provenance_json(&p);
	if (sql) {
		fprintf(f, "CREATE TABLE IF NOT EXISTS %s (\n", MW_REPORT_SQL_TABLE);
		for (size_t i = 0; i < NCOLS; i++)
			fprintf(f, "  %s %s%s\n", cols[i].name, cols[i].sql_type,
				i + 1 < NCOLS ? "," : "");
		fprintf(f, ");\n");
	}
	json_object_foreach((json_t *)(uintptr_t)m, name, x) {
		if (sql) {
			fprintf(f, "INSERT INTO %s (", MW_REPORT_SQL_TABLE);
			for (size_t i = 0; i < NCOLS; i++)
				fprintf(f, "%s%s", i ? ", " : "", cols[i].name);
			fprintf(f, ") VALUES (");
		}
		json_t *line = json_object();
		for (size_t i = 0; i < NCOLS; i++) {
			json_t *v = value(i, doc, prov, sha256, name, x);
			if (sql) {
				fputs(i ? ", " : "", f);
				sql_value(f, v);
				json_decref(v);
			} else {
				json_object_set_new(line, cols[i].name, v);
			}
		}
		if (sql) {
			fprintf(f, ");\n");
		} else {
			json_dumpf(line, f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
			fputc('\n', f);
		}
		json_decref(line);
	}
	json_decref(prov);
}
