/* src/record/site_chart.h: one figure of a series over its records, as inline SVG, for the
 * trend site (site.h, `memwall db site`).
 *
 * The x axis is the series' records in order (1, 2, ... with each tick's date below it), not
 * the time between them: a CI history comes in bursts and gaps, and a record per commit is
 * what a step is found between (`db changes`). The y axis spans the values with a margin, in
 * steps of 1, 2 or 5 times a power of ten, from 0 at the lowest (no figure here is negative).
 * Every point is a circle linked to its record's JSON, carrying the record's id and the value
 * (data-id, data-value: every digit, %.17g) and a title a reader sees on hovering; a record
 * whose figure was not measured is a gap in the line, never a point at 0. Each step `db
 * changes` finds is a dashed line between the last record before it and the first after,
 * labelled with its size. No script, no font, nothing fetched: plain SVG elements. */
#ifndef MEMWALL_RECORD_SITE_CHART_H
#define MEMWALL_RECORD_SITE_CHART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct mw_site_point {
	const char *id;      /* the record's id (64 hex digits: it is a file name) */
	const char *created; /* its created_utc */
	const char *version; /* its engine version, or NULL */
	double value;        /* NaN: not measured */
	const char *prov;    /* this figure's provenance, in the words every surface uses */
};

/* A step `db changes` finds (changepoint.h), between two records of the chart. */
struct mw_site_step {
	size_t before, after;    /* the last record before it and the first after (indices) */
	double change_pct;       /* 100 (after - before) / |before| of the segments' medians */
	double median_before, median_after;
	size_t n_before, n_after; /* records in the two segments */
};

struct mw_site_chart {
	const char *metric;  /* "dram_MB_per_token", ..., "roof_pct" */
	const char *title;   /* "DRAM MB/token" */
	const char *axis;    /* the y axis' title, with its unit */
	const char *unit;    /* the unit after a value: "MB/token" */
	bool simulated;      /* counted by the simulated PMU: the chart says SIMULATED */
	size_t n;            /* the series' records, oldest first */
	const struct mw_site_point *pts;
	size_t n_steps;
	const struct mw_site_step *steps;
	const char *href;    /* where the records' JSON files are, relative to the page
			      * ("../records/"): memwall's own text */
};

/* Writes c as one <svg> element on f. Text from records is escaped (mw_html_put). */
void mw_site_chart_svg(FILE *f, const struct mw_site_chart *c);

/* v for a reader: 4 significant digits ("2.284", "2.000"), whole numbers from 1000 on ("13825"),
 * "not measured" for NaN. Returns buf. */
const char *mw_site_value(double v, char *buf, size_t n);

#endif
