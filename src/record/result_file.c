/* src/record/result_file.c: reading and writing result records (result.h), apart from their
 * derivation (result.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "result.h"

#define TMP_PREFIX ".mw-" /* temporary records: .mw-PID-STEM.XXXXXX.tmp */

/* ---- files --------------------------------------------------------------------------------- */

int mw_result_load(json_t **out, const char *path, struct mw_error *err)
{
	json_error_t jerr;
	char *text = NULL;
	size_t len = 0;
	int rc;
	*out = NULL;
	/* A regular file of at most MW_RESULT_MAX_BYTES (src/base/file.h). */
	if ((rc = mw_file_read(path, "record", "", MW_RESULT_MAX_BYTES, &text, &len, err)))
		return rc;
	*out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (*out)
		return 0;
	if (jerr.position >= 0 && strstr(jerr.text, "out of memory"))
		return mw_error_set(err, -ENOMEM, path, "", "out of memory parsing the record (%zu "
				    "bytes; parsing takes about %d times that)", len,
				    MW_RESULT_MEMORY_FACTOR);
	mw_error_set(err, MW_RESULT_MALFORMED, path, "", "not valid JSON: %s (column %d)", jerr.text,
		     jerr.column);
	if (err)
		err->line = jerr.line;
	return MW_RESULT_MALFORMED;
}

/* dir and every missing folder above it. 0 or -errno. */
static int mkdir_p(const char *dir)
{
	int rc = mw_mkdir_parents(dir);
	if (!rc && mkdir(dir, 0777) && errno != EEXIST)
		rc = -errno;
	return rc;
}

/* Moves tmp to target unless target exists. 0, -EEXIST, or -errno. */
static int move_noreplace(const char *tmp, const char *target)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, target, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
		return -errno;
	/* The filesystem has no RENAME_NOREPLACE: link() refuses an existing name just as well,
	 * and the record appears whole, since tmp was complete and synced before. */
	if (link(tmp, target))
		return -errno;
	unlink(tmp);
	return 0;
}

/* The pid in a temporary file's name: TMP_PREFIX PID '-' ... ".tmp"; 0 when the name is not
 * one mw_result_write makes. */
static long tmp_owner(const char *name)
{
	size_t n = strlen(name), k = strlen(TMP_PREFIX);
	char *end;
	if (strncmp(name, TMP_PREFIX, k) || n < k + 4 || strcmp(name + n - 4, ".tmp") ||
	    name[k] < '1' || name[k] > '9')
		return 0;
	errno = 0;
	long pid = strtol(name + k, &end, 10);
	return errno || *end != '-' || pid <= 0 ? 0 : pid;
}

/* Removes the temporary files in dir that a writer killed mid-write left: our pattern, our
 * user, a regular file, and a pid that no longer runs. Nothing else is touched. */
static void remove_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	while (d && (e = readdir(d))) {
		long pid = tmp_owner(e->d_name);
		if (!pid || pid == (long)getpid() || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_uid == geteuid())
			unlinkat(dirfd(d), e->d_name, 0);
	}
	if (d)
		closedir(d);
}

int mw_result_dir_prepare(const char *dir, struct mw_error *err)
{
	char probe[4096];
	struct stat st;
	int rc, fd;
	if (!dir[0])
		return mw_error_set(err, -EINVAL, "-o", "", "the results folder is an empty name");
	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
		return mw_error_set(err, -ENOTDIR, dir, "", "the results folder is %s: name a folder "
				    "(it is created if needed)", mw_file_kind(st.st_mode));
	if ((rc = mkdir_p(dir)))
		return mw_error_set(err, rc, dir, "", "cannot create the results folder: %s",
				    strerror(-rc));
	/* Writable for real (access() says nothing of a read-only mount or of ACLs). */
	snprintf(probe, sizeof(probe), "%s/" TMP_PREFIX "%ld-probe.XXXXXX.tmp", dir, (long)getpid());
	if ((fd = mkstemps(probe, 4)) < 0)
		return mw_error_set(err, -errno, dir, "", "cannot write in the results folder: %s",
				    strerror(errno));
	close(fd);
	unlink(probe);
	remove_stale(dir);
	return 0;
}

/* A stem names a file in dir and nothing else: no '/', no leading '.', no control byte. */
static int stem_check(const char *dir, const char *stem, struct mw_error *err)
{
	if (!stem[0] || stem[0] == '.' || strlen(stem) > 200)
		return mw_error_set(err, -EINVAL, dir, "", "refusing the record name \"%.200s\": "
				    "empty, hidden or too long", stem);
	for (const char *c = stem; *c; c++)
		if (*c == '/' || (unsigned char)*c < 0x20 || *c == 0x7f)
			return mw_error_set(err, -EINVAL, dir, "", "refusing the record name "
					    "\"%.200s\": it holds a '/' or a control character",
					    stem);
	return 0;
}

int mw_result_write(const json_t *doc, const char *dir, const char *stem, char *path, size_t n,
		    struct mw_error *err)
{
	char tmp[4096], *text = NULL;
	int fd = -1, dfd = -1, rc;
	bool have_tmp = false;

	if ((rc = stem_check(dir, stem, err)))
		return rc;
	if ((rc = mkdir_p(dir)))
		return mw_error_set(err, rc, dir, "", "cannot create the results folder: %s",
				    strerror(-rc));
	/* The pid marks whose it is: a later writer removes it only once that pid is gone. */
	snprintf(tmp, sizeof(tmp), "%s/" TMP_PREFIX "%ld-%s.XXXXXX.tmp", dir, (long)getpid(), stem);
	fd = mkstemps(tmp, 4);
	if (fd < 0) {
		rc = mw_error_set(err, -errno, dir, "", "cannot create a temporary file: %s",
				  strerror(errno));
		goto out;
	}
	have_tmp = true;
	/* One buffer, then large writes: json_dumpfd would make a syscall per token. */
	text = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
	if (!text) {
		rc = mw_error_set(err, -ENOMEM, tmp, "", "cannot serialise the record");
		goto out;
	}
	size_t len = strlen(text), done = 0;
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = mw_error_set(err, -EIO, tmp, "", "cannot write the record: %s",
					  strerror(errno));
			goto out;
		}
		done += (size_t)w;
	}
	if (fchmod(fd, 0644) || write(fd, "\n", 1) != 1) {
		rc = mw_error_set(err, -EIO, tmp, "", "cannot write the record: %s", strerror(errno));
		goto out;
	}
	if (fsync(fd)) {
		rc = mw_error_set(err, -errno, tmp, "", "fsync failed: %s", strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	for (int i = 1; i < 1000; i++) {
		if (i == 1)
			snprintf(path, n, "%s/%s.json", dir, stem);
		else
			snprintf(path, n, "%s/%s-%d.json", dir, stem, i);
		rc = move_noreplace(tmp, path);
		if (rc != -EEXIST)
			break;
	}
	if (rc) {
		rc = mw_error_set(err, rc, path, "", "cannot move the record into place: %s",
				  strerror(-rc));
		goto out;
	}
	have_tmp = false;
	/* The rename is durable only once the directory entry is. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd))
		rc = mw_error_set(err, -errno, dir, "", "fsync of the folder failed: %s",
				  strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (have_tmp)
		unlink(tmp);
	free(text);
	return rc;
}
