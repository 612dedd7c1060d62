/* src/run/kernel_cache.c: the kernel choice's cache and its use by sessions (kernel_cache.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dram_calibration.h"
#include "file.h"
#include "kernel_cache.h"
#include "machine.h"

#define FIX "remove the file, or run `memwall bench-kernels` to measure it again"

int mw_kcache_path(char *buf, size_t n, struct mw_error *err)
{
	if (mw_state_path(buf, n, "kernels.json"))
		return mw_error_set(err, -ENOENT, "kernel cache", "",
				    "no state folder: set MEMWALL_STATE_DIR, XDG_STATE_HOME or HOME");
	return 0;
}

json_t *mw_kcache_fingerprint(char sha[65])
{
	json_t *machine = mw_machine_describe(NULL);
	json_t *fp = machine ? mw_dramcal_fingerprint(machine, NULL, sha) : NULL;
	json_decref(machine);
	return fp;
}

/* The cache's text as JSON into *doc: 0, 1 when there is no file, or -errno with err */
static int read_doc(const char *path, json_t **doc, struct mw_error *err)
{
	struct stat sb;
	json_error_t jerr;
	char *text = NULL;
	size_t len = 0;
	int rc;
	*doc = NULL;
	if (stat(path, &sb) != 0 && errno == ENOENT)
		return 1;
	if ((rc = mw_file_read(path, "kernel cache", "", MW_KCACHE_MAX_BYTES, &text, &len, err)))
		return rc;
	*doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!*doc)
		return mw_error_set(err, -EINVAL, path, "", "not valid JSON: %s (line %d): " FIX,
				    jerr.text, jerr.line);
	if (!json_is_object(*doc))
		return mw_error_set(err, -EINVAL, path, "", "not a JSON object: " FIX);
	return 0;
}

/* The string member key of doc: NULL, with err naming it, when absent or not a string */
static const char *need_string(const json_t *doc, const char *key, const char *path,
			       struct mw_error *err)
{
	const char *v = json_string_value(json_object_get(doc, key));
	if (!v)
		mw_error_set(err, -EINVAL, path, key, "missing, or not a string: " FIX);
	return v;
}

/* A token count's key: "1", "2", "4" or "8" as the engine's classes measure; else 0 */
static int token_key(const char *k)
{
	for (int c = 0; c < ENG_KC_CLASSES; c++) {
		char want[8];
		snprintf(want, sizeof(want), "%d", eng_kernel_class_tokens(c));
		if (!strcmp(k, want))
			return eng_kernel_class_tokens(c);
	}
	return 0;
}

/* choice's shape: {type: {tokens: table}}; with set, each entry goes to the engine */
static int parse_choice(json_t *choice, const char *path, struct eng_kernel_choice *out,
			bool set, struct mw_error *err)
{
	const char *type, *tok;
	json_t *per, *tab;
	char field[128];
	if (!json_is_object(choice))
		return mw_error_set(err, -EINVAL, path, "choice",
				    "missing, or not an object of {type: {tokens: table}}: " FIX);
	json_object_foreach(choice, type, per) {
		snprintf(field, sizeof(field), "choice.%s", type);
		if (!json_is_object(per))
			return mw_error_set(err, -EINVAL, path, field,
					    "not an object of {tokens: table}: " FIX);
		json_object_foreach(per, tok, tab) {
			snprintf(field, sizeof(field), "choice.%s.%s", type, tok);
			int n = token_key(tok);
			if (!n)
				return mw_error_set(err, -EINVAL, path, field,
						    "'%s' is not a token count a choice is made "
						    "for (\"1\", \"2\", \"4\" or \"8\"): " FIX, tok);
			if (!json_is_string(tab))
				return mw_error_set(err, -EINVAL, path, field,
						    "not a table name (a string): " FIX);
			struct eng_error eerr;
			eng_error_clear(&eerr);
			if (set && eng_kernel_choice_set(out, type, n, json_string_value(tab),
							 &eerr))
				return mw_error_set(err, -EINVAL, path, field, "%s: " FIX,
						    eerr.text);
		}
	}
	return 0;
}

int mw_kcache_load(const char *path, const char *sha, const char *version,
		   struct eng_kernel_choice *out, struct mw_kcache_use *use, struct mw_error *err)
{
	json_t *doc = NULL;
	const char *schema, *fsha, *fver;
	memset(out, 0, sizeof(*out));
	use->used = use->ignored = false;
	use->reason[0] = '\0';
	snprintf(use->path, sizeof(use->path), "%s", path);
	snprintf(use->sha, sizeof(use->sha), "%s", sha);
	int rc = read_doc(path, &doc, err);
	if (rc == 1) {
		snprintf(use->reason, sizeof(use->reason),
			 "no kernel cache at %s: the default tables run (`memwall bench-kernels` "
			 "measures this machine's)", path);
		return 0;
	}
	if (rc)
		goto out;
	rc = -EINVAL;
	if (!(schema = need_string(doc, "schema", path, err)))
		goto out;
	if (strcmp(schema, MW_KCACHE_SCHEMA)) {
		mw_error_set(err, -EINVAL, path, "schema", "'%s' is not a kernel cache's (want "
			     "\"%s\"): " FIX, schema, MW_KCACHE_SCHEMA);
		goto out;
	}
	if (!(fsha = need_string(doc, "fingerprint_sha256", path, err)) ||
	    !(fver = need_string(doc, "memwall_version", path, err)))
		goto out;
	if (strlen(fsha) != 64 || strspn(fsha, "0123456789abcdef") != 64) {
		mw_error_set(err, -EINVAL, path, "fingerprint_sha256",
			     "not a sha256 (64 lowercase hex digits): " FIX);
		goto out;
	}
	if ((rc = parse_choice(json_object_get(doc, "choice"), path, out, false, err)))
		goto out;
	rc = 0;
	use->ignored = strcmp(fsha, sha) || strcmp(fver, version);
	if (strcmp(fsha, sha)) {
		snprintf(use->reason, sizeof(use->reason),
			 "the kernel cache %s was measured on another machine or system "
			 "(fingerprint %.12s, this one %.12s): the default tables run; `memwall "
			 "bench-kernels` measures this one", path, fsha, sha);
		goto out;
	}
	if (strcmp(fver, version)) {
		snprintf(use->reason, sizeof(use->reason),
			 "the kernel cache %s was measured by memwall %s, this is %s, whose "
			 "kernels may differ: the default tables run; `memwall bench-kernels` "
			 "measures them again", path, fver, version);
		goto out;
	}
	/* this machine's: every entry must be one the engine runs here */
	if ((rc = parse_choice(json_object_get(doc, "choice"), path, out, true, err)))
		goto out;
	use->used = true;
out:
	if (rc || !use->used)
		memset(out, 0, sizeof(*out));
	json_decref(doc);
	return rc;
}

int mw_kcache_for_session(const char *kernels, struct eng_kernel_choice *out,
			  struct mw_kcache_use *use, struct mw_error *err)
{
	memset(out, 0, sizeof(*out));
	memset(use, 0, sizeof(*use));
	if (kernels && strcmp(kernels, "auto")) {
		snprintf(use->reason, sizeof(use->reason),
			 "kernels '%s' named: that table runs every operation", kernels);
		return 0;
	}
	char path[4096];
	struct mw_error perr;
	mw_error_clear(&perr);
	if (mw_kcache_path(path, sizeof(path), &perr)) {
		snprintf(use->reason, sizeof(use->reason), "no state folder to hold a kernel "
			 "cache: the default tables run");
		return 0;
	}
	char sha[65];
	json_t *fp = mw_kcache_fingerprint(sha);
	if (!fp)
		return mw_error_set(err, -ENOMEM, path, "", "out of memory");
	json_decref(fp);
	return mw_kcache_load(path, sha, mw_version(), out, use, err);
}

json_t *mw_kcache_record(const struct mw_kcache_use *use)
{
	return json_pack("{s:s, s:o, s:o}", "source", use->used ? "measured" : "default",
			 "cache", use->path[0] ? json_string(use->path) : json_null(), "reason",
			 use->used ? json_null() : json_string(use->reason));
}

json_t *mw_kcache_op_kernels(const struct eng_session *s)
{
	uint32_t types[ENG_KC_TYPES];
	int n = eng_session_x8_types(s, types, ENG_KC_TYPES);
	json_t *o = json_object();
	for (int i = 0; o && i < n && i < ENG_KC_TYPES; i++) {
		json_t *per = json_object();
		for (int c = 0; per && c < ENG_KC_CLASSES; c++) {
			char k[8];
			int tok = eng_kernel_class_tokens(c);
			snprintf(k, sizeof(k), "%d", tok);
			json_object_set_new(per, k, json_string(eng_session_op_kernels(s, types[i],
										       tok)));
		}
		if (!per || json_object_set_new(o, eng_type_name(types[i]), per)) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

void mw_kcache_describe(const struct eng_session *s, int n_tok, char *buf, size_t n)
{
	uint32_t types[ENG_KC_TYPES];
	int k = eng_session_x8_types(s, types, ENG_KC_TYPES);
	size_t used = 0;
	snprintf(buf, n, "none");
	for (int i = 0; i < k && i < ENG_KC_TYPES && used < n; i++) {
		int w = snprintf(buf + used, n - used, "%s%s %s", i ? ", " : "",
				 eng_type_name(types[i]), eng_session_op_kernels(s, types[i], n_tok));
		if (w < 0)
			break;
		used += (size_t)w;
	}
}
