/* tests/fuzz/fuzz_adapters.c: the llama.cpp output adapters (src/run/adapters/) on arbitrary
 * program output.
 *
 * Input: one selector byte, then the output. The low bits pick the adapter row; with the top
 * bit set the output's first line is a memwall-tokens pattern and the rest is the output. The
 * output is an exact-size copy with no terminator (the parsers take buf, len).
 *
 * Contract (adapters.h): 0, -EINVAL or -EIO; a failure names its source and says what; an
 * unknown count says why; every known count is in [0, 2^31) and every known time finite and
 * non-negative. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "adapters.h"
#include "fuzz.h"

static void check_count(const struct mw_adapter_count *c)
{
	FUZZ_CHECK(!c->known || (c->value >= 0 && c->value < (1ll << 31)));
}

static void check_ms(const struct mw_adapter_ms *m)
{
	FUZZ_CHECK(!m->known || (isfinite(m->value) && m->value >= 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n_adapters;
	const struct mw_adapter *list = mw_adapter_list(&n_adapters);
	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	const uint8_t *out = data + 1;
	size_t out_len = size - 1;
	char *pattern = NULL;
	struct mw_adapter_opts opts = { 0 };
	if (sel & 0x80) {
		const uint8_t *nl = memchr(out, '\n', out_len);
		size_t plen = nl ? (size_t)(nl - out) : out_len;
		pattern = fuzz_str(out, plen);
		opts.pattern = pattern;
		out += nl ? plen + 1 : plen;
		out_len -= nl ? plen + 1 : plen;
	}
	const struct mw_adapter *a = &list[(sel & 0x7f) % n_adapters];
	char *buf = fuzz_copy(out, out_len);

	const struct mw_adapter *d = mw_adapter_detect(buf, out_len);
	FUZZ_CHECK(d == NULL || (d >= list && d < list + n_adapters));

	struct mw_adapter_result res;
	struct mw_error err;
	mw_error_clear(&err);
	int rc = mw_adapter_parse(a->name, buf, out_len, pattern ? &opts : NULL, "fuzz", &res,
				  &err);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -EIO);
	if (rc) {
		/* a bad pattern is the protocol's fault: its source is "output pattern" */
		FUZZ_CHECK(err.text[0] && err.source[0]);
	} else {
		FUZZ_CHECK(res.adapter != NULL);
		FUZZ_CHECK(res.decode_tokens.known || res.why_unknown[0]);
		check_count(&res.prompt_tokens);
		check_count(&res.decode_tokens);
		check_count(&res.eval_runs);
		check_count(&res.repetitions);
		check_ms(&res.prompt_ms);
		check_ms(&res.eval_ms);
		check_ms(&res.load_ms);
		check_ms(&res.tok_per_s);
		check_ms(&res.tok_per_s_sd);
		rc = mw_adapter_check(&res, 128, sel & 0x40, "fuzz", &err);
		FUZZ_CHECK(rc == 0 || rc == -ENODATA || rc == -ERANGE || rc == -EPROTO);
		FUZZ_CHECK(rc == 0 || err.text[0] || rc == -ENODATA);
	}
	free(buf);
	free(pattern);
	return 0;
}
