/* src/cli/db_rows.c: rows of the results store as a table (`memwall db` and its series
 * sub-verbs): Markdown with escaped cells and short forms of long ones, CSV, or JSON. */
#include <stdio.h>
#include <string.h>

#include "db_rows.h"
#include "text.h"

static void cell(FILE *f, const json_t *v, bool csv)
{
	if (json_is_number(v)) {
		fprintf(f, csv ? "%.10g" : "%.4g", json_number_value(v));
	} else if (json_is_string(v)) {
		/* Escaped: control characters, '|' in a markdown cell, a formula in a CSV one. */
		if (csv)
			mw_csv_put(f, json_string_value(v));
		else
			fputs(mw_esc_md(json_string_value(v)), f);
	} else if (!csv) {
		fputs("-", f);
	}
}

/* A markdown table's short form of a long cell; `db show` and the csv/json formats keep the
 * whole text. A memory configuration that was not measured says only that ("not measured":
 * the reason, one sentence per record, would fill the column); a CPU name loses its trade
 * marks and its clock ("Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz" -> "Intel Xeon
 * Platinum 8480+"). */
static const char *compact(const char *key, const char *s, char *buf, size_t n)
{
	if (!strcmp(key, "memory") && (!strncmp(s, "not measured", 12) ||
				       !strncmp(s, "not recorded", 12)))
		return snprintf(buf, n, "%.12s", s), buf;
	if (strcmp(key, "machine"))
		return s;
	size_t used = 0;
	buf[0] = '\0';
	for (const char *p = s; *p && used + 1 < n;) {
		if (!strncmp(p, "(R)", 3) || !strncmp(p, "(TM)", 4)) {
			p += p[1] == 'R' ? 3 : 4;
		} else if (!strncmp(p, " CPU", 4) && (!p[4] || p[4] == ' ')) {
			p += 4;
		} else if (!strncmp(p, " @", 2)) {
			break;
		} else {
			buf[used++] = *p++;
			buf[used] = '\0';
		}
	}
	return buf;
}

void mw_db_print_rows(FILE *f, json_t *rows, const char *const *keys, size_t nkeys,
		      enum mw_format fmt)
{
	size_t i;
	json_t *r;
	if (fmt == MW_FORMAT_JSON) {
		json_dumpf(rows, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		fputc('\n', f);
		return;
	}
	bool csv = fmt == MW_FORMAT_CSV;
	for (size_t k = 0; k < nkeys; k++)
		fprintf(f, "%s%s%s", csv ? (k ? "," : "") : "| ", keys[k], csv ? "" : " ");
	fputs(csv ? "\n" : "|\n", f);
	for (size_t k = 0; !csv && k < nkeys; k++)
		fputs("|---", f);
	if (!csv)
		fputs("|\n", f);
	json_array_foreach(rows, i, r) {
		for (size_t k = 0; k < nkeys; k++) {
			fputs(csv ? (k ? "," : "") : "| ", f);
			json_t *v = json_object_get(r, keys[k]);
			/* The id is a sha256: twelve digits are enough to name it in a table. */
			char shortened[256];
			if (!strcmp(keys[k], "id") && !csv && json_is_string(v))
				fprintf(f, "%.12s", mw_esc_md(json_string_value(v)));
			else if (!csv && json_is_string(v)) {
				json_t *c = json_string(compact(keys[k], json_string_value(v),
								shortened, sizeof(shortened)));
				cell(f, c, csv);
				json_decref(c);
			} else
				cell(f, v, csv);
			if (!csv)
				fputc(' ', f);
		}
		fputs(csv ? "\n" : "|\n", f);
	}
}

