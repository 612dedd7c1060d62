/* tests/src/test_outdir.c: a folder written whole or not at all (src/base/outdir.c): what may be
 * at DIR (nothing, an empty folder, a folder memwall wrote; a folder of other files only with
 * force; never a file, a link, the working folder or a folder holding an input), that nothing
 * is left beside DIR after a commit or an abort, and that replacing a folder removes the links
 * it held, not what they point to. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outdir.h"
#include "run.h"
#include "test.h"

static char tmp[] = "/tmp/mw-test-outdir-XXXXXX";

static bool exists(const char *dir, const char *rel)
{
	char p[4400];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

/* Entries of tmp whose name starts with ".": temporary folders left behind. */
static int leftovers(void)
{
	DIR *d = opendir(tmp);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* One write of dir: a file named name holding "x", committed. */
static int write_dir(const char *dir, const char *name, bool force, const char *input)
{
	struct mw_outdir o;
	struct mw_error err;
	const char *inputs[1] = { input };
	mw_error_clear(&err);
	int rc = mw_outdir_begin(&o, dir, "-o", force, ".marker", "m\n", inputs, 1, &err);
	if (rc)
		return rc;
	T_EQ_INT(mw_outdir_mkdir(&o, "sub", &err), 0);
	FILE *f = mw_outdir_fopen(&o, name, &err);
	T_ASSERT(f != NULL);
	if (f) {
		fputs("x", f);
		fclose(f);
	}
	/* The same name twice is refused: files are created, never replaced. */
	T_ASSERT(mw_outdir_fopen(&o, name, &err) == NULL);
	return mw_outdir_commit(&o, &err);
}

static void put(const char *dir, const char *rel)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	t_write_file(p, "theirs");
}

int main(void)
{
	char dir[4200], p[4400], cwd[4096];
	struct mw_outdir o;
	struct mw_error err;
	t_mkdtemp(tmp);
	T_ASSERT(getcwd(cwd, sizeof(cwd)) != NULL);

	/* New: made, with the marker, nothing left beside it. */
	snprintf(dir, sizeof(dir), "%s/site/", tmp); /* a trailing slash names the same folder */
	T_EQ_INT(write_dir(dir, "a.html", false, NULL), 0);
	snprintf(dir, sizeof(dir), "%s/site", tmp);
	T_ASSERT(exists(dir, "a.html") && exists(dir, ".marker") && exists(dir, "sub"));
	T_EQ_INT(leftovers(), 0);
	struct stat st;
	T_EQ_INT(stat(dir, &st), 0);
	T_EQ_INT((int)(st.st_mode & 0777), 0755);

	/* A folder memwall wrote is replaced whole: the old file is gone. */
	T_EQ_INT(write_dir(dir, "b.html", false, NULL), 0);
	T_ASSERT(exists(dir, "b.html") && !exists(dir, "a.html"));
	T_EQ_INT(leftovers(), 0);

	/* A folder of other files: refused and untouched; with force, replaced. */
	snprintf(dir, sizeof(dir), "%s/theirs", tmp);
	mkdir(dir, 0755);
	put(dir, "notes.txt");
	T_EQ_INT(write_dir(dir, "a.html", false, NULL), -EEXIST);
	T_ASSERT(exists(dir, "notes.txt") && !exists(dir, "a.html"));
	T_EQ_INT(leftovers(), 0);
	mw_error_clear(&err);
	T_EQ_INT(mw_outdir_begin(&o, dir, "-o", false, ".marker", "", NULL, 0, &err), -EEXIST);
	T_CONTAINS(err.text, "notes.txt");
	T_CONTAINS(err.text, "--force");
	T_EQ_INT(write_dir(dir, "a.html", true, NULL), 0);
	T_ASSERT(exists(dir, "a.html") && !exists(dir, "notes.txt"));

	/* An empty folder is taken. */
	snprintf(dir, sizeof(dir), "%s/empty", tmp);
	mkdir(dir, 0755);
	T_EQ_INT(write_dir(dir, "a.html", false, NULL), 0);
	T_ASSERT(exists(dir, "a.html"));

	/* Never a file, a link (to a folder or dangling), a missing parent, "." or "..". */
	snprintf(dir, sizeof(dir), "%s/file", tmp);
	t_write_file(dir, "x");
	T_EQ_INT(write_dir(dir, "a.html", true, NULL), -EINVAL);
	snprintf(dir, sizeof(dir), "%s/link", tmp);
	snprintf(p, sizeof(p), "%s/theirs", tmp);
	T_EQ_INT(symlink(p, dir), 0);
	T_EQ_INT(write_dir(dir, "c.html", true, NULL), -EINVAL);
	T_ASSERT(!exists(p, "c.html") && exists(p, "a.html"));
	snprintf(dir, sizeof(dir), "%s/no/such/site", tmp);
	T_EQ_INT(write_dir(dir, "a.html", false, NULL), -ENOENT);
	snprintf(dir, sizeof(dir), "%s/.", tmp);
	T_EQ_INT(write_dir(dir, "a.html", true, NULL), -EINVAL);
	T_EQ_INT(write_dir("..", "a.html", true, NULL), -EINVAL);
	T_EQ_INT(leftovers(), 0);

	/* Not a folder holding an input, nor the working folder or one above it. */
	snprintf(dir, sizeof(dir), "%s/withstore", tmp);
	mkdir(dir, 0755);
	put(dir, "results.db");
	snprintf(p, sizeof(p), "%s/results.db", dir);
	T_EQ_INT(write_dir(dir, "a.html", true, p), -EINVAL);
	T_ASSERT(exists(dir, "results.db"));
	T_EQ_INT(chdir(dir), 0);
	T_EQ_INT(write_dir(dir, "a.html", true, NULL), -EINVAL);
	snprintf(p, sizeof(p), "%s/sub", dir);
	mkdir(p, 0755);
	T_EQ_INT(chdir(p), 0);
	T_EQ_INT(write_dir(dir, "a.html", true, NULL), -EINVAL);
	T_EQ_INT(chdir(cwd), 0);
	T_ASSERT(exists(dir, "results.db"));

	/* Replacing a folder removes a link it holds, never what the link points to. */
	snprintf(dir, sizeof(dir), "%s/site", tmp);
	snprintf(p, sizeof(p), "%s/site/out", tmp);
	char target[4400];
	snprintf(target, sizeof(target), "%s/theirs", tmp);
	T_EQ_INT(symlink(target, p), 0);
	T_EQ_INT(write_dir(dir, "d.html", false, NULL), 0);
	T_ASSERT(!exists(dir, "out") && exists(target, "a.html"));

	/* An abort leaves the folder as it was and nothing beside it. */
	T_EQ_INT(mw_outdir_begin(&o, dir, "-o", false, ".marker", "", NULL, 0, &err), 0);
	FILE *f = mw_outdir_fopen(&o, "half.html", &err);
	T_ASSERT(f != NULL);
	if (f)
		fclose(f);
	mw_outdir_abort(&o);
	T_ASSERT(exists(dir, "d.html") && !exists(dir, "half.html"));
	T_EQ_INT(leftovers(), 0);

	return t_done_rm(tmp, 0);
}
