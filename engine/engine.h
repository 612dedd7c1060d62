/* engine/engine.h: the inference engine's public face.
 *
 * The engine knows nothing of counters or result files; src/ drives it and reads counters
 * at the hooks it offers. Library functions return 0 or a negative errno-style code and
 * fill a struct eng_error when the cause is worth telling a user.
 */
#ifndef MEMWALL_ENGINE_H
#define MEMWALL_ENGINE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where outside input was wrong and how (jansson's json_error_t is the model). */
struct eng_error {
	char source[512]; /* the file at fault, "" if none */
	uint64_t offset;  /* byte offset in source, ENG_NO_OFFSET if not applicable */
	char text[768];   /* what was wrong, naming the field or tensor */
};
#define ENG_NO_OFFSET UINT64_MAX

void eng_error_clear(struct eng_error *err);
/* Fills err (which may be NULL) and returns code, so a loader can `return eng_error_set(...)`. */
int eng_error_set(struct eng_error *err, int code, const char *source, uint64_t offset,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
