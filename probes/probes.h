/* probes/probes.h: hardware and software counters, the probes library's public face.
 *
 * The probes know nothing of the engine; src/ reads them at the engine's hooks.
 * A counter that cannot be read is reported as unavailable with its reason: never as zero,
 * never as an estimate.
 *
 * Five parts:
 *   discovery   prb_system_*: the PMUs under <sysfs>/bus/event_source/devices, parsed as perf
 *               parses them (type, cpumask, format/<field>, events/<alias> with .scale and .unit);
 *   topology    prb_topology_*: the NUMA nodes under <sysfs>/devices/system/node and their
 *               packages, from the same root;
 *   DRAM        prb_dram_*: bytes read from and written to DRAM, from the memory controllers'
 *               own counters, over every controller instance (a table of backends, probes/pmu/);
 *   sets        prb_set_*: any other events (software, core via libpfm4, "pmu/terms/" such as
 *               power/energy-pkg/), read together;
 *   explain     prb_explain: why a perf_event_open failed, and the fix.
 *
 * Every function returns 0 or a negative errno; objects are _open/_close (they hold counter
 * fds) or _new/_free; every getter says how long what it returns stays valid.
 */
#ifndef MEMWALL_PROBES_H
#define MEMWALL_PROBES_H

#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where outside input (a sysfs file, an event string) was wrong, or why a counter is absent. */
struct prb_error {
	char source[512]; /* the sysfs path or event at fault, "" if none */
	char text[768];   /* what was wrong, and the fix where there is one */
};

void prb_error_clear(struct prb_error *err);
int prb_error_set(struct prb_error *err, int code, const char *source, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---------------------------------------------------------------- discovery */

/* One field of a PMU's format/ directory, e.g. umask = "config:8-15,32-55". A value written
 * into the field fills the ranges in order, low bits first (as perf's pmu_format_value()). */
#define PRB_FORMAT_MAX_RANGES 8
struct prb_format {
	char name[32];
	int n_ranges;
	struct prb_bit_range {
		uint8_t word; /* 0 config, 1 config1, 2 config2, 3 config3 */
		uint8_t lo, hi; /* inclusive bit numbers, lo <= hi <= 63 */
	} ranges[PRB_FORMAT_MAX_RANGES];
};

/* One alias of a PMU's events/ directory, e.g. data_read = "event=0xff,umask=0x20" with
 * data_read.scale = 6.103515625e-5 and data_read.unit = "MiB". */
struct prb_event {
	char name[64];
	char terms[256]; /* the alias's text, trimmed */
	double scale;    /* 1.0 when there is no .scale file */
	char unit[16];   /* "" when there is no .unit file */
};

/* One PMU. Read-only for callers; owned by the prb_system it came from. */
struct prb_pmu {
	char name[64];
	uint32_t type;            /* the perf_event_attr.type to open it with */
	int *cpus;                /* from cpumask: where an uncore event must be opened */
	int n_cpus;               /* 0: no cpumask file (core and software PMUs) */
	struct prb_format *formats;
	size_t n_formats;
	struct prb_event *events;
	size_t n_events;
	struct prb_error problem; /* problem.text[0] != 0: part of its sysfs entry was unreadable */
};

struct prb_system;

/* Reads every PMU under <root>/bus/event_source/devices. root NULL means $MEMWALL_SYSFS_ROOT,
 * or "/sys" when that is unset. A PMU whose files are malformed is kept, with the reason in
 * its .problem (a backend refuses a PMU with a problem); the open fails only when the devices
 * directory cannot be read (-ENOENT, err names it) or memory runs out. The caller frees *out
 * with prb_system_close. */
int prb_system_open(struct prb_system **out, const char *root, struct prb_error *err);
void prb_system_close(struct prb_system *sys);
/* The sysfs root in use. Borrowed; valid until prb_system_close. */
const char *prb_system_root(const struct prb_system *sys);
size_t prb_system_pmu_count(const struct prb_system *sys);
/* PMUs sorted by name (numeric suffixes in numeric order: uncore_imc_2 before uncore_imc_10).
 * Borrowed; valid until prb_system_close. NULL when i is out of range or name is absent. */
const struct prb_pmu *prb_system_pmu(const struct prb_system *sys, size_t i);
const struct prb_pmu *prb_system_pmu_find(const struct prb_system *sys, const char *name);

/* True when name is prefix followed by one or more decimal digits and nothing else:
 * prb_name_is_instance("uncore_imc_0", "uncore_imc_") is true,
 * prb_name_is_instance("uncore_imc_free_running_0", "uncore_imc_") is false. */
bool prb_name_is_instance(const char *name, const char *prefix);

/* Parses a format file's text ("config:0-7", "config1:0-15", "config:0-7,32-35", "config:18")
 * into *out (name left as is). source names the file for err. -EINVAL on anything else,
 * including bits past 63 or an empty text. */
int prb_format_parse(const char *text, struct prb_format *out, const char *source,
		     struct prb_error *err);

const struct prb_event *prb_pmu_event_find(const struct prb_pmu *pmu, const char *name);

/* Builds attr->type/config/config1/config2 for pmu from terms: either an alias name
 * ("data_read") or a list of "field=value" terms ("event=0xff,umask=0x20"; a bare "edge" means
 * edge=1). Every other attr field is zeroed except size. A field the PMU has no format for, or a
 * value too wide for it, is -EINVAL with err naming the field and the format file. */
int prb_pmu_encode(const struct prb_pmu *pmu, const char *terms, struct perf_event_attr *attr,
		   struct prb_error *err);

/* Bytes in one unit of a sysfs .unit string: "B" 1, "KB" 1e3, "MB" 1e6, "GB" 1e9, "KiB" 2^10,
 * "MiB" 2^20, "GiB" 2^30. MB and MiB are different units and stay different. -EINVAL for
 * anything else (including "Joules"). */
int prb_unit_bytes(const char *unit, double *bytes);

/* ---------------------------------------------------------------- readings */

enum prb_reading_flags {
	PRB_READING_SCALED = 1u << 0,      /* multiplexed: count extrapolated by enabled/running */
	PRB_READING_NOT_COUNTED = 1u << 1, /* time_running was 0: there is no value */
	PRB_READING_UNAVAILABLE = 1u << 2, /* never opened: prb_set_reason() says why */
	PRB_READING_USER_ONLY = 1u << 3,   /* opened with exclude_kernel after the full open was refused */
};

/* One counter's reading, kept together as libperf's perf_counts_values keeps them. For an event
 * opened on several CPUs (an uncore PMU with one CPU per socket), value and the times are sums
 * and count is the sum of the per-CPU corrected counts. */
struct prb_reading {
	uint64_t value;        /* raw count since enable */
	uint64_t time_enabled; /* ns */
	uint64_t time_running; /* ns */
	double count;          /* value * time_enabled / time_running (== value when not scaled) */
	double physical;       /* count times the alias's .scale, in unit; == count without one */
	const char *unit;      /* the alias's .unit ("Joules", "MiB"), "" without one; borrowed */
	unsigned flags;        /* enum prb_reading_flags */
};

/* Corrects one raw reading for multiplexing into r->count and r->flags (SCALED when
 * time_running < time_enabled, NOT_COUNTED when time_running is 0). */
void prb_reading_scale(struct prb_reading *r);

/* later - earlier for a counter that is `bits` wide (64 for everything the kernel reports
 * today; a narrower one wraps at 2^bits and the difference is taken modulo that). */
uint64_t prb_counter_delta(uint64_t later, uint64_t earlier, unsigned bits);
/* Whether delta (prb_counter_delta of a counter bits wide, since its value at open) is a count
 * at all: below half the counter's range. More is no wrap: a 64-bit count does not advance
 * 2^63 while memwall counts (at 10^10 counts a second that takes 29 years), and a 48-bit one
 * not 2^47 (9 PB at 64 bytes a count), so what looks like one is a counter that went back
 * below its value at open, a reset or a driver's reprogram, taken modulo its width. */
bool prb_counter_plausible(uint64_t delta, unsigned bits);

/* ---------------------------------------------------------------- explain */

/* The cause and the fix for a failed perf_event_open (err is a positive or negative errno),
 * for the event named `event`. Thread-local storage, overwritten by the next call on the same
 * thread; never NULL. Classification, not guesswork: call it with the errno an open actually
 * returned. */
const char *prb_explain(int err, const char *event);

/* ---------------------------------------------------------------- states */

/* The state of a figure a probe produced: measured, or why there is no value. A figure that
 * is not measured carries no number (bytes 0), so that "not counted" and "this backend has no
 * such figure" can never be read downstream as a measured 0. */
enum prb_state {
	PRB_MEASURED = 0, /* counted over the whole interval (maybe scaled for multiplexing) */
	PRB_NOT_RUN,      /* the counter exists but never ran: multiplexed out, never scheduled */
	PRB_READ_FAILED,  /* the read failed (read(2) error, resctrl's "Unavailable"/"Error") */
	PRB_NOT_PROVIDED, /* this backend has no such figure (no read/write split) */
};

/* "measured", "not-run", "read-failed", "not-provided"; "unknown" for anything else. Static
 * storage. */
const char *prb_state_name(enum prb_state s);
/* One sentence for a record's reason field, e.g. why a figure is null. Static storage. */
const char *prb_state_reason(enum prb_state s);

/* Bytes with their state; bytes is 0 unless state == PRB_MEASURED. */
struct prb_bytes {
	uint64_t bytes;
	enum prb_state state;
};

/* ---------------------------------------------------------------- DRAM */

#define PRB_DRAM_MAX_INSTANCES 128
#define PRB_DRAM_MAX_EVENTS 8 /* per instance: GNR reads sch0 + sch1, DF 8 channels */

enum prb_dram_flags {
	PRB_DRAM_CAVEAT = 1u << 0,     /* known to be inexact: status.caveat says how */
	PRB_DRAM_TOTAL_ONLY = 1u << 1, /* no read/write split (set exactly when provides lacks
					* READ or WRITE; status.provides is the finer answer) */
};

/* The figures a backend counts. Read and write come together (a controller's CAS or data
 * counters); total is read + write there, or the backend's own combined count. */
enum prb_dram_provides {
	PRB_DRAM_READ = 1u << 0,
	PRB_DRAM_WRITE = 1u << 1,
	PRB_DRAM_TOTAL = 1u << 2,
};

/* What prb_dram_open found or would use. Filled whether or not the open succeeds. */
struct prb_dram_status {
	bool available;     /* every instance opened */
	char backend[32];   /* "intel_imc_free", ...; "" when none was found */
	char description[128];
	unsigned flags;     /* enum prb_dram_flags */
	unsigned provides;  /* enum prb_dram_provides; 0 when no backend was found */
	char caveat[256];   /* "" unless PRB_DRAM_CAVEAT */
	int counters;       /* the counters each instance's PMU has for these events, as the
			     * backend states them (amd_df: 4); 0 when it states none (its events
			     * fit). More events than counters are multiplexed: prb_dram_groups */
	char reason[768];   /* when !available: why, and the fix */
	int n_instances;    /* every instance the backend counts: all of them, always */
	struct prb_dram_instance {
		char pmu[64]; /* the PMU, e.g. uncore_imc_free_running_1, amd_umc_7 */
		int cpu;      /* the CPU it is opened on (one per socket); -1 for file backends */
		int n_events; /* perf events opened on it (0 for file backends) */
		struct prb_dram_encoding {
			char dir[8];     /* "read", "write", "total" */
			uint32_t type;   /* perf_event_attr.type: the PMU's sysfs type */
			uint64_t config; /* perf_event_attr.config, from the sysfs format */
			uint64_t config1; /* .config1 (arm_dmc620's mask/match: the direction) */
			double bytes_per_count; /* what one count is in bytes (from the alias's
						 * .scale and .unit, or the backend's 64) */
		} events[PRB_DRAM_MAX_EVENTS];
	} instances[PRB_DRAM_MAX_INSTANCES];
	char missing[1024]; /* backends looked for and absent, each with why ("" if none) */
};

/* Per instance: bytes since open, each figure with its state. A figure the backend does not
 * provide is PRB_NOT_PROVIDED; one fed by a counter that did not run over the interval is
 * PRB_NOT_RUN; one whose read failed is PRB_READ_FAILED. */
struct prb_dram_instance_sample {
	struct prb_bytes read, write;
	struct prb_bytes total;  /* read + write, or the backend's combined count */
	uint64_t time_enabled;   /* ns since open, of the instance's events (the longest) */
	uint64_t time_running;   /* ns since open (the shortest: the least counted event) */
	unsigned reading_flags;  /* enum prb_reading_flags, OR over the instance's events */
};

/* Sums over every instance. A sum is PRB_MEASURED only when that figure of every instance is:
 * a partial set of controllers is never counted. Otherwise it takes the state of the first
 * instance whose figure is not measured, and bytes 0. */
struct prb_dram_sample {
	int n_instances;
	struct prb_dram_instance_sample inst[PRB_DRAM_MAX_INSTANCES];
	struct prb_bytes read, write, total;
	unsigned reading_flags; /* OR over every instance */
};

/* The multiplexing share of an instance over a sample's interval: time_running / time_enabled
 * (perf prints it as the percentage beside a count), of the least counted of its events; 1 for
 * a counter that ran the whole time, below 1 when the kernel multiplexed it and its counts were
 * extrapolated by time_enabled / time_running. NaN when the interval has no enabled time (a
 * sample that was never read). */
double prb_dram_instance_share(const struct prb_dram_instance_sample *is);
/* The smallest instance share of s (NaN when no instance has one); *worst (may be NULL)
 * receives that instance's index, or -1. */
double prb_dram_sample_share(const struct prb_dram_sample *s, int *worst);

/* out = later - earlier, figure by figure and instance by instance: measured only when both
 * sides are (else the later side's state when it is not measured, the earlier's otherwise);
 * bytes modulo 2^64; times later - earlier; reading_flags the OR of both. out may be either
 * input. */
void prb_dram_sample_delta(const struct prb_dram_sample *later,
			   const struct prb_dram_sample *earlier, struct prb_dram_sample *out);

struct prb_dram_options {
	const char *backend;  /* a backend name to insist on; NULL: the most accurate available */
	bool forbid_scaling;  /* prb_dram_read fails with -ERANGE rather than extrapolate */
	unsigned events;      /* 0: every event of every instance. Else a subset: event j of each
			       * instance (prb_dram_events' order on a full open) where bit j is
			       * set, and no other, e.g. one mask of prb_dram_groups */
};

struct prb_dram;

/* Names of the DRAM backends in order of preference, NULL-terminated. Static storage. */
const char *const *prb_dram_backends(void);

/* Whether DRAM figures can have come from backend on a machine: its PMU family exists on the
 * kernel's machine (uname -m as a record's machine.kernel.machine says it; NULL: not
 * checked), and instance (NULL: not checked) is a name its driver gives an instance
 * (amd_umc_3, uncore_imc_free_running_0, resctrl/mon_L3_00). 0 when both fit; -ENOENT for a
 * backend this build does not know (not checked); -EINVAL when one does not, with why (n
 * bytes) saying which and what the backend expects. */
int prb_dram_backend_check(const char *backend, const char *machine, const char *instance,
			   char *why, size_t n);

/* Finds the backend (opt->backend, or the most accurate present) and fills *st with it and
 * every instance it counts, without opening anything. 0 when one was found; -ENOENT when none
 * (st->reason says why: on a virtual machine, that it exposes no uncore PMUs); -EINVAL for an
 * unknown backend name; -E2BIG when the backend that would be used has more instances than
 * PRB_DRAM_MAX_INSTANCES (st->reason names the count and the limit: it is refused, never
 * counted in part nor passed over for another backend). opt may be NULL; st lists every event
 * whatever opt->events says. */
int prb_dram_probe(const struct prb_system *sys, const struct prb_dram_options *opt,
		   struct prb_dram_status *st);

/* prb_dram_probe, then opens every event of every instance (pid -1, on the PMU's cpumask
 * CPUs, no exclude bits) and enables them. Either every instance opens or none does: a
 * partial set of memory controllers is never counted. With opt->events, only those events of
 * each instance (st then lists only them, and so does prb_dram_events); a mask that leaves an
 * instance no event, or names events past its last, is -EINVAL with st->reason saying so. On
 * failure st->available is false and st->reason gives prb_explain() of the errno. The caller
 * closes *out with prb_dram_close. */
int prb_dram_open(struct prb_dram **out, const struct prb_system *sys,
		  const struct prb_dram_options *opt, struct prb_dram_status *st);
void prb_dram_close(struct prb_dram *d);
/* Bytes since open, per instance and summed, each figure with its state; a per-token figure
 * is prb_dram_sample_delta of two samples. The hot path: one read(2) per memory controller
 * where the counter layer has groups (its events form one group), one per event otherwise
 * (amd_df's 8 channel events are multiplexed on 4 counters when opened together, so they are
 * never grouped: a group is scheduled all or nothing).
 * Raw counts are taken against the value read at open, modulo the counter's width, so a
 * counter that wraps between reads is still counted; a difference of half the counter's range
 * or more is no wrap but a counter that went back (reset or reprogrammed below its value at
 * open), and bytes that would not fit a signed 64-bit integer are no count a controller makes:
 * both are PRB_READ_FAILED (prb_counter_plausible). -ERANGE when a reading was multiplexed
 * (or did not run) and scaling is forbidden, -EIO when a counter read failed; s is still
 * filled in whole: what could not be read is PRB_READ_FAILED (and its reading_flags
 * PRB_READING_NOT_COUNTED), what did not run PRB_NOT_RUN. */
int prb_dram_read(struct prb_dram *d, struct prb_dram_sample *s);
/* Borrowed; valid until prb_dram_close. */
const struct prb_dram_status *prb_dram_status(const struct prb_dram *d);

/* Groups of events that fit the counters: where an instance has more events than
 * st->counters, the kernel time-shares the counters and every count is an extrapolation;
 * opened one group at a time (prb_dram_options.events = masks[g]), each is counted whole.
 * Fills masks[0 .. n) with consecutive events, st->counters to a group (the last may hold
 * fewer), and returns n: 1 with masks[0] = 0 (every event) when the events fit or the backend
 * states no count; -ENOSPC when max is too small. */
int prb_dram_groups(const struct prb_dram_status *st, unsigned *masks, int max);
/* Stops and restarts every counter of d (PERF_EVENT_IOC_DISABLE/ENABLE): a disabled event
 * counts nothing, its time enabled stands still, and it takes no counter from the events that
 * run, so that groups opened side by side can take turns. Reads of a disabled d are still
 * valid (the counts since open, as they stood). A file instance (resctrl) cannot stop: it is
 * left as it is. 0 or the first negative errno. */
int prb_dram_enable(struct prb_dram *d);
int prb_dram_disable(struct prb_dram *d);
/* Each event of instance i as of the last prb_dram_read: out[j] its bytes since open (j in
 * prb_dram_events' order), with its state; returns how many (0 for a file instance), -EINVAL
 * when there is no instance i, -ENOSPC when max is too small. Before any read, every event is
 * PRB_NOT_RUN. */
int prb_dram_event_bytes(const struct prb_dram *d, int i, struct prb_bytes *out, int max);
/* acc += s, figure by figure and instance by instance, for samples of disjoint sets of one
 * plan's events (the groups of prb_dram_groups, each with its own prb_dram): bytes and times
 * add, flags OR. A figure is measured when both sides are; one side's not-provided figure
 * (a group with none of that figure's events) adds nothing; otherwise the first state that is
 * not measured wins, with bytes 0. */
void prb_dram_sample_add(struct prb_dram_sample *acc, const struct prb_dram_sample *s);

/* One event of a DRAM instance as the kernel's perf tool names it, so that a second meter can
 * read the same counters (`memwall verify` runs `perf stat -a -x, -e` on them). */
struct prb_dram_event_desc {
	char perf[192];         /* "uncore_imc_free_running_0/config=0x20ff/": the PMU and the raw
				 * encoding (perf then applies no .scale: it prints counts) */
	char name[64];          /* what the backend calls it: the alias ("data_read") or perf's
				 * name ("dram_channel_data_controller_5"), else its terms */
	unsigned figure;        /* PRB_DRAM_READ, PRB_DRAM_WRITE or PRB_DRAM_TOTAL */
	double bytes_per_count; /* what one count is in bytes, as prb_dram_read converts it */
};
/* Fills out[0 .. max) with instance i's events in the order they are opened; returns how many
 * (0 for a file instance, resctrl's, which perf does not read), or -EINVAL when there is no
 * instance i, -ENOSPC when max is too small. */
int prb_dram_events(const struct prb_dram *d, int i, struct prb_dram_event_desc *out, int max);

/* ---------------------------------------------------------------- sets of events */

struct prb_set_options {
	int pid;      /* 0: the calling thread; or a thread id (gettid()) of another thread */
	int cpu;      /* -1: any CPU. PMU events with a cpumask ignore both and use the cpumask */
	bool inherit; /* also count threads created after the open. Their counts reach a read
		       * only when they exit (perf_event_open(2), "inherit"): to read a live
		       * thread pool per token, open one set per worker thread id instead */
};

struct prb_set;

/* A new empty set; opt NULL means {pid 0, cpu -1, inherit false}. Free with prb_set_free. */
int prb_set_new(struct prb_set **out, const struct prb_system *sys,
		const struct prb_set_options *opt);
void prb_set_free(struct prb_set *s);

/* Adds and opens (disabled) one event:
 *   software:  task-clock, cpu-clock, page-faults, minor-faults, major-faults,
 *              context-switches, cpu-migrations
 *   core:      cycles, instructions, cache-misses (LLC), stalled-cycles-backend, or any name
 *              libpfm4 knows for this CPU (resolved with pfm_get_os_event_encoding)
 *   PMU:       "pmu/terms/", e.g. "power/energy-pkg/", "uncore_imc_0/event=0x05,umask=0xcf/"
 * *index receives the event's position in readings. Returns 0 when it opened. When the name is
 * understood but the open fails, the event is still added (it reads as UNAVAILABLE, with
 * prb_set_reason), *index is set, err explains, and the negative errno is returned. An unknown
 * name or bad terms is -EINVAL with *index = -1 and nothing added. */
int prb_set_add(struct prb_set *s, const char *event, int *index, struct prb_error *err);
int prb_set_count(const struct prb_set *s);
/* The event's name as given, and why it is unavailable ("" when it is not). Borrowed; valid
 * until prb_set_free. */
const char *prb_set_name(const struct prb_set *s, int index);
const char *prb_set_reason(const struct prb_set *s, int index);
int prb_set_enable(struct prb_set *s);
int prb_set_disable(struct prb_set *s);
int prb_set_reset(struct prb_set *s);
/* Fills out[0 .. prb_set_count()-1]. */
int prb_set_read(struct prb_set *s, struct prb_reading *out);

/* ---------------------------------------------------------------- topology */

/* One NUMA node of <sysfs>/devices/system/node (probes/numa.c). */
struct prb_numa_node {
	int id;              /* N of nodeN */
	int *cpus;           /* its cpulist; NULL and n_cpus 0 for a memory-only node (CXL, HBM) */
	int n_cpus;
	int64_t mem_bytes;   /* MemTotal of nodeN/meminfo; -1 when unreadable */
	int package;         /* physical_package_id of its first CPU; -1 unknown or no CPU */
	bool spans_packages; /* its CPUs lie in more than one package (AMD's NPS0: one node, two
			      * sockets) */
};

struct prb_topology;

/* Reads the NUMA nodes under <root>/devices/system/node and their packages (root as
 * prb_system_open takes it: NULL means $MEMWALL_SYSFS_ROOT, else "/sys"). A machine without
 * the folder (a kernel without CONFIG_NUMA, a recorded tree without it) is not an error: it
 * has 0 nodes and prb_topology_why says so. -EINVAL with err naming the file when a cpulist is
 * malformed; -ENOMEM. Free *out with prb_topology_free. */
int prb_topology_new(struct prb_topology **out, const char *root, struct prb_error *err);
void prb_topology_free(struct prb_topology *t);
/* Borrowed; valid until prb_topology_free. */
const char *prb_topology_root(const struct prb_topology *t);
int prb_topology_node_count(const struct prb_topology *t);
/* The i-th node in order of id; NULL when out of range. Borrowed, as above. */
const struct prb_numa_node *prb_topology_node(const struct prb_topology *t, int i);
/* Why there are no nodes ("" when there are). Borrowed, as above. */
const char *prb_topology_why(const struct prb_topology *t);
/* The number of distinct packages over the nodes' CPUs; 0 when unknown, *why (may be NULL;
 * borrowed, as above) then saying why. */
int prb_topology_packages(const struct prb_topology *t, const char **why);
/* The id of the node whose cpulist holds cpu; -1 when none does. */
int prb_topology_cpu_node(const struct prb_topology *t, int cpu);

/* ---------------------------------------------------------------- counter backends */

/* The layer that talks to the kernel: "syscall" (perf_event_open and read, always built),
 * "libperf" (the kernel's tools/lib/perf, built when meson finds it) or "sim" (a simulated PMU
 * replaying the counts scripted in the file $MEMWALL_SIM_SCRIPT, for tests; events the script
 * does not name go to the syscall layer: probes/counter_sim.c). $MEMWALL_COUNTERS picks one;
 * the default is libperf where built. Static storage. */
const char *prb_counter_backend(void);

#endif
