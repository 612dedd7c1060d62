/* src/sha256.h: SHA-256 of files and buffers, to pin model files and protocols in results. */
#ifndef MEMWALL_SHA256_H
#define MEMWALL_SHA256_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mw.h"

struct mw_sha256 {
	uint32_t h[8];
	uint64_t len;     /* bytes hashed so far */
	uint8_t buf[64];  /* the partial block */
	size_t used;      /* bytes in buf */
};

void mw_sha256_init(struct mw_sha256 *s);
void mw_sha256_update(struct mw_sha256 *s, const void *data, size_t n);
/* Writes the 64 lowercase hex digits and a NUL to hex[65]. */
void mw_sha256_final(struct mw_sha256 *s, char hex[65]);

/* hex[65] receives the digest of n bytes at data. */
void mw_sha256_hex(const void *data, size_t n, char hex[65]);
/* Hashes the file at path; *bytes (may be NULL) receives its size. 0, or -errno with err
 * naming the file; -ECANCELED when the hooked flag (below) was set during the hash. */
int mw_sha256_file(const char *path, char hex[65], uint64_t *bytes, struct mw_error *err);
/* The flag a signal handler sets to stop mw_sha256_file within a second (it is checked every
 * 64 KiB); NULL turns the check off. One per process, as signals are. */
void mw_sha256_cancel_hook(atomic_int *flag);

#endif
