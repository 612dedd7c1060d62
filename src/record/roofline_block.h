/* src/record/roofline_block.h: a result record's roofline: the block a run's record carries
 * and the plausibility paragraph of `memwall report`. The record is read by record_view.c;
 * the arithmetic is analysis/roofline.c's. */
#ifndef MEMWALL_ROOFLINE_BLOCK_H
#define MEMWALL_ROOFLINE_BLOCK_H

#include <jansson.h>
#include <stdio.h>

/* A run's roofline block: the analytic floor (bytes per token from the tensor table, at the
 * decode window's middle position), the bandwidth roof (the protocol's
 * roofline.bandwidth_gbps, else the run's drift probe), the roof's tok/s, the headroom against
 * the measured tok/s and the plausibility verdict of the measured DRAM bytes. From a derived
 * record (its summary is read). New reference; {"computed": false, "reason"} when the model
 * cannot be described or the record cannot be read; NULL on ENOMEM. */
json_t *mw_roofline_block(const json_t *doc, const char *source);

/* The plausibility check (analysis/roofline.h) of a record with measured DRAM bytes, against
 * the analytic floor of its model (the file, or a built-in description of it), as a paragraph
 * on f; "not checked" with the reason when the record counted DRAM but its model cannot be
 * described; nothing when no DRAM bytes were measured. */
void mw_plausibility_print_md(FILE *f, const json_t *doc);

#endif
