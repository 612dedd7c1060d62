/* engine/hugecopy.h: a model file copied into anonymous 2 MiB pages. Internal to engine/. */
#ifndef MEMWALL_HUGECOPY_H
#define MEMWALL_HUGECOPY_H

#include <stddef.h>

#include "engine.h"

/* Reads the len bytes of fd into new anonymous memory, 2 MiB aligned and advised
 * MADV_HUGEPAGE, writable until eng_huge_seal. *map_bytes (len rounded up to 2 MiB) is what
 * the caller munmaps. Errors name path. */
int eng_huge_copy(int fd, size_t len, const char *path, void **map, size_t *map_bytes,
		  struct eng_error *err);
/* Makes the copy read-only, so it serves exactly as the file mapping would. */
int eng_huge_seal(void *map, size_t map_bytes, const char *path, struct eng_error *err);

#endif
