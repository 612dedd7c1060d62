/* src/record/bundle.c: writing and checking submission bundles (bundle.h). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle.h"
#include "file.h"
#include "report.h"
#include "result.h"
#include "sha256.h"
#include "tar.h"

/* A bundle holds records (at most MW_RESULT_MAX_BYTES each) and their charts. */
#define BUNDLE_MAX_TOTAL (1ull << 30)

bool mw_bundle_is(const char *path)
{
	unsigned char m[2] = { 0, 0 };
	struct mw_error err;
	/* mw_file_open never blocks on a FIFO: a path that is not a regular file is not a bundle,
	 * and the record reader then names what it is. */
	int fd = mw_file_open(path, "bundle", "", MW_FILE_ANY_SIZE, &err);
	if (fd < 0)
		return false;
	bool gz = read(fd, m, 2) == 2 && m[0] == 0x1f && m[1] == 0x8b;
	close(fd);
	return gz;
}

struct writer {
	struct mw_tar *tar;
	json_t *files;  /* manifest.files */
	json_t *plots;  /* manifest.plots: per record, whether its charts were made and why not */
};

static int add(struct writer *w, const char *name, const void *data, size_t len,
	       struct mw_error *err)
{
	char hex[65];
	mw_sha256_hex(data, len, hex);
	json_array_append_new(w->files, json_pack("{s:s, s:I, s:s}", "path", name, "bytes",
						  (json_int_t)len, "sha256", hex));
	return mw_tar_add(w->tar, name, data, len, err);
}

/* The files `memwall report --plot` wrote into dir, added under plots/STEM/. */
static int add_plots(struct writer *w, const char *dir, const char *stem, struct mw_error *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;
	if (!d)
		return mw_error_set(err, -errno, dir, "", "cannot read: %s", strerror(errno));
	while (!rc && (e = readdir(d))) {
		char path[4400], name[400];
		char *text = NULL;
		size_t len = 0;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(name, sizeof(name), "plots/%s/%s", stem, e->d_name);
		if (!(rc = mw_file_read(path, "chart", "", BUNDLE_MAX_TOTAL, &text, &len, err)))
			rc = add(w, name, text, len, err);
		unlink(path);
		free(text);
	}
	closedir(d);
	return rc;
}

/* Runs the report's charts for doc into a scratch folder and adds them. Without gnuplot the
 * bundle is still made; *why says why it has no charts. */
static int plots(struct writer *w, const json_t *doc, const char *stem, char *why, size_t n,
		 struct mw_error *err)
{
	char dir[] = "/tmp/memwall-bundle-XXXXXX";
	struct mw_error perr;
	if (json_array_size(json_object_get(doc, "runs")) == 0) {
		snprintf(why, n, "no per-run data to chart (an imported reference record)");
		return 0;
	}
	if (!mkdtemp(dir))
		return mw_error_set(err, -errno, dir, "", "cannot make a scratch folder: %s",
				    strerror(errno));
	int rc = mw_report_plot(doc, dir, NULL, &perr);
	if (rc)
		snprintf(why, n, "%s%s%s", rc == -ENOENT ? "" : "gnuplot failed: ", perr.text,
			 rc == -ENOENT ? "; charts can be made later with memwall report --plot" : "");
	rc = add_plots(w, dir, stem, err);
	rmdir(dir);
	return rc;
}

static const char *jstr(const json_t *o, const char *k, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : dflt;
}

/* One section of provenance.md: where the record came from, in the words a reviewer needs. */
static void provenance(FILE *f, const char *name, const char *sha, const json_t *doc)
{
	const json_t *m = json_object_get(doc, "machine");
	const json_t *mc = json_object_get(m, "memory_config");
	const json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	char *mem = json_is_object(mc) ? json_dumps(mc, JSON_COMPACT) : NULL;
	fprintf(f, "## %s\n\n- sha256: %s\n- protocol: %s\n- model: %s\n- created: %s\n"
		   "- memwall: %s\n- CPU: %s (%lld logical CPUs)\n- memory: %lld bytes\n"
		   "- memory configuration: %s\n- kernel: %s\n- DRAM counters: %s%s\n"
		   "- acceptance: %s\n\n",
		name, sha, jstr(json_object_get(doc, "protocol"), "name", "?"),
		jstr(json_object_get(doc, "model"), "name", "(unnamed)"),
		jstr(doc, "created_utc", "?"), jstr(json_object_get(doc, "memwall"), "version", "?"),
		jstr(m, "cpu_name", "?"), (long long)json_integer_value(json_object_get(m, "logical_cpus")),
		(long long)json_integer_value(json_object_get(m, "mem_total_bytes")),
		mem ? mem : jstr(json_object_get(m, "unavailable"), "memory_config",
				 "not recorded (the record predates memory_config)"),
		jstr(json_object_get(m, "kernel"), "release", "?"),
		json_is_true(json_object_get(dram, "measured")) ? "measured by " : "not measured: ",
		json_is_true(json_object_get(dram, "measured")) ? jstr(dram, "backend", "?")
								: jstr(dram, "reason", "?"),
		jstr(json_object_get(doc, "acceptance"), "status", "?"));
	free(mem);
}

/* Reads, validates and adds one record, its charts and its provenance section. */
static int add_record(struct writer *w, const char *path, FILE *prov, char *why, size_t n,
		      FILE *log, struct mw_error *err)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char name[300], stem[256], hex[65], whybuf[1024] = "";
	json_t *doc = NULL;
	char *text = NULL;
	size_t len = 0;
	int rc;
	if ((rc = mw_result_load(&doc, path, err)) || (rc = mw_result_validate(doc, path, err)) ||
	    (rc = mw_file_read(path, "result record", "", MW_RESULT_MAX_BYTES, &text, &len, err)))
		goto out;
	snprintf(stem, sizeof(stem), "%s", base);
	if (strlen(stem) > 5 && !strcmp(stem + strlen(stem) - 5, ".json"))
		stem[strlen(stem) - 5] = '\0';
	snprintf(name, sizeof(name), "records/%s.json", stem);
	mw_sha256_hex(text, len, hex);
	size_t i;
	json_t *f;
	json_array_foreach(w->files, i, f)
		if (!strcmp(jstr(f, "path", ""), name)) {
			rc = mw_error_set(err, -EEXIST, path, "", "another record of this bundle has the "
					  "file name %s: rename one (names in the bundle are file names)",
					  base);
			goto out;
		}
	if ((rc = add(w, name, text, len, err)) || (rc = plots(w, doc, stem, whybuf, sizeof(whybuf), err)))
		goto out;
	json_array_append_new(w->plots, json_pack("{s:s, s:b, s:o}", "record", name, "made",
						  !whybuf[0], "reason", whybuf[0] ? json_string(whybuf)
										 : json_null()));
	if (whybuf[0] && !why[0])
		snprintf(why, n, "%s", whybuf);
	provenance(prov, name, hex, doc);
	if (log)
		fprintf(log, "memwall bundle: %s as %s%s\n", path, name, whybuf[0] ? " (no charts)" : "");
out:
	free(text);
	json_decref(doc);
	return rc;
}

int mw_bundle_write(const char *const *paths, int n, const char *out, FILE *log,
		    struct mw_error *err)
{
	struct writer w = { NULL, json_array(), json_array() };
	char why[1024] = "", now[32];
	char *prov_text = NULL, *manifest = NULL;
	size_t prov_len = 0;
	FILE *prov = open_memstream(&prov_text, &prov_len);
	json_t *names = json_array();
	int rc;
	if (!prov || !w.files || !w.plots || !names) {
		rc = mw_error_set(err, -ENOMEM, out, "", "out of memory");
		goto out;
	}
	if ((rc = mw_tar_create(out, &w.tar, err)))
		goto out;
	fprintf(prov, "# Provenance of this bundle\n\nWritten by memwall %s on %s. Each record's "
		      "own `machine` object holds the whole description.\n\n", mw_version(),
		mw_utc_now(now, sizeof(now), false));
	for (int i = 0; i < n && !rc; i++) {
		rc = add_record(&w, paths[i], prov, why, sizeof(why), log, err);
		json_array_append_new(names, json_string(paths[i]));
	}
	fclose(prov);
	prov = NULL;
	if (rc || (rc = add(&w, "provenance.md", prov_text, prov_len, err)))
		goto out;
	json_t *m = json_pack("{s:s, s:s, s:s, s:i, s:O, s:O}", "schema", MW_BUNDLE_SCHEMA,
			      "created_utc", now, "memwall", mw_version(), "records", n, "plots",
			      w.plots, "files", w.files);
	manifest = json_dumps(m, JSON_INDENT(1));
	json_decref(m);
	if (!manifest)
		rc = mw_error_set(err, -ENOMEM, out, "", "out of memory");
	else
		rc = mw_tar_add(w.tar, "manifest.json", manifest, strlen(manifest), err);
out:
	if (prov)
		fclose(prov);
	if (w.tar) {
		struct mw_error cerr;
		int crc = mw_tar_close(w.tar, rc != 0, &cerr);
		if (!rc && crc) {
			*err = cerr;
			rc = crc;
		}
	}
	if (!rc && why[0] && log)
		fprintf(log, "memwall bundle: some records have no charts, e.g.: %s (the manifest "
			"says so for each)\n", why);
	free(prov_text);
	free(manifest);
	json_decref(w.files);
	json_decref(w.plots);
	json_decref(names);
	return rc;
}

struct checker {
	const char *path;
	json_t *seen;      /* name -> {sha256, bytes} */
	json_t *records;   /* name -> the record's bytes, validated once its sum is checked */
	json_t *manifest;
	FILE *log;
	int worst;         /* 0, MW_RESULT_INCONSISTENT or MW_RESULT_MALFORMED */
	struct mw_error first;
	json_t *changed;   /* names whose sum does not match */
	int records_n;
};

static void fail(struct checker *c, int code, const struct mw_error *e)
{
	mw_error_print(e);
	if (!c->worst) {
		c->first = *e;
		c->worst = code;
	} else if (code == MW_RESULT_MALFORMED) {
		c->worst = code;
	}
}

static int check_entry(void *ctx, const char *name, const void *data, size_t len)
{
	struct checker *c = ctx;
	struct mw_error e;
	char hex[65];
	json_error_t jerr;
	mw_error_clear(&e);
	if (!strcmp(name, "manifest.json")) {
		if (!(c->manifest = json_loadb(data, len, 0, &jerr))) {
			mw_error_set(&e, MW_RESULT_MALFORMED, c->path, "manifest.json", "not JSON: %s",
				     jerr.text);
			fail(c, MW_RESULT_MALFORMED, &e);
		}
		return 0;
	}
	mw_sha256_hex(data, len, hex);
	json_object_set_new(c->seen, name, json_pack("{s:s, s:I}", "sha256", hex, "bytes",
						     (json_int_t)len));
	size_t n = strlen(name);
	if (!strncmp(name, "records/", 8) && n >= 13 && !strcmp(name + n - 5, ".json"))
		json_object_set_new(c->records, name, json_stringn_nocheck(data, len));
	return 0;
}

/* Each record whose bytes match the manifest validates (a changed one is already reported). */
static void check_records(struct checker *c)
{
	const char *name;
	json_t *text;
	json_object_foreach(c->records, name, text) {
		struct mw_error e;
		json_error_t jerr;
		char src[700];
		mw_error_clear(&e);
		c->records_n++;
		if (json_object_get(c->changed, name))
			continue;
		snprintf(src, sizeof(src), "%s:%s", c->path, name);
		json_t *doc = json_loadb(json_string_value(text), json_string_length(text), 0, &jerr);
		int rc = doc ? mw_result_validate(doc, src, &e)
			     : mw_error_set(&e, MW_RESULT_MALFORMED, src, "", "not JSON: %s", jerr.text);
		if (rc)
			fail(c, rc == MW_RESULT_INCONSISTENT ? rc : MW_RESULT_MALFORMED, &e);
		else if (c->log)
			fprintf(c->log, "%s: valid record\n", src);
		json_decref(doc);
	}
}

/* Every file the manifest lists is in the archive with its sum and size, and nothing else is. */
static void check_manifest(struct checker *c)
{
	const json_t *files = json_object_get(c->manifest, "files"), *f;
	struct mw_error e;
	size_t i;
	mw_error_clear(&e);
	if (!json_is_array(files) || strcmp(jstr(c->manifest, "schema", ""), MW_BUNDLE_SCHEMA)) {
		mw_error_set(&e, MW_RESULT_MALFORMED, c->path, "manifest.json", "not a %s manifest "
			     "(schema and files[] are required)", MW_BUNDLE_SCHEMA);
		fail(c, MW_RESULT_MALFORMED, &e);
		return;
	}
	json_array_foreach(files, i, f) {
		const char *name = jstr(f, "path", "");
		const json_t *s = json_object_get(c->seen, name);
		if (!s) {
			mw_error_set(&e, MW_RESULT_INCONSISTENT, c->path, name, "listed in the manifest "
				     "but not in the archive");
			fail(c, MW_RESULT_INCONSISTENT, &e);
			continue;
		}
		if (strcmp(jstr(s, "sha256", ""), jstr(f, "sha256", "")) ||
		    json_integer_value(json_object_get(s, "bytes")) !=
			    json_integer_value(json_object_get(f, "bytes"))) {
			mw_error_set(&e, MW_RESULT_INCONSISTENT, c->path, name, "sha256 %s in the "
				     "archive, %s in the manifest: the file was changed after bundling",
				     jstr(s, "sha256", "?"), jstr(f, "sha256", "?"));
			fail(c, MW_RESULT_INCONSISTENT, &e);
			json_object_set_new(c->changed, name, json_true());
		}
		json_object_del(c->seen, name);
	}
	const char *k;
	json_t *v;
	json_object_foreach(c->seen, k, v) {
		(void)v;
		mw_error_set(&e, MW_RESULT_INCONSISTENT, c->path, k, "in the archive but not in the "
			     "manifest: added after bundling");
		fail(c, MW_RESULT_INCONSISTENT, &e);
	}
}

int mw_bundle_check(const char *path, FILE *log, struct mw_error *err)
{
	struct checker c = { .path = path, .seen = json_object(), .records = json_object(),
			     .changed = json_object(), .log = log };
	int rc = mw_tar_read(path, MW_RESULT_MAX_BYTES, BUNDLE_MAX_TOTAL, check_entry, &c, err);
	if (rc) {
		fail(&c, MW_RESULT_MALFORMED, err);
	} else if (!c.manifest) {
		struct mw_error e;
		mw_error_clear(&e);
		mw_error_set(&e, MW_RESULT_MALFORMED, path, "manifest.json", "the bundle has no "
			     "manifest: not written by memwall bundle");
		fail(&c, MW_RESULT_MALFORMED, &e);
	} else {
		check_manifest(&c);
		check_records(&c);
	}
	if (!c.worst && c.records_n == 0) {
		struct mw_error e;
		mw_error_clear(&e);
		mw_error_set(&e, MW_RESULT_MALFORMED, path, "records/", "the bundle holds no record");
		fail(&c, MW_RESULT_MALFORMED, &e);
	}
	rc = c.worst;
	if (rc)
		*err = c.first;
	else if (log)
		fprintf(log, "%s: valid bundle (%d record%s, every sha256 matches its manifest)\n",
			path, c.records_n, c.records_n == 1 ? "" : "s");
	json_decref(c.seen);
	json_decref(c.records);
	json_decref(c.changed);
	json_decref(c.manifest);
	return rc;
}
