/* src/record/bundle.c: writing and checking submission bundles (bundle.h). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"
#include "dram_verify.h"
#include "dram_verify_entry.h"
#include "file.h"
#include "provenance.h"
#include "report.h"
#include "result.h"
#include "sha256.h"
#include "tar.h"
#include "text.h"

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

/* SIGINT, SIGTERM and SIGHUP during a bundle: the handler only notes the signal; the writer
 * checks between steps, removes its temporary archive and scratch folder, and the signal is
 * raised again once the handlers are restored (issue 28, class 7). */
static volatile sig_atomic_t stop_signal;
static char scratch_dir[4096];

static void on_signal(int sig)
{
	stop_signal = sig;
}

static int bundle_stopped(struct mw_error *err)
{
	if (!stop_signal)
		return 0;
	return mw_error_set(err, -ECANCELED, "bundle", "", "stopped by %s: nothing was written "
			    "(the partial archive was removed)", strsignal(stop_signal));
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

/* The files `memwall report --plot` wrote into dir, added under plots/STEM/. Every file is
 * removed, whatever happens to the others: no scratch folder is left behind. */
static int add_plots(struct writer *w, const char *dir, const char *stem, struct mw_error *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;
	if (!d)
		return mw_error_set(err, -errno, dir, "", "cannot read: %s", strerror(errno));
	while ((e = readdir(d))) {
		char path[4400], name[400];
		char *text = NULL;
		size_t len = 0;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(name, sizeof(name), "plots/%s/%s", stem, e->d_name);
		if (!rc && e->d_name[0] != '.' && !(rc = bundle_stopped(err)) &&
		    !(rc = mw_file_read(path, "chart", "", BUNDLE_MAX_TOTAL, &text, &len, err)))
			rc = add(w, name, text, len, err);
		unlink(path);
		free(text);
	}
	closedir(d);
	return rc;
}

/* Runs the report's charts for doc into a scratch folder ($TMPDIR, else /tmp) and adds them.
 * Without gnuplot the bundle is still made; *why says why it has no charts. */
static int plots(struct writer *w, const json_t *doc, const char *stem, char *why, size_t n,
		 struct mw_error *err)
{
	char dir[4096];
	const char *tmpdir = getenv("TMPDIR");
	struct mw_error perr;
	if (json_array_size(json_object_get(doc, "runs")) == 0) {
		snprintf(why, n, "no per-run data to chart (an imported reference record)");
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s/memwall-bundle-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(dir))
		return mw_error_set(err, -errno, dir, "", "cannot make a scratch folder: %s",
				    strerror(errno));
	snprintf(scratch_dir, sizeof(scratch_dir), "%s", dir);
	int rc = mw_report_plot(doc, dir, NULL, &perr);
	if (rc)
		snprintf(why, n, "%s%s%s", rc == -ENOENT ? "" : "gnuplot failed: ", perr.text,
			 rc == -ENOENT ? "; charts can be made later with memwall report --plot" : "");
	rc = add_plots(w, dir, stem, err);
	rmdir(dir);
	scratch_dir[0] = '\0';
	return rc;
}

static const char *jstr(const json_t *o, const char *k, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : dflt;
}

/* Record text in provenance.md, escaped (text.h): a markdown file a reviewer reads. */
static const char *pstr(const json_t *o, const char *k, const char *dflt)
{
	return mw_esc(jstr(o, k, dflt));
}

/* One section of provenance.md: where the record came from, in the words a reviewer needs. */
static void provenance(FILE *f, const char *name, const char *sha, const json_t *doc)
{
	const json_t *m = json_object_get(doc, "machine");
	const json_t *mc = json_object_get(m, "memory_config");
	const json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	char *mem = json_is_object(mc) ? json_dumps(mc, JSON_COMPACT) : NULL, tag[128];
	struct mw_provenance prov;
	mw_provenance_of(doc, &prov);
	if (prov.source == MW_DRAM_SIMULATED)
		fprintf(f, "## %s [SIMULATED]\n\n**SIMULATED: this record's DRAM counts come from "
			   "memwall's simulated PMU, not from hardware.**\n\n", mw_esc(name));
	else
		fprintf(f, "## %s\n\n", mw_esc(name));
	fprintf(f, "- sha256: %s\n- protocol: %s\n- model: %s\n- created: %s\n"
		   "- memwall: %s\n- CPU: %s (%lld logical CPUs)\n- memory: %lld bytes\n"
		   "- memory configuration: %s\n- kernel: %s\n- DRAM counters: %s%s\n"
		   "- acceptance: %s\n",
		sha, pstr(json_object_get(doc, "protocol"), "name", "?"),
		pstr(json_object_get(doc, "model"), "name", "(unnamed)"),
		pstr(doc, "created_utc", "?"), pstr(json_object_get(doc, "memwall"), "version", "?"),
		pstr(m, "cpu_name", "?"), (long long)json_integer_value(json_object_get(m, "logical_cpus")),
		(long long)json_integer_value(json_object_get(m, "mem_total_bytes")),
		mem ? mem : pstr(json_object_get(m, "unavailable"), "memory_config",
				 "not recorded (the record predates memory_config)"),
		pstr(json_object_get(m, "kernel"), "release", "?"),
		/* The reason a counter was not read is said once, by the DRAM counts line of
		 * mw_provenance_print_md below (issue 44: it was here too). */
		json_is_true(json_object_get(dram, "measured")) ? "counted as " : "not measured",
		json_is_true(json_object_get(dram, "measured"))
			? mw_provenance_tag(&prov, tag, sizeof(tag)) : " (why: the DRAM counts line)",
		pstr(json_object_get(doc, "acceptance"), "status", "?"));
	mw_provenance_print_md(f, &prov);
	free(mem);
}

/* The verification a record names (counters.dram.verification: the machine's fingerprint and
 * the counter layer), added as verification/STEM.json when this machine's store still holds
 * that very one (same created_utc) and it passes the store's own check
 * (mw_dramverify_entry_check); otherwise provenance.md says why it is not in the bundle. Only
 * this machine's store is read, never the path the record names as its source: a record is
 * outside input, and would otherwise pack any JSON file of the right shape it points at (a
 * forged store, issue 43). A missing verification is never an error: the record says so. */
static int add_verification(struct writer *w, const json_t *doc, const char *stem, FILE *prov,
			    struct mw_error *err)
{
	const json_t *v = json_object_get(json_object_get(json_object_get(doc, "counters"),
							  "dram"), "verification");
	const char *src = jstr(v, "source", NULL), *sha = jstr(v, "fingerprint_sha256", NULL);
	const char *layer = jstr(v, "layer", NULL), *created = jstr(v, "created_utc", NULL);
	char *text = NULL, name[300], why[5200] = "", ewhy[300], path[4096];
	size_t len = 0;
	json_t *store = NULL;
	struct mw_error ignored;
	int rc = 0;
	if (!json_is_object(v))
		return 0;
	mw_error_clear(&ignored);
	if (!sha || !layer || !created)
		snprintf(why, sizeof(why), "the record does not name its machine, layer and date");
	else if (mw_dramverify_store_path(path, sizeof(path), &ignored))
		snprintf(why, sizeof(why), "%s", ignored.text);
	else if (mw_file_read(path, "verification store", "", 16u << 20, &text, &len, &ignored))
		snprintf(why, sizeof(why), "%s", ignored.text);
	else if (!(store = json_loadb(text, len, 0, NULL)))
		snprintf(why, sizeof(why), "%s does not parse as JSON", path);
	const json_t *e = json_object_get(json_object_get(json_object_get(store, "machines"), sha),
					  layer);
	if (!why[0] && !e)
		snprintf(why, sizeof(why), "this machine's store, %s, does not hold it", path);
	else if (!why[0] && strcmp(jstr(e, "created_utc", ""), created))
		snprintf(why, sizeof(why), "this machine's store, %s, holds a newer one (%s)", path,
			 jstr(e, "created_utc", "?"));
	else if (!why[0] && mw_dramverify_entry_check(e, sha, layer, NULL, ewhy, sizeof(ewhy)))
		snprintf(why, sizeof(why), "the entry in %s cannot be taken: %s", path, ewhy);
	if (!why[0] && src && strcmp(src, path))
		fprintf(prov, "- Verification record: read from this machine's store, %s (the record "
			"names %s)\n", mw_esc_md(path), mw_esc_md(src));
	if (why[0]) {
		fprintf(prov, "- Verification record: not in the bundle (%s)\n", mw_esc_md(why));
	} else {
		char *body = json_dumps(e, JSON_INDENT(2) | JSON_SORT_KEYS);
		snprintf(name, sizeof(name), "verification/%s.json", stem);
		rc = body ? add(w, name, body, strlen(body), err)
			  : mw_error_set(err, -ENOMEM, path, "", "out of memory");
		if (!rc)
			fprintf(prov, "- Verification record: %s\n", name);
		free(body);
	}
	free(text);
	json_decref(store);
	return rc;
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
	if ((rc = bundle_stopped(err)) || (rc = mw_result_load(&doc, path, err)) ||
	    (rc = mw_result_validate(doc, path, err)) ||
	    (rc = mw_file_read(path, "result record", "", MW_RESULT_MAX_BYTES, &text, &len, err)))
		goto out;
	snprintf(stem, sizeof(stem), "%s", base);
	if (strlen(stem) > 5 && !strcmp(stem + strlen(stem) - 5, ".json"))
		stem[strlen(stem) - 5] = '\0';
	/* The name in the bundle follows the rule validate checks (in_layout): a record named
	 * "..json" or "a b.json" is refused here, not written into a bundle validate refuses. */
	char nwhy[128];
	if (mw_name_check(stem, nwhy, sizeof(nwhy))) {
		rc = mw_error_set(err, -EINVAL, path, "", "the file name '%s' cannot name a record "
				  "in a bundle: %s (names: " MW_NAME_RULE "); copy the record to a "
				  "name that does", stem, nwhy);
		goto out;
	}
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
	rc = add_verification(w, doc, stem, prov, err);
	fputc('\n', prov);
	if (rc)
		goto out;
	if (log)
		fprintf(log, "memwall bundle: %s as %s%s\n", path, name, whybuf[0] ? " (no charts)" : "");
out:
	free(text);
	json_decref(doc);
	return rc;
}

/* The temporary archive beside out: ".NAME.mw-bundle-PID", moved onto out only when whole. */
static void tmp_name(const char *out, char *tmp, size_t n)
{
	const char *slash = strrchr(out, '/');
	snprintf(tmp, n, "%.*s.%s.mw-bundle-%ld", slash ? (int)(slash - out + 1) : 0, out,
		 slash ? slash + 1 : out, (long)getpid());
}

int mw_bundle_write(const char *const *paths, int n, const char *out, FILE *log,
		    struct mw_error *err)
{
	struct writer w = { NULL, json_array(), json_array() };
	char why[1024] = "", now[32], tmp[4200];
	char *prov_text = NULL, *manifest = NULL;
	size_t prov_len = 0;
	FILE *prov = open_memstream(&prov_text, &prov_len);
	json_t *names = json_array();
	struct sigaction sa = { .sa_handler = on_signal }, old[3];
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	struct stat st;
	int rc;
	stop_signal = 0;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	if (!prov || !w.files || !w.plots || !names) {
		rc = mw_error_set(err, -ENOMEM, out, "", "out of memory");
		goto out;
	}
	if (lstat(out, &st) == 0) {
		rc = mw_error_set(err, -EEXIST, out, "-o", "exists: memwall never replaces a file "
				  "(remove it or choose another name)");
		goto out;
	}
	tmp_name(out, tmp, sizeof(tmp));
	if ((rc = mw_tar_create(tmp, &w.tar, err))) {
		snprintf(err->source, sizeof(err->source), "%s", out);
		goto out;
	}
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
		if (!rc)
			rc = bundle_stopped(err);
		int crc = mw_tar_close(w.tar, rc != 0, &cerr); /* removes tmp when abandoned */
		if (!rc && crc) {
			*err = cerr;
			rc = crc;
		}
		/* Into place without replacing anything: link fails if out appeared meanwhile. */
		if (!rc && link(tmp, out)) {
			rc = mw_error_set(err, -errno, out, "-o", "cannot move the bundle into place: "
					  "%s", strerror(errno));
		}
		if (!crc)
			unlink(tmp);
	}
	if (!rc && why[0] && log)
		fprintf(log, "memwall bundle: some records have no charts, e.g.: %s (the manifest "
			"says so for each)\n", why);
	free(prov_text);
	free(manifest);
	json_decref(w.files);
	json_decref(w.plots);
	json_decref(names);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	if (stop_signal) /* the default action now: the shell sees how memwall ended */
		raise(stop_signal);
	return rc;
}

struct checker {
	const char *path;
	json_t *seen;      /* name -> {sha256, bytes} */
	json_t *records;   /* name -> the record's bytes, validated once its sum is checked */
	json_t *manifest;
	bool has_manifest; /* a manifest.json member was read (parsed or not) */
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

/* Whether name is DIR/STEM.json, STEM a name by MW_NAME_RULE. */
static bool json_member(const char *name, const char *dir)
{
	char part[MW_NAME_MAX + 8], why[64];
	size_t d = strlen(dir), n;
	if (strncmp(name, dir, d))
		return false;
	n = strlen(name + d);
	if (n <= 5 || n - 5 > MW_NAME_MAX || strcmp(name + d + n - 5, ".json"))
		return false;
	snprintf(part, sizeof(part), "%.*s", (int)(n - 5), name + d);
	return mw_name_check(part, why, sizeof(why)) == 0;
}

/* Whether name is where a bundle puts a file (bundle.h's layout): manifest.json,
 * provenance.md, records/STEM.json, verification/STEM.json, plots/STEM/FILE, each STEM and
 * FILE a name by MW_NAME_RULE (file.h). A member anywhere else is not one memwall wrote. */
static bool in_layout(const char *name, bool *record)
{
	char part[MW_NAME_MAX + 8], why[64];
	const char *rest;
	size_t n;
	*record = false;
	if (!strcmp(name, "manifest.json") || !strcmp(name, "provenance.md"))
		return true;
	if (!strncmp(name, "records/", 8))
		return (*record = json_member(name, "records/"));
	if (!strncmp(name, "verification/", 13))
		return json_member(name, "verification/");
	if (strncmp(name, "plots/", 6))
		return false;
	rest = name + 6;
	for (int k = 0; k < 2; k++) {
		n = strcspn(rest, "/");
		if (n == 0 || n > MW_NAME_MAX || (k == 0) != (rest[n] == '/'))
			return false;
		snprintf(part, sizeof(part), "%.*s", (int)n, rest);
		if (mw_name_check(part, why, sizeof(why)))
			return false;
		rest += n + (k == 0);
	}
	return true;
}

/* check_entry's return after a problem it has reported: the archive is not read further. */
#define STOP_READING 1

static int check_entry(void *ctx, const char *name, const void *data, size_t len)
{
	struct checker *c = ctx;
	struct mw_error e;
	char hex[65];
	json_error_t jerr;
	bool record;
	mw_error_clear(&e);
	/* A name twice: an extractor keeps the last copy, and which one was checked is a guess. */
	if (json_object_get(c->seen, name) || (!strcmp(name, "manifest.json") && c->has_manifest)) {
		mw_error_set(&e, MW_RESULT_MALFORMED, c->path, name, "appears twice in the archive: "
			     "an extractor keeps only the last copy; not a bundle memwall wrote");
		fail(c, MW_RESULT_MALFORMED, &e);
		return STOP_READING;
	}
	if (!in_layout(name, &record)) {
		mw_error_set(&e, MW_RESULT_MALFORMED, c->path, name, "not where a bundle puts a "
			     "file (manifest.json, provenance.md, records/NAME.json, "
			     "verification/NAME.json, plots/NAME/FILE; "
			     "names: " MW_NAME_RULE ")");
		fail(c, MW_RESULT_MALFORMED, &e);
		return STOP_READING;
	}
	if (!strcmp(name, "manifest.json")) {
		c->has_manifest = true;
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
	if (record)
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
			fprintf(c->log, "%s: valid record\n", mw_esc(src));
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
	if (rc == STOP_READING) {
		/* reported */
	} else if (rc) {
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
		const json_t *nrec = json_object_get(c.manifest, "records");
		if (!json_is_integer(nrec) || json_integer_value(nrec) != c.records_n) {
			struct mw_error e;
			mw_error_clear(&e);
			mw_error_set(&e, MW_RESULT_INCONSISTENT, path, "manifest.json: records",
				     "the manifest counts %lld records, the archive holds %d",
				     (long long)json_integer_value(nrec), c.records_n);
			fail(&c, MW_RESULT_INCONSISTENT, &e);
		}
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
			mw_esc(path), c.records_n, c.records_n == 1 ? "" : "s");
	json_decref(c.seen);
	json_decref(c.records);
	json_decref(c.changed);
	json_decref(c.manifest);
	return rc;
}
