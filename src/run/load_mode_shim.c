/* TEMPORARY until the engine branch lands eng_load_mode_parse/name. */
#include <errno.h>
#include <string.h>
#include "engine.h"
static const char *const names[] = { [ENG_LOAD_MMAP] = "mmap", [ENG_LOAD_HUGE_COPY] = "huge-copy", [ENG_LOAD_REPACK] = "repack" };
const char *eng_load_mode_name(enum eng_load_mode m);
int eng_load_mode_parse(const char *name, enum eng_load_mode *out);
const char *eng_load_mode_name(enum eng_load_mode m) { return names[m]; }
int eng_load_mode_parse(const char *name, enum eng_load_mode *out)
{
	for (int i = 0; i < 3; i++) if (!strcmp(names[i], name)) { *out = (enum eng_load_mode)i; return 0; }
	return -EINVAL;
}
int eng_load_mode_count(void);
int eng_load_mode_count(void) { return 3; }
