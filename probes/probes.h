/* probes/probes.h: hardware and software counters, the probes library's public face.
 *
 * The probes know nothing of the engine; src/ reads them at the engine's hooks.
 * A counter that cannot be read is reported as unavailable with its reason: never as zero,
 * never as an estimate.
 */
#ifndef MEMWALL_PROBES_H
#define MEMWALL_PROBES_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where outside input (a sysfs file, an event string) was wrong, or why a counter is absent. */
struct prb_error {
	char source[512]; /* the sysfs path or event at fault, "" if none */
	char text[768];   /* what was wrong, and the fix where there is one */
};

void prb_error_clear(struct prb_error *err);
int prb_error_set(struct prb_error *err, int code, const char *source, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
