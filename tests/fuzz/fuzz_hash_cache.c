/* tests/fuzz/fuzz_hash_cache.c: the file-hash cache's reader and writer (src/base/sha256.c:
 * mw_sha256_file_cached) with arbitrary bytes as the cache (issue 43).
 *
 * The input is written as the cache, in a state folder of the target's own, and a small file
 * of known digest is hashed through it. "KEY" in the input stands for that file's key
 * (device, inode, size, mtime and ctime, which no input can know ahead), so inputs reach the
 * path where an entry serves.
 *
 * Contract: the call always succeeds, for 3 bytes; an entry that serves gives 64 lowercase
 * hex digits; otherwise the digest is the file's (FIPS 180-4's "abc" vector), and its entry is
 * then in the cache: the next call serves it. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "mw.h"
#include "sha256.h"

#define ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static char dir[4096], file[4200], cache[4200];

static void cleanup(void)
{
	unlink(cache);
	unlink(file);
	rmdir(dir);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/mw-fuzz-hash-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	setenv("MEMWALL_STATE_DIR", dir, 1);
	snprintf(file, sizeof(file), "%s/model.bin", dir);
	FILE *f = fopen(file, "w");
	if (!f || fputs("abc", f) == EOF || fclose(f))
		abort();
	if (mw_sha256_cache_path(cache, sizeof(cache)))
		abort();
}

static bool lower_hex64(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 64;
}

/* The input as the cache, "KEY" replaced by the file's key. */
static void write_cache(const uint8_t *data, size_t size)
{
	struct stat st;
	char key[256];
	if (stat(file, &st))
		abort();
	int kl = snprintf(key, sizeof(key), "%llu %llu %lld %lld %ld %lld %ld",
			  (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
			  (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			  (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	FILE *f = fopen(cache, "wb");
	if (!f)
		abort();
	for (size_t i = 0; i < size; i++) {
		if (i + 3 <= size && !memcmp(data + i, "KEY", 3)) {
			fwrite(key, 1, (size_t)kl, f);
			i += 2;
		} else {
			fputc(data[i], f);
		}
	}
	if (fclose(f))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char hex[65];
	uint64_t bytes = 0;
	bool cached = false;
	struct mw_error err;
	if (!dir[0])
		setup();
	write_cache(data, size);
	FUZZ_CHECK(mw_sha256_file_cached(file, hex, &bytes, &cached, &err) == 0);
	FUZZ_CHECK(bytes == 3);
	FUZZ_CHECK(lower_hex64(hex));
	if (cached)
		return 0;
	FUZZ_CHECK(!strcmp(hex, ABC));
	FUZZ_CHECK(mw_sha256_file_cached(file, hex, &bytes, &cached, &err) == 0);
	FUZZ_CHECK(cached && !strcmp(hex, ABC));
	return 0;
}
