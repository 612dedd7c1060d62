/* probes/counter.c: the counter layers' table (syscall, libperf, sim) and what every layer
 * shares: the choice of layer, injected open failures, file counters' dispatch, and the
 * multiplexing correction, made once, in prb_reading_scale(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int prb_counter_inject_errno;
bool prb_counter_inject_paranoid2;

static const struct counter_ops *const all_ops[] = {
#if MW_HAVE_LIBPERF
	&counter_libperf_ops,
#endif
	&prb_counter_syscall_ops,
	&prb_counter_sim_ops, /* only when asked for by name: never the default */
};

const struct counter_ops *prb_counter_ops_get(void)
{
	const char *want = getenv("MEMWALL_COUNTERS");
	if (want && *want)
		for (size_t i = 0; i < ARRAY_SIZE(all_ops); i++)
			if (!strcmp(all_ops[i]->name, want))
				return all_ops[i];
	return all_ops[0];
}

const char *prb_counter_backend(void)
{
	return prb_counter_ops_get()->name;
}

static int injected(void)
{
	const char *inject = getenv("MEMWALL_INJECT_ERRNO");
	int e = prb_counter_inject_errno;
	if (!e && inject && *inject)
		e = atoi(inject);
	return -abs(e);
}

/* The kernel's rule at perf_event_paranoid 2 for a process without CAP_PERFMON
 * (kernel/events/core.c, perf_event_open: perf_allow_kernel when !exclude_kernel): counting
 * kernel space is refused with EACCES. */
static int paranoid2(const struct perf_event_attr *attr)
{
	return prb_counter_inject_paranoid2 && !attr->exclude_kernel ? -EACCES : 0;
}

int prb_counter_open(struct counter **out, const struct perf_event_attr *attr, int pid, int cpu)
{
	int e = injected();
	if (!e)
		e = paranoid2(attr);
	return e ? e : prb_counter_ops_get()->open(out, attr, pid, cpu);
}

int prb_counter_open_member(struct counter **out, const struct perf_event_attr *attr, int pid,
			int cpu, struct counter *leader)
{
	const struct counter_ops *ops = prb_counter_ops_get();
	int e = injected();
	if (!e)
		e = paranoid2(attr);
	if (e)
		return e;
	return ops->open_member ? ops->open_member(out, attr, pid, cpu, leader) : -EOPNOTSUPP;
}

unsigned prb_counter_bits(struct counter *c)
{
	const struct counter_ops *ops = prb_counter_ops_get();
	unsigned bits = ops->bits ? ops->bits(c) : 64;
	return bits >= 1 && bits <= 64 ? bits : 64;
}

int prb_file_counter_open(struct file_counter **out, const char *path)
{
	*out = NULL;
	if (prb_counter_ops_get() == &prb_counter_sim_ops) {
		int rc = prb_sim_file_open(out, path);
		if (rc != -ENOENT)
			return rc;
	}
	return prb_file_counter_open_plain(out, path);
}

void prb_reading_scale(struct prb_reading *r)
{
	r->flags &= ~(unsigned)(PRB_READING_SCALED | PRB_READING_NOT_COUNTED);
	if (r->time_running == 0) {
		r->count = 0;
		r->flags |= PRB_READING_NOT_COUNTED;
		return;
	}
	if (r->time_running < r->time_enabled) {
		/* long double keeps 64 bits of mantissa: value * enabled does not lose the count */
		r->count = (double)((long double)r->value * (long double)r->time_enabled /
				    (long double)r->time_running);
		r->flags |= PRB_READING_SCALED;
	} else {
		r->count = (double)r->value;
	}
}

uint64_t prb_counter_delta(uint64_t later, uint64_t earlier, unsigned bits)
{
	uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
	return (later - earlier) & mask;
}

bool prb_counter_plausible(uint64_t delta, unsigned bits)
{
	unsigned b = bits >= 1 && bits <= 64 ? bits : 64;
	return delta < (1ull << (b - 1));
}
