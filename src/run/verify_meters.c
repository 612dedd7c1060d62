/* src/run/verify_meters.c: `memwall verify`'s meters (verify_meters.h): the backend under
 * test, whole or in counter groups that take turns, and resctrl beside it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_meters.h"

struct mw_verify_meters *mw_verify_meters_new(void)
{
	struct mw_verify_meters *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->n_groups = 1;
	m->cur = -1;
	m->phase_next = -1;
	m->idle_a = m->idle_b = -1;
	for (int k = 0; k < MW_VERIFY_MAX_SAMPLES; k++)
		if (!(m->s[k] = calloc(1, sizeof(*m->s[k]))) ||
		    !(m->rs[k] = calloc(1, sizeof(*m->rs[k])))) {
			mw_verify_meters_free(m);
			return NULL;
		}
	if (!(m->w = calloc(1, sizeof(*m->w))) || !(m->idle = calloc(1, sizeof(*m->idle)))) {
		mw_verify_meters_free(m);
		return NULL;
	}
	return m;
}

void mw_verify_meters_free(struct mw_verify_meters *m)
{
	if (!m)
		return;
	for (int g = 0; g < MW_VERIFY_MAX_GROUPS; g++) {
		prb_dram_close(m->g[g]);
		free(m->gw[g]);
		free(m->gidle[g]);
	}
	prb_dram_close(m->r);
	for (int k = 0; k < MW_VERIFY_MAX_SAMPLES; k++) {
		free(m->s[k]);
		free(m->rs[k]);
	}
	for (int k = 0; m->gs && k < m->n_groups * MW_VERIFY_MAX_SAMPLES; k++)
		free(m->gs[k]);
	free(m->gs);
	free(m->gev);
	free(m->w);
	free(m->idle);
	free(m->topo);
	free(m);
}

/* Room for every group's readings, each group's window and idle window. */
static int alloc_groups(struct mw_verify_meters *m)
{
	int n = m->n_groups * MW_VERIFY_MAX_SAMPLES;
	size_t ev = (size_t)n * (size_t)m->st.n_instances * PRB_DRAM_MAX_EVENTS;
	if (!(m->gs = calloc((size_t)n, sizeof(*m->gs))) || !(m->gev = calloc(ev, sizeof(*m->gev))))
		return -ENOMEM;
	for (int k = 0; k < n; k++)
		if (!(m->gs[k] = calloc(1, sizeof(*m->gs[k]))))
			return -ENOMEM;
	for (int g = 0; g < m->n_groups; g++)
		if (!(m->gw[g] = calloc(1, sizeof(*m->gw[g]))) ||
		    !(m->gidle[g] = calloc(1, sizeof(*m->gidle[g]))))
			return -ENOMEM;
	return 0;
}

int mw_verify_open(struct mw_verify_meters *m, const struct prb_system *sys,
		   const struct prb_dram_options *opt)
{
	struct prb_dram_options o = *opt;
	int rc = prb_dram_probe(sys, &o, &m->st);
	if (rc < 0)
		return rc;
	int n = prb_dram_groups(&m->st, m->gmask, MW_VERIFY_MAX_GROUPS);
	if (n < 0) {
		snprintf(m->st.reason, sizeof(m->st.reason), "%s: %d counters cannot hold its "
			 "events in %d groups", m->st.backend, m->st.counters,
			 MW_VERIFY_MAX_GROUPS);
		return -EINVAL;
	}
	m->n_groups = n;
	if (n == 1) {
		rc = prb_dram_open(&m->d, sys, &o, &m->st);
		m->g[0] = m->d;
		return rc;
	}
	/* one prb_dram per group, each disabled once open, so that the next group's opening
	 * read (and every later reading) is made with no more events enabled than counters */
	struct prb_dram_status gst;
	for (int g = 0; g < n; g++) {
		o.events = m->gmask[g];
		if ((rc = prb_dram_open(&m->g[g], sys, &o, &gst)) < 0 ||
		    (rc = prb_dram_disable(m->g[g])) < 0) {
			snprintf(m->st.reason, sizeof(m->st.reason), "counter group %d of %d: %.700s",
				 g + 1, n, m->g[g] ? "cannot stop its counters" : gst.reason);
			m->st.available = false;
			return rc;
		}
	}
	m->d = m->g[0];
	m->st.available = true;
	return alloc_groups(m);
}

struct prb_bytes *mw_verify_gev(const struct mw_verify_meters *m, int g, int k, int i, int j)
{
	if (!m->gev)
		return NULL;
	size_t at = ((size_t)(g * MW_VERIFY_MAX_SAMPLES + k) * (size_t)m->st.n_instances +
		     (size_t)i) * PRB_DRAM_MAX_EVENTS + (size_t)j;
	return &m->gev[at];
}

/* Group g's reading k: its sample, and each of its events. */
static void read_group(struct mw_verify_meters *m, int g, int k)
{
	struct prb_dram_sample *s = m->gs[g * MW_VERIFY_MAX_SAMPLES + k];
	(void)prb_dram_read(m->g[g], s);
	for (int i = 0; i < m->st.n_instances; i++)
		(void)prb_dram_event_bytes(m->g[g], i, mw_verify_gev(m, g, k, i, 0),
					   PRB_DRAM_MAX_EVENTS);
}

int mw_verify_take(struct mw_verify_meters *m)
{
	int k;
	if (m->phase_next >= 0) {
		/* a group after the first replays the phase: the same indices, in order */
		if (m->phase_next >= m->n)
			m->phase_bad = true;
		k = m->phase_next < m->n ? m->phase_next++ : m->n - 1;
	} else {
		k = m->n < MW_VERIFY_MAX_SAMPLES ? m->n++ : MW_VERIFY_MAX_SAMPLES - 1;
	}
	/* a failed read leaves its figures read-failed in the sample: the checks say so */
	if (m->n_groups == 1) {
		(void)prb_dram_read(m->d, m->s[k]);
	} else {
		for (int g = 0; g < m->n_groups; g++)
			if (m->cur < 0 || g == m->cur)
				read_group(m, g, k);
		/* the whole so far: complete once the last group has read k */
		*m->s[k] = *m->gs[k];
		for (int g = 1; g < m->n_groups; g++)
			prb_dram_sample_add(m->s[k], m->gs[g * MW_VERIFY_MAX_SAMPLES + k]);
	}
	/* resctrl counts every channel all the time: it is read with the first group, so that
	 * its windows are that group's run of each phase (one canary, as the whole counts) */
	if (m->r && m->cur <= 0)
		(void)prb_dram_read(m->r, m->rs[k]);
	return k;
}

void mw_verify_group_begin(struct mw_verify_meters *m, int g)
{
	if (m->n_groups == 1)
		return;
	if (g <= 0)
		m->phase_first = m->n;
	m->phase_next = g > 0 ? m->phase_first : -1;
	m->phase_bad = false;
	m->cur = g;
	for (int h = 0; h < m->n_groups; h++)
		if (g >= 0 && h != g)
			(void)prb_dram_disable(m->g[h]);
	for (int h = 0; h < m->n_groups; h++)
		if (g < 0 || h == g)
			(void)prb_dram_enable(m->g[h]);
}

int mw_verify_group_end(struct mw_verify_meters *m)
{
	if (m->n_groups == 1)
		return 0;
	bool bad = m->phase_bad || (m->phase_next >= 0 && m->phase_next != m->n);
	for (int h = 0; h < m->n_groups; h++)
		(void)prb_dram_disable(m->g[h]);
	m->cur = -1;
	m->phase_next = -1;
	return bad ? -EIO : 0;
}

void mw_verify_window(struct mw_verify_meters *m, int a, int b)
{
	prb_dram_sample_delta(m->s[b], m->s[a], m->w);
	for (int g = 0; m->n_groups > 1 && g < m->n_groups; g++)
		prb_dram_sample_delta(m->gs[g * MW_VERIFY_MAX_SAMPLES + b],
				      m->gs[g * MW_VERIFY_MAX_SAMPLES + a], m->gw[g]);
	m->wa = a;
	m->wb = b;
}

void mw_verify_idle(struct mw_verify_meters *m, int a, int b)
{
	prb_dram_sample_delta(m->s[b], m->s[a], m->idle);
	for (int g = 0; m->n_groups > 1 && g < m->n_groups; g++)
		prb_dram_sample_delta(m->gs[g * MW_VERIFY_MAX_SAMPLES + b],
				      m->gs[g * MW_VERIFY_MAX_SAMPLES + a], m->gidle[g]);
	m->idle_a = a;
	m->idle_b = b;
}

int mw_verify_group_events(const struct mw_verify_meters *m, int g, int i, int *idx, int max)
{
	int n = 0, all = m->st.instances[i].n_events;
	for (int j = 0; j < all && n < max; j++)
		if (m->n_groups == 1 || (m->gmask[g] >> j & 1))
			idx[n++] = j;
	return n;
}

int mw_verify_events(const struct mw_verify_meters *m, int i, struct prb_dram_event_desc *out,
		     int *group, int max)
{
	int n = 0;
	for (int g = 0; g < m->n_groups; g++) {
		int k = prb_dram_events(m->g[g], i, out + n, max - n);
		if (k < 0)
			return k;
		for (int j = 0; group && j < k; j++)
			group[n + j] = g;
		n += k;
	}
	return n;
}
