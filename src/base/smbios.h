/* src/base/smbios.h: the memory configuration (DIMMs, their speed, the channels they populate)
 * from the SMBIOS table, read without dmidecode.
 *
 * The table is the one the kernel exports at /sys/firmware/dmi/tables/DMI (mode 0400: root
 * only). Each type 17 ("Memory Device") structure describes one DIMM slot; the layout follows
 * the DMTF SMBIOS Reference Specification (DSP0134) 3.x, section 7.18. */
#ifndef MEMWALL_SMBIOS_H
#define MEMWALL_SMBIOS_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "mw.h"

#define MW_SMBIOS_TABLE "/sys/firmware/dmi/tables/DMI"
#define MW_SMBIOS_TABLE_MAX (1u << 20) /* SMBIOS 3 allows 4 GiB; real tables are a few KiB */

/* Parses the structures of an SMBIOS table (len bytes at buf) and describes its memory devices:
 * {"source", "slots", "dimms", "total_bytes", "type", "speed_mts", "configured_speed_mts",
 *  "channels", "channels_present", "channels_source", "devices": [{"locator", "bank_locator", "size_bytes", "type",
 *  "speed_mts", "configured_speed_mts", "manufacturer", "part_number", "rank"}]}
 * (results/README.md documents each). "channels" (with a module) and "channels_present" (with a
 * slot, empty or not) are inferred from the locator strings and are null, with channels_source
 * saying why, where they do not name a channel. *out is a new reference.
 * 0; -EINVAL with err naming the offset of a structure that runs past the table; -ENOENT when
 * the table holds no type 17 structure. */
int mw_smbios_memory(const uint8_t *buf, size_t len, const char *source, json_t **out,
		     struct mw_error *err);

/* mw_smbios_memory on root + MW_SMBIOS_TABLE (root NULL or "" for the live machine). On failure
 * why[0..n) says why and how to get the figure anyway (run as root, `sudo dmidecode -t 17`), and
 * *out is NULL. 0 or -errno. */
int mw_smbios_memory_read(const char *root, json_t **out, char *why, size_t n);
/* The same on the table at path (a sysfs root's firmware/dmi/tables/DMI). */
int mw_smbios_memory_read_path(const char *path, json_t **out, char *why, size_t n);
#endif
