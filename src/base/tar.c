/* src/base/tar.c: ustar archives through zlib's gzip streams (see tar.h for why not tar(1)). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"
#include "tar.h"

/* The ustar header (POSIX.1-2017, pax, "ustar Interchange Format"): 512 bytes. */
struct ustar {
	char name[100], mode[8], uid[8], gid[8], size[12], mtime[12], chksum[8], typeflag;
	char linkname[100], magic[6], version[2], uname[32], gname[32], devmajor[8], devminor[8];
	char prefix[155], pad[12];
};
_Static_assert(sizeof(struct ustar) == 512, "a ustar header is one 512-byte block");

struct mw_tar {
	gzFile gz;
	char path[4096];
	long long mtime;
};

int mw_tar_create(const char *path, struct mw_tar **out, struct mw_error *err)
{
	struct mw_tar *t = calloc(1, sizeof(*t));
	int fd = -1;
	*out = NULL;
	if (!t)
		return mw_error_set(err, -ENOMEM, path, "-o", "out of memory");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		free(t);
		return mw_error_set(err, -e, path, "-o", "cannot create: %s%s", strerror(e),
				    e == EEXIST ? " (memwall never replaces a file: remove it or "
						  "choose another name)" : "");
	}
	if (!(t->gz = gzdopen(fd, "wb9"))) {
		close(fd);
		unlink(path);
		free(t);
		return mw_error_set(err, -ENOMEM, path, "-o", "cannot start the gzip stream");
	}
	snprintf(t->path, sizeof(t->path), "%s", path);
	t->mtime = (long long)time(NULL);
	*out = t;
	return 0;
}

static unsigned checksum(const struct ustar *h)
{
	const unsigned char *p = (const unsigned char *)h;
	unsigned sum = 0;
	for (size_t i = 0; i < sizeof(*h); i++)
		sum += (i >= offsetof(struct ustar, chksum) && i < offsetof(struct ustar, chksum) + 8)
			       ? ' ' : p[i];
	return sum;
}

int mw_tar_add(struct mw_tar *t, const char *name, const void *data, size_t len,
	       struct mw_error *err)
{
	static const char zeros[512];
	struct ustar h;
	if (strlen(name) >= sizeof(h.name))
		return mw_error_set(err, -ENAMETOOLONG, t->path, name, "a name in the archive is at "
				    "most 99 bytes: rename the record file");
	memset(&h, 0, sizeof(h));
	memcpy(h.name, name, strlen(name));
	snprintf(h.mode, sizeof(h.mode), "%07o", 0644);
	snprintf(h.uid, sizeof(h.uid), "%07o", 0);
	snprintf(h.gid, sizeof(h.gid), "%07o", 0);
	snprintf(h.size, sizeof(h.size), "%011llo", (unsigned long long)len);
	snprintf(h.mtime, sizeof(h.mtime), "%011llo", t->mtime);
	h.typeflag = '0';
	memcpy(h.magic, "ustar", 6);
	memcpy(h.version, "00", 2);
	snprintf(h.chksum, sizeof(h.chksum), "%06o", checksum(&h));
	h.chksum[7] = ' ';
	size_t pad = (512 - len % 512) % 512;
	if (gzwrite(t->gz, &h, sizeof(h)) != (int)sizeof(h) ||
	    (len && gzwrite(t->gz, data, (unsigned)len) != (int)len) ||
	    (pad && gzwrite(t->gz, zeros, (unsigned)pad) != (int)pad))
		return mw_error_set(err, -EIO, t->path, name, "cannot write: the disk may be full");
	return 0;
}

int mw_tar_close(struct mw_tar *t, bool abandon, struct mw_error *err)
{
	static const char zeros[1024];
	int rc = 0;
	if (!t)
		return 0;
	/* Two zero blocks end the archive. */
	if (!abandon && gzwrite(t->gz, zeros, sizeof(zeros)) != (int)sizeof(zeros))
		rc = mw_error_set(err, -EIO, t->path, "", "cannot write: the disk may be full");
	if (gzclose(t->gz) != Z_OK && !rc && !abandon)
		rc = mw_error_set(err, -EIO, t->path, "", "cannot finish the gzip stream");
	if (rc || abandon)
		unlink(t->path);
	free(t);
	return rc;
}

static int octal(const char *f, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;
	while (i < n && f[i] == ' ')
		i++;
	if (i == n || f[i] < '0' || f[i] > '7')
		return -EINVAL;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++)
		v = v * 8 + (uint64_t)(f[i] - '0');
	if (i < n && f[i] != '\0' && f[i] != ' ')
		return -EINVAL;
	*out = v;
	return 0;
}

/* Why the member name n (as an extractor joins it: prefix/name) is refused, or NULL: it is
 * empty or absolute, a component is "..", or a byte is a control character or a backslash
 * (a path separator on Windows). A file's name may not end in '/' (extractors would make it
 * a directory). */
static const char *name_problem(const char *n, bool file)
{
	if (!n[0])
		return "an empty name";
	if (n[0] == '/')
		return "an absolute name";
	for (const char *p = n; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\')
			return "a control character or a backslash in the name";
	for (const char *c = n; *c;) {
		size_t l = strcspn(c, "/");
		if (l == 2 && c[0] == '.' && c[1] == '.')
			return "a '..' component";
		c += l;
		c += *c == '/';
	}
	if (file && n[strlen(n) - 1] == '/')
		return "a file name that ends in '/'";
	return NULL;
}

/* Every archive read is bounded in members as well as bytes: empty members cost nothing in
 * the size limit, and 2.5 million of them fit in 16 MB of gzip (issue 28, class 11). */
#define TAR_MAX_MEMBERS 10000

int mw_tar_read(const char *path, uint64_t max_entry, uint64_t max_total,
		int (*fn)(void *ctx, const char *name, const void *data, size_t len), void *ctx,
		struct mw_error *err)
{
	struct ustar h;
	char name[101 + 156];
	uint64_t size, total = 0, sum;
	char *data = NULL;
	int rc = 0, members = 0;
	/* Opened as any user-named file is (file.h): a FIFO or a device is refused, not read. */
	int fd = mw_file_open(path, "bundle", "", MW_FILE_ANY_SIZE, err);
	if (fd < 0)
		return fd;
	gzFile gz = gzdopen(fd, "rb");
	if (!gz) {
		close(fd);
		return mw_error_set(err, -ENOMEM, path, "", "cannot open: out of memory");
	}
	for (;;) {
		int got = gzread(gz, &h, sizeof(h));
		if (got == 0)
			break; /* no end blocks: tolerated, as GNU tar does */
		if (got != (int)sizeof(h)) {
			rc = mw_error_set(err, -EINVAL, path, "", "truncated or not a gzip'd tar archive");
			goto out;
		}
		if (!h.name[0])
			break; /* the end-of-archive block */
		/* The name an extractor writes: ustar's prefix, a '/', then the name field
		 * (POSIX pax "ustar Interchange Format"; Python's tarfile and GNU tar alike). */
		size_t pl = !memcmp(h.magic, "ustar", 5) ? strnlen(h.prefix, sizeof(h.prefix)) : 0;
		size_t nl = strnlen(h.name, sizeof(h.name));
		snprintf(name, sizeof(name), "%.*s%s%.*s", (int)pl, h.prefix, pl ? "/" : "", (int)nl,
			 h.name);
		if (++members > TAR_MAX_MEMBERS) {
			rc = mw_error_set(err, -EFBIG, path, name, "more than %d members: a bundle "
					  "holds far fewer (this is not one memwall wrote)",
					  TAR_MAX_MEMBERS);
			goto out;
		}
		if (octal(h.size, sizeof(h.size), &size) || octal(h.chksum, sizeof(h.chksum), &sum) ||
		    sum != checksum(&h)) {
			rc = mw_error_set(err, -EINVAL, path, name, "damaged tar header (size or "
					  "checksum)");
			goto out;
		}
		bool dir = h.typeflag == '5' || (h.typeflag == '\0' && name[strlen(name) - 1] == '/');
		const char *why = name_problem(name, !dir);
		if (why || (!dir && h.typeflag != '0' && h.typeflag != '\0')) {
			rc = mw_error_set(err, -EINVAL, path, name, "not a plain file or folder with a "
					  "relative name (%s): a bundle holds nothing else",
					  why ? why : "a link, a device or an extended header");
			goto out;
		}
		/* Headers count towards the total: what an extractor reads and writes. */
		total += size + sizeof(h);
		if (size > max_entry || total > max_total) {
			rc = mw_error_set(err, -EFBIG, path, name, "larger than a bundle may hold "
					  "(%llu bytes in one file, %llu in all)",
					  (unsigned long long)max_entry, (unsigned long long)max_total);
			goto out;
		}
		if (dir) {
			if (size) {
				rc = mw_error_set(err, -EINVAL, path, name, "a folder with contents "
						  "in the archive: damaged");
				goto out;
			}
			continue;
		}
		size_t padded = (size_t)((size + 511) / 512 * 512);
		if (!(data = malloc(padded ? padded : 1))) {
			rc = mw_error_set(err, -ENOMEM, path, name, "out of memory");
			goto out;
		}
		if (padded && gzread(gz, data, (unsigned)padded) != (int)padded) {
			rc = mw_error_set(err, -EINVAL, path, name, "the archive ends inside this file");
			goto out;
		}
		if ((rc = fn(ctx, name, data, (size_t)size)))
			goto out;
		free(data);
		data = NULL;
	}
out:
	free(data);
	gzclose(gz);
	return rc;
}
