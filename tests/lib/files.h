/* tests/lib/files.h: files and scratch folders for memwall's test programs. */
#ifndef MEMWALL_TEST_FILES_H
#define MEMWALL_TEST_FILES_H

#include <stddef.h>

/* The whole file at path, malloc'd, with a NUL after its last byte (so text is a C string);
 * its length in *len when len is not NULL (0 when unreadable). NULL when it cannot be read. */
void *t_slurp(const char *path, size_t *len);

/* Everything left to read on fd from its start, malloc'd and NUL-terminated; NULL on no memory. */
char *t_slurp_fd(int fd);

/* Writes body to path (a fixture the test makes); exits 1 when it cannot. */
void t_write_file(const char *path, const char *body);

/* Writes text to path; a file that cannot be opened is a failed check (the test goes on). */
void t_write_text(const char *path, const char *text);

/* mkdtemp(tmpl), a template ending XXXXXX; skips the test (exit 77) when no folder can be made. */
void t_mkdtemp(char *tmpl);

/* mkstemp(tmpl), the file closed: an empty file of its own for the test to write; skips the
 * test (exit 77) when none can be made. */
void t_tmp_file(char *tmpl);

/* A scratch folder $TMPDIR/memwall-NAME-XXXXXX (/tmp where TMPDIR is unset or empty), made
 * (mkdtemp) into dir; skips the test (exit 77) when it cannot be. */
void t_tmpdir_scratch(char *dir, size_t n, const char *name);

/* A fresh folder for the test's files into dir (n bytes): /dev/shm/mw-test-NAME-XXXXXX where
 * /dev/shm is a writable tmpfs, else /tmp/mw-test-NAME-XXXXXX; skips the test (exit 77) when
 * none can be made. In memory because the tests make and delete thousands of small files (sysfs
 * trees, records, shell cases), and on the disk's ext4, after the deletions of the tests
 * before, creating them was seconds of system time (test_dram's 200-PMU trees: 5.4 s, against
 * 0.3 on tmpfs; test_badinput's cases 4.5 against 3.3). Nothing that must be on a disk
 * (O_DIRECT reads: none today) belongs there. */
void t_scratch(char *dir, size_t n, const char *name);

/* rm -rf dir; says so on stderr when it cannot. Returns system()'s status (0: removed). */
int t_rm_tree(const char *dir);

/* The end of a test program that made the scratch folder dir: removes it (kept, to look at,
 * where keep_if_failed and a check failed) and returns t_done(). */
int t_done_rm(const char *dir, int keep_if_failed);

/* Sets the environment variable name to dir/sub (the cache or state folder of a scratch
 * folder: MEMWALL_CACHE_DIR, MEMWALL_STATE_DIR), so that memwall and the libraries keep their
 * files there. */
void t_setenv_in(const char *name, const char *dir, const char *sub);

/* Skips the test (exit 77) unless $MEMWALL_BIN names the memwall binary (meson test sets it). */
void t_need_memwall(void);

#endif
