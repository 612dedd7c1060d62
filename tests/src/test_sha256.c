/* tests/src/test_sha256.c: src/base/sha256.c's file-hash cache. A second hash of an unchanged file
 * does not read it (the module's read counter); a change of its mtime (nanoseconds only) or of
 * its size (mtime put back) is hashed again; an entry made wrong on purpose serves while its
 * key holds (proof that nothing was read) and is replaced, not trusted, once the key changes.
 * Expected digests are FIPS 180-4's examples (NIST CSRC, SHA256.pdf, SHA2_Additional.pdf), not
 * the code's output; the digest code itself is test_result.c's. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"
#include "test.h"

#define ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define TWO_TEXT "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
#define TWO "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
#define BAD "0000000000000000000000000000000000000000000000000000000000000000"

static char dir[256], file[300], cache[4096];

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	fputs(text, f);
	T_ASSERT(fclose(f) == 0);
}

static char *slurp_cache(void)
{
	FILE *f = fopen(cache, "r");
	static char buf[1 << 16];
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
	return buf;
}

/* Hashes file through the cache; checks the digest, the size, whether the entry served, and
 * how many bytes were read from disk for it. */
static void hash_expect(const char *want, uint64_t size, bool want_cached, uint64_t want_read)
{
	char hex[65];
	uint64_t bytes = 0, before = mw_sha256_bytes_read();
	bool cached = !want_cached;
	struct mw_error err;
	T_EQ_INT(mw_sha256_file_cached(file, hex, &bytes, &cached, &err), 0);
	T_EQ_STR(hex, want);
	T_EQ_U64(bytes, size);
	T_EQ_INT(cached, want_cached);
	T_EQ_U64(mw_sha256_bytes_read() - before, want_read);
}

static void set_mtime(time_t sec, long nsec)
{
	struct timespec ts[2] = { { sec, nsec }, { sec, nsec } };
	T_EQ_INT(utimensat(AT_FDCWD, file, ts, 0), 0);
}

int main(void)
{
	struct stat st;
	snprintf(dir, sizeof(dir), "/tmp/memwall-test-sha256-XXXXXX");
	T_ASSERT(mkdtemp(dir) != NULL);
	char state[300];
	snprintf(state, sizeof(state), "%s/state", dir);
	setenv("MEMWALL_STATE_DIR", state, 1);
	T_EQ_INT(mw_sha256_cache_path(cache, sizeof(cache)), 0);
	snprintf(file, sizeof(file), "%s/model.bin", dir);

	/* First hash: read whole (3 bytes), and an entry with the file's key is written. */
	write_text(file, "abc");
	set_mtime(1700000000, 123456789);
	hash_expect(ABC, 3, false, 3);
	T_EQ_INT(stat(file, &st), 0);
	char entry[512];
	snprintf(entry, sizeof(entry), "%llu %llu 3 1700000000 123456789 " ABC " %s\n",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, file);
	T_EQ_STR(slurp_cache(), entry);

	/* Second hash: from the cache, nothing read. */
	hash_expect(ABC, 3, true, 0);

	/* A wrong digest under the same key is what the cache serves: nothing was read. */
	char *text = slurp_cache(), *at = strstr(text, ABC);
	T_ASSERT(at != NULL);
	memcpy(at, BAD, 64);
	FILE *f = fopen(cache, "w");
	T_ASSERT(f != NULL);
	fputs(text, f);
	fclose(f);
	hash_expect(BAD, 3, true, 0);
	/* One nanosecond later: the key changed, the file is read and the bad entry replaced. */
	set_mtime(1700000000, 123456790);
	hash_expect(ABC, 3, false, 3);
	T_ASSERT(!strstr(slurp_cache(), BAD));
	hash_expect(ABC, 3, true, 0);

	/* New content of another size, the mtime put back: the size alone forces a hash. */
	write_text(file, TWO_TEXT);
	set_mtime(1700000000, 123456790);
	hash_expect(TWO, strlen(TWO_TEXT), false, strlen(TWO_TEXT));
	hash_expect(TWO, strlen(TWO_TEXT), true, 0);
	/* One entry per file: the old one went. */
	T_ASSERT(!strstr(slurp_cache(), ABC));

	/* Without a writable state folder the hash still works, read every time. */
	setenv("MEMWALL_STATE_DIR", "/proc/memwall-no-such-folder", 1);
	hash_expect(TWO, strlen(TWO_TEXT), false, strlen(TWO_TEXT));
	hash_expect(TWO, strlen(TWO_TEXT), false, strlen(TWO_TEXT));

	unlink(cache);
	unlink(file);
	rmdir(state);
	rmdir(dir);
	return t_done();
}
