/* src/record/layer_check.c: a record's hardware DRAM counts against the record (layer_check.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "layer_check.h"
#include "probes.h"

int mw_layer_contradiction(const json_t *doc, char *field, size_t fn, char *why, size_t wn)
{
	const json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	const json_t *machine = json_object_get(doc, "machine"), *inst;
	const char *layer = json_string_value(json_object_get(dram, "layer"));
	const char *backend = json_string_value(json_object_get(dram, "backend"));
	const char *arch = json_string_value(json_object_get(json_object_get(machine, "kernel"),
							     "machine"));
	char text[320];
	size_t i;
	/* A record without a layer (made before the field existed) counts as hardware's on every
	 * surface (provenance.c), so it is held to the same rules. */
	if (!json_is_true(json_object_get(dram, "measured")) || (layer && !strcmp(layer, "sim")))
		return 0;
	if (prb_dram_backend_check(backend, arch, NULL, text, sizeof(text)) == -EINVAL) {
		snprintf(field, fn, "counters.dram.backend");
		snprintf(why, wn, "is \"%s\" on a hardware layer, but %s (machine.kernel.machine): "
			 "the record was edited", backend, text);
		return 1;
	}
	json_array_foreach(json_object_get(dram, "instances"), i, inst) {
		const char *name = json_string_value(inst);
		if (name && prb_dram_backend_check(backend, NULL, name, text, sizeof(text)) == -EINVAL) {
			snprintf(field, fn, "counters.dram.instances[%zu]", i);
			snprintf(why, wn, "%s: the record was edited", text);
			return 1;
		}
	}
	if (json_is_true(json_object_get(machine, "hypervisor")) &&
	    !json_is_true(json_object_get(dram, "uncore_passthrough"))) {
		snprintf(field, fn, "counters.dram.layer");
		snprintf(why, wn, "is \"%s\", hardware counters, but machine.hypervisor is true and "
			 "the record does not say the hypervisor passed the memory-controller PMUs "
			 "through (counters.dram.uncore_passthrough): a virtual machine exposes none, "
			 "so the counts were not counted there by hardware, and the record was edited",
			 layer ? layer : "(absent)");
		return 1;
	}
	return 0;
}
