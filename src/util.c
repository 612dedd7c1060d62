/* src/util.c: errors, option parsing and the version string. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mw.h"
#include "version.h"

void mw_error_clear(struct mw_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

int mw_error_set(struct mw_error *err, int code, const char *source, const char *field,
		 const char *fmt, ...)
{
	if (!err)
		return code;
	snprintf(err->source, sizeof(err->source), "%s", source ? source : "");
	snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return code;
}

void mw_error_print(const struct mw_error *err)
{
	fputs("memwall: ", stderr);
	if (err->source[0]) {
		fputs(err->source, stderr);
		if (err->line > 0)
			fprintf(stderr, ":%d", err->line);
		fputs(": ", stderr);
	}
	if (err->field[0])
		fprintf(stderr, "%s: ", err->field);
	fprintf(stderr, "%s\n", err->text);
}

int mw_fail(int exit_code, const char *verb, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "memwall %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return exit_code;
}

int mw_parse_long(const char *text, long min, long max, long *out)
{
	char *end = NULL;
	if (!text || !*text)
		return -EINVAL;
	errno = 0;
	long v = strtol(text, &end, 0);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int mw_parse_double(const char *text, double min, double max, double *out)
{
	char *end = NULL;
	if (!text || !*text)
		return -EINVAL;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || *end || !isfinite(v) || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

const char *mw_version(void)
{
	static char buf[128];
	if (!buf[0])
		snprintf(buf, sizeof(buf), "%s (git %s)", MW_VERSION, MW_GIT_DESCRIBE);
	return buf;
}
