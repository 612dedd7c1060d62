/* src/base/util.c: errors, option parsing, the clock, the CPU count and the version string. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mw.h"
#include "redact.h"
#include "text.h"
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

/* s to stderr as a message shows it: credentials in URLs redacted (redact.h), control
 * characters escaped (text.h). */
static void put_clean(const char *s)
{
	char *r = mw_redact_url(s, NULL);
	fputs(mw_esc_lines(r ? r : s), stderr);
	free(r);
}

void mw_error_print(const struct mw_error *err)
{
	/* Sources, fields and texts quote files and records: escaped, so that no byte of theirs
	 * reaches the terminal as a control sequence (text.h). */
	fputs("memwall: ", stderr);
	if (err->source[0]) {
		put_clean(err->source);
		if (err->line > 0)
			fprintf(stderr, ":%d", err->line);
		fputs(": ", stderr);
	}
	if (err->field[0]) {
		put_clean(err->field);
		fputs(": ", stderr);
	}
	/* A path that failed without saying why (an allocation, most likely) still says
	 * something: never a bare "memwall: ". */
	put_clean(err->text[0] ? err->text : "failed without a description (most likely out of "
		  "memory); please report it");
	fputc('\n', stderr);
}

int mw_fail(int exit_code, const char *verb, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	/* The message quotes options, paths and records: escaped (text.h). */
	fprintf(stderr, "memwall %s: ", verb);
	put_clean(n >= 0 ? msg : fmt);
	fputc('\n', stderr);
	if (n >= 0)
		free(msg);
	return exit_code;
}

char *mw_path_trim(char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	return path;
}

int mw_parse_long(const char *text, long min, long max, long *out)
{
	char *end = NULL;
	/* Decimal, or hexadecimal after 0x; never octal (issue 28: base 0 read "010" as 8 and
	 * refused "09"). No leading space or '+', which strtol would skip. */
	if (!text || !((*text >= '0' && *text <= '9') || (*text == '-' && text[1] >= '0' &&
							    text[1] <= '9')))
		return -EINVAL;
	const char *digits = *text == '-' ? text + 1 : text;
	int base = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') ? 16 : 10;
	errno = 0;
	long v = strtol(text, &end, base);
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

uint64_t mw_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double mw_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *mw_mb_text(double bytes, char *buf, size_t n)
{
	double mb = bytes / 1e6, a = fabs(mb);
	/* 2 decimals below 10, 3 below 1, and so on: "%.1f" showed 0.477 as 0.5 (issue 44) */
	int decimals = 1;
	for (double lim = 10.0; a > 0 && a < lim && decimals < 9; lim /= 10.0)
		decimals++;
	snprintf(buf, n, "%.*f", a >= 10.0 || a == 0 ? 1 : decimals, mb);
	return buf;
}

char *mw_utc_now(char *buf, size_t n, bool compact)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

int mw_utc_parse(const char *s, int64_t *out)
{
	struct tm tm = { 0 }, norm;
	char back[32] = "";
	const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!end)
		return -EINVAL;
	size_t whole = (size_t)(end - s);
	/* RFC 3339's fractional seconds (other tools write "...:35.001Z"; issue 44): a point and
	 * at least one digit, then the Z */
	if (*end == '.') {
		size_t frac = strspn(end + 1, "0123456789");
		if (!frac)
			return -EINVAL;
		end += 1 + frac;
	}
	time_t when = !strcmp(end, "Z") ? timegm(&tm) : (time_t)-1;
	/* strptime takes day 30 of February; written back, a time out of range differs */
	if (when == (time_t)-1 || !gmtime_r(&when, &norm))
		return -EINVAL;
	strftime(back, sizeof(back), "%Y-%m-%dT%H:%M:%S", &norm);
	if (strlen(back) != whole || strncmp(back, s, whole))
		return -EINVAL;
	*out = (int64_t)when;
	return 0;
}

int mw_cpus_allowed(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

const char *mw_version(void)
{
	static char buf[128];
	if (!buf[0])
		snprintf(buf, sizeof(buf), "%s (git %s)", MW_VERSION, MW_GIT_DESCRIBE);
	return buf;
}

void mw_context_tokens(int *out, int n, int bos, int vocab, uint64_t seed)
{
	uint64_t x = seed;
	if (n < 1)
		return;
	out[0] = bos;
	for (int i = 1; i < n; i++) {
		uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
		out[i] = (int)((z ^ (z >> 31)) % (uint64_t)vocab);
	}
}

/* Whether t is an ISO 8601 date or UTC time as records write them: YYYY-MM-DD, optionally
 * THH:MM, :SS and Z, every field in range. */
bool mw_iso_date(const char *t)
{
	int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
	if (sscanf(t, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10 || t[4] != '-' ||
	    t[7] != '-' || strspn(t, "0123456789-") < 10)
		return false;
	const char *r = t + 10;
	if (*r == 'T') {
		int k = 0;
		if (sscanf(r, "T%2d:%2d%n", &h, &mi, &k) != 2 || k != 6)
			return false;
		r += 6;
		if (*r == ':') {
			if (sscanf(r, ":%2d%n", &sec, &k) != 1 || k != 3)
				return false;
			r += 3;
		}
		r += *r == 'Z';
	}
	return !*r && y >= 1970 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h <= 23 &&
	       mi <= 59 && sec <= 60;
}
