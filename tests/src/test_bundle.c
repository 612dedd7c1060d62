/* tests/src/test_bundle.c: submission bundles (src/record/bundle.c) and the tar.gz they are
 * (src/base/tar.c): what a bundle holds, that every sum in its manifest is right (recomputed
 * here), that a changed, added or missing file and an edited record are caught, and that a
 * hostile archive (a "../" name) is refused. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle.h"
#include "file.h"
#include "fixture_result.h"
#include "run.h"
#include "sha256.h"
#include "tar.h"
#include "test.h"

static char tmp[] = "/tmp/mw-test-bundle-XXXXXX";

struct entry {
	char name[128];
	char *data;
	size_t len;
};

struct listing {
	struct entry e[256];
	int n;
};

static int collect(void *ctx, const char *name, const void *data, size_t len)
{
	struct listing *l = ctx;
	if (l->n >= 256)
		return -E2BIG;
	struct entry *e = &l->e[l->n++];
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->data = malloc(len + 1);
	memcpy(e->data, data, len);
	e->data[len] = '\0';
	e->len = len;
	return 0;
}

static void listing_free(struct listing *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->e[i].data);
	l->n = 0;
}

static const struct entry *find(const struct listing *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->e[i].name, name))
			return &l->e[i];
	return NULL;
}

/* Rewrites a bundle from l, with edit applied to the entry named target (NULL: none), an extra
 * entry when extra is set, and without the entry named drop. */
static void rewrite(const struct listing *l, const char *out, const char *target, char edit,
		    const char *extra, const char *drop)
{
	struct mw_tar *t = NULL;
	struct mw_error err;
	unlink(out);
	T_EQ_INT(mw_tar_create(out, &t, &err), 0);
	for (int i = 0; t && i < l->n; i++) {
		if (drop && !strcmp(l->e[i].name, drop))
			continue;
		char *copy = malloc(l->e[i].len + 1);
		memcpy(copy, l->e[i].data, l->e[i].len);
		if (target && !strcmp(l->e[i].name, target) && l->e[i].len > 10)
			copy[l->e[i].len / 2] = edit;
		T_EQ_INT(mw_tar_add(t, l->e[i].name, copy, l->e[i].len, &err), 0);
		free(copy);
	}
	if (t && extra)
		T_EQ_INT(mw_tar_add(t, extra, "x", 1, &err), 0);
	T_EQ_INT(mw_tar_close(t, false, &err), 0);
}

static bool have_gnuplot(void)
{
	return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

int main(void)
{
	char pa[4200], pb[4200], out[4200], bad[4200], cmd[8600];
	struct mw_error err;
	struct listing l = { .n = 0 };
	t_mkdtemp(tmp);
	struct t_fx_spec sp = { .protocol = "bundle-test", .cpu = "CPU Alpha", .runs = 3,
			      .warmups = 1, .tokens = 16, .latency_ns = 1e6, .jitter = 0.01,
			      .seed = 3 };
	json_t *a = t_fx_record(&sp);
	sp.seed = 4;
	json_t *b = t_fx_record(&sp);
	t_fx_write(a, tmp, "a.json", pa, sizeof(pa));
	t_fx_write(b, tmp, "b.json", pb, sizeof(pb));
	snprintf(out, sizeof(out), "%s/bundle.tar.gz", tmp);

	const char *paths[2] = { pa, pb };
	T_EQ_INT(mw_bundle_write(paths, 2, out, NULL, &err), 0);
	T_ASSERT(mw_bundle_is(out));
	T_ASSERT(!mw_bundle_is(pa));
	T_ASSERT(!mw_bundle_is("/dev/zero")); /* and never blocks on a FIFO (test_security) */
	T_EQ_INT(mw_bundle_check(out, NULL, &err), 0);

	/* What it holds: the records' exact bytes, provenance, and a manifest whose sums match. */
	T_EQ_INT(mw_tar_read(out, 1u << 28, 1u << 30, collect, &l, &err), 0);
	char *text = NULL;
	size_t len = 0;
	T_EQ_INT(mw_file_read(pa, "record", "", 1u << 28, &text, &len, &err), 0);
	const struct entry *ra = find(&l, "records/a.json");
	T_ASSERT(ra && ra->len == len && !memcmp(ra->data, text, len));
	free(text);
	T_ASSERT(find(&l, "records/b.json") != NULL);
	const struct entry *prov = find(&l, "provenance.md");
	T_ASSERT(prov && strstr(prov->data, "CPU Alpha") && strstr(prov->data, "memory configuration"));
	const struct entry *man = find(&l, "manifest.json");
	json_error_t je;
	json_t *m = man ? json_loads(man->data, 0, &je) : NULL;
	T_EQ_STR(json_string_value(json_object_get(m, "schema")), MW_BUNDLE_SCHEMA);
	const json_t *files = json_object_get(m, "files"), *f;
	size_t i;
	T_EQ_INT(json_array_size(files), l.n - 1); /* every entry but the manifest itself */
	json_array_foreach(files, i, f) {
		const struct entry *e = find(&l, json_string_value(json_object_get(f, "path")));
		char hex[65] = "";
		if (e)
			mw_sha256_hex(e->data, e->len, hex);
		T_EQ_STR(json_string_value(json_object_get(f, "sha256")), hex);
		T_EQ_INT(json_integer_value(json_object_get(f, "bytes")), e ? (long long)e->len : -1);
	}
	/* Charts: made with gnuplot; without it the manifest says why. */
	const json_t *p0 = json_array_get(json_object_get(m, "plots"), 0);
	if (have_gnuplot()) {
		T_ASSERT(json_is_true(json_object_get(p0, "made")));
		T_ASSERT(find(&l, "plots/a/tok_s.png") != NULL);
	} else {
		T_ASSERT(json_is_false(json_object_get(p0, "made")));
		T_CONTAINS(json_string_value(json_object_get(p0, "reason")), "gnuplot");
	}
	json_decref(m);

	/* Tampering: a changed chart or provenance, a changed record, an added file, no manifest. */
	snprintf(bad, sizeof(bad), "%s/bad.tar.gz", tmp);
	rewrite(&l, bad, "provenance.md", '#', NULL, NULL);
	T_EQ_INT(mw_bundle_check(bad, NULL, &err), MW_RESULT_INCONSISTENT);
	T_CONTAINS(err.field, "provenance.md");
	T_CONTAINS(err.text, "changed after bundling");
	rewrite(&l, bad, "records/b.json", '\x01', NULL, NULL);
	T_EQ_INT(mw_bundle_check(bad, NULL, &err), MW_RESULT_INCONSISTENT);
	rewrite(&l, bad, NULL, 0, "plots/a/extra.txt", NULL);
	T_EQ_INT(mw_bundle_check(bad, NULL, &err), MW_RESULT_INCONSISTENT);
	T_CONTAINS(err.text, "not in the manifest");
	/* Outside the layout (issue 28): never a bundle memwall wrote, whatever its manifest. */
	rewrite(&l, bad, NULL, 0, "records/extra.txt", NULL);
	T_EQ_INT(mw_bundle_check(bad, NULL, &err), MW_RESULT_MALFORMED);
	T_CONTAINS(err.text, "not where a bundle puts a file");
	rewrite(&l, bad, NULL, 0, NULL, "records/a.json");
	T_EQ_INT(mw_bundle_check(bad, NULL, &err), MW_RESULT_INCONSISTENT);
	T_CONTAINS(err.text, "not in the archive");
	rewrite(&l, bad, NULL, 0, NULL, "manifest.json");
	T_EQ_INT(mw_bundle_check(bad, NULL, &err), MW_RESULT_MALFORMED);
	T_CONTAINS(err.text, "no manifest");
	/* A hostile name. */
	rewrite(&l, bad, NULL, 0, "../evil", NULL);
	T_EQ_INT(mw_bundle_check(bad, NULL, &err), MW_RESULT_MALFORMED);
	T_CONTAINS(err.text, "relative name");
	/* A truncated archive. */
	snprintf(cmd, sizeof(cmd), "head -c 300 '%s' > '%s'", out, bad);
	T_EQ_INT(system(cmd), 0);
	T_EQ_INT(mw_bundle_check(bad, NULL, &err), MW_RESULT_MALFORMED);

	/* An edited record with a manifest made to match: the record itself does not validate. */
	json_object_set_new(json_object_get(json_object_get(json_object_get(b, "summary"),
				"metrics"), "tok_per_s"), "mean", json_real(1.0));
	char pc[4200];
	t_fx_write(b, tmp, "edited.json", pc, sizeof(pc));
	const char *one[1] = { pc };
	unlink(bad);
	T_EQ_INT(mw_bundle_write(one, 1, bad, NULL, &err), MW_RESULT_INCONSISTENT);
	T_ASSERT(access(bad, F_OK) != 0); /* nothing is left behind */

	/* Never replaces a file. */
	T_EQ_INT(mw_bundle_write(paths, 2, out, NULL, &err), -EEXIST);
	T_CONTAINS(err.text, "never replaces");
	/* Two records of one file name. */
	const char *twice[2] = { pa, pa };
	unlink(bad);
	T_EQ_INT(mw_bundle_write(twice, 2, bad, NULL, &err), -EEXIST);

	/* The command line: bundle, then validate accepts it (0) and a tampered one (1). */
	char out2[4200];
	snprintf(out2, sizeof(out2), "%s/cli.tar.gz", tmp);
	T_RUN_EXPECT(((const char *[]){"memwall", "bundle", pa, pb, "-o", out2, NULL}), 0, NULL,
		     NULL);
	T_RUN_EXPECT(((const char *[]){"memwall", "validate", out2, pa, NULL}), 0,
		     T_LIST("valid bundle (2 records"), NULL);
	rewrite(&l, bad, "records/a.json", '\x01', NULL, NULL);
	T_RUN_EXPECT(((const char *[]){"memwall", "validate", bad, NULL}), 1, NULL,
		     T_LIST("records/a.json"));

	listing_free(&l);
	json_decref(a);
	json_decref(b);
	T_EQ_INT(t_rm_tree(tmp), 0);
	return t_done();
}
