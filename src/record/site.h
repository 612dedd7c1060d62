/* src/record/site.h: the trend site of a results store (`memwall db site --db URL -o DIR`).
 *
 * A static site a browser opens from file:// with nothing else: plain HTML, inline SVG and
 * inline CSS, no script, no font, no image, no address outside the folder.
 *
 *   DIR/index.html          every series (store_series.h): its key's labels, its records and
 *                           dates, its latest figures with their provenance, its steps
 *   DIR/series/ID.html      one series over its records: DRAM MB/token (engine-accounted
 *                           MB/token where no record counted DRAM; the calibrated MB/token
 *                           where a calibration applied), decode tok/s and % of the bandwidth
 *                           roof (mw_roof_pct), each point linked to its record, each step
 *                           `db changes` finds marked with its size, each figure's provenance
 *                           in the words every surface uses (mw_provenance_metric)
 *   DIR/records/ID.json     each record, the bytes the store holds (their sha256 is ID)
 *   DIR/.memwall-site       the marker that lets a later `db site` replace the folder
 *
 * File names are record and series ids, checked to be sha256 hex: no text from a record
 * reaches a path. Every string memwall did not write itself goes through mw_html_put. The
 * folder is written whole or not at all (outdir.h). */
#ifndef MEMWALL_RECORD_SITE_H
#define MEMWALL_RECORD_SITE_H

#include <stdbool.h>
#include <stddef.h>

#include "mw.h"

struct mw_store;

struct mw_site_opts {
	bool force;                /* replace a folder of other files (outdir.h) */
	const char *const *inputs; /* files the store reads (its SQLite file): never inside DIR */
	size_t n_inputs;
};

struct mw_site_result {
	size_t series, records, changes; /* what the site shows */
};

/* Writes the site of s into dir. 0, or -errno with err filled (dir is then as it was):
 * -EEXIST / -EINVAL for a dir the rules refuse, -EIO for a stored record whose id is not the
 * sha256 of its bytes or that does not validate (the store was edited), -ENOMEM. */
int mw_site_write(struct mw_store *s, const char *dir, const struct mw_site_opts *o,
		  struct mw_site_result *res, struct mw_error *err);

#endif
