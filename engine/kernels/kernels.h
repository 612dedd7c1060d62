/* engine/kernels/kernels.h: the registry of ISA tables (kernels.c), for the engine.
 *
 * The table's shape, its conventions and the tables themselves are in ops.h, which this
 * includes. The engine calls only through a `const struct krn_ops *` got from here.
 *
 * Internal to engine/: src/ reaches kernels only through engine.h.
 */
#ifndef MEMWALL_KERNELS_H
#define MEMWALL_KERNELS_H

#include <stddef.h>

#include "ops.h"

/* Every table compiled into this build, best first; *n receives the count. Static storage. */
const struct krn_ops *const *krn_ops_all(size_t *n);
/* The table named `name`, or the best supported one for NULL or "auto". NULL when the name is
 * unknown or that ISA is not supported on this CPU. Static storage. */
const struct krn_ops *krn_ops_find(const char *name);

#endif
