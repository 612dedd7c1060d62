/* probes/core_pfm.c: core events by name, through libpfm4.
 *
 * libpfm4's pfmlib_perf_event.h carries its own copy of struct perf_event_attr, which clashes
 * with linux/perf_event.h; this file includes only libpfm4 and hands back plain numbers.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <perfmon/pfmlib_perf_event.h>

int prb_pfm_encode(const char *name, uint32_t *type, uint64_t *config, uint64_t *config1,
	       uint64_t *config2, char *why, size_t why_size);

int prb_pfm_encode(const char *name, uint32_t *type, uint64_t *config, uint64_t *config1,
	       uint64_t *config2, char *why, size_t why_size)
{
	static int init_rc = -1;
	struct perf_event_attr attr;
	pfm_perf_encode_arg_t arg;
	int rc;

	if (init_rc < 0)
		init_rc = pfm_initialize();
	if (init_rc != PFM_SUCCESS) {
		snprintf(why, why_size, "libpfm4 did not initialize: %s", pfm_strerror(init_rc));
		return -ENOENT;
	}
	memset(&attr, 0, sizeof(attr));
	memset(&arg, 0, sizeof(arg));
	arg.attr = &attr;
	arg.size = sizeof(arg);
	/* PFM_PLM3 | PFM_PLM0: user and kernel; the caller drops kernel if that is refused */
	rc = pfm_get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
	if (rc != PFM_SUCCESS) {
		snprintf(why, why_size, "libpfm4 does not know \"%s\" for this CPU: %s", name,
			 pfm_strerror(rc));
		return -ENOENT;
	}
	*type = attr.type;
	*config = attr.config;
	*config1 = attr.config1;
	*config2 = attr.config2;
	return 0;
}
