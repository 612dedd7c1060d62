/* src/record/layer_check.h: whether a record's hardware DRAM counts contradict the record.
 *
 * `memwall validate` (result.c) re-derives every figure from the raw counts, but the counts
 * themselves carry their origin only in words: counters.dram.layer. A simulated record made
 * "hardware" by editing that word (and deleting sim_script_sha256) re-derives fine. What still
 * gives it away is the rest of the record: the machine it ran on and the names of what it
 * opened. This module checks those against the probes' table of PMU families. */
#ifndef MEMWALL_RECORD_LAYER_CHECK_H
#define MEMWALL_RECORD_LAYER_CHECK_H

#include <jansson.h>
#include <stddef.h>

/* 0 when the record's DRAM counts are not hardware's (not measured, or layer "sim") or agree
 * with the record; 1 when they contradict it, with the field at fault in field (fn bytes) and
 * why in why (wn bytes). The contradictions: a hardware layer on a machine whose CPU says
 * hypervisor, without counters.dram.uncore_passthrough (a virtual machine exposes no
 * memory-controller PMU unless its hypervisor passes them through, and a run that counted
 * them there says so); a backend whose PMU family does not exist on machine.kernel.machine;
 * an instance name that is not one the backend's driver gives. A backend this build does not
 * know is not checked. */
int mw_layer_contradiction(const json_t *doc, char *field, size_t fn, char *why, size_t wn);

#endif
