/* src/sha256.c: SHA-256, written from FIPS 180-4 ("Secure Hash Standard", NIST, 2015).
 *
 * Section numbers below refer to that document. Written here rather than taken from a library
 * because it is ~100 lines, has no configuration, and memwall otherwise needs no crypto
 * dependency; tests/test_result.c checks it against the FIPS 180-4 example vectors. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sha256.h"

/* 4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

/* 6.2.2: the compression function applied to one 512-bit block. */
static void compress(uint32_t h[8], const uint8_t block[64])
{
	uint32_t w[64];
	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
		       (uint32_t)block[4 * t + 2] << 8 | block[4 * t + 3];
	for (int t = 16; t < 64; t++) {
		/* 4.1.2 (4.6), (4.7): the small sigma functions. */
		uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (int t = 0; t < 64; t++) {
		/* 4.1.2 (4.2)-(4.5): Ch, Maj and the big Sigma functions. */
		uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = hh + S1 + ch + K[t] + w[t];
		uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t t2 = S0 + maj;
		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += hh;
}

void mw_sha256_init(struct mw_sha256 *s)
{
	/* 5.3.3: the initial hash value. */
	static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	memcpy(s->h, h0, sizeof(h0));
	s->len = 0;
	s->used = 0;
}

void mw_sha256_update(struct mw_sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	s->len += n;
	if (s->used) {
		size_t take = 64 - s->used < n ? 64 - s->used : n;
		memcpy(s->buf + s->used, p, take);
		s->used += take;
		p += take;
		n -= take;
		if (s->used < 64)
			return;
		compress(s->h, s->buf);
		s->used = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		compress(s->h, p);
	memcpy(s->buf, p, n);
	s->used = n;
}

void mw_sha256_final(struct mw_sha256 *s, char hex[65])
{
	/* 5.1.1: append a 1 bit, zeros to 448 mod 512, then the length in bits, big-endian. */
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = { 0x80 };
	size_t npad = (s->used < 56 ? 56 : 120) - s->used;
	for (int i = 0; i < 8; i++)
		pad[npad + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
	mw_sha256_update(s, pad, npad + 8);
	for (int i = 0; i < 8; i++)
		snprintf(hex + 8 * i, 9, "%08x", s->h[i]);
	hex[64] = '\0';
}

void mw_sha256_hex(const void *data, size_t n, char hex[65])
{
	struct mw_sha256 s;
	mw_sha256_init(&s);
	mw_sha256_update(&s, data, n);
	mw_sha256_final(&s, hex);
}

static _Atomic(atomic_int *) cancel_flag;

void mw_sha256_cancel_hook(atomic_int *flag)
{
	atomic_store(&cancel_flag, flag);
}

int mw_sha256_file(const char *path, char hex[65], uint64_t *bytes, struct mw_error *err)
{
	uint8_t buf[1 << 16];
	struct mw_sha256 s;
	int rc = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mw_error_set(err, -errno, path, "", "cannot open: %s", strerror(errno));
	mw_sha256_init(&s);
	for (;;) {
		atomic_int *stop = atomic_load(&cancel_flag);
		if (stop && atomic_load_explicit(stop, memory_order_relaxed)) {
			rc = mw_error_set(err, -ECANCELED, path, "", "stopped by a signal while "
					  "hashing (%llu bytes hashed)", (unsigned long long)s.len);
			goto out;
		}
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = mw_error_set(err, -errno, path, "", "read failed: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		mw_sha256_update(&s, buf, (size_t)n);
	}
	if (bytes)
		*bytes = s.len;
	mw_sha256_final(&s, hex);
out:
	close(fd);
	return rc;
}
