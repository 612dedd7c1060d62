/* src/record/series.c: a record's series key (series.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "series.h"
#include "sha256.h"

const char *const mw_series_default_metrics[2] = { "dram_MB_per_token", "tok_per_s" };

static const json_t *at(const json_t *o, const char *a, const char *b)
{
	o = json_object_get(o, a);
	return b ? json_object_get(o, b) : o;
}

static const char *str(const json_t *o, const char *a, const char *b)
{
	return json_string_value(at(o, a, b));
}

/* A copy of v, or null where the record has none: a key never holds "absent". */
static json_t *copy(const json_t *v)
{
	return v ? json_deep_copy(v) : json_null();
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path;
}

/* The machine part: the fingerprint of the record's own machine object, its DRAM backend
 * and the instances it opened (PMU@CPU, as the calibration store writes them; a record
 * before counters.dram.opened names its instances alone). */
static json_t *machine_fingerprint(const json_t *doc, char sha[65])
{
	const json_t *dram = at(doc, "counters", "dram"), *o;
	json_t *inst = json_array();
	size_t i;
	if (json_is_true(json_object_get(dram, "measured"))) {
		if (json_is_array(json_object_get(dram, "opened"))) {
			json_array_foreach(json_object_get(dram, "opened"), i, o) {
				char s[200];
				snprintf(s, sizeof(s), "%s@%lld", str(o, "pmu", NULL) ? str(o, "pmu", NULL)
					 : "?", (long long)json_integer_value(json_object_get(o, "cpu")));
				json_array_append_new(inst, json_string(s));
			}
		} else {
			json_array_foreach(json_object_get(dram, "instances"), i, o)
				json_array_append_new(inst, json_deep_copy(o));
		}
	}
	const char *backend = json_is_true(json_object_get(dram, "measured"))
				      ? str(dram, "backend", NULL) : NULL;
	return mw_machine_fingerprint(json_object_get(doc, "machine"),
				      copy(at(doc, "machine", "memory_config")), backend, inst, sha);
}

/* The engine part, and its label: what ran, as built, without its version (series.h). */
static json_t *engine_part(const json_t *doc, struct mw_series_key *k)
{
	const json_t *eng = json_object_get(doc, "engine");
	const char *kind = str(eng, "kind", NULL) ? str(eng, "kind", NULL) : "builtin";
	if (!strcmp(kind, "builtin")) {
		const char *kr = str(eng, "kernels", NULL), *q = str(eng, "quant_kernels", NULL);
		snprintf(k->engine, sizeof(k->engine), "builtin (%s, quants %s)", kr ? kr : "?",
			 q ? q : "?");
		snprintf(k->engine_version, sizeof(k->engine_version), "%s",
			 str(doc, "memwall", "version") ? str(doc, "memwall", "version") : "unknown");
		return json_pack("{s:s, s:o, s:o}", "kind", kind, "kernels",
				 copy(json_object_get(eng, "kernels")), "quant_kernels",
				 copy(json_object_get(eng, "quant_kernels")));
	}
	const char *prog = base_name(str(eng, "program", "path"));
	const char *adapter = str(eng, "adapter", "name");
	snprintf(k->engine, sizeof(k->engine), "%s %s (%s)", kind, prog ? prog : "?",
		 adapter ? adapter : "?");
	snprintf(k->engine_version, sizeof(k->engine_version), "%s",
		 str(eng, "program", "version") ? str(eng, "program", "version") : "unknown");
	return json_pack("{s:s, s:s?, s:s?}", "kind", kind, "program", prog, "adapter", adapter);
}

static json_t *counters_part(const json_t *doc, struct mw_series_key *k)
{
	const json_t *dram = at(doc, "counters", "dram");
	bool measured = json_is_true(json_object_get(dram, "measured"));
	const char *layer = measured ? str(dram, "layer", NULL) : "none";
	const char *backend = measured ? str(dram, "backend", NULL) : NULL;
	/* A record before counters.dram.layer counted through the kernel (syscall). */
	if (!layer)
		layer = "syscall";
	snprintf(k->counters, sizeof(k->counters), "%s%s%s", layer, backend ? "/" : "",
		 backend ? backend : "");
	return json_pack("{s:s, s:s?}", "layer", layer, "backend", backend);
}

void mw_series_key_free(struct mw_series_key *k)
{
	json_decref(k->key);
	json_decref(k->fingerprint);
	k->key = k->fingerprint = NULL;
}

int mw_series_of(const json_t *doc, struct mw_series_key *k, struct mw_error *err)
{
	char fp[65];
	memset(k, 0, sizeof(*k));
	const json_t *prot = json_object_get(doc, "protocol"), *model = json_object_get(doc, "model");
	const char *msha = str(model, "sha256", NULL), *mname = str(model, "name", NULL);
	k->fingerprint = machine_fingerprint(doc, fp);
	json_t *eng = engine_part(doc, k), *ctr = counters_part(doc, k);
	json_t *ov = json_object_get(prot, "overrides");
	k->key = k->fingerprint && eng && ctr
			 ? json_pack("{s:s, s:{s:o, s:o, s:o}, s:{s:o, s:o}, s:O, s:O}", "machine", fp,
				     "protocol", "name", copy(json_object_get(prot, "name")), "sha256",
				     copy(json_object_get(prot, "sha256")), "overrides",
				     ov ? json_deep_copy(ov) : json_object(), "model", "sha256",
				     msha ? json_string(msha) : json_null(), "name",
				     msha ? json_null() : copy(json_object_get(model, "name")),
				     "engine", eng, "counters", ctr)
			 : NULL;
	json_decref(eng);
	json_decref(ctr);
	char *text = k->key ? json_dumps(k->key, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (!text) {
		mw_series_key_free(k);
		return mw_error_set(err, -ENOMEM, "series", "", "out of memory");
	}
	mw_sha256_hex(text, strlen(text), k->id);
	free(text);
	snprintf(k->machine, sizeof(k->machine), "%s",
		 str(doc, "machine", "cpu_name") ? str(doc, "machine", "cpu_name") : "unknown CPU");
	snprintf(k->protocol, sizeof(k->protocol), "%s",
		 str(prot, "name", NULL) ? str(prot, "name", NULL) : "?");
	snprintf(k->model, sizeof(k->model), "%s", mname ? mname : msha ? msha : "?");
	return 0;
}
