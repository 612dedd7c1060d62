/* engine/error.c: filling struct eng_error, and the cancellation flag (engine.h). */
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

static volatile sig_atomic_t *cancel_flag;

void eng_cancel_hook(volatile sig_atomic_t *flag)
{
	cancel_flag = flag;
}

bool eng_cancelled(void)
{
	volatile sig_atomic_t *f = cancel_flag;
	return f && *f;
}
