/* tests/src/test_sha256.c: src/base/sha256.c's file-hash cache. A second hash of an unchanged file
 * does not read it (the module's read counter); a change of its mtime (nanoseconds only) or of
 * its size (mtime put back) is hashed again; an entry made wrong on purpose serves while its
 * key holds (proof that nothing was read) and is replaced, not trusted, once the key changes.
 * Issue 43: new bytes of the same size with the mtime put back are hashed again (the inode
 * change time is in the key), an entry of the old six-number layout is not trusted, and what
 * sits at the cache's path is not trusted to be a cache: a FIFO, an endless device or an
 * oversized file never blocks or loops (each case under an alarm that names it), the stop
 * flag ends the call, and only a regular file there is replaced.
 * Expected digests are FIPS 180-4's examples (NIST CSRC, SHA256.pdf, SHA2_Additional.pdf), not
 * the code's output; the digest code itself is test_result.c's. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
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

static char dir[256], file[300], cache[4096], state[300];

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

/* ---- what sits at the cache's path (issue 43) ---- */

static const char *hang_case = "";

static void on_alarm(int sig)
{
	(void)sig;
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "test_sha256: hung for 10 s: %s\n", hang_case);
	ssize_t w = write(2, msg, n > 0 && (size_t)n < sizeof(msg) ? (size_t)n : 0);
	(void)w;
	/* nothing left in /tmp (unlink and rmdir may be called here) */
	unlink(cache);
	unlink(file);
	rmdir(state);
	rmdir(dir);
	_exit(1);
}

/* The file rewritten in place with text of the same size, its mtime put back: what a
 * download tool that sets the server's Last-Modified leaves (touch -d does the same). The
 * kernel stamps the ctime from a coarse clock (a tick, some ms): the write is repeated,
 * a tick later, until the ctime has moved from before's, as it does for any write that is
 * not within the same tick as the hash. */
static void rewrite_same_size(const char *text, const struct stat *before)
{
	struct stat st;
	for (int i = 0; i < 200; i++) {
		write_text(file, text);
		set_mtime(before->st_mtim.tv_sec, before->st_mtim.tv_nsec);
		T_EQ_INT(stat(file, &st), 0);
		if (st.st_ctim.tv_sec != before->st_ctim.tv_sec ||
		    st.st_ctim.tv_nsec != before->st_ctim.tv_nsec)
			break;
		usleep(5000);
	}
	T_EQ_U64((uint64_t)st.st_size, (uint64_t)before->st_size);
	T_EQ_INT(st.st_mtim.tv_nsec, before->st_mtim.tv_nsec);
}

/* Class 16: new bytes, same size, same mtime: hashed again, not the old digest served. */
static void same_size_same_mtime(void)
{
	struct stat st;
	unlink(cache);
	write_text(file, "abc");
	set_mtime(1700000000, 5);
	hash_expect(ABC, 3, false, 3);
	hash_expect(ABC, 3, true, 0);
	T_EQ_INT(stat(file, &st), 0);
	rewrite_same_size("abd", &st);
	char hex[65];
	struct mw_error err;
	bool cached = true;
	T_EQ_INT(mw_sha256_file_cached(file, hex, NULL, &cached, &err), 0);
	T_ASSERT(!cached);
	T_ASSERT(strcmp(hex, ABC) != 0);
	/* An entry of the six-number layout (before the ctime was in the key) with this file's
	 * device, inode, size and mtime and a wrong digest: not an entry, so not trusted. */
	write_text(file, "abc");
	set_mtime(1700000000, 5);
	T_EQ_INT(stat(file, &st), 0);
	FILE *f = fopen(cache, "w");
	T_ASSERT(f != NULL);
	fprintf(f, "%llu %llu 3 %lld %ld " BAD " %s\n", (unsigned long long)st.st_dev,
		(unsigned long long)st.st_ino, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		file);
	fclose(f);
	hash_expect(ABC, 3, false, 3);
	T_ASSERT(!strstr(slurp_cache(), BAD));
}

/* Class 5: a FIFO, a link to an endless device and an oversized file at the cache's path;
 * then the same with the stop flag set. Each under an alarm naming it. */
static void hostile_cache(void)
{
	static atomic_int stop;
	struct stat st;
	char hex[65];
	struct mw_error err;
	signal(SIGALRM, on_alarm);
	write_text(file, "abc");

	unlink(cache);
	T_EQ_INT(mkfifo(cache, 0600), 0);
	hang_case = "a FIFO at the cache's path";
	alarm(10);
	hash_expect(ABC, 3, false, 3);
	hash_expect(ABC, 3, false, 3);
	alarm(0);
	T_ASSERT(lstat(cache, &st) == 0 && S_ISFIFO(st.st_mode)); /* left as it is */

	unlink(cache);
	T_EQ_INT(symlink("/dev/zero", cache), 0);
	hang_case = "a link to /dev/zero at the cache's path";
	alarm(10);
	hash_expect(ABC, 3, false, 3);
	alarm(0);
	T_ASSERT(lstat(cache, &st) == 0 && S_ISLNK(st.st_mode)); /* not replaced */

	/* The stop flag, set: the call ends at once, the file unread. */
	mw_sha256_cancel_hook(&stop);
	atomic_store(&stop, 1);
	hang_case = "a link to /dev/zero at the cache's path, the stop flag set";
	alarm(10);
	uint64_t before = mw_sha256_bytes_read();
	T_EQ_INT(mw_sha256_file_cached(file, hex, NULL, NULL, &err), -ECANCELED);
	T_EQ_U64(mw_sha256_bytes_read() - before, 0);
	unlink(cache);
	T_EQ_INT(mkfifo(cache, 0600), 0);
	hang_case = "a FIFO at the cache's path, the stop flag set";
	T_EQ_INT(mw_sha256_file_cached(file, hex, NULL, NULL, &err), -ECANCELED);
	alarm(0);
	atomic_store(&stop, 0);
	mw_sha256_cancel_hook(NULL);
	unlink(cache);

	/* A regular file past the cache's size limit (sparse: NUL bytes, no line): no cache,
	 * so the file is hashed, and the cache started afresh with its one entry. */
	int fd = open(cache, O_CREAT | O_WRONLY, 0600);
	T_ASSERT(fd >= 0);
	T_EQ_INT(ftruncate(fd, 3 << 20), 0);
	close(fd);
	hang_case = "a 3 MiB cache of NUL bytes";
	alarm(10);
	hash_expect(ABC, 3, false, 3);
	hash_expect(ABC, 3, true, 0);
	alarm(0);
	T_ASSERT(stat(cache, &st) == 0 && st.st_size < 4096);
	write_text(file, TWO_TEXT); /* as the checks after these leave it */
}

int main(void)
{
	struct stat st;
	snprintf(dir, sizeof(dir), "/tmp/memwall-test-sha256-XXXXXX");
	T_ASSERT(mkdtemp(dir) != NULL);
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
	snprintf(entry, sizeof(entry), "%llu %llu 3 1700000000 123456789 %lld %ld " ABC " %s\n",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec, file);
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

	same_size_same_mtime();
	hostile_cache();

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
