/* src/base/sha256.c: SHA-256 through OpenSSL's libcrypto (EVP_sha256: FIPS 180-4, with the
 * SHA-NI or ARMv8 SHA instructions where the CPU has them), and the file-hash cache
 * (sha256.h).
 *
 * memwall hashed with a hand-written SHA-256 until issue 27: at about 0.4 GB/s, each run of
 * a 5 GB model spent seconds reading and hashing it, once per variant. libcrypto was already
 * loaded (libpq links it). tests/src/test_result.c checks the digests against FIPS 180-4's example
 * vectors, tests/src/test_sha256.c the cache.
 *
 * The cache is a text file, one line per file:
 * "dev ino size mtime_s mtime_ns ctime_s ctime_ns sha256 path". Those seven numbers are what
 * stat(2) changes when a file is replaced (a new inode), rewritten (size, mtime, ctime) or
 * touched; any change to any of them means a full hash, and the entry is replaced. The inode
 * change time is there because the modification time is not evidence: `touch -d`, or a
 * download tool that sets it from the server's Last-Modified, puts it back after the bytes
 * changed in place, while the kernel sets the ctime to now at every write, chmod, link or
 * rename and no call sets it back (inode(7)). So a renamed file is hashed again once. The
 * path is for a reader; it is not part of the key. Lines of the older six-number layout do
 * not parse as entries: they are dropped, and those files hashed again.
 *
 * The cache is memwall's, but what sits at its path is not trusted to be: it is read through
 * the bounded reader (src/base/file.h: a FIFO, a device, a folder or a file over
 * CACHE_MAX_BYTES is no cache, and nothing blocks or reads forever), and only a regular file
 * there, or none, is ever replaced. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "file.h"
#include "sha256.h"

/* The most entries kept: the newest first, the oldest dropped. */
#define CACHE_MAX 256
/* The largest cache read: CACHE_MAX lines of seven numbers, a digest and a path (PATH_MAX,
 * 4096 bytes) fit in 1.1 MiB. */
#define CACHE_MAX_BYTES (2u << 20)

static void to_hex(const unsigned char *d, unsigned n, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	for (unsigned i = 0; i < n && i < 32; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[n == 32 ? 64 : 0] = '\0';
}

void mw_sha256_init(struct mw_sha256 *s)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	s->len = 0;
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	s->ctx = ctx;
}

void mw_sha256_update(struct mw_sha256 *s, const void *data, size_t n)
{
	if (s->ctx && n && EVP_DigestUpdate(s->ctx, data, n) != 1) {
		EVP_MD_CTX_free(s->ctx);
		s->ctx = NULL;
	}
	s->len += n;
}

void mw_sha256_final(struct mw_sha256 *s, char hex[65])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	hex[0] = '\0';
	if (s->ctx && EVP_DigestFinal_ex(s->ctx, d, &n) == 1)
		to_hex(d, n, hex);
	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
}

void mw_sha256_hex(const void *data, size_t n, char hex[65])
{
	struct mw_sha256 s;
	mw_sha256_init(&s);
	mw_sha256_update(&s, data, n);
	mw_sha256_final(&s, hex);
}

static _Atomic(atomic_int *) cancel_flag;
static _Atomic uint64_t bytes_read;

void mw_sha256_cancel_hook(atomic_int *flag)
{
	atomic_store(&cancel_flag, flag);
}

uint64_t mw_sha256_bytes_read(void)
{
	return atomic_load(&bytes_read);
}

/* Whether the hooked flag (mw_sha256_cancel_hook) is set. */
static bool stopped(void)
{
	atomic_int *stop = atomic_load(&cancel_flag);
	return stop && atomic_load_explicit(stop, memory_order_relaxed);
}

/* Hashes the open file fd (path for messages) to its end. */
static int hash_fd(int fd, const char *path, char hex[65], uint64_t *bytes, struct mw_error *err)
{
	enum { CHUNK = 1 << 20 };
	struct mw_sha256 s;
	int rc = 0;
	unsigned char *buf = malloc(CHUNK);
	if (!buf)
		return mw_error_set(err, -ENOMEM, path, "", "out of memory");
	mw_sha256_init(&s);
	if (!s.ctx) {
		rc = mw_error_set(err, -ENOMEM, path, "", "libcrypto could not start a SHA-256");
		goto out;
	}
	for (;;) {
		if (stopped()) {
			rc = mw_error_set(err, -ECANCELED, path, "", "stopped by a signal while "
					  "hashing (%llu bytes hashed)", (unsigned long long)s.len);
			goto out;
		}
		ssize_t n = read(fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = mw_error_set(err, -errno, path, "", "read failed: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		atomic_fetch_add(&bytes_read, (uint64_t)n);
		mw_sha256_update(&s, buf, (size_t)n);
	}
	if (bytes)
		*bytes = s.len;
	mw_sha256_final(&s, hex);
	if (!hex[0])
		rc = mw_error_set(err, -EIO, path, "", "libcrypto failed computing SHA-256");
out:
	EVP_MD_CTX_free(s.ctx); /* NULL after a final */
	free(buf);
	return rc;
}

int mw_sha256_file(const char *path, char hex[65], uint64_t *bytes, struct mw_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mw_error_set(err, -errno, path, "", "cannot open: %s", strerror(errno));
	int rc = hash_fd(fd, path, hex, bytes, err);
	close(fd);
	return rc;
}

/* ---- The cache ------------------------------------------------------------------------------ */

struct key {
	uint64_t dev, ino, size;
	int64_t sec, nsec;   /* modification time */
	int64_t csec, cnsec; /* inode change time */
};

int mw_sha256_cache_path(char *buf, size_t n)
{
	return mw_state_path(buf, n, "sha256-cache.tsv");
}

static struct key key_of(const struct stat *st)
{
	return (struct key){ (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
			     (int64_t)st->st_mtim.tv_sec, (int64_t)st->st_mtim.tv_nsec,
			     (int64_t)st->st_ctim.tv_sec, (int64_t)st->st_ctim.tv_nsec };
}

/* One decimal field of a line and the blank after it; false on anything else (a sign on an
 * unsigned field, overflow, no digit). */
static bool field(const char **p, bool is_signed, uint64_t *u, int64_t *s)
{
	char *end;
	if (**p == ' ' || (!is_signed && **p == '-'))
		return false;
	errno = 0;
	if (is_signed)
		*s = strtoll(*p, &end, 10);
	else
		*u = strtoull(*p, &end, 10);
	if (errno || end == *p || *end != ' ')
		return false;
	*p = end + 1;
	return true;
}

/* One line into its key and digest; false for a line that is not an entry. */
static bool parse_line(const char *line, struct key *k, char hex[65])
{
	const char *p = line;
	if (!field(&p, false, &k->dev, NULL) || !field(&p, false, &k->ino, NULL) ||
	    !field(&p, false, &k->size, NULL) || !field(&p, true, NULL, &k->sec) ||
	    !field(&p, true, NULL, &k->nsec) || !field(&p, true, NULL, &k->csec) ||
	    !field(&p, true, NULL, &k->cnsec))
		return false;
	for (int i = 0; i < 64; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	if (p[64] != ' ')
		return false;
	memcpy(hex, p, 64);
	hex[64] = '\0';
	return true;
}

static bool same_key(const struct key *a, const struct key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->sec == b->sec &&
	       a->nsec == b->nsec && a->csec == b->csec && a->cnsec == b->cnsec;
}

/* The cache's text (malloc'd, NUL-terminated, *len bytes): 0, -ENOENT where there is none,
 * another -errno where what is there is no cache memwall reads (not a regular file, over
 * CACHE_MAX_BYTES, unreadable). */
static int cache_read(const char *cache, char **text, size_t *len)
{
	return mw_file_read(cache, "hash cache", "", CACHE_MAX_BYTES, text, len, NULL);
}

/* The next line of text[*at..len) as a string (its newline made a NUL), or NULL at the end;
 * *whole says whether it ended in a newline (a last line cut short by a crashed writer is
 * not an entry to copy). */
static char *next_line(char *text, size_t len, size_t *at, bool *whole)
{
	if (*at >= len)
		return NULL;
	char *line = text + *at, *nl = memchr(line, '\n', len - *at);
	*whole = nl != NULL;
	if (nl) {
		*nl = '\0';
		*at = (size_t)(nl - text) + 1;
	} else {
		*at = len;
	}
	return line;
}

/* The cached digest of key k, if the cache holds one. */
static bool cache_find(const char *cache, const struct key *k, char hex[65])
{
	char *text = NULL;
	size_t len = 0, at = 0;
	bool found = false, whole;
	if (cache_read(cache, &text, &len))
		return false;
	for (char *line; !found && !stopped() && (line = next_line(text, len, &at, &whole));) {
		struct key e;
		char h[65];
		if (parse_line(line, &e, h) && same_key(&e, k)) {
			memcpy(hex, h, 65);
			found = true;
		}
	}
	free(text);
	return found;
}

/* Writes k's entry first, then the old entries of other files (and none of this inode's),
 * to a temporary file renamed over the cache: a reader sees the old cache or the new one.
 * Only a regular file at the cache's path (or none) is replaced: a FIFO, a device, a folder
 * or a symbolic link someone put there is left as it is, and the entry is not kept. */
static void cache_store(const char *cache, const struct key *k, const char *hex, const char *path)
{
	char tmp[4200], *text = NULL;
	struct stat st;
	FILE *out = NULL;
	size_t len = 0, at = 0;
	int fd = -1, kept = 1, rc;
	bool whole;
	if (lstat(cache, &st) ? errno != ENOENT : !S_ISREG(st.st_mode))
		return;
	rc = cache_read(cache, &text, &len);
	if (rc && rc != -ENOENT && rc != -EFBIG) /* an oversized cache is started afresh */
		return;
	if (mw_mkdir_parents(cache))
		goto out;
	snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", cache);
	if ((fd = mkstemp(tmp)) < 0)
		goto out;
	if (!(out = fdopen(fd, "w"))) {
		close(fd);
		unlink(tmp);
		goto out;
	}
	/* A path with a newline or tab would break the line: such a path is written as "-". */
	fprintf(out, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 " %"
		PRId64 " %s %s\n", k->dev, k->ino, k->size, k->sec, k->nsec, k->csec, k->cnsec, hex,
		strpbrk(path, "\n\t") ? "-" : path);
	for (char *line; text && kept < CACHE_MAX && (line = next_line(text, len, &at, &whole));) {
		struct key e;
		char h[65];
		if (!whole || !parse_line(line, &e, h) || (e.dev == k->dev && e.ino == k->ino))
			continue;
		fprintf(out, "%s\n", line);
		kept++;
	}
	if (fflush(out) || fsync(fileno(out)) || fclose(out) || rename(tmp, cache))
		unlink(tmp);
out:
	free(text);
}

int mw_sha256_file_cached(const char *path, char hex[65], uint64_t *bytes, bool *cached,
			  struct mw_error *err)
{
	char cache[4096];
	struct stat st;
	struct key k;
	int rc;
	if (cached)
		*cached = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mw_error_set(err, -errno, path, "", "cannot open: %s", strerror(errno));
	if (fstat(fd, &st)) {
		rc = mw_error_set(err, -errno, path, "", "cannot examine: %s", strerror(errno));
		goto out;
	}
	k = key_of(&st);
	bool have_cache = S_ISREG(st.st_mode) && !mw_sha256_cache_path(cache, sizeof(cache));
	if (have_cache && cache_find(cache, &k, hex)) {
		if (bytes)
			*bytes = k.size;
		if (cached)
			*cached = true;
		rc = 0;
		goto out;
	}
	/* (a stop during the lookup ends the hash before its first read) */
	if ((rc = hash_fd(fd, path, hex, bytes, err)))
		goto out;
	/* Stored only when the file did not change while it was read. */
	struct stat after;
	if (have_cache && !fstat(fd, &after)) {
		struct key a = key_of(&after);
		if (same_key(&a, &k))
			cache_store(cache, &k, hex, path);
	}
out:
	close(fd);
	return rc;
}
