/* tests/fuzz/fuzz_sysfs.c: PMU discovery (probes/sysfs.c) on arbitrary sysfs files.
 *
 * The input is split at newlines into up to eight parts, written as the files of one PMU in a
 * private tree under /dev/shm (tmpfs: nothing reaches the disk), then read with
 * prb_system_open as perf's sysfs would be:
 *   0 type  1 cpumask  2 format/event  3 format/umask  4 events/alias  5 events/alias.scale
 *   6 events/alias.unit  7 the terms to encode (an alias name or "field=value,...")
 *   8 the first byte: bit i makes file i a FIFO (no writer: a blocking open never returns),
 *     bit 7 makes type a link to /dev/zero (issue 43: refused by what they are)
 * An empty part leaves that file out. Each format part is also parsed directly. The PMU must
 * load (a malformed file is the PMU's .problem, not a failure), and an encoding must only set
 * bits the formats describe. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "probes/internal.h" /* by its folder: engine/ has internal.h files too */

static char root[64], pmu_dir[256];

static const char *const files[] = { "type", "cpumask", "format/event", "format/umask",
				     "events/alias", "events/alias.scale", "events/alias.unit" };
#define N_FILES (sizeof(files) / sizeof(files[0]))

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void cleanup(void)
{
	if (root[0])
		nftw(root, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char path[320];
	snprintf(root, sizeof(root), "/dev/shm/memwall-fuzz-sysfs-XXXXXX");
	if (!mkdtemp(root)) {
		snprintf(root, sizeof(root), "/tmp/memwall-fuzz-sysfs-XXXXXX");
		if (!mkdtemp(root))
			abort();
	}
	atexit(cleanup);
	/* the folders of one PMU, each under the one before: pmu_dir is the fourth */
	static const char *const dirs[] = { "bus", "bus/event_source", "bus/event_source/devices",
					     "bus/event_source/devices/fuzz_pmu_0",
					     "bus/event_source/devices/fuzz_pmu_0/format",
					     "bus/event_source/devices/fuzz_pmu_0/events" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		mkdir(path, 0700);
	}
	snprintf(pmu_dir, sizeof(pmu_dir), "%s/%s", root, dirs[3]);
	return 0;
}

/* kind: 0 a regular file of p[0..n), 1 a FIFO, 2 a link to /dev/zero */
static void put(const char *name, const uint8_t *p, size_t n, int kind)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", pmu_dir, name);
	unlink(path);
	if (kind == 1 && mkfifo(path, 0600))
		abort();
	if (kind == 2 && symlink("/dev/zero", path))
		abort();
	if (kind || !n)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
}

/* Bits a format may set in each config word. */
static void allowed_bits(const struct prb_pmu *pmu, uint64_t words[4])
{
	for (size_t i = 0; i < pmu->n_formats; i++)
		for (int r = 0; r < pmu->formats[i].n_ranges; r++) {
			const struct prb_bit_range *b = &pmu->formats[i].ranges[r];
			FUZZ_CHECK(b->word < 4 && b->lo <= b->hi && b->hi <= 63);
			unsigned w = (unsigned)(b->hi - b->lo + 1);
			uint64_t mask = w == 64 ? ~0ull : ((1ull << w) - 1) << b->lo;
			words[b->word] |= mask;
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *part[N_FILES + 2] = { 0 };
	size_t len[N_FILES + 2] = { 0 }, k = 0, start = 0;
	if (!root[0])
		LLVMFuzzerInitialize(NULL, NULL);
	for (size_t i = 0; i <= size && k <= N_FILES + 1; i++)
		if (i == size || data[i] == '\n') {
			part[k] = data + start;
			len[k++] = i - start;
			start = i + 1;
		}
	unsigned kinds = len[N_FILES + 1] ? part[N_FILES + 1][0] : 0;
	for (size_t i = 0; i < N_FILES; i++)
		put(files[i], part[i], len[i], i == 0 && (kinds & 0x80) ? 2 : (kinds >> i) & 1);

	/* the format parser directly, on text with its NUL */
	for (size_t i = 2; i <= 3; i++) {
		char *text = fuzz_str(part[i], len[i]);
		struct prb_format f = { 0 };
		struct prb_error err = { 0 };
		int rc = prb_format_parse(text, &f, "format", &err);
		FUZZ_CHECK(rc == 0 || (rc == -EINVAL && err.text[0]));
		FUZZ_CHECK(rc || (f.n_ranges >= 1 && f.n_ranges <= PRB_FORMAT_MAX_RANGES));
		free(text);
	}

	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	int rc = prb_system_open(&sys, root, &err);
	FUZZ_CHECK(rc == 0 || rc == -ENOMEM);
	if (rc)
		return 0;
	const struct prb_pmu *pmu = prb_system_pmu_find(sys, "fuzz_pmu_0");
	FUZZ_CHECK(pmu != NULL);
	for (size_t i = 0; i < pmu->n_events; i++)
		FUZZ_CHECK(isfinite(pmu->events[i].scale) && pmu->events[i].scale > 0);
	for (int i = 0; i < pmu->n_cpus; i++)
		FUZZ_CHECK(pmu->cpus[i] >= 0 && pmu->cpus[i] <= 65535);
	double bytes;
	for (size_t i = 0; i < pmu->n_events; i++)
		(void)prb_unit_bytes(pmu->events[i].unit, &bytes);

	char *terms = fuzz_str(part[N_FILES], len[N_FILES]);
	struct perf_event_attr attr;
	rc = prb_pmu_encode(pmu, terms, &attr, &err);
	FUZZ_CHECK(rc == 0 || (rc == -EINVAL && err.text[0]));
	if (rc == 0) {
		uint64_t ok[4] = { 0 };
		allowed_bits(pmu, ok);
		FUZZ_CHECK(attr.type == pmu->type);
		FUZZ_CHECK(!(attr.config & ~ok[0]) && !(attr.config1 & ~ok[1]) &&
			   !(attr.config2 & ~ok[2]));
	}
	free(terms);
	prb_system_close(sys);
	return 0;
}
