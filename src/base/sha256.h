/* src/base/sha256.h: SHA-256 of files and buffers, to pin model files and protocols in
 * results; OpenSSL's libcrypto computes it (EVP, with the CPU's SHA instructions where it has
 * them). A file's digest is kept in a cache in the state folder, keyed on what changes when
 * the file does, so a 5 GB model is read once, not at every run and variant. */
#ifndef MEMWALL_SHA256_H
#define MEMWALL_SHA256_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mw.h"

/* A hash in progress: mw_sha256_init, any number of updates, mw_sha256_final (which frees
 * it). */
struct mw_sha256 {
	void *ctx;    /* an EVP_MD_CTX; NULL after a failed init (final then gives "") */
	uint64_t len; /* bytes hashed so far */
};

void mw_sha256_init(struct mw_sha256 *s);
void mw_sha256_update(struct mw_sha256 *s, const void *data, size_t n);
/* Writes the 64 lowercase hex digits and a NUL to hex[65] ("" if libcrypto failed). */
void mw_sha256_final(struct mw_sha256 *s, char hex[65]);

/* hex[65] receives the digest of n bytes at data. */
void mw_sha256_hex(const void *data, size_t n, char hex[65]);
/* Hashes the file at path, reading all of it; *bytes (may be NULL) receives its size. 0, or
 * -errno with err naming the file; -ECANCELED when the hooked flag (below) was set during
 * the hash. */
int mw_sha256_file(const char *path, char hex[65], uint64_t *bytes, struct mw_error *err);
/* As mw_sha256_file, through the hash cache: a file whose device, inode, size, modification
 * time and inode change time (nanoseconds) are those of a cached entry is not read; any other
 * file is hashed whole and its entry written (atomically, a temporary file renamed over the
 * cache). The change time is what catches a file rewritten in place with its old size and
 * mtime forced back (touch -d, a download tool that sets the server's Last-Modified): no
 * call sets it back. The cache is $MEMWALL_STATE_DIR/sha256-cache.tsv, else
 * $XDG_STATE_HOME/memwall/..., else ~/.local/state/memwall/...; it is read through the
 * bounded reader (src/base/file.h), so a FIFO or a device there never blocks, and a cache
 * that cannot be read or written only costs the read. A stop (the hooked flag) during the
 * lookup ends the call with -ECANCELED before the file is read. *cached (may be NULL) says
 * whether the entry served. */
int mw_sha256_file_cached(const char *path, char hex[65], uint64_t *bytes, bool *cached,
			  struct mw_error *err);
/* The cache's path into buf; -ENOENT when no state folder can be named. */
int mw_sha256_cache_path(char *buf, size_t n);
/* Bytes mw_sha256_file has read from files in this process (for tests: a cache hit reads
 * none). */
uint64_t mw_sha256_bytes_read(void);
/* The flag a signal handler sets to stop mw_sha256_file within a second (it is checked every
 * MiB); NULL turns the check off. One per process, as signals are. */
void mw_sha256_cancel_hook(atomic_int *flag);

#endif
