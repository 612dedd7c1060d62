/* probes/sysfs.c: PMU discovery, read from sysfs the way perf reads it.
 *
 * The layout is the kernel's ABI (Documentation/ABI/testing/sysfs-bus-event_source-devices-*):
 *   devices/<pmu>/type              the perf_event_attr.type, decimal
 *   devices/<pmu>/cpumask           where uncore events must be opened ("0", "0,56")
 *   devices/<pmu>/format/<field>    "config:0-7", "config1:0-15", "config:0-7,32-35"
 *   devices/<pmu>/events/<alias>    "event=0xff,umask=0x20", with <alias>.scale and .unit
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

struct prb_system {
	char root[512];
	struct prb_pmu *pmus;
	size_t n_pmus;
};

/* What kind of file a mode is, for the message that refuses it (src/base/file.c says the same
 * for a user's files; probes/ cannot include it). */
static const char *file_kind(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFIFO:
		return "a FIFO";
	case S_IFDIR:
		return "a directory";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	default:
		return "not a regular file";
	}
}

/* A tree under MEMWALL_SYSFS_ROOT or --sysfs is another machine's recording, which anyone may
 * have written, so every file of it is read the way src/base/file.c reads a user's file: the
 * open never blocks (a FIFO without a writer would block a blocking open forever), anything
 * but a regular file is refused by what it is (a sysfs attribute is a regular file; a FIFO
 * blocks, a device such as /dev/zero reads forever), and a file longer than the buffer is
 * refused rather than cut (an alias cut short would encode another event). */
int prb_sysfs_read(const char *path, char *buf, size_t size, struct prb_error *err)
{
	struct stat st;
	size_t n = 0;
	int rc = 0, fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return prb_error_set(err, -errno, path, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st)) {
		rc = prb_error_set(err, -errno, path, "cannot examine: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = prb_error_set(err, -EINVAL, path, "is %s, not a regular file (every sysfs "
				   "attribute is one): the tree was not recorded from sysfs",
				   file_kind(st.st_mode));
		goto out;
	}
	/* sysfs reports 4096 bytes for every attribute: read until the end, never by st_size */
	for (;;) {
		char extra;
		ssize_t r = n < size - 1 ? read(fd, buf + n, size - 1 - n) : read(fd, &extra, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = prb_error_set(err, -errno, path, "cannot read: %s", strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		if (n == size - 1) {
			rc = prb_error_set(err, -EFBIG, path, "is longer than the %zu bytes such a "
					   "file can hold", size - 1);
			goto out;
		}
		n += (size_t)r;
	}
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	rc = (int)n;
out:
	close(fd);
	return rc;
}

static int parse_u64(const char *s, uint64_t *out, const char **end)
{
	char *e = NULL;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &e, 0);
	if (errno)
		return -errno;
	*out = v;
	*end = e;
	return 0;
}

int prb_cpulist_parse(const char *text, int **cpus, int *n, const char *source, struct prb_error *err)
{
	int *list = NULL, count = 0, cap = 0;
	const char *p = text;
	int rc = 0;
	*cpus = NULL;
	*n = 0;
	while (rc == 0 && (*p || count == 0)) {
		uint64_t lo, hi;
		const char *e;
		if (parse_u64(p, &lo, &e) || lo > 65535) {
			rc = -EINVAL;
			break;
		}
		hi = lo;
		p = e;
		if (*p == '-' && (parse_u64(p + 1, &hi, &e) || hi < lo || hi > 65535)) {
			rc = -EINVAL;
			break;
		}
		if (*p == '-')
			p = e;
		for (uint64_t c = lo; c <= hi && rc == 0; c++) {
			if (count == cap) {
				int ncap = cap ? cap * 2 : 8;
				int *nl = realloc(list, (size_t)ncap * sizeof(*nl));
				if (!nl) {
					rc = -ENOMEM;
					break;
				}
				list = nl;
				cap = ncap;
			}
			list[count++] = (int)c;
		}
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			rc = -EINVAL;
	}
	if (rc == -EINVAL)
		prb_error_set(err, rc, source,
			      "cpumask \"%s\" is not a CPU list (expected e.g. \"0\", \"0,56\" or \"0-3\")",
			      text);
	if (rc == 0) {
		*cpus = list;
		*n = count;
		list = NULL;
	}
	free(list);
	return rc;
}

int prb_format_parse(const char *text, struct prb_format *out, const char *source,
		     struct prb_error *err)
{
	static const char *const words[] = { "config", "config1", "config2", "config3" };
	const char *p = text;
	size_t wlen = strcspn(p, ":");
	int word = -1;
	out->n_ranges = 0;
	if (!*text)
		return prb_error_set(err, -EINVAL, source,
				     "empty format: expected a bit layout such as \"config:0-7\"");
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (wlen == strlen(words[i]) && !strncmp(p, words[i], wlen))
			word = (int)i;
	if (!*p || word < 0 || p[wlen] != ':')
		return prb_error_set(err, -EINVAL, source,
				     "format \"%s\" does not start with config:, config1:, config2: or config3:",
				     text);
	p += wlen + 1;
	do {
		uint64_t lo, hi;
		const char *e;
		if (parse_u64(p, &lo, &e))
			return prb_error_set(err, -EINVAL, source,
					     "format \"%s\": expected a bit number at \"%s\"", text, p);
		hi = lo;
		p = e;
		if (*p == '-') {
			if (parse_u64(p + 1, &hi, &e))
				return prb_error_set(err, -EINVAL, source,
						     "format \"%s\": expected a bit number after '-'", text);
			p = e;
		}
		if (lo > 63 || hi > 63 || hi < lo)
			return prb_error_set(err, -EINVAL, source,
					     "format \"%s\": bit range %llu-%llu is outside a 64-bit config word",
					     text, (unsigned long long)lo, (unsigned long long)hi);
		if (out->n_ranges == PRB_FORMAT_MAX_RANGES)
			return prb_error_set(err, -EINVAL, source, "format \"%s\": more than %d ranges",
					     text, PRB_FORMAT_MAX_RANGES);
		out->ranges[out->n_ranges++] = (struct prb_bit_range){
			.word = (uint8_t)word, .lo = (uint8_t)lo, .hi = (uint8_t)hi };
		if (*p == ',')
			p++;
		else if (*p)
			return prb_error_set(err, -EINVAL, source, "format \"%s\": unexpected \"%s\"",
					     text, p);
		else
			break;
	} while (1);
	return 0;
}

bool prb_name_is_instance(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(name, prefix, n) || !name[n])
		return false;
	for (const char *p = name + n; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

/* Name order with numeric suffixes compared as numbers, so uncore_imc_2 < uncore_imc_10. */
static int name_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			char *ea, *eb;
			unsigned long x = strtoul(a, &ea, 10);
			unsigned long y = strtoul(b, &eb, 10);
			if (x != y)
				return x < y ? -1 : 1;
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

static int pmu_cmp(const void *a, const void *b)
{
	return name_cmp(((const struct prb_pmu *)a)->name, ((const struct prb_pmu *)b)->name);
}

static int event_cmp(const void *a, const void *b)
{
	return strcmp(((const struct prb_event *)a)->name, ((const struct prb_event *)b)->name);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int read_formats(struct prb_pmu *pmu, const char *dir)
{
	char path[2048], text[256];
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;
	if (!d)
		return 0; /* software PMUs have no format directory */
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		struct prb_format f = { 0 };
		rc = fmt_into(path, "%s/%s", dir, de->d_name);
		if (rc == 0)
			rc = fmt_into(f.name, "%s", de->d_name);
		if (rc == 0)
			rc = prb_sysfs_read(path, text, sizeof(text), &pmu->problem);
		if (rc >= 0)
			rc = prb_format_parse(text, &f, path, &pmu->problem);
		if (rc < 0)
			goto out;
		struct prb_format *nf = realloc(pmu->formats, (pmu->n_formats + 1) * sizeof(*nf));
		if (!nf) {
			rc = -ENOMEM;
			goto out;
		}
		pmu->formats = nf;
		pmu->formats[pmu->n_formats++] = f;
	}
	rc = 0;
out:
	closedir(d);
	return rc;
}

static int read_events(struct prb_pmu *pmu, const char *dir)
{
	char path[2048], text[256];
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || ends_with(de->d_name, ".scale") ||
		    ends_with(de->d_name, ".unit") || ends_with(de->d_name, ".per-pkg") ||
		    ends_with(de->d_name, ".snapshot"))
			continue;
		struct prb_event ev = { .scale = 1.0 };
		rc = fmt_into(ev.name, "%s", de->d_name);
		if (rc == 0)
			rc = fmt_into(path, "%s/%s", dir, de->d_name);
		if (rc == 0)
			rc = prb_sysfs_read(path, ev.terms, sizeof(ev.terms), &pmu->problem);
		if (rc < 0)
			goto out;
		if (!ev.terms[0]) {
			rc = prb_error_set(&pmu->problem, -EINVAL, path, "empty event alias");
			goto out;
		}
		if (fmt_into(path, "%s/%s.scale", dir, de->d_name) == 0 && access(path, F_OK) == 0) {
			char *end = NULL;
			rc = prb_sysfs_read(path, text, sizeof(text), &pmu->problem);
			if (rc < 0)
				goto out;
			ev.scale = strtod(text, &end);
			if (!text[0] || *end || !isfinite(ev.scale) || ev.scale <= 0) {
				rc = prb_error_set(&pmu->problem, -EINVAL, path,
						   "scale \"%s\" is not a positive number", text);
				goto out;
			}
		}
		if (fmt_into(path, "%s/%s.unit", dir, de->d_name) == 0 && access(path, F_OK) == 0) {
			rc = prb_sysfs_read(path, text, sizeof(text), &pmu->problem);
			if (rc >= 0 && fmt_into(ev.unit, "%s", text) < 0)
				rc = prb_error_set(&pmu->problem, -EINVAL, path, "unit \"%s\" is too long",
						   text);
			if (rc < 0)
				goto out;
		}
		struct prb_event *ne = realloc(pmu->events, (pmu->n_events + 1) * sizeof(*ne));
		if (!ne) {
			rc = -ENOMEM;
			goto out;
		}
		pmu->events = ne;
		pmu->events[pmu->n_events++] = ev;
	}
	if (pmu->n_events) /* an empty events/ leaves events NULL: qsort's base must not be */
		qsort(pmu->events, pmu->n_events, sizeof(*pmu->events), event_cmp);
	rc = 0;
out:
	closedir(d);
	return rc;
}

/* Reads one PMU directory. Malformed files leave pmu->problem set; only ENOMEM fails. */
static int read_pmu(struct prb_pmu *pmu, const char *dir)
{
	char path[2048], text[4096];
	int rc;
	(void)fmt_into(path, "%s/type", dir);
	rc = prb_sysfs_read(path, text, sizeof(text), &pmu->problem);
	if (rc >= 0) {
		char *end = NULL;
		errno = 0;
		unsigned long t = strtoul(text, &end, 10);
		if (!text[0] || *end || errno || t > UINT32_MAX || !isdigit((unsigned char)text[0])) {
			prb_error_set(&pmu->problem, -EINVAL, path,
				      "type \"%s\" is not a decimal perf type number", text);
			return 0;
		}
		pmu->type = (uint32_t)t;
	} else {
		return 0;
	}
	(void)fmt_into(path, "%s/cpumask", dir);
	if (access(path, F_OK) == 0) {
		rc = prb_sysfs_read(path, text, sizeof(text), &pmu->problem);
		if (rc >= 0)
			rc = prb_cpulist_parse(text, &pmu->cpus, &pmu->n_cpus, path, &pmu->problem);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0)
			return 0;
	}
	(void)fmt_into(path, "%s/format", dir);
	rc = read_formats(pmu, path);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return 0;
	(void)fmt_into(path, "%s/events", dir);
	rc = read_events(pmu, path);
	return rc == -ENOMEM ? rc : 0;
}

static void pmu_release(struct prb_pmu *pmu)
{
	free(pmu->cpus);
	free(pmu->formats);
	free(pmu->events);
}

int prb_system_open(struct prb_system **out, const char *root, struct prb_error *err)
{
	struct prb_system *sys = NULL;
	char dir[1024], path[1536];
	DIR *d = NULL;
	struct dirent *de;
	int rc = 0;

	*out = NULL;
	if (!root || !*root)
		root = getenv("MEMWALL_SYSFS_ROOT");
	if (!root || !*root)
		root = "/sys";
	sys = calloc(1, sizeof(*sys));
	if (!sys)
		return -ENOMEM;
	snprintf(sys->root, sizeof(sys->root), "%s", root);
	snprintf(dir, sizeof(dir), "%s/bus/event_source/devices", root);
	d = opendir(dir);
	if (!d) {
		rc = prb_error_set(err, -errno, dir,
				   "cannot list PMUs: %s (is this Linux with perf events, and does "
				   "MEMWALL_SYSFS_ROOT point at a sysfs tree?)", strerror(errno));
		goto out;
	}
	while ((de = readdir(d))) {
		/* kernel PMU names are short (struct pmu names, UNCORE_PMU_NAME_LEN 32) */
		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(sys->pmus->name))
			continue;
		struct prb_pmu *np = realloc(sys->pmus, (sys->n_pmus + 1) * sizeof(*np));
		if (!np) {
			rc = -ENOMEM;
			goto out;
		}
		sys->pmus = np;
		struct prb_pmu *pmu = &sys->pmus[sys->n_pmus++];
		memset(pmu, 0, sizeof(*pmu));
		strcpy(pmu->name, de->d_name);
		(void)fmt_into(path, "%s/%s", dir, de->d_name);
		rc = read_pmu(pmu, path);
		if (rc < 0)
			goto out;
	}
	if (sys->n_pmus)
		qsort(sys->pmus, sys->n_pmus, sizeof(*sys->pmus), pmu_cmp);
	*out = sys;
	sys = NULL;
out:
	if (d)
		closedir(d);
	prb_system_close(sys);
	return rc;
}

void prb_system_close(struct prb_system *sys)
{
	if (!sys)
		return;
	for (size_t i = 0; i < sys->n_pmus; i++)
		pmu_release(&sys->pmus[i]);
	free(sys->pmus);
	free(sys);
}

const char *prb_system_root(const struct prb_system *sys)
{
	return sys->root;
}

size_t prb_system_pmu_count(const struct prb_system *sys)
{
	return sys->n_pmus;
}

const struct prb_pmu *prb_system_pmu(const struct prb_system *sys, size_t i)
{
	return i < sys->n_pmus ? &sys->pmus[i] : NULL;
}

const struct prb_pmu *prb_system_pmu_find(const struct prb_system *sys, const char *name)
{
	for (size_t i = 0; i < sys->n_pmus; i++)
		if (!strcmp(sys->pmus[i].name, name))
			return &sys->pmus[i];
	return NULL;
}

const struct prb_event *prb_pmu_event_find(const struct prb_pmu *pmu, const char *name)
{
	for (size_t i = 0; i < pmu->n_events; i++)
		if (!strcmp(pmu->events[i].name, name))
			return &pmu->events[i];
	return NULL;
}

static const struct prb_format *format_find(const struct prb_pmu *pmu, const char *name, size_t len)
{
	for (size_t i = 0; i < pmu->n_formats; i++)
		if (strlen(pmu->formats[i].name) == len && !strncmp(pmu->formats[i].name, name, len))
			return &pmu->formats[i];
	return NULL;
}

/* Scatters value into the format's ranges, low bits first (perf's pmu_format_value()).
 * -ERANGE when value has bits left over. */
static int format_apply(const struct prb_format *f, uint64_t value, uint64_t words[4])
{
	for (int i = 0; i < f->n_ranges; i++) {
		const struct prb_bit_range *r = &f->ranges[i];
		unsigned width = (unsigned)(r->hi - r->lo + 1);
		uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
		words[r->word] |= (value & mask) << r->lo;
		value = width == 64 ? 0 : value >> width;
	}
	return value ? -ERANGE : 0;
}

int prb_pmu_encode(const struct prb_pmu *pmu, const char *terms, struct perf_event_attr *attr,
		   struct prb_error *err)
{
	char source[512];
	uint64_t words[4] = { 0 };
	const struct prb_event *alias = prb_pmu_event_find(pmu, terms);
	const char *p = alias ? alias->terms : terms;

	(void)fmt_into(source, "%s/%s", pmu->name, alias ? alias->name : terms);
	if (pmu->problem.text[0])
		return prb_error_set(err, -EINVAL, pmu->problem.source, "%s", pmu->problem.text);
	if (!*p)
		return prb_error_set(err, -EINVAL, source, "no event terms");
	while (*p) {
		size_t klen = strcspn(p, "=,");
		uint64_t value = 1;
		const char *next = p + klen;
		if (klen == 0)
			return prb_error_set(err, -EINVAL, source, "empty term in \"%s\"", terms);
		if (*next == '=') {
			const char *e;
			if (parse_u64(next + 1, &value, &e) || (*e && *e != ','))
				return prb_error_set(err, -EINVAL, source,
						     "term \"%.*s\": value is not a number", (int)klen, p);
			next = e;
		}
		const struct prb_format *f = format_find(pmu, p, klen);
		if (!f)
			return prb_error_set(err, -EINVAL, source,
					     "%s has no format field \"%.*s\" (see %s/format/)",
					     pmu->name, (int)klen, p, pmu->name);
		if (format_apply(f, value, words))
			return prb_error_set(err, -EINVAL, source,
					     "value 0x%llx does not fit %s/format/%s",
					     (unsigned long long)value, pmu->name, f->name);
		p = *next == ',' ? next + 1 : next;
	}
	/* config3 came with Linux 6.3 (PERF_ATTR_SIZE_VER8); with older headers a field in it
	 * would be dropped and the wrong event counted. */
#ifdef PERF_ATTR_SIZE_VER8
	uint64_t config3 = words[3];
#else
	if (words[3])
		return prb_error_set(err, -EINVAL, source,
				     "the event sets bits in config3, which this build's "
				     "perf_event_attr lacks (rebuild with Linux 6.3+ headers)");
#endif
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = pmu->type;
	attr->config = words[0];
	attr->config1 = words[1];
	attr->config2 = words[2];
#ifdef PERF_ATTR_SIZE_VER8
	attr->config3 = config3;
#endif
	return 0;
}

int prb_unit_bytes(const char *unit, double *bytes)
{
	static const struct {
		const char *unit;
		double bytes;
	} units[] = {
		{ "B", 1.0 },          { "Bytes", 1.0 },           { "bytes", 1.0 },
		{ "KB", 1e3 },         { "MB", 1e6 },              { "GB", 1e9 },
		{ "KiB", 1024.0 },     { "MiB", 1024.0 * 1024.0 }, { "GiB", 1024.0 * 1024.0 * 1024.0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(unit, units[i].unit)) {
			*bytes = units[i].bytes;
			return 0;
		}
	return -EINVAL;
}
