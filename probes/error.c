/* probes/error.c: filling struct prb_error. */
#include <stdio.h>
#include <string.h>

#include "probes.h"

void prb_error_clear(struct prb_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

int prb_error_set(struct prb_error *err, int code, const char *source, const char *fmt, ...)
{
	if (!err)
		return code;
	snprintf(err->source, sizeof(err->source), "%s", source ? source : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return code;
}
