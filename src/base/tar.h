/* src/base/tar.h: a small tar.gz writer and reader, for submission bundles (src/record/bundle.h).
 *
 * The archive is POSIX ustar (IEEE Std 1003.1-2017, pax "ustar Interchange Format") of regular
 * files only, gzip-compressed through zlib: what `tar xzf` unpacks everywhere. Written here rather
 * than by running tar, so that a bundle's bytes do not depend on which tar is installed and no
 * file names reach a command line. Names are at most 99 bytes (no prefix field is written); the
 * reader checks each member under the name an extractor would write (ustar's prefix joined to
 * its name), folders included, and refuses anything but regular files and folders, a ".."
 * component, absolute names, control characters and backslashes, more than 10000 members,
 * and entries or archives past the caller's limits (headers count towards the total). */
#ifndef MEMWALL_TAR_H
#define MEMWALL_TAR_H
#include <stddef.h>
#include <stdint.h>
#include "mw.h"

struct mw_tar;

/* Creates path (refused if it exists: -EEXIST, named). *out for mw_tar_add and mw_tar_close. */
int mw_tar_create(const char *path, struct mw_tar **out, struct mw_error *err);
/* Adds a regular file name (mode 0644) holding len bytes of data. */
int mw_tar_add(struct mw_tar *t, const char *name, const void *data, size_t len,
	       struct mw_error *err);
/* Writes the end-of-archive blocks and closes; frees t. 0 or -errno (the file is removed on
 * failure, so no partial archive is left). Aborts without writing when abandon is true. */
int mw_tar_close(struct mw_tar *t, bool abandon, struct mw_error *err);

/* Calls fn for each regular file of the archive at path with its name and bytes (valid during
 * the call). Stops at fn's first non-zero return, which it returns. -EINVAL (err names the entry)
 * for a damaged or hostile archive; -EFBIG past max_entry bytes in one file or max_total in all. */
int mw_tar_read(const char *path, uint64_t max_entry, uint64_t max_total,
		int (*fn)(void *ctx, const char *name, const void *data, size_t len), void *ctx,
		struct mw_error *err);
#endif
