/* engine/format/hugecopy.h: a model file copied into anonymous 2 MiB pages, in parallel, optionally
 * rearranged on the way (the x8 repack). Internal to engine/. */
#ifndef MEMWALL_HUGECOPY_H
#define MEMWALL_HUGECOPY_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* New anonymous memory for len bytes, 2 MiB aligned and advised MADV_HUGEPAGE before its
 * first touch, writable until eng_huge_seal, not yet filled. *map_bytes (len rounded up to
 * 2 MiB) is what the caller munmaps. Errors name path. */
int eng_huge_alloc(size_t len, const char *path, void **map, size_t *map_bytes,
		   struct eng_error *err);

/* One piece of a fill: bytes [off, off + len) of the destination. With fn NULL they are the
 * file's same bytes (read with pread, the kernel's one copy out of the page cache); otherwise
 * fn writes them from the file's mapping src (dst and src are the bases of the whole image,
 * not of the piece), using arg and the range [from, to) as it defines them. */
struct eng_fill_piece {
	size_t off, len;
	void (*fn)(const struct eng_fill_piece *p, uint8_t *dst, const uint8_t *src);
	const void *arg;
	size_t from, to;
};

/* A growing list of pieces (start zeroed; free v). */
struct eng_fill_list {
	struct eng_fill_piece *v;
	size_t n, cap;
};
/* Appends p: 0 or -ENOMEM. */
int eng_fill_add(struct eng_fill_list *l, struct eng_fill_piece p);
/* Appends plain copies of [from, to) in pieces of at most ENG_FILL_PIECE bytes. */
int eng_fill_add_plain(struct eng_fill_list *l, size_t from, size_t to);
/* Bytes per piece: large enough that taking one costs nothing, small enough (a few ms of one
 * core) that threads finish together and a signal is seen at once. */
#define ENG_FILL_PIECE ((size_t)2 << 20)

/* Fills dst from the file fd (mapped at src, which may be NULL when no piece has an fn) piece
 * by piece on every CPU of the caller's affinity mask, each thread taking the next piece from
 * a shared counter, checking eng_cancelled between pieces (-ECANCELED, err saying "stopped by
 * a signal while reading the model into memory"). *threads (may be NULL) gets the threads
 * used. dst is left as it is on failure: the caller unmaps it. */
int eng_huge_fill(uint8_t *dst, int fd, const uint8_t *src, const struct eng_fill_list *l,
		  const char *path, int *threads, struct eng_error *err);

/* Reads the len bytes of fd into eng_huge_alloc memory with eng_huge_fill: every piece a plain
 * copy. */
int eng_huge_copy(int fd, size_t len, const char *path, void **map, size_t *map_bytes,
		  int *threads, struct eng_error *err);
/* Makes the copy read-only, so it serves exactly as the file mapping would. */
int eng_huge_seal(void *map, size_t map_bytes, const char *path, struct eng_error *err);

/* The bytes of the mapping that starts at map that the kernel backs with transparent huge
 * pages (AnonHugePages of its entry in /proc/self/smaps), or a negative errno when that cannot
 * be read (no procfs, no THP line). */
int64_t eng_huge_pages_bytes(const void *map);

#endif
