/* src/run/adapters/registry.c: the table of adapters, one row each, and the public functions
 * of adapters.h over it. The rows live one file per adapter in this folder; a new adapter is
 * one file plus one row here.
 *
 * The table lives here rather than in src/run/adapters/registry.c so that the adapter files, which
 * include adapters.h for its types, do not form a cycle with the file that calls them
 * (scripts/check-layout.sh counts a .c and its own .h as one node). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "adapters.h"
#include "internal.h"

/* Any of the four llama-bench formats, by their first bytes (defined below the table, whose
 * rows they try). */
static bool detect_bench(const char *buf, size_t len);
static int parse_bench(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		       const char *source, struct mw_adapter_result *res, struct mw_error *err);

static const struct mw_adapter adapters[] = {
	{ "memwall-tokens", MW_ADAPTER_BOTH, mw_ad_detect_generic, mw_ad_parse_generic,
	  "a 'memwall-tokens: decode=N ...' line, or a protocol's pattern",
	  "decode_ms over decode_steps: a mean per token" },
	{ "llama-bench", MW_ADAPTER_STDOUT, detect_bench, parse_bench,
	  "llama-bench output in any of its formats (json, jsonl, csv, md)",
	  "avg_ts and stddev_ts over its test repetitions: a mean rate and the spread between repetitions" },
	{ "llama-completion", MW_ADAPTER_STDERR, mw_ad_detect_completion, mw_ad_parse_completion,
	  "llama.cpp's perf lines at exit (llama-completion, llama-cli, main)",
	  "eval time / runs in its perf lines: a mean per token" },
	{ "llama-cli", MW_ADAPTER_STDERR, mw_ad_detect_completion, mw_ad_parse_completion,
	  "the same as llama-completion",
	  "eval time / runs in its perf lines: a mean per token" },
	{ "llama-bench-json", MW_ADAPTER_STDOUT, mw_ad_detect_bench_json, mw_ad_parse_bench_json,
	  "llama-bench -o json",
	  "avg_ns and stddev_ns of a whole test repetition: a mean over its tokens and the spread between repetitions" },
	{ "llama-bench-jsonl", MW_ADAPTER_STDOUT, mw_ad_detect_bench_jsonl, mw_ad_parse_bench_jsonl,
	  "llama-bench -o jsonl",
	  "avg_ns and stddev_ns of a whole test repetition: a mean over its tokens and the spread between repetitions" },
	{ "llama-bench-csv", MW_ADAPTER_STDOUT, mw_ad_detect_bench_csv, mw_ad_parse_bench_csv,
	  "llama-bench -o csv",
	  "avg_ns and stddev_ns of a whole test repetition: a mean over its tokens and the spread between repetitions" },
	{ "llama-bench-md", MW_ADAPTER_STDOUT, mw_ad_detect_bench_md, mw_ad_parse_bench_md,
	  "llama-bench -o md (t/s only: no times)",
	  "t/s and its spread over its repetitions: a mean rate, no times" },
};
#define N_ADAPTERS (sizeof(adapters) / sizeof(adapters[0]))

/* llama-bench's own formats are the rows named llama-bench-<format>. */
static bool is_bench_format(const struct mw_adapter *a)
{
	return !strncmp(a->name, "llama-bench-", strlen("llama-bench-"));
}

static bool detect_bench(const char *buf, size_t len)
{
	for (size_t i = 0; i < N_ADAPTERS; i++)
		if (is_bench_format(&adapters[i]) && adapters[i].detect(buf, len))
			return true;
	return false;
}

static int parse_bench(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		       const char *source, struct mw_adapter_result *res, struct mw_error *err)
{
	for (size_t i = 0; i < N_ADAPTERS; i++) {
		if (!is_bench_format(&adapters[i]) || !adapters[i].detect(buf, len))
			continue;
		int rc = adapters[i].parse(buf, len, opts, source, res, err);
		res->adapter = adapters[i].name;
		return rc;
	}
	if (len == 0 || mw_ad_all_blank_n(buf, len)) {
		mw_ad_set_unknown(res, "llama-bench printed nothing on stdout, so there are no figures: "
				 "check its stderr and exit code");
		return 0;
	}
	return mw_ad_fail(err, -EINVAL, source, 1, "",
		    "not llama-bench output in a known format (json, jsonl, csv, md): pass "
		    "-o json");
}

const struct mw_adapter *mw_adapter_find(const char *name)
{
	for (size_t i = 0; name && i < N_ADAPTERS; i++)
		if (!strcmp(adapters[i].name, name))
			return &adapters[i];
	return NULL;
}

const struct mw_adapter *mw_adapter_detect(const char *buf, size_t len)
{
	for (size_t i = 0; i < N_ADAPTERS; i++)
		if (adapters[i].detect(buf, len))
			return &adapters[i];
	return NULL;
}

const struct mw_adapter *mw_adapter_list(size_t *n)
{
	*n = N_ADAPTERS;
	return adapters;
}

int mw_adapter_parse(const char *name, const char *buf, size_t len,
		     const struct mw_adapter_opts *opts, const char *source,
		     struct mw_adapter_result *res, struct mw_error *err)
{
	const struct mw_adapter *a = mw_adapter_find(name);
	memset(res, 0, sizeof(*res));
	mw_error_clear(err);
	if (!a)
		return mw_ad_fail(err, -EINVAL, source, 0, "adapter",
			    "unknown adapter '%s' (memwall-tokens, llama-completion, llama-cli, "
			    "llama-bench, llama-bench-json, -jsonl, -csv, -md)",
			    name ? name : "(null)");
	res->adapter = a->name;
	int rc = a->parse(buf ? buf : "", buf ? len : 0, opts, source, res, err);
	if (rc == 0 && !res->decode_tokens.known && !res->why_unknown[0])
		mw_ad_set_unknown(res, "the %s adapter could not confirm the generated token count",
			    a->name);
	return rc;
}

int mw_adapter_check(const struct mw_adapter_result *res, int64_t target, bool allow_short,
		     const char *source, struct mw_error *err)
{
	if (!res->decode_tokens.known)
		return mw_ad_fail(err, -ENODATA, source, 0, "decode tokens", "%s", res->why_unknown);
	if (res->decode_tokens.value < target && !allow_short)
		return mw_ad_fail(err, -ERANGE, source, 0, "decode tokens",
			    "%" PRId64 " tokens generated of the %" PRId64 " asked for: generation "
			    "stopped early (an end-of-sequence token?); pass --ignore-eos, or "
			    "allow short runs in the protocol",
			    res->decode_tokens.value, target);
	if (res->decode_tokens.value > target)
		return mw_ad_fail(err, -EPROTO, source, 0, "decode tokens",
			    "%" PRId64 " tokens generated but %" PRId64 " asked for: the command "
			    "template does not pass the token count where the program reads it",
			    res->decode_tokens.value, target);
	return 0;
}
