/* probes/counter_sim.c: a simulated PMU, the counter layer for tests ($MEMWALL_COUNTERS=sim).
 *
 * This VM has no uncore PMUs, so the DRAM paths (raw deltas, wrapping, multiplexing, counters
 * that never run or stop reading) could only be tested on bare metal. This layer replays the
 * counts a test scripted in the file named by $MEMWALL_SIM_SCRIPT; nothing in it is random or
 * depends on the clock. One rule per line, '#' to the end of a line is a comment:
 *
 *   perf type=24 config=0x20ff cpu=* start=0 step=1000 [bits=48] [notrun] [fail_after=N]
 *        [scaled=0.5]
 *   file path=mon_L3_00/mbm_total_bytes start=0 step=4096 [bits=N] [unavailable_after=N]
 *        [fail_after=N]
 *
 * A perf rule matches an open by attr.type, attr.config (any base strtoull takes) and cpu (a
 * number, or '*' for any); a file rule matches a file counter whose path ends with path. The
 * first matching rule wins. Each counter counts its own reads, k = 0 for the first (the one
 * prb_dram_open makes), and read k gives:
 *   value         (start + k * step) mod 2^bits (bits 64 unless given)
 *   time_enabled  (k + 1) ms, so that even the first read has run
 *   time_running  time_enabled; 0 with notrun; scaled * time_enabled with scaled=
 *   failure       -EIO when k > fail_after; for files, "Unavailable" (-ENODATA) when
 *                 k > unavailable_after
 * Events no rule names (task-clock, energy-pkg, ...) are opened by the syscall layer and pass
 * through unchanged, so software counters keep working under sim. There are no groups: the
 * DRAM code then reads event by event, each counter once per prb_dram_read.
 *
 * The script is read at every open (opens are few), so a test can point $MEMWALL_SIM_SCRIPT at
 * another file between opens. A malformed script fails the open with -EINVAL and a line on
 * stderr: this layer exists for tests, and a silent fallback would hide a broken test.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define NS_PER_READ 1000000ull

struct rule {
	bool is_file;
	uint32_t type;
	uint64_t config;
	int cpu; /* -1: any */
	char path[256];
	uint64_t start, step;
	unsigned bits;
	bool notrun;
	double scaled;     /* 0: runs all the time it is enabled */
	long long fail_after;        /* -1: never */
	long long unavailable_after; /* -1: never */
};

struct sim_counter {
	struct counter *inner; /* an event no rule names: the syscall layer's counter */
	struct rule rule;
	uint64_t k;            /* reads so far */
};

struct sim_file {
	struct file_counter f;
	struct rule rule;
	uint64_t k;
};

static int bad(const char *script, int line, const char *what, const char *tok)
{
	fprintf(stderr, "%s:%d: sim script: %s \"%s\"\n", script, line, what, tok);
	return -EINVAL;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end = NULL;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || !*s || *end || *s == '-' ? -EINVAL : 0;
}

/* Parses one line into *r. Returns 1 for a rule, 0 for a blank or comment line, -EINVAL. */
static int parse_line(char *line, struct rule *r, const char *script, int lineno)
{
	char *save = NULL, *tok;
	char *hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	tok = strtok_r(line, " \t\r\n", &save);
	if (!tok)
		return 0;
	memset(r, 0, sizeof(*r));
	r->cpu = -1;
	r->bits = 64;
	r->fail_after = r->unavailable_after = -1;
	if (!strcmp(tok, "file"))
		r->is_file = true;
	else if (strcmp(tok, "perf"))
		return bad(script, lineno, "a rule is \"perf\" or \"file\", not", tok);
	while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
		char *val = strchr(tok, '=');
		uint64_t v = 0;
		int rc = 0;
		if (!strcmp(tok, "notrun")) {
			r->notrun = true;
			continue;
		}
		if (!val)
			return bad(script, lineno, "expected key=value, got", tok);
		*val++ = '\0';
		if (!strcmp(tok, "path")) {
			rc = fmt_into(r->path, "%s", val);
		} else if (!strcmp(tok, "cpu") && !strcmp(val, "*")) {
			r->cpu = -1;
		} else if (!strcmp(tok, "scaled")) {
			char *end = NULL;
			r->scaled = strtod(val, &end);
			if (*end || !(r->scaled > 0 && r->scaled <= 1))
				rc = -EINVAL;
		} else if ((rc = parse_u64(val, &v)) == 0) {
			if (!strcmp(tok, "type") && v <= UINT32_MAX)
				r->type = (uint32_t)v;
			else if (!strcmp(tok, "config"))
				r->config = v;
			else if (!strcmp(tok, "cpu") && v <= 1u << 20)
				r->cpu = (int)v;
			else if (!strcmp(tok, "start"))
				r->start = v;
			else if (!strcmp(tok, "step"))
				r->step = v;
			else if (!strcmp(tok, "bits") && v >= 1 && v <= 64)
				r->bits = (unsigned)v;
			else if (!strcmp(tok, "fail_after") && v < (1ull << 62))
				r->fail_after = (long long)v;
			else if (!strcmp(tok, "unavailable_after") && v < (1ull << 62))
				r->unavailable_after = (long long)v;
			else
				rc = -EINVAL;
		}
		if (rc < 0)
			return bad(script, lineno, "bad key or value", tok);
	}
	if (r->is_file && !r->path[0])
		return bad(script, lineno, "a file rule needs", "path=");
	return 1;
}

#define SIM_SCRIPT_MAX (1 << 20) /* bytes: a script is a few lines */

static bool path_ends_with(const char *path, const char *suffix)
{
	size_t n = strlen(path), m = strlen(suffix);
	return m <= n && !strcmp(path + n - m, suffix);
}

/* The first rule of the script that matches (attr, cpu) or path: 1 with *out filled, 0 when
 * none does (or there is no script), -EINVAL for a malformed script. */
static int find_rule(const struct perf_event_attr *attr, int cpu, const char *path,
		     struct rule *out)
{
	const char *script = getenv("MEMWALL_SIM_SCRIPT");
	char line[1024];
	int lineno = 0, rc = 0;
	FILE *f;

	if (!script || !*script || !strcmp(script, "/dev/null"))
		return 0; /* no script, or one that names nothing (tests use /dev/null) */
	/* Never blocking on a FIFO, never reading /dev/zero forever, never taking a folder
	 * (which opens, then reads as nothing: the real counters would be used in silence). */
	struct stat st = { 0 };
	int fd = open(script, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > SIM_SCRIPT_MAX ||
	    !(f = fdopen(fd, "r"))) {
		fprintf(stderr, "%s: sim script: %s\n", script,
			fd < 0 ? strerror(errno)
			: !S_ISREG(st.st_mode) ? "not a regular file (a FIFO, a device or a folder): "
						 "name a script file"
			: st.st_size > SIM_SCRIPT_MAX ? "larger than 1 MiB: not a script"
			: strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		struct rule r;
		int got = parse_line(line, &r, script, ++lineno);
		if (got < 0)
			rc = got;
		else if (got == 0 || r.is_file != (path != NULL))
			continue;
		else if (path ? path_ends_with(path, r.path) :
				r.type == attr->type && r.config == attr->config &&
				(r.cpu < 0 || r.cpu == cpu)) {
			*out = r;
			rc = 1;
		}
	}
	fclose(f);
	return rc;
}

static uint64_t value_at(const struct rule *r, uint64_t k)
{
	uint64_t mask = r->bits >= 64 ? ~0ull : (1ull << r->bits) - 1;
	return (r->start + k * r->step) & mask;
}

static int sim_open(struct counter **out, const struct perf_event_attr *attr, int pid, int cpu)
{
	struct sim_counter *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	rc = find_rule(attr, cpu, NULL, &c->rule);
	if (rc == 0)
		rc = counter_syscall_ops.open(&c->inner, attr, pid, cpu);
	if (rc < 0) {
		free(c);
		return rc;
	}
	*out = (struct counter *)c;
	return 0;
}

static int sim_read(struct counter *cc, uint64_t v[3])
{
	struct sim_counter *c = (struct sim_counter *)cc;
	const struct rule *r = &c->rule;
	uint64_t k = c->k++;

	if (c->inner)
		return counter_syscall_ops.read(c->inner, v);
	if (r->fail_after >= 0 && k > (uint64_t)r->fail_after)
		return -EIO;
	v[0] = value_at(r, k);
	v[1] = (k + 1) * NS_PER_READ;
	v[2] = r->notrun ? 0 : r->scaled > 0 ? (uint64_t)(r->scaled * (double)v[1]) : v[1];
	return 0;
}

static int sim_enable(struct counter *cc)
{
	struct sim_counter *c = (struct sim_counter *)cc;
	return c->inner ? counter_syscall_ops.enable(c->inner) : 0;
}

static int sim_disable(struct counter *cc)
{
	struct sim_counter *c = (struct sim_counter *)cc;
	return c->inner ? counter_syscall_ops.disable(c->inner) : 0;
}

static void sim_close(struct counter *cc)
{
	struct sim_counter *c = (struct sim_counter *)cc;
	if (!c)
		return;
	if (c->inner)
		counter_syscall_ops.close(c->inner);
	free(c);
}

static unsigned sim_bits(struct counter *cc)
{
	struct sim_counter *c = (struct sim_counter *)cc;
	return c->inner ? 64 : c->rule.bits;
}

const struct counter_ops counter_sim_ops = {
	.name = "sim",
	.open = sim_open,
	.read = sim_read,
	.enable = sim_enable,
	.disable = sim_disable,
	.close = sim_close,
	.bits = sim_bits,
};

static int sim_file_read(struct file_counter *ff, uint64_t *v)
{
	struct sim_file *f = (struct sim_file *)ff;
	const struct rule *r = &f->rule;
	uint64_t k = f->k++;

	if (r->fail_after >= 0 && k > (uint64_t)r->fail_after)
		return -EIO;
	if (r->unavailable_after >= 0 && k > (uint64_t)r->unavailable_after)
		return -ENODATA; /* the file would read "Unavailable" */
	*v = value_at(r, k);
	return 0;
}

static void sim_file_close(struct file_counter *f)
{
	free(f);
}

int sim_file_open(struct file_counter **out, const char *path)
{
	struct sim_file *f = calloc(1, sizeof(*f));
	int rc;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	rc = find_rule(NULL, -1, path, &f->rule);
	if (rc <= 0) {
		free(f);
		return rc < 0 ? rc : -ENOENT;
	}
	f->f.read = sim_file_read;
	f->f.close = sim_file_close;
	f->f.bits = f->rule.bits;
	*out = &f->f;
	return 0;
}
