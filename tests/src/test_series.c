/* tests/src/test_series.c: src/record/series.c: which changes to a record start a new series and
 * which do not, and the machine part of the key against the fingerprint's definition, hashed
 * here. */
#include <jansson.h>
#include <string.h>

#include "fixture_result.h"
#include "series.h"
#include "sha256.h"
#include "test.h"

static json_t *base_record(uint32_t seed)
{
	struct t_fx_spec sp = { .protocol = "p1", .cpu = "CPU Alpha", .runs = 3, .warmups = 1,
			      .tokens = 8, .latency_ns = 1e6, .jitter = 0.01, .dram_bytes = 2e6,
			      .instances = 2, .seed = seed };
	json_t *d = t_fx_record(&sp);
	json_t *m = json_object_get(d, "machine");
	json_object_set_new(m, "microcode", json_string("0xa201016"));
	json_object_set_new(m, "kernel", json_pack("{s:s, s:s, s:s}", "release", "6.1.0-18-amd64",
						   "version", "#1 SMP Debian", "machine", "x86_64"));
	if (!json_object_get(d, "engine")) /* the fixture has none */
		json_object_set_new(d, "engine", json_pack("{s:s}", "kind", "builtin"));
	json_object_set_new(json_object_get(d, "engine"), "kernels", json_string("avx2"));
	json_object_set_new(json_object_get(json_object_get(d, "counters"), "dram"), "opened",
			    json_pack("[{s:s, s:i, s:[]}, {s:s, s:i, s:[]}]", "pmu",
				      "uncore_imc_free_running_0", "cpu", 0, "events", "pmu",
				      "uncore_imc_free_running_1", "cpu", 0, "events"));
	return d;
}

static void key_of(const json_t *d, struct mw_series_key *k)
{
	struct mw_error err;
	T_EQ_INT(mw_series_of(d, k, &err), 0);
}

/* Whether the edit makes a new series: compared with the unedited record's key. */
static void expect(const char *what, void (*edit)(json_t *d), bool new_series)
{
	struct mw_series_key a, b;
	json_t *d = base_record(1);
	key_of(d, &a);
	edit(d);
	key_of(d, &b);
	if (!strcmp(a.id, b.id) == new_series)
		fprintf(stderr, "%s: %s\n", what, new_series ? "kept the series" : "new series");
	T_ASSERT(!strcmp(a.id, b.id) != new_series);
	mw_series_key_free(&a);
	mw_series_key_free(&b);
	json_decref(d);
}

static json_t *at(json_t *d, const char *a)
{
	return json_object_get(d, a);
}

/* Values, never part of the key. */
static void other_figures(json_t *d)
{
	json_t *o = base_record(99); /* other latencies and jitter: other figures */
	json_object_set(d, "runs", at(o, "runs"));
	json_object_set(d, "summary", at(o, "summary"));
	json_decref(o);
}
static void other_date(json_t *d)
{
	json_object_set_new(d, "created_utc", json_string("2027-01-01T00:00:00Z"));
}
static void other_memwall_version(json_t *d)
{
	json_object_set_new(at(d, "memwall"), "version", json_string("9.9.9 (git deadbeef)"));
}
static void other_threads_field(json_t *d)
{
	json_object_set_new(at(d, "engine"), "load_ms", json_real(12.5));
}
static void other_calibration(json_t *d)
{
	json_object_set_new(json_object_get(at(d, "counters"), "dram"), "calibration_reason",
			    json_string("missing"));
}

/* Each part of the key. */
static void other_protocol_sha(json_t *d)
{
	json_object_set_new(at(d, "protocol"), "sha256", json_string(
		"2222222222222222222222222222222222222222222222222222222222222222"));
}
static void other_protocol_name(json_t *d)
{
	json_object_set_new(at(d, "protocol"), "name", json_string("p2"));
}
static void an_override(json_t *d)
{
	json_object_set_new(at(d, "protocol"), "overrides", json_pack("{s:i}", "threads", 2));
}
static void other_model(json_t *d)
{
	json_object_set_new(at(d, "model"), "sha256", json_string(
		"3333333333333333333333333333333333333333333333333333333333333333"));
}
static void other_kernel(json_t *d)
{
	json_object_set_new(json_object_get(at(d, "machine"), "kernel"), "release",
			    json_string("6.1.0-19-amd64"));
}
static void other_microcode(json_t *d)
{
	json_object_set_new(at(d, "machine"), "microcode", json_string("0xa201020"));
}
static void other_stepping(json_t *d)
{
	json_object_set_new(at(d, "machine"), "cpu_stepping", json_integer(2));
}
static void other_memory(json_t *d)
{
	json_object_set_new(at(d, "machine"), "memory_config", json_pack(
		"{s:s, s:i, s:i, s:I, s:s, s:i}", "source", "SMBIOS type 17", "slots", 4, "dimms", 2,
		"total_bytes", (json_int_t)(32ll << 30), "type", "DDR5", "speed_mts", 4800));
}
static void other_instances(json_t *d)
{
	json_array_remove(json_object_get(json_object_get(at(d, "counters"), "dram"), "opened"), 1);
}
static void other_engine_build(json_t *d)
{
	json_object_set_new(at(d, "engine"), "kernels", json_string("avx512"));
}
static void other_backend(json_t *d)
{
	json_object_set_new(json_object_get(at(d, "counters"), "dram"), "backend",
			    json_string("intel_imc_cas"));
}
/* The simulated PMU: a series never holds SIMULATED and hardware records together. */
static void simulated(json_t *d)
{
	json_t *dram = json_object_get(at(d, "counters"), "dram");
	json_object_set_new(dram, "layer", json_string("sim"));
	json_object_set_new(dram, "sim_script_sha256", json_string("none"));
}
static void libperf(json_t *d)
{
	json_object_set_new(json_object_get(at(d, "counters"), "dram"), "layer",
			    json_string("libperf"));
}
static void no_dram(json_t *d)
{
	json_object_set_new(at(d, "counters"), "dram", json_pack("{s:b, s:s}", "measured", 0,
								"reason", "no PMU"));
}

/* The machine part against the fingerprint's definition (base/machine.h), done here: the
 * sha256 of the compact JSON with sorted keys of the CPU fields, the kernel, the memory
 * configuration as "dimms", the backend and the PMU@CPU instances. */
static void test_fingerprint(void)
{
	json_t *d = base_record(1);
	struct mw_series_key k;
	key_of(d, &k);
	const json_t *m = at(d, "machine");
	json_t *fp = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:n, s:s, s:[s, s]}",
			       "cpu_name", json_object_get(m, "cpu_name"), "cpu_family",
			       json_object_get(m, "cpu_family"), "cpu_model",
			       json_object_get(m, "cpu_model"), "cpu_stepping",
			       json_object_get(m, "cpu_stepping"), "microcode",
			       json_object_get(m, "microcode"), "kernel", json_object_get(m, "kernel"),
			       "dimms", "dram_backend", "intel_imc_free", "dram_instances",
			       "uncore_imc_free_running_0@0", "uncore_imc_free_running_1@0");
	char *text = json_dumps(fp, JSON_COMPACT | JSON_SORT_KEYS), sha[65];
	mw_sha256_hex(text, strlen(text), sha);
	T_EQ_STR(json_string_value(json_object_get(k.key, "machine")), sha);
	T_ASSERT(json_equal(k.fingerprint, fp));
	/* The id is the key's own hash. */
	char *kt = json_dumps(k.key, JSON_COMPACT | JSON_SORT_KEYS), kid[65];
	mw_sha256_hex(kt, strlen(kt), kid);
	T_EQ_STR(k.id, kid);
	/* Labels and the version, a value. */
	T_EQ_STR(k.machine, "CPU Alpha");
	T_EQ_STR(k.protocol, "p1");
	T_EQ_STR(k.counters, "syscall/intel_imc_free");
	T_EQ_STR(k.engine_version, "test");
	T_CONTAINS(k.engine, "builtin (avx2");
	free(text);
	free(kt);
	json_decref(fp);
	mw_series_key_free(&k);
	/* An engine-accounted record: layer none, no backend. */
	no_dram(d);
	key_of(d, &k);
	T_EQ_STR(k.counters, "none");
	T_EQ_STR(json_string_value(json_object_get(json_object_get(k.key, "counters"), "layer")),
		 "none");
	mw_series_key_free(&k);
	json_decref(d);
}

int main(void)
{
	expect("other figures", other_figures, false);
	expect("another date", other_date, false);
	expect("another memwall version", other_memwall_version, false);
	expect("another load time", other_threads_field, false);
	expect("a calibration reason", other_calibration, false);
	expect("another protocol file", other_protocol_sha, true);
	expect("another protocol name", other_protocol_name, true);
	expect("a command-line override", an_override, true);
	expect("another model", other_model, true);
	expect("another kernel", other_kernel, true);
	expect("another microcode", other_microcode, true);
	expect("another stepping", other_stepping, true);
	expect("another memory configuration", other_memory, true);
	expect("another set of DRAM instances", other_instances, true);
	expect("another kernel table", other_engine_build, true);
	expect("another DRAM backend", other_backend, true);
	expect("the simulated PMU", simulated, true);
	expect("the libperf layer", libperf, true);
	expect("no DRAM counters", no_dram, true);
	test_fingerprint();
	return t_done();
}
