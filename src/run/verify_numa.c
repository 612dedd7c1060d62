/* src/run/verify_numa.c: where `memwall verify` puts the canary's pages, and which controller
 * instances then serve them (verify_numa.h).
 *
 * On a NUMA machine memory is node-local by default: a pinned canary's pages sit on its node,
 * and only that node's controllers count them, so a fair share over every instance fails
 * correct counters (a two-socket server's second socket "counts nothing"). verify therefore
 * places the canary on each node in turn, with set_mempolicy(2) (MPOL_BIND; MPOL_INTERLEAVE
 * over the nodes of a package whose controllers sysfs does not tie to one node), called
 * through syscall(2) so no libnuma is needed, and runs the streaming threads on the node's
 * CPUs. The policy is set in the calling thread before the stream's workers start: a thread's
 * policy is inherited by the threads it creates (set_mempolicy(2), "set default NUMA memory
 * policy for a thread and its children"), and each worker first-touches its own pages, which
 * is when anonymous memory is allocated ("the policy is applied only when a new page is
 * allocated ... when the page is first touched"). The caller's policy and affinity are put
 * back once the pages exist.
 */
#include <errno.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "verify_numa.h"

#define MASK_BITS (16 * 8 * (int)sizeof(unsigned long))
_Static_assert(sizeof(((struct mw_verify_saved *)0)->affinity) >= sizeof(cpu_set_t),
	       "mw_verify_saved holds a cpu_set_t");

static void mask_set(unsigned long *mask, int node)
{
	if (node >= 0 && node < MASK_BITS)
		mask[node / (8 * (int)sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
}

static int add_cpus(struct mw_verify_target *tg, const struct prb_numa_node *nd)
{
	int *c = realloc(tg->cpus, (size_t)(tg->n_cpus + nd->n_cpus) * sizeof(*c));
	if (!c && tg->n_cpus + nd->n_cpus)
		return -ENOMEM;
	tg->cpus = c;
	memcpy(tg->cpus + tg->n_cpus, nd->cpus, (size_t)nd->n_cpus * sizeof(*c));
	tg->n_cpus += nd->n_cpus;
	return 0;
}

/* A target of every instance; interleaved over every node with memory when interleave. */
static int whole(const struct prb_topology *t, const struct prb_dram_status *st, bool interleave,
		 struct mw_verify_plan *p)
{
	struct mw_verify_target *tg = &p->t[0];
	memset(tg, 0, sizeof(*tg));
	tg->node = -1;
	if (!(tg->member = calloc((size_t)st->n_instances + 1, sizeof(bool))))
		return -ENOMEM;
	for (int i = 0; i < st->n_instances; i++)
		tg->member[i] = true;
	tg->n_members = st->n_instances;
	int nodes = 0;
	for (int i = 0; interleave && i < prb_topology_node_count(t); i++) {
		const struct prb_numa_node *nd = prb_topology_node(t, i);
		if (nd->mem_bytes != 0) {
			mask_set(tg->mask, nd->id);
			nodes++;
		}
	}
	tg->policy = interleave && nodes > 1 ? MPOL_INTERLEAVE : MPOL_DEFAULT;
	snprintf(tg->label, sizeof(tg->label), "%s",
		 tg->policy == MPOL_INTERLEAVE ? "all nodes, interleaved" : "unplaced");
	p->n = 1;
	return 0;
}

/* One target per node (level NODE) or per package (level PACKAGE) that has instances. */
static int per_domain(const struct prb_topology *t, const struct prb_dram_status *st,
		      const struct mw_topo_instance *ti, bool by_node, struct mw_verify_plan *p)
{
	int ids[64], nid = 0;
	for (int i = 0; i < st->n_instances; i++) {
		int id = by_node ? ti[i].node : ti[i].package, j;
		for (j = 0; j < nid && ids[j] != id; j++)
			;
		if (j == nid && nid < 64)
			ids[nid++] = id;
	}
	for (int k = 0; k < nid; k++) {
		struct mw_verify_target *tg = &p->t[k];
		memset(tg, 0, sizeof(*tg));
		p->n = k + 1;
		if (!(tg->member = calloc((size_t)st->n_instances + 1, sizeof(bool))))
			return -ENOMEM;
		for (int i = 0; i < st->n_instances; i++)
			if ((tg->member[i] = (by_node ? ti[i].node : ti[i].package) == ids[k]))
				tg->n_members++;
		tg->node = by_node ? ids[k] : -1;
		tg->policy = by_node ? MPOL_BIND : MPOL_INTERLEAVE;
		snprintf(tg->label, sizeof(tg->label), "%s %d", by_node ? "node" : "package", ids[k]);
		for (int i = 0; i < prb_topology_node_count(t); i++) {
			const struct prb_numa_node *nd = prb_topology_node(t, i);
			if (by_node ? nd->id != ids[k] : (nd->package != ids[k] || !nd->n_cpus))
				continue;
			mask_set(tg->mask, nd->id);
			if (add_cpus(tg, nd) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

int mw_verify_plan_make(const struct prb_topology *t, const struct prb_dram_status *st,
			struct mw_topo_instance *ti, const char *mode, struct mw_verify_plan *p)
{
	char why[700];
	memset(p, 0, sizeof(*p));
	snprintf(p->mode, sizeof(p->mode), "%s", mode ? mode : "auto");
	int with_cpus = 0;
	for (int i = 0; i < prb_topology_node_count(t); i++)
		with_cpus += prb_topology_node(t, i)->n_cpus > 0;
	if (!strcmp(p->mode, "off") || (with_cpus <= 1 && strcmp(p->mode, "interleave"))) {
		snprintf(p->assumption, sizeof(p->assumption), "each instance's fair share is the "
			 "expected bytes divided by the number of instances: memory interleaved "
			 "evenly over every instance (%s)", !strcmp(p->mode, "off") ?
			 "--numa off: the canary is not placed" : with_cpus == 1 ?
			 "one NUMA node" : "no NUMA nodes in sysfs");
		return whole(t, st, false, p);
	}
	enum mw_topo_level lv = mw_topology_attribute(t, st, ti, why, sizeof(why));
	if (!strcmp(p->mode, "interleave") || lv == MW_TOPO_UNKNOWN) {
		snprintf(p->assumption, sizeof(p->assumption), "the canary is interleaved over every "
			 "node with memory (MPOL_INTERLEAVE), so each instance's fair share is the "
			 "expected bytes divided by the number of instances%s%s",
			 lv == MW_TOPO_UNKNOWN ? ": which node each controller serves is " : "",
			 lv == MW_TOPO_UNKNOWN ? why : "");
		return whole(t, st, true, p);
	}
	if (lv == MW_TOPO_PACKAGE)
		snprintf(p->assumption, sizeof(p->assumption), "the canary is placed on each package "
			 "in turn, interleaved over its nodes (MPOL_INTERLEAVE): each instance of that "
			 "package gets the expected bytes divided by the package's instances, the "
			 "others the idle rate (which node a controller serves is %s)", why);
	else
		snprintf(p->assumption, sizeof(p->assumption), "the canary is placed on each node in "
			 "turn (MPOL_BIND, threads on the node's CPUs): each instance of that node "
			 "gets the expected bytes divided by the node's instances, every other "
			 "instance the idle rate");
	return per_domain(t, st, ti, lv == MW_TOPO_NODE, p);
}

void mw_verify_plan_free(struct mw_verify_plan *p)
{
	for (int k = 0; k < p->n; k++) {
		free(p->t[k].cpus);
		free(p->t[k].member);
	}
	p->n = 0;
}

int mw_verify_place(const struct mw_verify_target *tg, struct mw_verify_saved *sv, char *why,
		    size_t n)
{
	memset(sv, 0, sizeof(*sv));
	why[0] = '\0';
	if (tg->n_cpus) {
		cpu_set_t set, old;
		CPU_ZERO(&set);
		for (int i = 0; i < tg->n_cpus; i++)
			if (tg->cpus[i] >= 0 && tg->cpus[i] < CPU_SETSIZE)
				CPU_SET(tg->cpus[i], &set);
		if (sched_getaffinity(0, sizeof(old), &old) == 0 &&
		    sched_setaffinity(0, sizeof(set), &set) == 0) {
			memcpy(sv->affinity, &old, sizeof(old));
			sv->affinity_set = true;
		} else {
			int e = errno;
			snprintf(why, n, "sched_setaffinity to %s's CPUs: %s (are they this machine's?)",
				 tg->label, strerror(e));
			return -e;
		}
	}
	if (tg->policy == MPOL_DEFAULT)
		return 0;
	/* maxnode: the kernel reads maxnode - 1 bits (get_nodes' historical decrement; libnuma
	 * passes its mask size + 1 for the same reason) */
	if (syscall(SYS_set_mempolicy, tg->policy, tg->mask, (unsigned long)MASK_BITS + 1) != 0) {
		int e = errno;
		snprintf(why, n, "set_mempolicy(%s) for %s: %s (are its nodes this machine's?)",
			 tg->policy == MPOL_BIND ? "MPOL_BIND" : "MPOL_INTERLEAVE", tg->label,
			 strerror(e));
		mw_verify_unplace(sv);
		return -e;
	}
	sv->policy_set = true;
	return 0;
}

void mw_verify_unplace(struct mw_verify_saved *sv)
{
	if (sv->policy_set)
		(void)syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0ul);
	if (sv->affinity_set)
		(void)sched_setaffinity(0, sizeof(cpu_set_t), (cpu_set_t *)(void *)sv->affinity);
	sv->policy_set = sv->affinity_set = false;
}
