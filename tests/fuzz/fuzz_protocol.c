/* tests/fuzz/fuzz_protocol.c: the protocol parser (src/run/protocol.c: JSON, the embedded schema
 * through jschema.c, and the rules a schema cannot say) on arbitrary bytes. Files are not
 * checked (flags 0): the fuzzer explores the document, not the disk.
 *
 * A refusal must name its source and say something; a protocol that loads must have its
 * defaults filled in and its relative paths resolved against its folder. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_copy(data, size);
	struct mw_protocol *p = NULL;
	struct mw_error err;
	mw_error_clear(&err);
	int rc = mw_protocol_parse(&p, text, size, "fuzz.json", "/nonexistent/protocols", 0, &err);
	FUZZ_CHECK(rc <= 0);
	if (rc) {
		FUZZ_CHECK(p == NULL);
		FUZZ_CHECK(rc == -ENOMEM || (err.text[0] && !strcmp(err.source, "fuzz.json")));
		goto out;
	}
	FUZZ_CHECK(p->name && mw_model_format_name(p->model.format)[0] != '?' &&
		   mw_engine_kind_name(p->engine.kind)[0] != '?' && p->engine.kernels);
	FUZZ_CHECK(p->prompt_tokens == NULL || p->n_prompt_tokens > 0);
	FUZZ_CHECK(p->engine.cpus == NULL || p->engine.n_cpus > 0);
	/* relative paths resolve against the protocol's folder */
	if (p->model.path)
		FUZZ_CHECK(p->model.path[0] == '/');
	if (p->tokenizer.path)
		FUZZ_CHECK(p->tokenizer.path[0] == '/');
out:
	mw_protocol_free(p);
	free(text);
	return 0;
}
