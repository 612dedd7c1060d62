/* tests/src/test_kernel_cache.c: the kernel choice's cache (src/run/kernel_cache.c, issue 42),
 * on hand-made files.
 *
 * 1. A cache of this machine and version: its entries become the choice, entry by entry, and
 *    nothing else does; the record says "measured".
 * 2. Another fingerprint, another version, no file, --kernels named: the default runs
 *    (nothing chosen), with a reason naming what differed and the fix; a cache of another
 *    machine is ignored even where it names tables this one lacks.
 * 3. Malformed caches are refused: each with the file, the field at fault and the fix.
 * 4. mw_kcache_for_session finds the state folder's cache, keyed by this machine's own
 *    fingerprint and memwall's version.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine.h"
#include "kernel_cache.h"
#include "test.h"

static char dir[] = "/tmp/mw-test-kcache-XXXXXX";
static char path[4200];

static const char *const SHA_A =
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static const char *const SHA_B =
	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

static void write_file(const char *text)
{
	t_write_text(path, text);
}

/* A cache document with fingerprint sha, version ver and choice (a JSON object's text) */
static void write_cache(const char *sha, const char *ver, const char *choice)
{
	char text[8192];
	snprintf(text, sizeof(text),
		 "{\"schema\": \"memwall-kernels/1\", \"created_utc\": \"2026-01-01T00:00:00Z\", "
		 "\"memwall_version\": \"%s\", \"fingerprint\": {}, \"fingerprint_sha256\": "
		 "\"%s\", \"method\": \"by hand\", \"default\": \"x\", \"choice\": %s, "
		 "\"rates\": {}}",
		 ver, sha, choice);
	write_file(text);
}

/* Every entry of c empty but those listed (type id, class, table) */
static void expect_only(const struct eng_kernel_choice *c, const uint32_t *types,
			const int *classes, const char *table, int n)
{
	int set = 0;
	for (int t = 0; t < ENG_KC_TYPES; t++)
		for (int k = 0; k < ENG_KC_CLASSES; k++) {
			bool listed = false;
			for (int i = 0; i < n; i++)
				listed = listed || ((uint32_t)t == types[i] && k == classes[i]);
			if (listed) {
				T_EQ_STR(c->table[t][k], table);
				set++;
			} else if (c->table[t][k][0]) {
				T_FAIL_AT(__FILE__, __LINE__, "entry %d/%d is '%s', not empty", t, k,
					  c->table[t][k]);
			}
		}
	T_EQ_INT(set, n);
}

static void check_used(const char *def)
{
	struct eng_kernel_choice c;
	struct mw_kcache_use use;
	struct mw_error err;
	char choice[256];
	/* ggml's ids: q4_0 2, q6_K 14 */
	snprintf(choice, sizeof(choice),
		 "{\"q4_0\": {\"1\": \"%s\", \"2\": \"%s\"}, \"q6_K\": {\"8\": \"%s\"}}", def, def,
		 def);
	write_cache(SHA_A, "v-test", choice);
	T_EQ_INT(mw_kcache_load(path, SHA_A, "v-test", &c, &use, &err), 0);
	T_ASSERT(use.used);
	T_ASSERT(!use.ignored);
	T_EQ_STR(use.reason, "");
	static const uint32_t types[] = { 2, 2, 14 };
	static const int classes[] = { 0, 1, 3 };
	expect_only(&c, types, classes, def, 3);
	json_t *rec = mw_kcache_record(&use);
	T_EQ_STR(json_string_value(json_object_get(rec, "source")), "measured");
	T_EQ_STR(json_string_value(json_object_get(rec, "cache")), path);
	T_ASSERT(json_is_null(json_object_get(rec, "reason")));
	json_decref(rec);
}

static void check_ignored(const char *def)
{
	struct eng_kernel_choice c;
	struct mw_kcache_use use;
	struct mw_error err;
	char choice[256];
	snprintf(choice, sizeof(choice), "{\"q4_0\": {\"2\": \"%s\"}}", def);
	write_cache(SHA_A, "v-test", choice);
	/* another machine */
	T_EQ_INT(mw_kcache_load(path, SHA_B, "v-test", &c, &use, &err), 0);
	T_ASSERT(!use.used && use.ignored);
	T_CONTAINS(use.reason, "another machine");
	T_CONTAINS(use.reason, "aaaaaaaaaaaa");
	T_CONTAINS(use.reason, "bbbbbbbbbbbb");
	T_CONTAINS(use.reason, "bench-kernels");
	expect_only(&c, NULL, NULL, "", 0);
	json_t *rec = mw_kcache_record(&use);
	T_EQ_STR(json_string_value(json_object_get(rec, "source")), "default");
	T_EQ_STR(json_string_value(json_object_get(rec, "reason")), use.reason);
	json_decref(rec);
	/* another version */
	T_EQ_INT(mw_kcache_load(path, SHA_A, "v-other", &c, &use, &err), 0);
	T_ASSERT(!use.used && use.ignored);
	T_CONTAINS(use.reason, "v-test");
	T_CONTAINS(use.reason, "v-other");
	expect_only(&c, NULL, NULL, "", 0);
	/* another machine's tables need not exist here: ignored, not refused */
	write_cache(SHA_A, "v-test", "{\"q4_0\": {\"2\": \"a-table-of-another-cpu\"}}");
	T_EQ_INT(mw_kcache_load(path, SHA_B, "v-test", &c, &use, &err), 0);
	T_ASSERT(!use.used && use.ignored);
	/* no file */
	unlink(path);
	T_EQ_INT(mw_kcache_load(path, SHA_A, "v-test", &c, &use, &err), 0);
	T_ASSERT(!use.used && !use.ignored);
	T_CONTAINS(use.reason, "no kernel cache");
	/* a table named by the user: the cache is not looked at */
	T_EQ_INT(mw_kcache_for_session(def, &c, &use, &err), 0);
	T_ASSERT(!use.used && !use.ignored);
	T_CONTAINS(use.reason, "named");
}

/* text (NULL: the file as it is) refused with err naming path, field and the fix */
static void expect_refused(const char *text, const char *field, const char *says)
{
	struct eng_kernel_choice c;
	struct mw_kcache_use use;
	struct mw_error err;
	if (text)
		write_file(text);
	mw_error_clear(&err);
	T_EQ_INT(mw_kcache_load(path, SHA_A, "v-test", &c, &use, &err), -EINVAL);
	T_ASSERT(!use.used);
	T_EQ_STR(err.source, path);
	T_EQ_STR(err.field, field);
	T_CONTAINS(err.text, says);
	T_CONTAINS(err.text, "bench-kernels");
	expect_only(&c, NULL, NULL, "", 0);
}

static void check_malformed(const char *def)
{
	char text[2048];
	expect_refused("{\"schema\": ", "", "not valid JSON");
	expect_refused("[1, 2]", "", "not a JSON object");
	expect_refused("{\"schema\": \"memwall-calibration/1\"}", "schema", "not a kernel cache");
	expect_refused("{\"choice\": {}}", "schema", "missing");
	snprintf(text, sizeof(text),
		 "{\"schema\": \"memwall-kernels/1\", \"memwall_version\": \"v-test\", "
		 "\"fingerprint_sha256\": \"%.63sX\", \"choice\": {}}", SHA_A);
	expect_refused(text, "fingerprint_sha256", "sha256");
	snprintf(text, sizeof(text),
		 "{\"schema\": \"memwall-kernels/1\", \"fingerprint_sha256\": \"%s\", "
		 "\"choice\": {}}", SHA_A);
	expect_refused(text, "memwall_version", "missing");
	write_cache(SHA_A, "v-test", "[]");
	expect_refused(NULL, "choice", "not an object");
	write_cache(SHA_A, "v-test", "{\"q4_0\": \"avx2\"}");
	expect_refused(NULL, "choice.q4_0", "not an object");
	write_cache(SHA_A, "v-test", "{\"q4_0\": {\"3\": \"avx2\"}}");
	expect_refused(NULL, "choice.q4_0.3", "\"1\", \"2\", \"4\" or \"8\"");
	write_cache(SHA_A, "v-test", "{\"q4_0\": {\"1\": 5}}");
	expect_refused(NULL, "choice.q4_0.1", "not a table name");
	/* the shape is fine, and this machine's, but the engine refuses the entry */
	write_cache(SHA_A, "v-test", "{\"q4_0\": {\"1\": \"nonesuch\"}}");
	expect_refused(NULL, "choice.q4_0.1", "'nonesuch'");
	snprintf(text, sizeof(text), "{\"f32\": {\"4\": \"%s\"}}", def);
	write_cache(SHA_A, "v-test", text);
	expect_refused(NULL, "choice.f32.4", "x8 layout");
}

/* The state folder's cache, keyed by this machine and this memwall */
static void check_for_session(const char *def)
{
	struct eng_kernel_choice c;
	struct mw_kcache_use use;
	struct mw_error err;
	char sha[65], choice[128], want[4200];
	json_t *fp = mw_kcache_fingerprint(sha);
	T_ASSERT(fp != NULL);
	json_decref(fp);
	T_EQ_INT(setenv("MEMWALL_STATE_DIR", dir, 1), 0);
	T_EQ_INT(mw_kcache_path(want, sizeof(want), &err), 0);
	T_EQ_STR(want, path);
	snprintf(choice, sizeof(choice), "{\"q8_0\": {\"4\": \"%s\"}}", def);
	write_cache(sha, mw_version(), choice);
	T_EQ_INT(mw_kcache_for_session(NULL, &c, &use, &err), 0);
	T_ASSERT(use.used);
	T_EQ_STR(use.path, path);
	static const uint32_t types[] = { 8 }; /* q8_0 */
	static const int classes[] = { 2 };
	expect_only(&c, types, classes, def, 1);
	T_EQ_INT(mw_kcache_for_session("auto", &c, &use, &err), 0);
	T_ASSERT(use.used);
	unlink(path);
}

int main(void)
{
	T_ASSERT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/kernels.json", dir);
	bool x8;
	/* a table this CPU runs with x8 kernels for q4_0, q6_K and q8_0: the default's */
	const char *def = eng_quant_kernels_name(0, "q4_0", &x8);
	if (!def || !x8) {
		rmdir(dir);
		t_skip("no quant table on this CPU has x8 kernels (a ref-only build): a choice "
		       "has nothing to name");
	}
	check_used(def);
	check_ignored(def);
	check_malformed(def);
	check_for_session(def);
	unlink(path);
	rmdir(dir);
	return t_done();
}
