/* src/base/sha256.c: SHA-256 through OpenSSL's libcrypto (EVP_sha256: FIPS 180-4, with the
 * SHA-NI or ARMv8 SHA instructions where the CPU has them), and the file-hash cache
 * (sha256.h).
 *
 * memwall hashed with a hand-written SHA-256 until issue 27: at about 0.4 GB/s, each run of
 * a 5 GB model spent seconds reading and hashing it, once per variant. libcrypto was already
 * loaded (libpq links it). tests/src/test_result.c checks the digests against FIPS 180-4's example
 * vectors, tests/src/test_sha256.c the cache.
 *
 * The cache is a text file, one line per file: "dev ino size mtime_s mtime_ns sha256 path".
 * Those five numbers are what stat(2) changes when a file is replaced (a new inode), rewritten
 * (size, mtime) or touched; any change to any of them means a full hash, and the entry is
 * replaced. The path is for a reader; it is not part of the key (a renamed file keeps its
 * inode and its digest). */
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
		atomic_int *stop = atomic_load(&cancel_flag);
		if (stop && atomic_load_explicit(stop, memory_order_relaxed)) {
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
	int64_t sec, nsec;
};

int mw_sha256_cache_path(char *buf, size_t n)
{
	return mw_state_path(buf, n, "sha256-cache.tsv");
}

static bool is_hex64(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 64;
}

/* One line into its key and digest; false for a line that is not an entry. */
static bool parse_line(const char *line, struct key *k, char hex[65])
{
	char h[65];
	int used = 0;
	if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNd64 " %" SCNd64 " %64s%n",
		   &k->dev, &k->ino, &k->size, &k->sec, &k->nsec, h, &used) != 6 || !is_hex64(h))
		return false;
	memcpy(hex, h, 65);
	return true;
}

static bool same_key(const struct key *a, const struct key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->sec == b->sec &&
	       a->nsec == b->nsec;
}

/* The cached digest of key k, if the cache holds one. */
static bool cache_find(const char *cache, const struct key *k, char hex[65])
{
	char line[4400];
	bool found = false;
	FILE *f = fopen(cache, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		struct key e;
		char h[65];
		if (parse_line(line, &e, h) && same_key(&e, k)) {
			memcpy(hex, h, 65);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* Writes k's entry first, then the old entries of other files (and none of this inode's),
 * to a temporary file renamed over the cache: a reader sees the old cache or the new one. */
static void cache_store(const char *cache, const struct key *k, const char *hex, const char *path)
{
	char tmp[4200], line[4400];
	FILE *in = NULL, *out = NULL;
	int fd = -1, kept = 1;
	if (mw_mkdir_parents(cache))
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", cache);
	if ((fd = mkstemp(tmp)) < 0)
		return;
	if (!(out = fdopen(fd, "w"))) {
		close(fd);
		unlink(tmp);
		return;
	}
	/* A path with a newline or tab would break the line: such a path is written as "-". */
	fprintf(out, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " %s %s\n", k->dev,
		k->ino, k->size, k->sec, k->nsec, hex, strpbrk(path, "\n\t") ? "-" : path);
	if ((in = fopen(cache, "re"))) {
		while (kept < CACHE_MAX && fgets(line, sizeof(line), in)) {
			struct key e;
			char h[65];
			if (!parse_line(line, &e, h) || (e.dev == k->dev && e.ino == k->ino) ||
			    !strchr(line, '\n'))
				continue;
			fputs(line, out);
			kept++;
		}
		fclose(in);
	}
	if (fflush(out) || fsync(fileno(out)) || fclose(out) || rename(tmp, cache)) {
		unlink(tmp);
		return;
	}
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
	k = (struct key){ (uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
			  (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec };
	bool have_cache = S_ISREG(st.st_mode) && !mw_sha256_cache_path(cache, sizeof(cache));
	if (have_cache && cache_find(cache, &k, hex)) {
		if (bytes)
			*bytes = k.size;
		if (cached)
			*cached = true;
		rc = 0;
		goto out;
	}
	if ((rc = hash_fd(fd, path, hex, bytes, err)))
		goto out;
	/* Stored only when the file did not change while it was read. */
	struct stat after;
	if (have_cache && !fstat(fd, &after) && after.st_size == st.st_size &&
	    after.st_mtim.tv_sec == st.st_mtim.tv_sec && after.st_mtim.tv_nsec == st.st_mtim.tv_nsec)
		cache_store(cache, &k, hex, path);
out:
	close(fd);
	return rc;
}
