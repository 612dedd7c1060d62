/* src/record/site_chart.c: one figure of a series as inline SVG (site_chart.h). */
#include <math.h>
#include <string.h>

#include "site_chart.h"
#include "text.h"

/* The drawing's frame, in SVG user units (CSS pixels at the page's scale). */
enum { W = 960, H = 330, LEFT = 96, RIGHT = 24, TOP = 40, BOTTOM = 72, XPAD = 14 };
enum { MAX_XTICKS = 8, MAX_YTICKS = 6 };

struct frame {
	double lo, hi, step; /* the y axis: its ends and the distance between ticks */
	int decimals;        /* of the tick labels */
	size_t n;
};

const char *mw_site_value(double v, char *buf, size_t n)
{
	if (isnan(v))
		snprintf(buf, n, "not measured");
	else if (fabs(v) >= 1000 && fabs(v) < 1e15)
		snprintf(buf, n, "%.0f", v); /* 13825 tok/s, not 1.382e+04 */
	else
		snprintf(buf, n, "%#.4g", v); /* 2.000, not 2: the digits a reader compares */
	return buf;
}

/* 1, 2 or 5 times a power of ten, the first at least raw. */
static double nice_step(double raw)
{
	double p = pow(10, floor(log10(raw)));
	double m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void y_axis(const struct mw_site_chart *c, struct frame *fr)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < c->n; i++)
		if (!isnan(c->pts[i].value)) {
			lo = fmin(lo, c->pts[i].value);
			hi = fmax(hi, c->pts[i].value);
		}
	bool nonneg = lo >= 0;
	/* A flat history still gets an axis: +/- 5 % of its value (or 1 around 0). */
	if (hi - lo <= 1e-9 * fmax(fabs(hi), 1e-300)) {
		double d = fabs(hi) > 0 ? 0.05 * fabs(hi) : 1;
		lo -= d;
		hi += d;
	}
	double pad = 0.08 * (hi - lo);
	lo -= pad;
	hi += pad;
	if (nonneg && lo < 0)
		lo = 0;
	fr->step = nice_step((hi - lo) / (MAX_YTICKS - 1));
	fr->lo = floor(lo / fr->step) * fr->step;
	fr->hi = ceil(hi / fr->step) * fr->step;
	fr->decimals = fr->step >= 1 ? 0 : (int)ceil(-log10(fr->step) - 1e-9);
	fr->n = c->n;
}

static double px(const struct frame *fr, size_t i)
{
	if (fr->n < 2)
		return (LEFT + W - RIGHT) / 2.0;
	return LEFT + XPAD + (double)(W - RIGHT - LEFT - 2 * XPAD) * (double)i / (double)(fr->n - 1);
}

static double py(const struct frame *fr, double v)
{
	return (H - BOTTOM) - (v - fr->lo) / (fr->hi - fr->lo) * (H - BOTTOM - TOP);
}

static void draw_y(FILE *f, const struct mw_site_chart *c, const struct frame *fr)
{
	for (int k = 0; fr->lo + k * fr->step <= fr->hi + 1e-9 * fr->step; k++) {
		double v = fr->lo + k * fr->step, y = py(fr, v);
		fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
			   "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n",
			LEFT, y, W - RIGHT, y, LEFT - 8, y + 4, fr->decimals, v);
	}
	fprintf(f, "<text class=\"axis\" transform=\"translate(18 %d) rotate(-90)\" "
		   "text-anchor=\"middle\">", (TOP + H - BOTTOM) / 2);
	mw_html_put(f, c->axis);
	fprintf(f, "</text>\n");
}

/* "2026-12-07" or, when every record is of one day, "01:02:03". */
static void date_label(FILE *f, const char *created, bool one_day)
{
	char d[32] = "?";
	if (created && strlen(created) >= 19)
		snprintf(d, sizeof(d), "%.*s", one_day ? 8 : 10, created + (one_day ? 11 : 0));
	mw_html_put(f, d);
}

static void draw_x(FILE *f, const struct mw_site_chart *c, const struct frame *fr)
{
	size_t k = 1;
	bool one_day = true;
	while (c->n / k + 1 > MAX_XTICKS)
		k = (size_t)nice_step((double)k + 0.5);
	for (size_t i = 1; i < c->n; i++)
		one_day &= c->pts[i].created && c->pts[0].created &&
			   !strncmp(c->pts[i].created, c->pts[0].created, 10);
	for (size_t r = 1; r <= c->n; r = r == 1 && k > 1 ? k : r + k) {
		double x = px(fr, r - 1);
		fprintf(f, "<line class=\"xtick\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
			   "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">#%zu</text>"
			   "<text class=\"tick date\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
			x, H - BOTTOM, x, H - BOTTOM + 5, x, H - BOTTOM + 18, r, x, H - BOTTOM + 32);
		date_label(f, c->pts[r - 1].created, one_day);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">record of the "
		   "series, in order (created, UTC%s)</text>\n", (LEFT + W - RIGHT) / 2, H - 12,
		one_day && c->n ? ", time of day" : "");
}

/* The line through the measured points, broken where a record has no value. */
static void draw_line(FILE *f, const struct mw_site_chart *c, const struct frame *fr)
{
	bool open = false;
	for (size_t i = 0; i < c->n; i++) {
		if (isnan(c->pts[i].value)) {
			if (open)
				fprintf(f, "\"/>\n");
			open = false;
			continue;
		}
		fprintf(f, "%s%.1f,%.1f", open ? " " : "<polyline class=\"line\" points=\"",
			px(fr, i), py(fr, c->pts[i].value));
		open = true;
	}
	if (open)
		fprintf(f, "\"/>\n");
}

static void draw_points(FILE *f, const struct mw_site_chart *c, const struct frame *fr)
{
	char v[48];
	for (size_t i = 0; i < c->n; i++) {
		const struct mw_site_point *p = &c->pts[i];
		if (isnan(p->value))
			continue;
		fprintf(f, "<a href=\"%s", c->href);
		mw_html_put(f, p->id);
		fprintf(f, ".json\"><circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" "
			   "data-metric=\"%s\" data-id=\"", px(fr, i), py(fr, p->value), c->metric);
		mw_html_put(f, p->id);
		fprintf(f, "\" data-value=\"%.17g\"><title>#%zu, %.12s, ", p->value, i + 1, p->id);
		mw_html_put(f, p->created);
		fprintf(f, ", engine ");
		mw_html_put(f, p->version ? p->version : "?");
		fprintf(f, ": %s %s (", mw_site_value(p->value, v, sizeof(v)), c->unit);
		mw_html_put(f, p->prov);
		fprintf(f, ")</title></circle></a>\n");
	}
}

static void draw_steps(FILE *f, const struct mw_site_chart *c, const struct frame *fr)
{
	for (size_t k = 0; k < c->n_steps; k++) {
		const struct mw_site_step *st = &c->steps[k];
		if (st->before >= st->after || st->after >= c->n)
			continue;
		double x = (px(fr, st->before) + px(fr, st->after)) / 2;
		const struct mw_site_point *b = &c->pts[st->before], *a = &c->pts[st->after];
		fprintf(f, "<g class=\"change\" data-metric=\"%s\" data-before=\"", c->metric);
		mw_html_put(f, b->id);
		fprintf(f, "\" data-after=\"");
		mw_html_put(f, a->id);
		fprintf(f, "\" data-change-pct=\"%.17g\"><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
			   "y2=\"%d\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%+.1f %%</text>"
			   "<title>a step of %+.2f %% between #%zu (%.12s) and #%zu (%.12s): median "
			   "%.6g over %zu records, then %.6g over %zu (db changes)</title></g>\n",
			st->change_pct, x, TOP - 6, x, H - BOTTOM, x, TOP - 10, st->change_pct,
			st->change_pct, st->before + 1, b->id, st->after + 1, a->id, st->median_before,
			st->n_before, st->median_after, st->n_after);
	}
}

void mw_site_chart_svg(FILE *f, const struct mw_site_chart *c)
{
	struct frame fr;
	y_axis(c, &fr);
	fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
		   "role=\"img\" data-metric=\"%s\" aria-label=\"", W, H, W, H, c->metric);
	mw_html_put(f, c->title);
	fprintf(f, " over the series' records\">\n<rect class=\"plot\" x=\"%d\" y=\"%d\" "
		   "width=\"%d\" height=\"%d\"/>\n", LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM);
	draw_y(f, c, &fr);
	draw_x(f, c, &fr);
	draw_line(f, c, &fr);
	draw_steps(f, c, &fr);
	draw_points(f, c, &fr);
	if (c->simulated)
		fprintf(f, "<text class=\"sim\" x=\"%d\" y=\"%d\" text-anchor=\"end\">SIMULATED"
			   "</text>\n", W - RIGHT - 8, TOP + 26);
	fprintf(f, "</svg>\n");
}
