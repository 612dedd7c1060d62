/* src/run/verify_matrix.h: `memwall verify --matrix`: five access patterns at four sizes,
 * counted / expected per pattern and direction (verify_matrix.c). */
#ifndef MEMWALL_RUN_VERIFY_MATRIX_H
#define MEMWALL_RUN_VERIFY_MATRIX_H

#include <jansson.h>
#include <stdio.h>

#include "dram_verify.h"
#include "verify_checks.h"

/* Streams the five patterns at four sizes (o->bytes, else 4x the LLC, then doubling) and
 * checks each direction; returns the record's "matrix" object, checks appended to checks.
 * NULL with why on a streaming failure. */
json_t *mw_verify_matrix(struct mw_verify_meters *m, const struct mw_dramverify_options *o,
			 uint64_t llc, bool llc_known, json_t *checks, char *why, size_t n);

/* The matrix of a record (its "matrix" object) as a table, counted / expected per pattern,
 * size and direction. */
void mw_dramverify_matrix_print(FILE *f, const json_t *matrix);

#endif
