/* src/base/smbios.c: SMBIOS type 17 (Memory Device) structures, parsed by hand.
 *
 * Offsets are those of DSP0134 3.x, section 7.18 (Memory Device, Type 17); a field past a
 * structure's length is absent (older SMBIOS versions wrote shorter structures) and reads as
 * unknown. Strings are referred to by a 1-based index into the NUL-terminated strings that follow
 * the structure's formatted area, which ends with an extra NUL (section 6.1.3). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "file.h"
#include "smbios.h"

enum {
	T17_SIZE = 0x0c,           /* WORD: MB (bit 15 clear) or KB (set); 0x7fff: see EXT_SIZE */
	T17_LOCATOR = 0x10,        /* string: the slot's silkscreen name, "DIMM_A1" */
	T17_BANK = 0x11,           /* string: "BANK 0", "P0 CHANNEL A" */
	T17_TYPE = 0x12,           /* BYTE: table 76 */
	T17_SPEED = 0x15,          /* WORD: MT/s; 0 unknown, 0xffff see EXT_SPEED */
	T17_MANUFACTURER = 0x17,   /* string */
	T17_PART = 0x1a,           /* string */
	T17_ATTRIBUTES = 0x1b,     /* BYTE: bits 3:0 the rank, 0 unknown */
	T17_EXT_SIZE = 0x1c,       /* DWORD: MB, bits 30:0 (2.7+) */
	T17_CONF_SPEED = 0x20,     /* WORD: MT/s configured (2.7+) */
	T17_EXT_SPEED = 0x54,      /* DWORD: MT/s (3.3+) */
	T17_EXT_CONF_SPEED = 0x58, /* DWORD: MT/s (3.3+) */
};

/* Memory Device Type (DSP0134 table 76). */
static const char *const mem_types[] = {
	[0x12] = "DDR", [0x13] = "DDR2", [0x18] = "DDR3", [0x1a] = "DDR4",
	[0x1b] = "LPDDR", [0x1c] = "LPDDR2", [0x1d] = "LPDDR3", [0x1e] = "LPDDR4",
	[0x20] = "HBM", [0x21] = "HBM2", [0x22] = "DDR5", [0x23] = "LPDDR5", [0x24] = "HBM3",
};

struct dstruct {
	const uint8_t *p;   /* the formatted area */
	uint8_t len;        /* its length */
	const char *strings[32];
	int nstrings;
};

static unsigned byte_at(const struct dstruct *s, unsigned off)
{
	return off < s->len ? s->p[off] : 0;
}

static unsigned word_at(const struct dstruct *s, unsigned off)
{
	return off + 1 < s->len ? (unsigned)s->p[off] | (unsigned)s->p[off + 1] << 8 : 0;
}

static uint32_t dword_at(const struct dstruct *s, unsigned off)
{
	return off + 3 < s->len ? (uint32_t)word_at(s, off) | (uint32_t)word_at(s, off + 2) << 16 : 0;
}

static const char *string_at(const struct dstruct *s, unsigned off)
{
	unsigned i = byte_at(s, off);
	return i >= 1 && (int)i <= s->nstrings ? s->strings[i - 1] : NULL;
}

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *mts_or_null(unsigned mts)
{
	return mts ? json_integer(mts) : json_null();
}

static uint64_t dimm_bytes(const struct dstruct *s)
{
	unsigned size = word_at(s, T17_SIZE);
	if (size == 0 || size == 0xffff)
		return 0; /* empty slot, or unknown */
	if (size == 0x7fff)
		return (uint64_t)(dword_at(s, T17_EXT_SIZE) & 0x7fffffffu) << 20;
	if (size & 0x8000)
		return (uint64_t)(size & 0x7fff) << 10;
	return (uint64_t)size << 20;
}

/* The channel a slot is on, from its names: "CHANNEL A" / "Channel-B" / "ChannelA" in either
 * locator, else a letter followed by digits at the end of the locator ("DIMM_A1", "A2",
 * "CPU0_DIMM_B1"). The socket prefix ("P0", "CPU1", "NODE 1") of the bank locator is kept so two
 * sockets' channel A count twice. 0 with key filled, -ENOENT when the names say nothing. */
static int channel_key(const char *loc, const char *bank, char *key, size_t n)
{
	const char *names[2] = { bank, loc };
	for (int i = 0; i < 2; i++) {
		const char *s = names[i];
		for (const char *p = s; p && *p; p++) {
			if (strncasecmp(p, "channel", 7))
				continue;
			p += 7;
			while (*p == ' ' || *p == '-' || *p == '_')
				p++;
			if (isalnum((unsigned char)*p)) {
				snprintf(key, n, "%.*s%c", (int)(p - 7 - s), s, toupper((unsigned char)*p));
				return 0;
			}
		}
	}
	size_t l = loc ? strlen(loc) : 0, d = l;
	while (d > 0 && isdigit((unsigned char)loc[d - 1]))
		d--;
	if (d == l || d == 0 || !isalpha((unsigned char)loc[d - 1]) ||
	    (d >= 2 && isalpha((unsigned char)loc[d - 2])))
		return -ENOENT;
	snprintf(key, n, "%.*s%c", (int)(d - 1), loc, toupper((unsigned char)loc[d - 1]));
	return 0;
}

/* Splits the structure at buf[off..len) into its formatted area and strings; *next receives the
 * offset of the structure after it. -EINVAL when it runs past the table. */
static int split_struct(const uint8_t *buf, size_t len, size_t off, struct dstruct *s, size_t *next)
{
	if (off + 4 > len || buf[off + 1] < 4 || off + buf[off + 1] > len)
		return -EINVAL;
	s->p = buf + off;
	s->len = buf[off + 1];
	s->nstrings = 0;
	size_t i = off + s->len;
	if (i + 1 < len && buf[i] == 0 && buf[i + 1] == 0) {
		*next = i + 2;
		return 0;
	}
	while (i < len) {
		const char *str = (const char *)buf + i;
		size_t sl = strnlen(str, len - i);
		if (i + sl >= len)
			return -EINVAL;
		if (s->nstrings < (int)(sizeof(s->strings) / sizeof(s->strings[0])))
			s->strings[s->nstrings++] = str;
		i += sl + 1;
		if (i < len && buf[i] == 0) {
			*next = i + 1;
			return 0;
		}
	}
	return -EINVAL;
}

struct summary {
	int slots, dimms, channels, present;
	uint64_t total;
	unsigned speed, conf_speed;
	const char *type;
	bool mixed, channels_unknown, present_unknown;
	char keys[64][64];    /* channels with a module */
	char slot_keys[64][64]; /* channels with a slot, empty or not */
};

/* Adds key to the set keys[0 .. *n) unless it is there. */
static void key_add(char (*keys)[64], int *n, const char *key)
{
	int k;
	for (k = 0; k < *n && strcmp(keys[k], key); k++)
		;
	if (k == *n && k < 64)
		snprintf(keys[(*n)++], sizeof(keys[0]), "%s", key);
}

/* Every slot's channel, populated or not: the channels the board has. */
static void slot_channel(const struct dstruct *s, struct summary *m)
{
	char key[64];
	if (channel_key(string_at(s, T17_LOCATOR), string_at(s, T17_BANK), key, sizeof(key)))
		m->present_unknown = true;
	else
		key_add(m->slot_keys, &m->present, key);
}

static json_t *device(const struct dstruct *s, struct summary *m)
{
	unsigned t = byte_at(s, T17_TYPE);
	const char *type = t < sizeof(mem_types) / sizeof(mem_types[0]) ? mem_types[t] : NULL;
	unsigned speed = word_at(s, T17_SPEED), conf = word_at(s, T17_CONF_SPEED);
	char key[64];
	if (speed == 0xffff)
		speed = dword_at(s, T17_EXT_SPEED);
	if (conf == 0xffff)
		conf = dword_at(s, T17_EXT_CONF_SPEED);
	m->dimms++;
	m->total += dimm_bytes(s);
	if (speed > m->speed)
		m->speed = speed;
	if (conf && (!m->conf_speed || conf < m->conf_speed))
		m->conf_speed = conf; /* the slowest DIMM sets the channel's speed */
	if (m->type && type && strcmp(m->type, type))
		m->mixed = true;
	if (type)
		m->type = type;
	if (channel_key(string_at(s, T17_LOCATOR), string_at(s, T17_BANK), key, sizeof(key)))
		m->channels_unknown = true;
	else
		key_add(m->keys, &m->channels, key);
	return json_pack("{s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "locator", str_or_null(string_at(s, T17_LOCATOR)),
			 "bank_locator", str_or_null(string_at(s, T17_BANK)),
			 "size_bytes", (json_int_t)dimm_bytes(s),
			 "type", str_or_null(type), "speed_mts", mts_or_null(speed),
			 "configured_speed_mts", mts_or_null(conf),
			 "manufacturer", str_or_null(string_at(s, T17_MANUFACTURER)),
			 "part_number", str_or_null(string_at(s, T17_PART)),
			 "rank", byte_at(s, T17_ATTRIBUTES) & 0xf
				 ? json_integer(byte_at(s, T17_ATTRIBUTES) & 0xf) : json_null());
}

int mw_smbios_memory(const uint8_t *buf, size_t len, const char *source, json_t **out,
		     struct mw_error *err)
{
	struct summary *m = calloc(1, sizeof(*m));
	json_t *devs = json_array();
	size_t off = 0, next;
	struct dstruct s;
	int rc = 0;

	*out = NULL;
	if (!m || !devs) {
		rc = mw_error_set(err, -ENOMEM, source, "", "out of memory");
		goto out;
	}
	while (off < len) {
		if (split_struct(buf, len, off, &s, &next)) {
			rc = mw_error_set(err, -EINVAL, source, "", "the structure at byte %zu runs past "
					  "the end of the table (%zu bytes): a truncated table", off, len);
			goto out;
		}
		if (s.p[0] == 127) /* End-of-Table */
			break;
		if (s.p[0] == 17) {
			m->slots++;
			slot_channel(&s, m);
			if (dimm_bytes(&s))
				json_array_append_new(devs, device(&s, m));
		}
		off = next;
	}
	if (!m->slots) {
		rc = mw_error_set(err, -ENOENT, source, "", "no memory device (type 17) structure in "
				  "the table");
		goto out;
	}
	bool ch = m->channels > 0 && !m->channels_unknown;
	bool pr = m->present > 0 && !m->present_unknown;
	*out = json_pack("{s:s, s:i, s:i, s:I, s:o, s:o, s:o, s:o, s:o, s:s, s:o}",
			 "source", "SMBIOS type 17", "slots", m->slots, "dimms", m->dimms,
			 "total_bytes", (json_int_t)m->total,
			 "type", m->mixed ? json_string("mixed") : str_or_null(m->type),
			 "speed_mts", mts_or_null(m->speed),
			 "configured_speed_mts", mts_or_null(m->conf_speed),
			 "channels", ch ? json_integer(m->channels) : json_null(),
			 "channels_present", pr ? json_integer(m->present) : json_null(),
			 "channels_source", ch ? "inferred from the slots' locator strings"
					       : "not inferred: the locator strings do not name channels",
			 "devices", devs);
	devs = NULL;
	if (!*out)
		rc = mw_error_set(err, -ENOMEM, source, "", "out of memory");
out:
	json_decref(devs);
	free(m);
	return rc;
}

int mw_smbios_memory_read(const char *root, json_t **out, char *why, size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s%s", root ? root : "", MW_SMBIOS_TABLE);
	return mw_smbios_memory_read_path(path, out, why, n);
}

int mw_smbios_memory_read_path(const char *path, json_t **out, char *why, size_t n)
{
	struct mw_error err;
	char *text = NULL;
	size_t len = 0;
	*out = NULL;
	int rc = mw_file_read(path, "SMBIOS table", "", MW_SMBIOS_TABLE_MAX, &text, &len, &err);
	if (rc == -EACCES || rc == -EPERM)
		snprintf(why, n, "not measured: %s is readable by root only; run memwall as root, or "
			 "read the DIMMs with `sudo dmidecode -t 17`", path);
	else if (rc == -ENOENT)
		snprintf(why, n, "not measured: this machine exposes no SMBIOS table at %s (a VM or a "
			 "board without DMI); `sudo dmidecode -t 17` may still list the DIMMs",
			 path);
	else if (rc)
		snprintf(why, n, "not measured: %s", err.text);
	if (rc)
		return rc;
	rc = mw_smbios_memory((const uint8_t *)text, len, path, out, &err);
	if (rc)
		snprintf(why, n, "not measured: %s: %s", path, err.text);
	free(text);
	return rc;
}
