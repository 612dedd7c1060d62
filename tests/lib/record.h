/* tests/lib/record.h: a short `memwall run` of synthetic stories260K into a scratch folder,
 * and edits of its record, shared by the tests of the verbs that read records (roofline,
 * headroom). */
#ifndef MEMWALL_TEST_RECORD_H
#define MEMWALL_TEST_RECORD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Makes a scratch folder (its path into scratch, sn bytes; its cache and state folders become
 * memwall's), runs a short protocol (with a 10 GB/s roofline.bandwidth_gbps) into it and
 * returns the record's path in path (n bytes), "" when none was written. The caller removes
 * scratch (t_rm_tree). */
void t_run_record(char *scratch, size_t sn, char *path, size_t n);

/* A copy of the record at path, edited by edit, written to out. */
void t_record_edit(const char *path, const char *out, void (*edit)(json_t *doc));

/* A measured tok/s of -5: what a hand edit or a broken writer leaves. */
void t_edit_negative_tok_s(json_t *doc);

/* `memwall validate path` exits 0 (a failed check, with its output, where it does not); who
 * names the caller's case in that output. */
void t_validates(const char *path, const char *who);

/* The path memwall's "result written to PATH" in err names, into path (n bytes); false, and
 * path "", where err says no such thing. */
bool t_written_path(const char *err, char *path, size_t n);

/* The median over the record at path's measured (not warm-up) runs of runs[].figures.METRIC,
 * computed here; NaN when no run has it. */
double t_runs_median(const char *path, const char *metric);

/* The first object of the array arr whose member key is the string value; NULL where none is. */
const json_t *t_json_find(const json_t *arr, const char *key, const char *value);

/* o's member a, then its member b and c where not NULL (NULL where any is missing). */
const json_t *t_json_get(const json_t *o, const char *a, const char *b, const char *c);

#endif
