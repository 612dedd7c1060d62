/* tests/fuzz/fuzz_bundle.c: the bundle reader (src/base/tar.c, src/record/bundle.c: what
 * `memwall validate FILE.tar.gz` runs) on arbitrary archives (issue 28).
 *
 * The input is the tar stream itself; the target gzips it before handing it over, so that
 * mutations reach the headers, names and members rather than the deflate stream. Its
 * contract: 0 (a valid bundle), MW_RESULT_MALFORMED or MW_RESULT_INCONSISTENT, never
 * anything else, and every refusal names its source and says why. The seeds are bundles
 * `memwall bundle` wrote from fixture records (fuzz_seeds.c), unzipped. */
#include <stdio.h>
#include <zlib.h>

#include "bundle.h"
#include "fuzz.h"
#include "result.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* mw_bundle_check prints each problem: to /dev/null, or the fuzzer drowns in them */
	if (!freopen("/dev/null", "w", stderr))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	z_stream z = { 0 };
	size_t cap = size + size / 100 + 1024;
	uint8_t *gz = malloc(cap);
	if (!gz || deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	z.next_in = (Bytef *)(uintptr_t)data;
	z.avail_in = (uInt)size;
	z.next_out = gz;
	z.avail_out = (uInt)cap;
	FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
	size_t n = cap - z.avail_out;
	deflateEnd(&z);
	const char *path = fuzz_memfd_path(gz, n);
	struct mw_error err;
	mw_error_clear(&err);
	int rc = mw_bundle_check(path, NULL, &err);
	FUZZ_CHECK(rc == 0 || rc == MW_RESULT_MALFORMED || rc == MW_RESULT_INCONSISTENT);
	if (rc)
		FUZZ_CHECK(err.text[0] && err.source[0]);
	free(gz);
	return 0;
}
