/* probes/internal.h: what the probes' own files share; never included outside probes/. */
#ifndef MEMWALL_PROBES_INTERNAL_H
#define MEMWALL_PROBES_INTERNAL_H

#include <errno.h>
#include <stdio.h>

#include "probes.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* snprintf into an array, saying whether it fit: 0 or -ENAMETOOLONG. Paths and names from
 * sysfs are short; a truncated one must fail visibly, not open the wrong file. */
#define fmt_into(buf, ...) \
	(snprintf((buf), sizeof(buf), __VA_ARGS__) >= (int)sizeof(buf) ? -ENAMETOOLONG : 0)

/* ---- sysfs files */

/* Reads a small text file whole into buf, trailing whitespace trimmed. Returns its length or a
 * negative errno; err (may be NULL) names the file. */
int prb_sysfs_read(const char *path, char *buf, size_t size, struct prb_error *err);
/* Parses a cpumask/cpulist text ("0", "0,56", "0-3,8") into a new array (*n entries). */
int prb_cpulist_parse(const char *text, int **cpus, int *n, const char *source, struct prb_error *err);

/* ---- the counter layer: one event on one (pid, cpu), behind an ops table so that libperf
 * can stand in for the raw syscalls. */

struct counter;

struct counter_ops {
	const char *name;
	/* attr is complete (read_format set by the caller); returns 0 or -errno */
	int (*open)(struct counter **out, const struct perf_event_attr *attr, int pid, int cpu);
	/* fills value, time_enabled, time_running; returns 0 or -errno */
	int (*read)(struct counter *c, uint64_t v[3]);
	int (*enable)(struct counter *c);
	int (*disable)(struct counter *c);
	void (*close)(struct counter *c);
	/* Optional (NULL where the layer has no groups): opens attr as a member of leader's group,
	 * and reads a leader opened with PERF_FORMAT_GROUP in one go: buf = { nr, time_enabled,
	 * time_running, value[0 .. nr-1] } (perf_event_open(2), "read_format"). One read per
	 * memory controller instead of one per event keeps the per-token snapshot cheap. */
	int (*open_member)(struct counter **out, const struct perf_event_attr *attr, int pid,
			   int cpu, struct counter *leader);
	int (*read_group)(struct counter *leader, uint64_t *buf, size_t n);
	/* Optional (NULL: 64): how many bits wide the value is, so that the difference of two
	 * reads can be taken modulo 2^bits. The kernel's values are 64 bits: the perf uncore
	 * drivers take each hardware counter's delta modulo its own width (48 bits on Intel IMC,
	 * uncore_perf_event_update in arch/x86/events/intel/uncore.c) and add it to the 64-bit
	 * event count read(2) returns. Only the simulated layer is narrower, to test wrapping. */
	unsigned (*bits)(struct counter *c);
};

extern const struct counter_ops prb_counter_syscall_ops;
extern const struct counter_ops prb_counter_sim_ops;
#if MW_HAVE_LIBPERF
extern const struct counter_ops counter_libperf_ops;
#endif
/* The ops in use ($MEMWALL_COUNTERS, else libperf where built, else syscall). */
const struct counter_ops *prb_counter_ops_get(void);

/* Test hook: when set, every open fails with this errno (positive), so the explain paths can be
 * exercised on a machine that has the counters. $MEMWALL_INJECT_ERRNO does the same. */
extern int prb_counter_inject_errno;
/* Test hook: when true, every open that counts kernel space (exclude_kernel 0) fails with
 * EACCES, as the kernel refuses it at perf_event_paranoid 2 to a process without
 * CAP_PERFMON: the unprivileged user's view on a machine where the tests run as root. */
extern bool prb_counter_inject_paranoid2;
int prb_counter_open(struct counter **out, const struct perf_event_attr *attr, int pid, int cpu);
/* prb_counter_open for a group member; -EOPNOTSUPP when the layer has no groups. */
int prb_counter_open_member(struct counter **out, const struct perf_event_attr *attr, int pid,
			int cpu, struct counter *leader);
/* The width of c's value in the layer in use: 64 unless the layer says otherwise. */
unsigned prb_counter_bits(struct counter *c);

/* ---- byte counters kept in files (resctrl's mbm_total_bytes), behind a seam the simulated
 * layer takes over for the files its script names, so a test can make them grow per read. */

struct file_counter {
	/* 0 and *v; -ENODATA when the file says there is no value ("Unavailable", "Error",
	 * "Unassigned": resctrl's rdtgroup_mondata_show), -EIO when it is not a number, or
	 * another negative errno from open/read */
	int (*read)(struct file_counter *f, uint64_t *v);
	void (*close)(struct file_counter *f);
	unsigned bits; /* 64: resctrl keeps the count 64 bits wide across the hardware's overflow */
};

/* Opens path as a byte counter (nothing is read yet). */
int prb_file_counter_open(struct file_counter **out, const char *path);
/* The plain file layer behind prb_file_counter_open (counter_syscall.c). */
int prb_file_counter_open_plain(struct file_counter **out, const char *path);
/* The simulated layer's file counter for path, or -ENOENT when its script does not name it. */
int prb_sim_file_open(struct file_counter **out, const char *path);

/* ---- core events through libpfm4 (its headers clash with linux/perf_event.h, so it lives in
 * core_pfm.c behind this plain interface). Returns 0 or -ENOENT with why. */
int prb_pfm_encode(const char *name, uint32_t *type, uint64_t *config, uint64_t *config1,
	       uint64_t *config2, char *why, size_t why_size);

/* ---- DRAM backends (probes/pmu/), one per PMU family, listed in dram.c's table. */

enum dram_dir { DRAM_READ, DRAM_WRITE, DRAM_TOTAL };

struct dram_event {
	enum dram_dir dir;
	struct perf_event_attr attr; /* type and config*; the rest is set at open */
	double bytes_per_count;      /* 64 for a CAS or a 64-byte line */
	char name[64];               /* prb_dram_event_desc.name: the terms, unless the backend
				      * names it (prb_dram_plan_name_event) */
};

struct dram_instance {
	const struct prb_pmu *pmu; /* NULL for a file instance */
	int cpu;
	char name[64];
	int n_events;
	struct dram_event events[PRB_DRAM_MAX_EVENTS];
	char path[512];            /* file backends (resctrl): the byte counter to read */
	unsigned counter_bits;     /* the width the backend knows its counters to have (64 for
				    * perf and resctrl); the narrower of this and the counter
				    * layer's width is used for wrap handling */
};

struct dram_plan {
	bool no_group; /* from the backend */
	int n;
	struct dram_instance inst[PRB_DRAM_MAX_INSTANCES];
};

struct dram_backend {
	const char *name;
	const char *description;
	unsigned flags;      /* enum prb_dram_flags, but for TOTAL_ONLY (derived from provides) */
	unsigned provides;   /* enum prb_dram_provides: the figures it counts */
	bool no_group;       /* more events per instance than counters: read them one by one so
			      * the kernel can multiplex them (a group is all or nothing) */
	int counters;        /* prb_dram_status.counters: the PMU's counters for these events,
			      * with its source in the backend's file; 0: not stated (they fit) */
	const char *caveat;  /* when PRB_DRAM_CAVEAT */
	/* Where the PMU family exists and what its instances are called, so that a record can be
	 * checked against itself (prb_dram_backend_check): the kernel's machine (uname -m; NULL:
	 * any), and each name the driver gives an instance, a prefix followed by one or more
	 * characters of suffix (NULL suffix: the prefix is the whole name). */
	const char *machine;
	struct {
		const char *prefix, *suffix;
	} names[2];
	/* Fills plan with every instance present; returns the count (0: absent, with why) or a
	 * negative errno when a present PMU is malformed (why says how). */
	int (*detect)(const struct prb_system *sys, struct dram_plan *plan, char *why, size_t n);
};

/* The suffixes of dram_backend.names: perf's numbered PMUs (amd_umc_3), DMC-620's addresses. */
#define DRAM_NAME_DIGITS "0123456789"
#define DRAM_NAME_HEX "0123456789abcdefABCDEF"

extern const struct dram_backend prb_dram_intel_imc_free;
extern const struct dram_backend prb_dram_intel_imc_cas;
extern const struct dram_backend prb_dram_amd_umc;
extern const struct dram_backend prb_dram_amd_df;
extern const struct dram_backend prb_dram_arm_dmc620;
extern const struct dram_backend prb_dram_nvidia_scf;
extern const struct dram_backend prb_dram_arm_cmn;
extern const struct dram_backend prb_dram_resctrl;

/* prb_dram_probe that also hands back the plan: what would be opened, attr by attr (tests
 * check the encodings against values derived by hand from the format files). */
int prb_dram_probe_plan(const struct prb_system *sys, const struct prb_dram_options *opt,
		    struct prb_dram_status *st, struct dram_plan *plan);

/* Helpers for backends: */
/* Every PMU named prefix<digits>, in numeric order: returns how many there are, and out holds
 * the first max of them (a caller refuses more than max with prb_dram_too_many). */
size_t prb_dram_pmus_matching(const struct prb_system *sys, const char *prefix,
			  const struct prb_pmu **out, size_t max);
/* More instances than PRB_DRAM_MAX_INSTANCES: found what ("200 nvidia_scf_pmu_N PMUs") said
 * in why, with the limit. Returns -E2BIG, which prb_dram_probe_plan takes as a refusal, never as
 * absence: counting some of the controllers would report part of the traffic as all of it,
 * and falling back to another backend would hide that this one is here. */
int prb_dram_too_many(const char *what, size_t found, char *why, size_t n);
/* 0 when pmu's sysfs entry parsed cleanly; else -EINVAL with why naming the file at fault. */
int prb_dram_pmu_check(const struct prb_pmu *pmu, char *why, size_t n);
/* Adds one instance per CPU of pmu's cpumask (CPU 0 when it has none). Returns the first new
 * instance's index, or -E2BIG with why (prb_dram_too_many) past PRB_DRAM_MAX_INSTANCES. */
int prb_dram_plan_add_pmu(struct dram_plan *plan, const struct prb_pmu *pmu, char *why, size_t n);
/* Adds event terms (alias or "field=value,...") to every instance from first on, encoded with
 * the instance's PMU; bytes_per_count 0 means: take it from the alias's .scale and .unit.
 * Returns 0 or a negative errno with why. */
int prb_dram_plan_add_event(struct dram_plan *plan, int first, enum dram_dir dir, const char *terms,
			double bytes_per_count, char *why, size_t n);
/* Names the last event added to every instance from first on (prb_dram_event_desc.name):
 * 0, or -ENAMETOOLONG when name does not fit. */
int prb_dram_plan_name_event(struct dram_plan *plan, int first, const char *name);

#endif
