/* engine/error.c: filling struct eng_error, and the cancellation flag (engine.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

void eng_error_clear(struct eng_error *err)
{
	if (!err)
		return;
	memset(err, 0, sizeof(*err));
	err->offset = ENG_NO_OFFSET;
}

int eng_error_set(struct eng_error *err, int code, const char *source, uint64_t offset,
		  const char *fmt, ...)
{
	if (!err)
		return code;
	snprintf(err->source, sizeof(err->source), "%s", source ? source : "");
	err->offset = offset;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return code;
}

/* A signal handler may store only to lock-free atomics. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the cancellation flag must be lock-free");

/* The hook itself is atomic too: a caller may swap flags while a fill's threads read it. */
static _Atomic(atomic_int *) cancel_flag;

void eng_cancel_hook(atomic_int *flag)
{
	atomic_store(&cancel_flag, flag);
}

bool eng_cancelled(void)
{
	atomic_int *f = atomic_load(&cancel_flag);
	return f && atomic_load_explicit(f, memory_order_relaxed);
}
