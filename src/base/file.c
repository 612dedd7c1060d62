/* src/base/file.c: opening user-named files safely (see file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

int mw_name_check(const char *name, char *why, size_t n)
{
	size_t chars = 0, bytes = strlen(name);
	for (size_t b = 0; b < bytes; b++)
		chars += ((unsigned char)name[b] & 0xC0) != 0x80;
	if (!chars) {
		snprintf(why, n, "is empty");
		return -EINVAL;
	}
	if (chars > MW_NAME_MAX) {
		snprintf(why, n, "is %zu characters long", chars);
		return -EINVAL;
	}
	if (name[0] == '.') {
		snprintf(why, n, "starts with '.' (a hidden file, or a path: \"..\")");
		return -EINVAL;
	}
	chars = 0;
	for (size_t b = 0; b < bytes; b++) {
		unsigned char c = (unsigned char)name[b];
		if ((c & 0xC0) != 0x80)
			chars++;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.')
			continue;
		if (c >= 0x21 && c < 0x7f)
			snprintf(why, n, "character %zu is '%c'", chars, c);
		else
			snprintf(why, n, "character %zu is %s (byte 0x%02x)", chars,
				 c == '\n' ? "a newline" : c < 0x80 ? "a control character or space"
				 : "not ASCII", c);
		return -EINVAL;
	}
	return 0;
}

const char *mw_file_kind(mode_t m)
{
	static const struct {
		mode_t type;
		const char *name;
	} kinds[] = {
		{ S_IFIFO, "a FIFO" },           { S_IFDIR, "a directory" },
		{ S_IFCHR, "a character device" }, { S_IFBLK, "a block device" },
		{ S_IFSOCK, "a socket" },        { S_IFLNK, "a symbolic link" },
		{ S_IFREG, "a regular file" },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((m & S_IFMT) == kinds[i].type)
			return kinds[i].name;
	return "not a regular file";
}

/* "1.5 GiB"-style size for messages. */
static void size_text(char *buf, size_t n, uint64_t bytes)
{
	if (bytes >= (1u << 30) && bytes % (1u << 30) == 0)
		snprintf(buf, n, "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		snprintf(buf, n, "%llu MiB", (unsigned long long)(bytes >> 20));
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, n, "%llu KiB", (unsigned long long)(bytes >> 10));
	else
		snprintf(buf, n, "%llu bytes", (unsigned long long)bytes);
}

int mw_file_open(const char *path, const char *what, const char *field, uint64_t max_bytes,
		 struct mw_error *err)
{
	struct stat st;
	int fd, flags, rc;
	char lim[32];
	/* O_NONBLOCK: a FIFO without a writer would otherwise block this open forever. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return mw_error_set(err, -errno, path, field, "cannot open the %s: %s", what,
				    strerror(errno));
	if (fstat(fd, &st)) {
		rc = mw_error_set(err, -errno, path, field, "cannot examine the %s: %s", what,
				  strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = mw_error_set(err, -EINVAL, path, field, "the %s is %s, not a regular file: name "
				  "a file", what, mw_file_kind(st.st_mode));
		goto fail;
	}
	if ((uint64_t)st.st_size > max_bytes) {
		size_text(lim, sizeof(lim), max_bytes);
		rc = mw_error_set(err, -EFBIG, path, field, "the %s is %lld bytes, over the %s limit "
				  "for a %s", what, (long long)st.st_size, lim, what);
		goto fail;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) {
		rc = mw_error_set(err, -errno, path, field, "cannot read the %s: %s", what,
				  strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return rc;
}

int mw_file_read(const char *path, const char *what, const char *field, uint64_t max_bytes,
		 char **text, size_t *len, struct mw_error *err)
{
	struct stat st;
	char *buf = NULL, lim[32];
	size_t cap, got = 0;
	int rc = 0, fd;

	*text = NULL;
	if (len)
		*len = 0;
	if ((fd = mw_file_open(path, what, field, max_bytes, err)) < 0)
		return fd;
	/* A regular file's size is known, except in /proc and /sys (0 there): start small. */
	cap = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
	if (!(buf = malloc(cap + 1))) {
		rc = mw_error_set(err, -ENOMEM, path, field, "out of memory reading the %s "
				  "(%zu bytes)", what, cap);
		goto out;
	}
	for (;;) {
		if (got == cap) {
			size_t ncap = cap * 2;
			char *nb;
			if ((uint64_t)got > max_bytes)
				break;
			/* one byte past the limit is enough to know the file is over it */
			if (max_bytes < SIZE_MAX / 2 && ncap > max_bytes + 1)
				ncap = (size_t)max_bytes + 1;
			if (!(nb = realloc(buf, ncap + 1))) {
				rc = mw_error_set(err, -ENOMEM, path, field, "out of memory reading "
						  "the %s (%zu bytes)", what, ncap);
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t r = read(fd, buf + got, cap - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = mw_error_set(err, -errno, path, field, "cannot read the %s: %s", what,
					  strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if ((uint64_t)got > max_bytes) {
		size_text(lim, sizeof(lim), max_bytes);
		rc = mw_error_set(err, -EFBIG, path, field, "the %s is over the %s limit for a %s",
				  what, lim, what);
		goto out;
	}
	buf[got] = '\0';
	*text = buf;
	buf = NULL;
	if (len)
		*len = got;
out:
	free(buf);
	close(fd);
	return rc;
}

FILE *mw_file_fopen(const char *path, const char *what, const char *field, uint64_t max_bytes,
		    int *rc, struct mw_error *err)
{
	FILE *f;
	int fd = mw_file_open(path, what, field, max_bytes, err);
	*rc = fd < 0 ? fd : 0;
	if (fd < 0)
		return NULL;
	if (!(f = fdopen(fd, "rb"))) {
		*rc = mw_error_set(err, -errno, path, field, "cannot read the %s: %s", what,
				   strerror(errno));
		close(fd);
	}
	return f;
}

int mw_file_check(const char *path, const char *what, const char *field, uint64_t max_bytes,
		  struct mw_error *err)
{
	int fd = mw_file_open(path, what, field, max_bytes, err);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int mw_state_path(char *buf, size_t n, const char *name)
{
	const char *v;
	if ((v = getenv("MEMWALL_STATE_DIR")) && *v)
		snprintf(buf, n, "%s/%s", v, name);
	else if ((v = getenv("XDG_STATE_HOME")) && *v)
		snprintf(buf, n, "%s/memwall/%s", v, name);
	else if ((v = getenv("HOME")) && *v)
		snprintf(buf, n, "%s/.local/state/memwall/%s", v, name);
	else
		return -ENOENT;
	return 0;
}

int mw_mkdir_parents(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

int mw_file_target_check(const char *path, const char *field, bool force, struct mw_error *err)
{
	struct stat st;
	if (lstat(path, &st))
		return errno == ENOENT ? 0
				       : mw_error_set(err, -errno, path, field, "cannot examine: %s",
						      strerror(errno));
	if (!S_ISREG(st.st_mode))
		return mw_error_set(err, -EINVAL, path, field, "is %s: memwall writes only regular "
				    "files and never replaces anything else; name a new file",
				    mw_file_kind(st.st_mode));
	if (!force)
		return mw_error_set(err, -EEXIST, path, field, "exists: give --force to replace it, "
				    "or name a new file");
	return 0;
}

bool mw_file_same(const char *a, const char *b)
{
	struct stat sa, sb;
	return a && b && !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* The folder path is in ("." for a bare name) into dir, and its last component into base. */
static void split_path(const char *path, char *dir, size_t dn, const char **base)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		snprintf(dir, dn, ".");
		*base = path;
	} else if (slash == path) {
		snprintf(dir, dn, "/");
		*base = slash + 1;
	} else {
		snprintf(dir, dn, "%.*s", (int)(slash - path), path);
		*base = slash + 1;
	}
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int mw_file_write_atomic(const char *path, const char *field, const void *data, size_t len,
			 bool force, struct mw_error *err)
{
	char dir[4096], tmp[4400];
	const char *base;
	int fd = -1, dfd = -1, rc;
	bool have_tmp = false;

	if (!path[0] || path[strlen(path) - 1] == '/')
		return mw_error_set(err, -EINVAL, path, field, "names a folder: name a file");
	if ((rc = mw_file_target_check(path, field, force, err)))
		return rc;
	split_path(path, dir, sizeof(dir), &base);
	snprintf(tmp, sizeof(tmp), "%s/.%.200s.%ld.XXXXXX.tmp", dir, base, (long)getpid());
	if ((fd = mkstemps(tmp, 4)) < 0) {
		rc = mw_error_set(err, -errno, path, field, "cannot create a temporary file in %s: "
				  "%s", dir, strerror(errno));
		goto out;
	}
	have_tmp = true;
	if ((rc = write_all(fd, data, len)) || (fchmod(fd, 0644) && (rc = -errno)) ||
	    (fsync(fd) && (rc = -errno))) {
		mw_error_set(err, rc, path, field, "cannot write: %s", strerror(-rc));
		goto out;
	}
	close(fd);
	fd = -1;
	/* Checked again: the path may have changed during the write. With force, rename()
	 * replaces the directory entry itself: a link put there meanwhile is replaced, never
	 * followed. */
	if ((rc = mw_file_target_check(path, field, force, err)))
		goto out;
	if (force ? rename(tmp, path) == 0
		  : renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) {
		have_tmp = false;
	} else if (!force && (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) &&
		   link(tmp, path) == 0) {
		/* no RENAME_NOREPLACE here: link() refuses an existing name as well */
		unlink(tmp);
		have_tmp = false;
	} else {
		rc = errno == EEXIST ? mw_error_set(err, -EEXIST, path, field, "exists: give "
						    "--force to replace it, or name a new file")
				     : mw_error_set(err, -errno, path, field, "cannot move into "
						    "place: %s", strerror(errno));
		goto out;
	}
	/* The rename is durable only once the folder's entry is. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd))
		rc = mw_error_set(err, -errno, dir, field, "fsync of the folder failed: %s",
				  strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (have_tmp)
		unlink(tmp);
	return rc;
}
