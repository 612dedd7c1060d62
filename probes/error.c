/* probes/error.c: filling struct prb_error, and the names of the states a figure can be in. */
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

static const struct {
	const char *name;
	const char *reason;
} states[] = {
	[PRB_MEASURED] = { "measured", "counted over the whole interval" },
	[PRB_NOT_RUN] = { "not-run",
			  "the counter exists but did not run over the interval (multiplexed out "
			  "or never scheduled): there is no value" },
	[PRB_READ_FAILED] = { "read-failed",
			      "reading the counter failed (a read(2) error, resctrl reporting "
			      "Unavailable or Error, or a count past what the counter can make: "
			      "one below its value at open, a reset, or bytes past 2^63): there is "
			      "no value" },
	[PRB_NOT_PROVIDED] = { "not-provided",
			       "this backend does not count this figure (it has no read/write "
			       "split)" },
};

const char *prb_state_name(enum prb_state s)
{
	return (unsigned)s < sizeof(states) / sizeof(states[0]) ? states[s].name : "unknown";
}

const char *prb_state_reason(enum prb_state s)
{
	return (unsigned)s < sizeof(states) / sizeof(states[0]) ? states[s].reason :
								   "unknown state";
}
