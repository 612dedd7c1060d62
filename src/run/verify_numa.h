/* src/run/verify_numa.h: where `memwall verify` puts the canary's pages (set_mempolicy(2),
 * no libnuma), and which controller instances serve each placement (verify_numa.c). */
#ifndef MEMWALL_RUN_VERIFY_NUMA_H
#define MEMWALL_RUN_VERIFY_NUMA_H

#include <stdbool.h>
#include <stddef.h>

#include "probes.h"
#include "topology.h"

struct mw_verify_target {
	char label[64];        /* "node 1", "package 0", "all nodes, interleaved", "unplaced" */
	int node;              /* the node the canary is bound to; -1 for none or several */
	int policy;            /* MPOL_DEFAULT, MPOL_BIND or MPOL_INTERLEAVE (linux/mempolicy.h) */
	unsigned long mask[16]; /* the policy's nodes (1024 bits) */
	int *cpus;             /* where the streaming threads run; NULL: the caller's mask */
	int n_cpus;
	bool *member;          /* per instance: whether it serves the canary's pages */
	int n_members;
};

struct mw_verify_plan {
	int n;
	struct mw_verify_target t[64];
	char mode[16];          /* "auto", "interleave", "off" */
	char assumption[1600];  /* the fair share's assumption, in words */
};

/* Which placements verify streams, each with the instances that serve it, for mode
 * ("auto": each node in turn where every instance is tied to a node, each package's nodes
 * interleaved where only the package is known, all nodes interleaved where nothing is;
 * "interleave": all nodes interleaved, one target; "off": no placement, one target: the old
 * assumption of memory interleaved evenly over every instance). 0 or -ENOMEM. */
int mw_verify_plan_make(const struct prb_topology *t, const struct prb_dram_status *st,
			struct mw_topo_instance *ti, const char *mode, struct mw_verify_plan *p);
void mw_verify_plan_free(struct mw_verify_plan *p);

/* What placement changes in the calling thread, to put back. */
struct mw_verify_saved {
	bool affinity_set, policy_set;
	unsigned char affinity[128]; /* a cpu_set_t */
};
/* Places the calling thread for target tg: its CPUs and its memory policy, which threads it
 * starts inherit (set_mempolicy(2): "the thread memory policy is inherited by children").
 * 0, or -errno with why (the target's CPUs or nodes are not this machine's: a recorded tree).
 * Whatever was set is put back by mw_verify_unplace. */
int mw_verify_place(const struct mw_verify_target *tg, struct mw_verify_saved *sv, char *why,
		    size_t n);
void mw_verify_unplace(struct mw_verify_saved *sv);

#endif
