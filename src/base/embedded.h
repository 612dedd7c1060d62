/* src/base/embedded.h: files compiled into the memwall binary by src/base/embed.c: the protocol and
 * result schemas and the default protocol, so an installed memwall needs no source tree. */
#ifndef MEMWALL_EMBEDDED_H
#define MEMWALL_EMBEDDED_H

#include <stddef.h>

struct mw_embedded {
	const char *name; /* base name, e.g. "result.schema.json" */
	const char *data; /* NUL-terminated */
	size_t len;       /* bytes, without the NUL */
};

/* The table, ended by a NULL name. Static storage. */
extern const struct mw_embedded mw_embedded_files[];

/* The embedded file called name, or NULL. Static storage. */
const struct mw_embedded *mw_embedded_find(const char *name);

#endif
