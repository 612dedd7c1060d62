/* engine/hugecopy.c: a file read into anonymous memory in 2 MiB transparent huge pages
 * (hugecopy.h), for the load modes that copy the model (engine.h, enum eng_load_mode).
 *
 * The memory is advised MADV_HUGEPAGE before its first touch, so that the faults of the read
 * itself take huge pages. File pages come in 2 MiB only from file systems with large folios,
 * or from khugepaged or MADV_COLLAPSE (Linux 6.1) under CONFIG_READ_ONLY_THP_FOR_FS; on the VM
 * this was written on, MADV_COLLAPSE returned EINVAL and MADV_HUGEPAGE on the file mapping gave
 * 18 MB of 438 in 2 MiB pages, where reading 4 KiB pages ran at 0.83-0.93x of 2 MiB ones.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hugecopy.h"

/* A transparent huge page on x86-64 and on arm64 with 4 KiB granules. */
#define HUGE_PAGE ((size_t)2 << 20)

int eng_huge_copy(int fd, size_t len, const char *path, void **map, size_t *map_bytes,
		  struct eng_error *err)
{
	size_t bytes = (len + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	int rc;
	if (bytes < len || bytes > SIZE_MAX - HUGE_PAGE)
		return eng_error_set(err, -EFBIG, path, ENG_NO_OFFSET, "too large to copy here");
	/* Over-allocate by one huge page and trim both ends to a 2 MiB aligned start. */
	char *raw = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		rc = -errno;
		return eng_error_set(err, rc, path, ENG_NO_OFFSET,
				     "cannot allocate %zu bytes to copy the model into (the copying "
				     "load modes need the model's size in free RAM; --load mmap "
				     "does not): %s", bytes, strerror(-rc));
	}
	char *start = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (start > raw)
		munmap(raw, (size_t)(start - raw));
	size_t tail = (size_t)(raw + bytes + HUGE_PAGE - (start + bytes));
	if (tail)
		munmap(start + bytes, tail);
	/* A kernel without THP refuses the advice; the copy then works in small pages. */
	(void)madvise(start, bytes, MADV_HUGEPAGE);
	/* In pieces of 64 MiB: a signal stops the copy within a fraction of a second. */
	for (size_t done = 0; done < len;) {
		if (eng_cancelled()) {
			munmap(start, bytes);
			return eng_error_set(err, -ECANCELED, path, ENG_NO_OFFSET,
					     "stopped by a signal while reading the model into memory "
					     "(%zu of %zu bytes read)", done, len);
		}
		size_t want = len - done < ((size_t)64 << 20) ? len - done : (size_t)64 << 20;
		ssize_t got = pread(fd, start + done, want, (off_t)done);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			rc = got < 0 ? -errno : -EIO;
			munmap(start, bytes);
			return eng_error_set(err, rc, path, done,
					     "cannot read the model into memory at offset %zu: %s",
					     done, got < 0 ? strerror(-rc) : "the file shrank");
		}
		done += (size_t)got;
	}
	*map = start;
	*map_bytes = bytes;
	return 0;
}

int eng_huge_seal(void *map, size_t map_bytes, const char *path, struct eng_error *err)
{
	if (mprotect(map, map_bytes, PROT_READ)) {
		int rc = -errno;
		return eng_error_set(err, rc, path, ENG_NO_OFFSET,
				     "cannot make the model's copy read-only: %s", strerror(-rc));
	}
	return 0;
}
