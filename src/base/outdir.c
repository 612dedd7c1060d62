/* src/base/outdir.c: a folder written whole or not at all (outdir.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "outdir.h"

/* What a folder holds: nothing, memwall's marker, anything else (the first such name). */
struct contents {
	bool empty;
	bool marked;
	char other[256];
};

static int read_contents(const char *dir, const char *marker, struct contents *c)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	*c = (struct contents){ .empty = true };
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		c->empty = false;
		if (marker && !strcmp(e->d_name, marker)) {
			struct stat st;
			char p[PATH_MAX + 512];
			c->marked = snprintf(p, sizeof(p), "%s/%s", dir, marker) < (int)sizeof(p) &&
				    !lstat(p, &st) && S_ISREG(st.st_mode);
		} else if (!c->other[0]) {
			snprintf(c->other, sizeof(c->other), "%s", e->d_name);
		}
	}
	closedir(d);
	return 0;
}

/* Whether path is dir or lies inside it (both resolved; false when either cannot be). */
static bool inside(const char *path, const char *dir_real)
{
	char r[PATH_MAX];
	if (!path || !realpath(path, r))
		return false;
	size_t n = strlen(dir_real);
	return !strncmp(r, dir_real, n) && (r[n] == '\0' || r[n] == '/' || n == 1);
}

/* The checks on a folder that is there: not a link, not above the working or home folder,
 * not holding an input, and empty, memwall's, or forced. */
static int check_existing(struct mw_outdir *o, const struct stat *st, bool force,
			  const char *marker, const char *const *inputs, size_t n_inputs,
			  struct mw_error *err)
{
	char real[PATH_MAX], cwd[PATH_MAX];
	struct contents c;
	if (S_ISLNK(st->st_mode))
		return mw_error_set(err, -EINVAL, o->dir, o->field, "is a symbolic link: memwall "
				    "never writes through one; give the folder it points to, or a "
				    "new folder");
	if (!S_ISDIR(st->st_mode))
		return mw_error_set(err, -EINVAL, o->dir, o->field, "is %s, not a folder: give a "
				    "new folder", mw_file_kind(st->st_mode));
	if (!realpath(o->dir, real))
		return mw_error_set(err, -errno, o->dir, o->field, "%s", strerror(errno));
	if ((getcwd(cwd, sizeof(cwd)) && inside(cwd, real)) || inside(getenv("HOME"), real))
		return mw_error_set(err, -EINVAL, o->dir, o->field, "holds the working folder or "
				    "the home folder: memwall replaces a folder it writes, so give a "
				    "new folder below them (e.g. %s/site)", o->dir);
	for (size_t i = 0; i < n_inputs; i++)
		if (inputs[i] && inside(inputs[i], real))
			return mw_error_set(err, -EINVAL, o->dir, o->field, "holds %s, which this "
					    "command reads: give a folder outside it", inputs[i]);
	int rc = read_contents(o->dir, marker, &c);
	if (rc)
		return mw_error_set(err, rc, o->dir, o->field, "cannot be read: %s", strerror(-rc));
	if (!c.empty && !c.marked && !force)
		return mw_error_set(err, -EEXIST, o->dir, o->field, "is a folder memwall did not "
				    "write, and not empty (it holds '%s'): give a new or empty folder, "
				    "or --force to replace it (its contents are removed)",
				    c.other[0] ? c.other : "?");
	return 0;
}

int mw_outdir_begin(struct mw_outdir *o, const char *dir, const char *field, bool force,
		    const char *marker, const char *marker_text, const char *const *inputs,
		    size_t n_inputs, struct mw_error *err)
{
	struct stat st;
	char parent[4096];
	*o = (struct mw_outdir){ .field = field };
	if (!dir || !*dir)
		return mw_error_set(err, -EINVAL, "", field, "is empty: give the folder to write");
	if (snprintf(o->dir, sizeof(o->dir), "%s", dir) >= (int)sizeof(o->dir) - 32)
		return mw_error_set(err, -ENAMETOOLONG, "", field, "the folder's path is too long");
	mw_path_trim(o->dir);
	const char *slash = strrchr(o->dir, '/');
	const char *base = slash ? slash + 1 : o->dir;
	if (!strcmp(base, ".") || !strcmp(base, "..") || !strcmp(o->dir, "/"))
		return mw_error_set(err, -EINVAL, o->dir, field, "names no new folder: give one, "
				    "e.g. %s/site", o->dir);
	snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - o->dir) + (slash == o->dir)
						       : 1, slash ? o->dir : ".");
	if (stat(parent, &st) || !S_ISDIR(st.st_mode))
		return mw_error_set(err, -ENOENT, o->dir, field, "its parent folder %s does not "
				    "exist: memwall makes the folder, not the ones above it", parent);
	if (!lstat(o->dir, &st)) {
		int rc = check_existing(o, &st, force, marker, inputs, n_inputs, err);
		if (rc)
			return rc;
		o->exists = true;
	} else if (errno != ENOENT) {
		return mw_error_set(err, -errno, o->dir, field, "%s", strerror(errno));
	}
	snprintf(o->tmp, sizeof(o->tmp), "%s/.%s.tmp-XXXXXX", parent, base);
	if (!mkdtemp(o->tmp)) {
		int e = errno;
		o->tmp[0] = '\0';
		return mw_error_set(err, -e, parent, field, "cannot make a temporary folder here: %s",
				    strerror(e));
	}
	chmod(o->tmp, 0755); /* mkdtemp's 0700 would hide a site from a web server */
	FILE *f = marker ? mw_outdir_fopen(o, marker, err) : NULL;
	if (marker && (!f || fputs(marker_text ? marker_text : "", f) < 0 || fclose(f))) {
		mw_outdir_abort(o);
		return -EIO;
	}
	return 0;
}

int mw_outdir_mkdir(struct mw_outdir *o, const char *rel, struct mw_error *err)
{
	char p[sizeof(o->tmp) + 512];
	snprintf(p, sizeof(p), "%s/%s", o->tmp, rel);
	if (mkdir(p, 0755))
		return mw_error_set(err, -errno, o->dir, o->field, "cannot make %s: %s", rel,
				    strerror(errno));
	return 0;
}

FILE *mw_outdir_fopen(struct mw_outdir *o, const char *rel, struct mw_error *err)
{
	char p[sizeof(o->tmp) + 512];
	snprintf(p, sizeof(p), "%s/%s", o->tmp, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		mw_error_set(err, -errno, o->dir, o->field, "cannot write %s: %s", rel,
			     strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	return f;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* Removes path and everything below it; links are removed, never followed. */
static void remove_tree(const char *path)
{
	nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Swaps the folder at dir for the temporary one and removes the old one. Without
 * RENAME_EXCHANGE (EINVAL: a file system that lacks it), the old folder is first renamed to a
 * name of its own beside it: a moment without dir, never a moment with half of it. */
static int swap_in(struct mw_outdir *o)
{
	char old[sizeof(o->tmp) + 8];
	if (!renameat2(AT_FDCWD, o->tmp, AT_FDCWD, o->dir, RENAME_EXCHANGE)) {
		remove_tree(o->tmp); /* the old folder, now at the temporary name */
		return 0;
	}
	if (errno != EINVAL)
		return -errno;
	snprintf(old, sizeof(old), "%s.old", o->tmp);
	if (rename(o->dir, old))
		return -errno;
	if (rename(o->tmp, o->dir)) {
		int rc = -errno;
		rename(old, o->dir);
		return rc;
	}
	remove_tree(old);
	return 0;
}

int mw_outdir_commit(struct mw_outdir *o, struct mw_error *err)
{
	int rc = 0;
	if (!o->tmp[0])
		return mw_error_set(err, -EINVAL, o->dir, o->field, "nothing to commit");
	if (o->exists)
		rc = swap_in(o);
	/* Someone may have made dir since begin: never replace what they made. */
	else if (renameat2(AT_FDCWD, o->tmp, AT_FDCWD, o->dir, RENAME_NOREPLACE) &&
		 (errno != EINVAL || rename(o->tmp, o->dir)))
		rc = -errno;
	if (rc) {
		mw_error_set(err, rc, o->dir, o->field, "cannot put the new folder in place: %s%s",
			     strerror(-rc), rc == -ENOTEMPTY || rc == -EEXIST
			     ? " (something was written there meanwhile)" : "");
		mw_outdir_abort(o);
		return rc;
	}
	o->tmp[0] = '\0';
	return 0;
}

void mw_outdir_abort(struct mw_outdir *o)
{
	if (!o->tmp[0])
		return;
	remove_tree(o->tmp);
	o->tmp[0] = '\0';
}
