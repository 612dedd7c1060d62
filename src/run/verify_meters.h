/* src/run/verify_meters.h: `memwall verify`'s meters (verify_meters.c): the backend under
 * test, opened whole or in counter groups that take turns, and resctrl beside it, read at
 * every boundary of verify's windows. Checked by verify_checks.c. */
#ifndef MEMWALL_RUN_VERIFY_METERS_H
#define MEMWALL_RUN_VERIFY_METERS_H

#include <stdbool.h>
#include <stdint.h>

#include "probes.h"
#include "topology.h"

/* Readings of every meter: the idle window's 2, 3 per placement target (64 at most), perf's
 * 2 and the matrix's 6 per size (4): 220, allocated at the open so a reading never fails. */
#define MW_VERIFY_MAX_SAMPLES 224
#define MW_VERIFY_MAX_GROUPS PRB_DRAM_MAX_EVENTS /* counter groups: one event each at most */

/* Counter groups. Where the backend has more events on a PMU than the PMU has counters
 * (prb_dram_status.counters: amd_df's 8 channel events on the data fabric's 4), opening them
 * all makes the kernel time-share the counters and every count an extrapolation, which verify
 * does not pass. verify then opens the events in groups that fit (prb_dram_groups), one
 * prb_dram per group, and runs every phase (the idle window, each placement's passes, each
 * matrix size) once per group, that group's events alone enabled: each count is counted
 * whole. Group g reads at the same reading indices as group 0, so a reading k of the whole
 * (s[k]) is the sum of every group's reading k (prb_dram_sample_add): a window of the whole
 * is what each group counted over its own run of that window, one canary's worth in all (each
 * run streams the same canary over a disjoint set of channels). */
struct mw_verify_meters {
	struct prb_dram *d, *r;             /* the backend under test (group 0's events where
					     * it has groups: list events with mw_verify_events);
					     * resctrl beside it */
	struct prb_dram_status st, rst;     /* st: every event of every instance */
	int n_groups;                       /* 1: every event at once, in d */
	struct prb_dram *g[MW_VERIFY_MAX_GROUPS]; /* g[0] is d */
	unsigned gmask[MW_VERIFY_MAX_GROUPS];     /* each group's events (prb_dram_groups) */
	int cur;                            /* the group enabled and read now; -1: every one */
	int phase_first, phase_next;        /* a phase's first reading, and the next one a group
					     * after the first takes (-1: not replaying) */
	bool phase_bad;                     /* a group read more times than the first did */
	struct prb_dram_sample **gs;        /* [g * MW_VERIFY_MAX_SAMPLES + k]: group g's
					     * reading k (NULL with one group) */
	struct prb_bytes *gev;              /* group g's events at reading k (mw_verify_gev) */
	struct prb_dram_sample *gw[MW_VERIFY_MAX_GROUPS];   /* each group's window, scratch */
	struct prb_dram_sample *gidle[MW_VERIFY_MAX_GROUPS]; /* each group's idle window */
	int idle_a, idle_b;                 /* the idle window's readings */
	int wa, wb;                         /* the window m->w (and gw) holds */
	int n;                              /* readings taken */
	struct prb_dram_sample *s[MW_VERIFY_MAX_SAMPLES];  /* d's readings, in order */
	struct prb_dram_sample *rs[MW_VERIFY_MAX_SAMPLES]; /* r's, at the same moments */
	struct prb_dram_sample *w;          /* a window's delta, scratch */
	struct prb_dram_sample *idle;       /* the idle window's delta */
	struct mw_topo_instance *topo;      /* per instance: its node (topology.h) */
	bool split;                         /* the backend counts reads and writes apart */
	int channels_populated;             /* the topology's, -1 unknown: a grouped backend's
					     * channel events are checked one by one only where
					     * every one of them has memory (or it is unknown) */
	int canary_first, canary_last;      /* the readings around every placement's passes */
	int canary[64][2], n_canary;        /* each placement's passes: start, end */
};

/* Reads every meter now (a failed read leaves its figures read-failed in the sample: the
 * checks say so): the group enabled now (every group outside a phase), and resctrl with the
 * first group. Returns the reading's index: a new one, or, while a group after the first runs
 * a phase, the index group 0 took at the same point. The last one again past
 * MW_VERIFY_MAX_SAMPLES (never reached: the header says why). */
int mw_verify_take(struct mw_verify_meters *m);

/* Opens the backend (opt: the backend asked for) as one prb_dram or, where its events do not
 * fit its counters, one per group, every group disabled once open (m->st: every event; the
 * first group's status on failure). 0, or the open's negative errno with m->st.reason. */
int mw_verify_open(struct mw_verify_meters *m, const struct prb_system *sys,
		   const struct prb_dram_options *opt);
/* A phase runs once per group: for (g = 0; g < m->n_groups; g++) { mw_verify_group_begin(m,
 * g); the work and its readings; mw_verify_group_end(m); }. begin enables group g alone (g -1:
 * every group, one run, e.g. beside perf); end disables it, and is -EIO when the group took
 * another number of readings than group 0 (the work must read at the same points each run).
 * Both do nothing with one group: it stays enabled. */
void mw_verify_group_begin(struct mw_verify_meters *m, int g);
int mw_verify_group_end(struct mw_verify_meters *m);
/* The idle window was [a, b]: keeps it (m->idle, and each group's) for the background. */
void mw_verify_idle(struct mw_verify_meters *m, int a, int b);
/* Instance i's events in the order of the plan, each group's in turn (as prb_dram_events);
 * group[j] (may be NULL) receives event j's group. The count, or a negative errno. */
int mw_verify_events(const struct mw_verify_meters *m, int i, struct prb_dram_event_desc *out,
		     int *group, int max);
/* Event j of group g's events on instance i at reading k (NULL with one group): borrowed,
 * valid until mw_verify_meters_free. */
struct prb_bytes *mw_verify_gev(const struct mw_verify_meters *m, int g, int k, int i, int j);
/* The plan's indices of group g's events on instance i (every event with one group) into
 * idx[0 .. max); returns how many. */
int mw_verify_group_events(const struct mw_verify_meters *m, int g, int i, int *idx, int max);
/* Computes the window [a, b]: m->w, the whole's delta, and with groups each group's (m->gw). */
void mw_verify_window(struct mw_verify_meters *m, int a, int b);

/* A new set of meters with every reading allocated (readings never fail for memory); free
 * with mw_verify_meters_free, which closes what it holds. NULL on ENOMEM. */
struct mw_verify_meters *mw_verify_meters_new(void);
void mw_verify_meters_free(struct mw_verify_meters *m);

#endif
