/* probes/counter_sim.c: a simulated PMU, the counter layer for tests ($MEMWALL_COUNTERS=sim).
 *
 * This VM has no uncore PMUs, so the DRAM paths (raw deltas, wrapping, multiplexing, counters
 * that never run or stop reading, grouped reads) could only be tested on bare metal. This
 * layer replays the counts a test scripted in the file named by $MEMWALL_SIM_SCRIPT; nothing
 * in it is random or depends on the clock. One rule per line, '#' to the end of a line is a
 * comment:
 *
 *   perf type=24 config=0x20ff [config1=N] cpu=* [node=N] start=0 step=1000 [steps=A,B,...]
 *        [bits=48]
 *        [notrun] [fail_after=N] [scaled=0.5] [ns_per_read=N] [solo]
 *   file path=mon_L3_00/mbm_total_bytes start=0 step=4096 [steps=A,B,...] [bits=N]
 *        [unavailable_after=N] [fail_after=N]
 *   nogroups
 *   pmu type=24 counters=4
 *
 * A perf rule matches an open by attr.type, attr.config (any base strtoull takes), attr.config1
 * when the rule gives config1= (arm_dmc620 puts the direction there), cpu (a number, or
 * '*' for any) and, with node=N, a CPU in that NUMA node of the sysfs tree in use
 * ($MEMWALL_SYSFS_ROOT: nodeN/cpulist), so a script places counts per node; a file rule
 * matches a file counter whose path ends with path. The first matching rule wins. "solo" marks an event whose driver refuses to share a group with
 * another hardware event (arm_dmc620_pmu.c's event_init): a group with it and any other
 * scripted event fails its open with -EINVAL, as the kernel's would, and the refusal is said
 * on stderr ("a solo event refused a group") so a test sees that a group was asked for. Each counter counts its own reads, k = 0 for the first (the one
 * prb_dram_open makes), and read k gives:
 *   value         (start + the sum of the first k steps) mod 2^bits (bits 64 unless given);
 *                 the steps are A, B, ... with the last repeated, else step every time
 *   time_enabled  (k + 1) * ns_per_read (default 1000000: 1 ms), so that even the first read
 *                 has run; the times are the script's, never the clock's
 *   time_running  time_enabled; 0 with notrun; scaled * time_enabled with scaled=
 *   failure       -EIO when k > fail_after; for files, "Unavailable" (-ENODATA) when
 *                 k > unavailable_after
 * Events no rule names (task-clock, energy-pkg, ...) are opened by the syscall layer and pass
 * through unchanged, so software counters keep working under sim.
 *
 * Groups: a leader's members (open_member) are read with the leader in one read_group, laid
 * out as perf_event_open(2)'s read_format with PERF_FORMAT_GROUP: { nr, [time_enabled],
 * [time_running], { value, [id], [lost] } x nr }, the leader first and the members in the
 * order they were opened. As in the kernel, a group is scheduled all or nothing: its times
 * are the leader's rule's (a member whose rule has its own notrun or scaled is refused), and
 * one failing member fails the whole read. The group counts its reads with the leader's k.
 * The line "nogroups" makes every open_member fail with -EOPNOTSUPP, as a layer (or a PMU)
 * without groups would: the DRAM code then reads event by event, each counter once per
 * prb_dram_read. Backends that must multiplex (no_group) read event by event anyway.
 *
 * Counters: "pmu type=N counters=C" gives the PMU of type N C counters on each CPU, as the
 * kernel's driver has (amd_df: 4, probes/pmu/amd_df.c). While more than C of its scripted
 * events are enabled on one CPU, the kernel would rotate them over the counters, so each runs
 * C / enabled of its time: time_running is scaled by that (on top of scaled=), and a count is
 * extrapolated. As the sim has no clock, each read stands for one ns_per_read and runs at the
 * share of the moment it is read; the times add up read by read. Disabled events
 * (prb_dram_disable) take no counter.
 *
 * The script is read at every open (opens are few), so a test can point $MEMWALL_SIM_SCRIPT at
 * another file between opens. A malformed script fails the open with -EINVAL and a line on
 * stderr: this layer exists for tests, and a silent fallback would hide a broken test.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define NS_PER_READ 1000000ull /* the default of ns_per_read= */
#define MAX_STEPS 256 /* verify --matrix ends some 40 windows, each a step */

struct rule {
	bool is_file;
	int counters;      /* a "pmu" line: the PMU's counters per CPU */
	uint32_t type;
	uint64_t config;
	bool has_config1, solo;
	uint64_t config1;
	int cpu; /* -1: any */
	int node; /* -1: any; else the CPU must be in nodeN's cpulist */
	char path[256];
	uint64_t start, step;
	uint64_t steps[MAX_STEPS]; /* steps=: the k-th read's step, the last one repeated */
	int n_steps;
	uint64_t ns_per_read;
	unsigned bits;
	bool notrun;
	double scaled;     /* 0: runs all the time it is enabled */
	long long fail_after;        /* -1: never */
	long long unavailable_after; /* -1: never */
};

struct sim_counter {
	struct counter *inner; /* an event no rule names: the syscall layer's counter */
	struct rule rule;
	uint32_t type;         /* attr.type and the CPU it was opened on */
	int cpu;
	int counters;          /* its PMU's counters per CPU ("pmu" line); 0: no limit */
	uint64_t run_ns;       /* with a limit: the time it ran over its reads so far */
	bool enabled;
	struct sim_counter *next; /* the scripted counters open now (live) */
	uint64_t k;            /* reads so far */
	uint64_t read_format;  /* attr.read_format at open: the layout of a group read */
	struct sim_counter *leader;                      /* a member: its leader */
	struct sim_counter *members[PRB_DRAM_MAX_EVENTS]; /* a leader: its members, in order */
	int n_members;
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

/* "pmu type=N counters=C": both, nothing else. Returns 3 with r->type and r->counters. */
static int parse_pmu(struct rule *r, char **save, const char *script, int lineno)
{
	char *tok;
	bool type = false;
	while ((tok = strtok_r(NULL, " \t\r\n", save))) {
		char *val = strchr(tok, '=');
		uint64_t v = 0;
		if (!val)
			return bad(script, lineno, "expected key=value, got", tok);
		*val++ = '\0';
		if (parse_u64(val, &v) < 0)
			return bad(script, lineno, "bad key or value", tok);
		if (!strcmp(tok, "type") && v <= UINT32_MAX)
			r->type = (uint32_t)v, type = true;
		else if (!strcmp(tok, "counters") && v >= 1 && v <= 64)
			r->counters = (int)v;
		else
			return bad(script, lineno, "a pmu line takes type= and counters= (1..64), "
				   "not", tok);
	}
	if (!type || !r->counters)
		return bad(script, lineno, "a pmu line needs", "type= and counters=");
	return 3;
}

/* Parses one line into *r. Returns 1 for a rule, 2 for "nogroups", 3 for a "pmu" line, 0 for
 * a blank or comment line, -EINVAL. */
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
	r->node = -1;
	r->bits = 64;
	r->fail_after = r->unavailable_after = -1;
	r->ns_per_read = NS_PER_READ;
	if (!strcmp(tok, "nogroups")) {
		if ((tok = strtok_r(NULL, " \t\r\n", &save)))
			return bad(script, lineno, "\"nogroups\" takes nothing, got", tok);
		return 2;
	}
	if (!strcmp(tok, "pmu"))
		return parse_pmu(r, &save, script, lineno);
	if (!strcmp(tok, "file"))
		r->is_file = true;
	else if (strcmp(tok, "perf"))
		return bad(script, lineno, "a rule is \"perf\", \"file\", \"pmu\" or "
			   "\"nogroups\", not", tok);
	while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
		char *val = strchr(tok, '=');
		uint64_t v = 0;
		int rc = 0;
		if (!strcmp(tok, "notrun") || !strcmp(tok, "solo")) {
			*(tok[0] == 'n' ? &r->notrun : &r->solo) = true;
			continue;
		}
		if (!val)
			return bad(script, lineno, "expected key=value, got", tok);
		*val++ = '\0';
		if (!strcmp(tok, "path")) {
			rc = fmt_into(r->path, "%s", val);
		} else if (!strcmp(tok, "cpu") && !strcmp(val, "*")) {
			r->cpu = -1;
		} else if (!strcmp(tok, "steps")) {
			char *save2 = NULL, *one;
			for (one = strtok_r(val, ",", &save2); one && rc == 0;
			     one = strtok_r(NULL, ",", &save2)) {
				if (r->n_steps == MAX_STEPS)
					rc = -EINVAL;
				else
					rc = parse_u64(one, &r->steps[r->n_steps++]);
			}
			if (r->n_steps == 0)
				rc = -EINVAL;
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
			else if (!strcmp(tok, "config1"))
				r->has_config1 = true, r->config1 = v;
			else if (!strcmp(tok, "cpu") && v <= 1u << 20)
				r->cpu = (int)v;
			else if (!strcmp(tok, "node") && v <= 65535)
				r->node = (int)v;
			else if (!strcmp(tok, "start"))
				r->start = v;
			else if (!strcmp(tok, "step"))
				r->step = v;
			else if (!strcmp(tok, "ns_per_read") && v >= 1 && v < (1ull << 40))
				r->ns_per_read = v;
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

/* Whether cpu is in the cpulist of NUMA node `node` of the sysfs tree in use
 * ($MEMWALL_SYSFS_ROOT, else /sys: <root>/devices/system/node/nodeN/cpulist), so that a
 * script can place counts per node. A node the tree does not have holds no CPU. */
static bool cpu_in_node(int cpu, int node)
{
	const char *root = getenv("MEMWALL_SYSFS_ROOT");
	char path[1024], buf[8192];
	int *cpus = NULL, n = 0;
	bool in = false;
	if (fmt_into(path, "%s/devices/system/node/node%d/cpulist", root && *root ? root : "/sys",
		     node) < 0 ||
	    prb_sysfs_read(path, buf, sizeof(buf), NULL) <= 0 ||
	    prb_cpulist_parse(buf, &cpus, &n, path, NULL) < 0)
		return false;
	for (int i = 0; i < n && !in; i++)
		in = cpus[i] == cpu;
	free(cpus);
	return in;
}

static bool path_ends_with(const char *path, const char *suffix)
{
	size_t n = strlen(path), m = strlen(suffix);
	return m <= n && !strcmp(path + n - m, suffix);
}

/* What the script says beside its rules, of the PMU of the event being opened. */
struct facts {
	bool nogroups; /* the line "nogroups" */
	int counters;  /* a "pmu" line for attr.type: its counters; 0 none */
};

/* The first rule of the script that matches (attr, cpu) or path: 1 with *out filled, 0 when
 * none does (or there is no script), -EINVAL for a malformed script. *fx (may be NULL)
 * receives the script's facts. */
static int find_rule(const struct perf_event_attr *attr, int cpu, const char *path,
		     struct rule *out, struct facts *fx)
{
	const char *script = getenv("MEMWALL_SIM_SCRIPT");
	char line[1024];
	int lineno = 0, rc = 0;
	FILE *f;

	if (fx)
		*fx = (struct facts){ false, 0 };
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
	/* read to the end even after a match: "nogroups" may come later, and a malformed line
	 * anywhere fails the open */
	while (rc >= 0 && fgets(line, sizeof(line), f)) {
		struct rule r;
		int got = parse_line(line, &r, script, ++lineno);
		if (got < 0)
			rc = got;
		else if (got == 2 && fx)
			fx->nogroups = true;
		else if (got == 3 && fx && attr && r.type == attr->type)
			fx->counters = r.counters;
		else if (got != 1 || rc == 1 || r.is_file != (path != NULL))
			continue;
		else if (path ? path_ends_with(path, r.path) :
				r.type == attr->type && r.config == attr->config &&
				(!r.has_config1 || r.config1 == attr->config1) &&
				(r.cpu < 0 || r.cpu == cpu) &&
				(r.node < 0 || cpu_in_node(cpu, r.node))) {
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
	uint64_t v = r->start;
	if (!r->n_steps)
		return (v + k * r->step) & mask;
	for (uint64_t i = 0; i < k; i++)
		v += r->steps[i < (uint64_t)r->n_steps ? i : (uint64_t)r->n_steps - 1];
	return v & mask;
}

/* The scripted counters open now, to count those that share a PMU's counters. A spin lock:
 * opens and reads are few and short, and the probes take no thread library. */
static struct sim_counter *live;
static atomic_flag live_lock = ATOMIC_FLAG_INIT;

static void live_lock_take(void)
{
	while (atomic_flag_test_and_set_explicit(&live_lock, memory_order_acquire))
		;
}

static void live_lock_give(void)
{
	atomic_flag_clear_explicit(&live_lock, memory_order_release);
}

/* How many enabled scripted counters of c's PMU and CPU are open now (c among them when it
 * is enabled). */
static int enabled_beside(const struct sim_counter *c)
{
	int n = 0;
	live_lock_take();
	for (const struct sim_counter *o = live; o; o = o->next)
		n += o->enabled && o->type == c->type && o->cpu == c->cpu;
	live_lock_give();
	return n;
}

/* time_enabled and time_running of read k of counter c (its rule's, or its leader's for a
 * group): running scaled by scaled=. Where its PMU has a counter limit, each read stands for
 * one ns_per_read, run at counters / enabled of it while more events than counters are
 * enabled (the kernel's rotation), and the times add up read by read, so that a window
 * between two reads has the share of its own moment. */
static void times_at(struct sim_counter *c, uint64_t k, uint64_t *ena, uint64_t *run)
{
	const struct rule *r = &c->rule;
	*ena = (k + 1) * r->ns_per_read;
	if (c->counters > 0) {
		int n = enabled_beside(c);
		c->run_ns += n > c->counters ?
			r->ns_per_read * (uint64_t)c->counters / (uint64_t)n : r->ns_per_read;
		*run = r->notrun ? 0 : r->scaled > 0 ? (uint64_t)(r->scaled * (double)c->run_ns) :
			c->run_ns;
		return;
	}
	*run = r->notrun ? 0 : r->scaled > 0 ? (uint64_t)(r->scaled * (double)*ena) : *ena;
}

/* A scripted counter joins the live ones. */
static void go_live(struct sim_counter *c, const struct perf_event_attr *attr, int cpu,
		    int counters)
{
	c->type = attr->type;
	c->cpu = cpu;
	c->counters = counters;
	c->enabled = !attr->disabled;
	live_lock_take();
	c->next = live;
	live = c;
	live_lock_give();
}

static int sim_open(struct counter **out, const struct perf_event_attr *attr, int pid, int cpu)
{
	struct sim_counter *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->read_format = attr->read_format;
	struct facts fx;
	rc = find_rule(attr, cpu, NULL, &c->rule, &fx);
	if (rc == 0)
		rc = prb_counter_syscall_ops.open(&c->inner, attr, pid, cpu);
	if (rc < 0) {
		free(c);
		return rc;
	}
	if (!c->inner)
		go_live(c, attr, cpu, fx.counters);
	*out = (struct counter *)c;
	return 0;
}

static int sim_read(struct counter *cc, uint64_t v[3])
{
	struct sim_counter *c = (struct sim_counter *)cc;
	const struct rule *r = &c->rule;
	uint64_t k = c->k++;

	if (c->inner)
		return prb_counter_syscall_ops.read(c->inner, v);
	if (r->fail_after >= 0 && k > (uint64_t)r->fail_after)
		return -EIO;
	v[0] = value_at(r, k);
	times_at(c, k, &v[1], &v[2]);
	return 0;
}

static int sim_open_member(struct counter **out, const struct perf_event_attr *attr, int pid,
			   int cpu, struct counter *lc)
{
	struct sim_counter *leader = (struct sim_counter *)lc, *c = NULL;
	const char *script = getenv("MEMWALL_SIM_SCRIPT");
	struct facts fx = { false, 0 };
	int rc;

	*out = NULL;
	if (!leader || leader->leader)
		return -EINVAL; /* a member of a member: the kernel takes the group_fd's leader;
				 * the DRAM code never asks for it */
	if (leader->n_members == PRB_DRAM_MAX_EVENTS)
		return -ENOSPC;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->read_format = attr->read_format;
	rc = find_rule(attr, cpu, NULL, &c->rule, &fx);
	if (rc >= 0 && fx.nogroups)
		rc = -EOPNOTSUPP;
	else if (rc == 0 && leader->inner)
		rc = prb_counter_syscall_ops.open_member(&c->inner, attr, pid, cpu, leader->inner);
	else if (rc >= 0 && (rc == 0) != (leader->inner != NULL)) {
		fprintf(stderr, "%s: sim script: a group mixes a scripted event with an unscripted "
			"one (type %u config 0x%llx): script both or neither\n", script,
			attr->type, (unsigned long long)attr->config);
		rc = -EINVAL;
	} else if (rc == 1 && (c->rule.solo || leader->rule.solo)) {
		/* the driver's answer to a second hardware event in its group; said, so a test
		 * can tell that a group was asked of a PMU that takes none (the DRAM code then
		 * falls back to event by event, as it would on the hardware) */
		fprintf(stderr, "%s: sim: a solo event refused a group (type %u config 0x%llx)\n",
			script, attr->type, (unsigned long long)attr->config);
		rc = -EINVAL;
	} else if (rc == 1 && (c->rule.notrun || c->rule.scaled > 0 ||
			       c->rule.ns_per_read != leader->rule.ns_per_read)) {
		fprintf(stderr, "%s: sim script: the rule for type %u config 0x%llx gives a group "
			"member times of its own (notrun, scaled or ns_per_read): a group runs all "
			"or nothing, so its times are its leader's; put them on the leader's rule\n",
			script, attr->type, (unsigned long long)attr->config);
		rc = -EINVAL;
	}
	if (rc < 0) {
		free(c);
		return rc;
	}
	c->leader = leader;
	leader->members[leader->n_members++] = c;
	if (!c->inner)
		go_live(c, attr, cpu, fx.counters);
	*out = (struct counter *)c;
	return 0;
}

/* One read of a group, laid out as perf_event_open(2) says for PERF_FORMAT_GROUP:
 *   struct read_format { u64 nr; u64 time_enabled;  (if PERF_FORMAT_TOTAL_TIME_ENABLED)
 *                        u64 time_running;          (if PERF_FORMAT_TOTAL_TIME_RUNNING)
 *                        struct { u64 value; u64 id; (if PERF_FORMAT_ID)
 *                                 u64 lost;          (if PERF_FORMAT_LOST) } values[nr]; };
 * The leader's value first, then the members' in the order they were opened. */
static int sim_read_group(struct counter *lc, uint64_t *buf, size_t n)
{
	struct sim_counter *leader = (struct sim_counter *)lc;
	uint64_t rf = leader->read_format, ena, run;
	size_t per = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST);
	size_t nr = 1 + (size_t)leader->n_members, at = 1;
	size_t need = 1 + !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
		      !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING) + nr * per;

	if (leader->inner)
		return prb_counter_syscall_ops.read_group(leader->inner, buf, n);
	if (leader->leader || !(rf & PERF_FORMAT_GROUP))
		return -EINVAL; /* read(2) of a leader opened without PERF_FORMAT_GROUP gives
				 * one value, not a group */
	if (n < need)
		return -ENOSPC; /* as read(2) says of a buffer too small for the group */
	uint64_t k = leader->k++;
	for (size_t m = 0; m < nr; m++) {
		struct sim_counter *c = m ? leader->members[m - 1] : leader;
		if (m)
			c->k = leader->k;
		if (c->rule.fail_after >= 0 && k > (uint64_t)c->rule.fail_after)
			return -EIO;
	}
	times_at(leader, k, &ena, &run);
	buf[0] = nr;
	if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
		buf[at++] = ena;
	if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
		buf[at++] = run;
	for (size_t m = 0; m < nr; m++) {
		const struct sim_counter *c = m ? leader->members[m - 1] : leader;
		buf[at++] = value_at(&c->rule, k);
		if (rf & PERF_FORMAT_ID)
			buf[at++] = (uint64_t)(uintptr_t)c; /* unique while it is open */
		if (rf & PERF_FORMAT_LOST)
			buf[at++] = 0;
	}
	return 0;
}

static int set_enabled(struct sim_counter *c, bool on)
{
	if (c->inner)
		return on ? prb_counter_syscall_ops.enable(c->inner) :
			    prb_counter_syscall_ops.disable(c->inner);
	live_lock_take();
	c->enabled = on;
	live_lock_give();
	return 0;
}

static int sim_enable(struct counter *cc)
{
	return set_enabled((struct sim_counter *)cc, true);
}

static int sim_disable(struct counter *cc)
{
	return set_enabled((struct sim_counter *)cc, false);
}

static void sim_close(struct counter *cc)
{
	struct sim_counter *c = (struct sim_counter *)cc;
	if (!c)
		return;
	if (c->leader) { /* a member leaves its group */
		struct sim_counter *l = c->leader;
		for (int i = 0; i < l->n_members; i++)
			if (l->members[i] == c) {
				memmove(&l->members[i], &l->members[i + 1],
					(size_t)(l->n_members - i - 1) * sizeof(l->members[0]));
				l->n_members--;
				break;
			}
	}
	for (int i = 0; i < c->n_members; i++) /* a leader closed first orphans its members */
		c->members[i]->leader = NULL;
	live_lock_take();
	for (struct sim_counter **p = &live; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	live_lock_give();
	if (c->inner)
		prb_counter_syscall_ops.close(c->inner);
	free(c);
}

static unsigned sim_bits(struct counter *cc)
{
	struct sim_counter *c = (struct sim_counter *)cc;
	return c->inner ? 64 : c->rule.bits;
}

const struct counter_ops prb_counter_sim_ops = {
	.name = "sim",
	.open = sim_open,
	.read = sim_read,
	.enable = sim_enable,
	.disable = sim_disable,
	.close = sim_close,
	.open_member = sim_open_member,
	.read_group = sim_read_group,
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

int prb_sim_file_open(struct file_counter **out, const char *path)
{
	struct sim_file *f = calloc(1, sizeof(*f));
	int rc;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	rc = find_rule(NULL, -1, path, &f->rule, NULL);
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
