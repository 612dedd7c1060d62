/* src/verbs.h: the table of memwall's verbs.
 *
 * Adding a verb is one line here plus its file src/cmd_<verb>.c (listed in src/meson.build).
 * A '_' in a verb's name is typed and shown as '-' (import_aios is `memwall import-aios`).
 * Each verb's entry point takes the arguments after the verb (argv[0] is the verb name) and
 * returns an enum mw_exit code. Every verb answers --help with its usage on stdout, exit 0.
 */
#ifndef MEMWALL_VERBS_H
#define MEMWALL_VERBS_H

/* MW_VERB(name, one-line summary) */
#define MW_VERBS(MW_VERB) \
	MW_VERB(bandwidth, "measure memory bandwidth: the roofline's yardstick (read, copy, triad)") \
	MW_VERB(bench_kernels, "time each kernel table per weight type and token count; cache the fastest for this machine") \
	MW_VERB(calibrate, "check the DRAM counters against a known number of streamed bytes") \
	MW_VERB(bundle, "pack records, their charts, provenance and sha256 sums into one archive to submit") \
	MW_VERB(compare, "compare two result records: per-metric delta and Welch t-test; exit 1 on a regression") \
	MW_VERB(db, "a store of many records (SQLite, PostgreSQL): import, query, compare; series, check, changes") \
	MW_VERB(doctor, "report what this machine can measure (DRAM counters, RAPL, core events)") \
	MW_VERB(export, "a record in another project's own submission format: AIOS's baseline JSON or its issue comment") \
	MW_VERB(generate, "run a model and print what it generates, with tok/s") \
	MW_VERB(headroom, "AIOS projections against a baseline; its Model Contract checked on the real model") \
	MW_VERB(import_aios, "convert an AIOS baseline result into a reference record, marked with what it did not measure") \
	MW_VERB(report, "print a result record's tables; --plot renders its charts with gnuplot") \
	MW_VERB(roofline, "analytic bytes and FLOPs per token, roofline, headroom, plausibility of a record") \
	MW_VERB(run, "run a protocol with counters at every token and write its result record") \
	MW_VERB(sparsity_calibrate, "the calibration pass of a static sparsity map: which FFN neurons never fire") \
	MW_VERB(stat, "the DRAM traffic of any command, system-wide, as perf stat -a meters it") \
	MW_VERB(synth, "write a deterministic synthetic model of a real shape") \
	MW_VERB(tokenize, "the token ids (or pieces) a GGUF or llama2.c tokenizer gives a text") \
	MW_VERB(validate, "check a result record's schema and recompute its figures from the raw data") \
	MW_VERB(verify, "prove the DRAM counters before a first run: a known canary, perf and resctrl agree") \
	MW_VERB(version, "print the version, git commit and build configuration")

#define MW_VERB_DECLARE(name, summary) int mw_cmd_##name(int argc, char **argv);
MW_VERBS(MW_VERB_DECLARE)
#undef MW_VERB_DECLARE

#endif
