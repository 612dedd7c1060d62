/* tests/e2e/test_export.c: `memwall export aios` end to end: what it writes where, and what it
 * refuses. The content is tests/src/test_export_aios.c's; here, the verb's contract:
 *   - stdout by default; -o FILE writes the same bytes, whole (no temporary file left);
 *   - an existing FILE is refused without --force and kept as it was; --force replaces a
 *     regular file only: a symbolic link (even to a regular file), a folder or a FIFO never;
 *   - --comment writes the issue comment, whose JSON is the plain export's;
 *   - a record that cannot be an AIOS baseline (an imported reference record, one whose
 *     figures disagree with its raw data) exits 2 naming why; an unknown format exits 2. */
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_result.h"
#include "run.h"
#include "test.h"

/* Nothing in dir but the names given: no temporary file left behind. */
static void only(const char *dir, const char *const *names)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	T_ASSERT(d != NULL);
	while (d && (e = readdir(d))) {
		bool ok = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
		for (const char *const *n = names; *n && !ok; n++)
			ok = !strcmp(e->d_name, *n);
		if (!ok)
			T_FAIL_AT(__FILE__, __LINE__, "%s: unexpected %s", dir, e->d_name);
	}
	if (d)
		closedir(d);
}

/* The file at path holds want, byte for byte. */
static void holds(const char *path, const char *want)
{
	char *got = t_slurp(path, NULL);
	T_EQ_STR(got, want);
	free(got);
}

static struct t_output export(const char *rec, const char *a, const char *b, const char *c)
{
	return t_run((const char *[]){ "memwall", "export", "aios", rec, a, b, c, NULL });
}

int main(void)
{
	char tmp[] = "/tmp/mw-test-export-XXXXXX", rec[4200], out[4200], p[4200];
	t_mkdtemp(tmp);
	char rdir[4300];
	snprintf(rdir, sizeof(rdir), "%s/rec", tmp);
	mkdir(rdir, 0755);
	struct t_fx_spec sp = {.protocol = "export-e2e",
			       .cpu = "CPU Beta",
			       .runs = 3,
			       .warmups = 1,
			       .tokens = 16,
			       .latency_ns = 1e6,
			       .jitter = 0.01,
			       .dram_bytes = 3e6,
			       .instances = 2,
			       .seed = 3};
	json_t *doc = t_fx_record(&sp);
	t_fx_write(doc, rdir, "r.json", rec, sizeof(rec));

	/* stdout */
	struct t_output o = export(rec, NULL, NULL, NULL);
	T_EQ_INT(o.status, 0);
	json_t *j = json_loads(o.out ? o.out : "", 0, NULL);
	T_ASSERT(j && json_is_object(json_object_get(j, "baseline")));
	json_decref(j);
	char *stdout_bytes = o.out;
	o.out = NULL;
	t_output_free(&o);

	/* -o: the same bytes, and nothing else in the folder */
	snprintf(out, sizeof(out), "%s/aios.json", tmp);
	o = export(rec, "-o", out, NULL);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.err, "wrote");
	t_output_free(&o);
	holds(out, stdout_bytes);
	only(tmp, (const char *const[]){ "rec", "aios.json", NULL });

	/* an existing file: refused and kept, then replaced with --force */
	t_write_file(out, "mine\n");
	o = export(rec, "-o", out, NULL);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "exists: give --force");
	t_output_free(&o);
	holds(out, "mine\n");
	o = export(rec, "-o", out, "--force");
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
	holds(out, stdout_bytes);

	/* a symbolic link to a regular file: never written through, --force or not */
	snprintf(p, sizeof(p), "%s/link.json", tmp);
	T_EQ_INT(symlink(out, p), 0);
	t_write_file(out, "target\n");
	for (int force = 0; force < 2; force++) {
		o = export(rec, "-o", p, force ? "--force" : NULL);
		T_EQ_INT(o.status, 2);
		T_CONTAINS(o.err, "a symbolic link");
		t_output_free(&o);
	}
	holds(out, "target\n");
	struct stat st;
	T_ASSERT(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));

	/* a folder and a FIFO: refused at once (a FIFO is never opened, so nothing blocks) */
	o = export(rec, "-o", rdir, "--force");
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "a directory");
	t_output_free(&o);
	snprintf(p, sizeof(p), "%s/fifo", tmp);
	T_EQ_INT(mkfifo(p, 0600), 0);
	o = export(rec, "-o", p, "--force");
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "a FIFO");
	t_output_free(&o);
	only(tmp, (const char *const[]){ "rec", "aios.json", "link.json", "fifo", NULL });

	/* a folder that is not there: cannot write (3), nothing made */
	snprintf(p, sizeof(p), "%s/no/such/dir/a.json", tmp);
	o = export(rec, "-o", p, NULL);
	T_EQ_INT(o.status, 3);
	t_output_free(&o);

	/* --comment: the header, and the same JSON */
	o = export(rec, "--comment", NULL, NULL);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "Hardware: CPU Beta");
	T_CONTAINS(o.out, "AIOS version: ");
	const char *open = o.out ? strstr(o.out, "```json\n") : NULL;
	const char *close = open ? strstr(open + 8, "\n```") : NULL;
	T_ASSERT(open && close);
	if (open && close) {
		json_t *a = json_loadb(open + 8, (size_t)(close - open - 8), 0, NULL);
		json_t *b = json_loads(stdout_bytes, 0, NULL);
		T_ASSERT(a && b && json_equal(a, b));
		json_decref(a);
		json_decref(b);
	}
	t_output_free(&o);
	free(stdout_bytes);

	/* what cannot be exported */
	T_RUN_EXPECT(((const char *[]){"memwall", "export", "bencher", rec, NULL}), 2, NULL,
		     T_LIST("unknown format 'bencher'"));
	o = export(t_data("../../results/reference/aios-falcon7b-q4km.json"), NULL, NULL, NULL);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "imported reference record");
	T_EQ_STR(o.out, "");
	t_output_free(&o);
	/* a figure that disagrees with the raw data */
	json_t *m = json_object_get(json_object_get(json_object_get(doc, "summary"), "metrics"),
				    "tok_per_s");
	json_object_set_new(m, "mean", json_real(json_number_value(json_object_get(m, "mean")) * 2));
	t_fx_write(doc, rdir, "bad.json", p, sizeof(p));
	o = export(p, NULL, NULL, NULL);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "does not validate");
	T_EQ_STR(o.out, "");
	t_output_free(&o);
	T_RUN_EXPECT(((const char *[]){"memwall", "export", "--help", NULL}), 0,
		     T_LIST("SIMULATED", "2^20"), NULL);

	json_decref(doc);
	T_EQ_INT(t_rm_tree(tmp), 0);
	return t_done();
}
