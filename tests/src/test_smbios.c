/* tests/src/test_smbios.c: src/base/smbios.c on a hand-written SMBIOS table (tests/data/smbios/,
 * its README lists every structure) and on tables built here: sizes in MB, KB and the extended
 * field, speeds in the word and the extended field, channels from locator strings, an empty slot,
 * a truncated table; and machine.c's memory_config field when the table is missing. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "machine.h"
#include "smbios.h"
#include "test.h"

static char *fixture(const char *name, size_t *len)
{
	char path[4096];
	struct mw_error err;
	char *text = NULL;
	snprintf(path, sizeof(path), "%s/smbios/%s", getenv("MEMWALL_TEST_DATA"), name);
	if (mw_file_read(path, "fixture", "", 1u << 20, &text, len, &err)) {
		fprintf(stderr, "%s: %s\n", path, err.text);
		exit(1);
	}
	return text;
}

static json_int_t ival(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static void test_fixture(void)
{
	size_t len = 0;
	char *t = fixture("two-channel-ddr5.bin", &len);
	struct mw_error err;
	json_t *m = NULL;
	T_EQ_INT(mw_smbios_memory((const uint8_t *)t, len, "fixture", &m, &err), 0);
	T_EQ_INT(ival(m, "slots"), 4);
	T_EQ_INT(ival(m, "dimms"), 2);
	T_EQ_U64(ival(m, "total_bytes"), (16384ull + 32768ull) << 20);
	T_EQ_STR(json_string_value(json_object_get(m, "type")), "DDR5");
	T_EQ_INT(ival(m, "speed_mts"), 6400);
	T_EQ_INT(ival(m, "configured_speed_mts"), 5200);
	T_EQ_INT(ival(m, "channels"), 2);
	T_EQ_INT(ival(m, "channels_present"), 2); /* A and B, each with one empty slot */
	const json_t *d = json_object_get(m, "devices");
	T_EQ_INT(json_array_size(d), 2);
	const json_t *a1 = json_array_get(d, 0), *b1 = json_array_get(d, 1);
	T_EQ_STR(json_string_value(json_object_get(a1, "locator")), "DIMM_A1");
	T_EQ_STR(json_string_value(json_object_get(a1, "bank_locator")), "P0 CHANNEL A");
	T_EQ_STR(json_string_value(json_object_get(a1, "part_number")), "KF556C40-16");
	T_EQ_U64(ival(a1, "size_bytes"), 16384ull << 20);
	T_EQ_INT(ival(a1, "speed_mts"), 5600);
	T_EQ_INT(ival(a1, "rank"), 1);
	T_EQ_U64(ival(b1, "size_bytes"), 32768ull << 20);
	T_EQ_INT(ival(b1, "speed_mts"), 6400);
	T_EQ_INT(ival(b1, "rank"), 2);
	T_EQ_STR(json_string_value(json_object_get(b1, "manufacturer")), "Micron");
	json_decref(m);

	/* Cut inside the last type 17 structure's strings: named as truncated, never read past. */
	m = NULL;
	T_EQ_INT(mw_smbios_memory((const uint8_t *)t, len - 20, "fixture", &m, &err), -EINVAL);
	T_CONTAINS(err.text, "runs past the end");
	T_ASSERT(m == NULL);
	/* Only the BIOS and array structures: no memory device. */
	T_EQ_INT(mw_smbios_memory((const uint8_t *)t, 81, "fixture", &m, &err), -ENOENT);
	T_CONTAINS(err.text, "type 17");

	/* The reader, on a root holding the table at sys/firmware/dmi/tables/DMI. */
	char root[] = "/tmp/mw-test-smbios-XXXXXX", path[4200], why[512] = "";
	T_ASSERT(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "mkdir -p %s/sys/firmware/dmi/tables", root);
	T_EQ_INT(system(path), 0);
	snprintf(path, sizeof(path), "%s%s", root, MW_SMBIOS_TABLE);
	FILE *f = fopen(path, "wb");
	T_ASSERT(f && fwrite(t, 1, len, f) == len);
	if (f)
		fclose(f);
	T_EQ_INT(mw_smbios_memory_read(root, &m, why, sizeof(why)), 0);
	T_EQ_INT(ival(m, "dimms"), 2);
	json_decref(m);
	json_t *mach = mw_machine_describe(root);
	T_EQ_INT(ival(json_object_get(mach, "memory_config"), "channels"), 2);
	json_decref(mach);
	unlink(path);
	/* Without it: null, and the reason says how to get the figure anyway. */
	T_EQ_INT(mw_smbios_memory_read(root, &m, why, sizeof(why)), -ENOENT);
	T_CONTAINS(why, "not measured");
	T_CONTAINS(why, "dmidecode -t 17");
	mach = mw_machine_describe(root);
	T_ASSERT(json_is_null(json_object_get(mach, "memory_config")));
	T_CONTAINS(json_string_value(json_object_get(json_object_get(mach, "unavailable"),
						     "memory_config")), "not measured");
	json_decref(mach);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	T_EQ_INT(system(path), 0);
	free(t);
}

/* One type 17 structure of SMBIOS 2.8 length (0x28): no extended speed field. */
static size_t t17(uint8_t *p, unsigned size, uint32_t ext, unsigned kind, unsigned speed,
		  const char *loc, const char *bank)
{
	memset(p, 0, 0x28);
	p[0] = 17;
	p[1] = 0x28;
	p[0x0c] = size & 0xff;
	p[0x0d] = size >> 8;
	p[0x10] = 1;
	p[0x11] = 2;
	p[0x12] = kind;
	p[0x15] = speed & 0xff;
	p[0x16] = speed >> 8;
	memcpy(p + 0x1c, &ext, 4); /* little-endian hosts only, as SMBIOS itself */
	size_t n = 0x28;
	n += (size_t)sprintf((char *)p + n, "%s", loc) + 1;
	if (*bank) /* an absent string is index 0, never an empty string (DSP0134 6.1.3) */
		n += (size_t)sprintf((char *)p + n, "%s", bank) + 1;
	else
		p[0x11] = 0;
	p[n++] = 0;
	return n;
}

static void test_built(void)
{
	uint8_t buf[1024];
	size_t n = 0;
	struct mw_error err;
	json_t *m = NULL;
	/* KB-granular size (bit 15), DDR4, channels from "ChannelA-DIMM0" style locators. */
	n += t17(buf + n, 0x8000 | 512, 0, 0x1a, 3200, "ChannelA-DIMM0", "BANK 0");
	n += t17(buf + n, 8192, 0, 0x1a, 2933, "ChannelB-DIMM0", "BANK 2");
	n += t17(buf + n, 8192, 0, 0x1a, 3200, "ChannelB-DIMM1", "BANK 3");
	T_EQ_INT(mw_smbios_memory(buf, n, "built", &m, &err), 0);
	T_EQ_INT(ival(m, "dimms"), 3);
	T_EQ_U64(ival(m, "total_bytes"), (512ull << 10) + (16384ull << 20));
	T_EQ_STR(json_string_value(json_object_get(m, "type")), "DDR4");
	T_EQ_INT(ival(m, "speed_mts"), 3200);
	T_EQ_INT(ival(m, "channels"), 2);
	T_ASSERT(json_is_null(json_object_get(m, "configured_speed_mts"))); /* written as 0 */
	json_decref(m);

	/* A locator that names no channel: channels null, and channels_source says why. Mixed types. */
	n = t17(buf, 4096, 0, 0x1a, 2400, "Slot 1", "");
	n += t17(buf + n, 4096, 0, 0x22, 4800, "DIMM_A1", "");
	T_EQ_INT(mw_smbios_memory(buf, n, "built", &m, &err), 0);
	T_ASSERT(json_is_null(json_object_get(m, "channels")));
	T_CONTAINS(json_string_value(json_object_get(m, "channels_source")), "do not name");
	T_EQ_STR(json_string_value(json_object_get(m, "type")), "mixed");
	json_decref(m);

	/* Two sockets' channel A are two channels. */
	n = t17(buf, 4096, 0, 0x22, 4800, "DIMM_A1", "P0 CHANNEL A");
	n += t17(buf + n, 4096, 0, 0x22, 4800, "DIMM_A1", "P1 CHANNEL A");
	n += t17(buf + n, 0x7fff, 65536, 0x22, 4800, "CPU1_DIMM_B1", "");
	T_EQ_INT(mw_smbios_memory(buf, n, "built", &m, &err), 0);
	T_EQ_INT(ival(m, "channels"), 3);
	T_EQ_U64(ival(m, "total_bytes"), (4096ull + 4096ull + 65536ull) << 20);
	json_decref(m);

	/* Channels present against populated: the board has A, B, C and D (two slots each),
	 * modules sit in A and C only: 4 present, 2 populated (an unpopulated channel's
	 * controller counts nothing: topology.c says so) */
	static const char *const slots[] = { "DIMM_A1", "DIMM_A2", "DIMM_B1", "DIMM_B2",
					     "DIMM_C1", "DIMM_C2", "DIMM_D1", "DIMM_D2" };
	n = 0;
	for (int i = 0; i < 8; i++)
		n += t17(buf + n, i == 0 || i == 4 ? 16384 : 0, 0, 0x22, 4800, slots[i], "");
	T_EQ_INT(mw_smbios_memory(buf, n, "built", &m, &err), 0);
	T_EQ_INT(ival(m, "slots"), 8);
	T_EQ_INT(ival(m, "dimms"), 2);
	T_EQ_INT(ival(m, "channels"), 2);
	T_EQ_INT(ival(m, "channels_present"), 4);
	json_decref(m);

	/* A length byte below the header's 4: refused, not looped on. */
	buf[0] = 17;
	buf[1] = 2;
	T_EQ_INT(mw_smbios_memory(buf, 8, "built", &m, &err), -EINVAL);
}

int main(void)
{
	test_fixture();
	test_built();
	return t_done();
}
