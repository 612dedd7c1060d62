/* src/base/file.h: opening a file a user named (a model, a tokenizer, a protocol, a record, a
 * calibration file, a stand-in for /proc/meminfo) without trusting it to be one.
 *
 * open() on a FIFO blocks until a writer appears, a device can be read forever (/dev/zero) and
 * a directory opens fine and fails later with a misleading message. Every user-named file in
 * src/ is opened here: O_NONBLOCK for the open (cleared after), fstat, and anything but a
 * regular file refused by name ("is a FIFO", "is a directory"). Readers pass a size limit that
 * fits their format and get a clear error past it. */
#ifndef MEMWALL_FILE_H
#define MEMWALL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "mw.h"

#define MW_FILE_ANY_SIZE UINT64_MAX /* no size limit (files that are mapped or streamed) */
#define MW_PROMPTS_MAX_BYTES (64u << 20) /* a prompt file (generate, sparsity-calibrate) */

/* Names from data that become file names (a protocol's name in its records' names, a
 * synthetic model's shape in the cache's file names): ASCII letters, digits, '-', '_' and
 * '.', not starting with '.', 1 to MW_NAME_MAX characters. Nothing else can reach a path: no
 * '/', no "..", no hidden file, no newline, no byte a shell or a terminal would read. */
#define MW_NAME_MAX 64
#define MW_NAME_RULE "letters, digits, '-', '_' and '.', not starting with '.', at most 64 " \
		     "characters"

/* 0 when name follows the rule above; else -EINVAL and why[0..n) says what breaks it
 * ("character 3 is '/'", "starts with '.'", "is 70 characters long"), counting characters
 * (UTF-8 code points), not bytes. */
int mw_name_check(const char *name, char *why, size_t n);

/* NAME in memwall's state folder (the calibration and verification stores, the hash cache):
 * $MEMWALL_STATE_DIR/NAME, else $XDG_STATE_HOME/memwall/NAME, else ~/.local/state/memwall/NAME.
 * 0, or -ENOENT when none of the three is set. */
int mw_state_path(char *buf, size_t n, const char *name);
/* Creates every missing folder above path (not path itself). 0 or -errno. */
int mw_mkdir_parents(const char *path);

/* What kind of file mode m is, as a phrase: "a FIFO", "a directory", "a character device",
 * "a block device", "a socket", "a symbolic link", "a regular file". Static storage. */
const char *mw_file_kind(mode_t m);

/* Opens path read-only for reading as what ("model", "protocol", ...; names the file in
 * messages): never blocks, refuses a file that is not regular ("is a FIFO, not a regular
 * file") and a regular file larger than max_bytes. Returns the descriptor (O_CLOEXEC,
 * blocking mode restored; the caller closes it), or -errno with err filled (source path,
 * field field): -ENOENT and others from open, -EINVAL for a non-regular file, -EFBIG past
 * max_bytes. */
int mw_file_open(const char *path, const char *what, const char *field, uint64_t max_bytes,
		 struct mw_error *err);

/* mw_file_open, then the whole file into *text (malloc'd, NUL-terminated; *len bytes, len
 * may be NULL). Files whose size stat cannot tell (/proc) are read up to max_bytes and
 * refused past it. 0 or -errno with err filled; -ENOMEM says what was being read. */
int mw_file_read(const char *path, const char *what, const char *field, uint64_t max_bytes,
		 char **text, size_t *len, struct mw_error *err);

/* mw_file_open as a stdio stream ("rb"); NULL with *rc and err filled. */
FILE *mw_file_fopen(const char *path, const char *what, const char *field, uint64_t max_bytes,
		    int *rc, struct mw_error *err);

/* Checks that path can be opened as a regular file of at most max_bytes (mw_file_open, then
 * close): for paths handed on to a loader that opens them itself (engine/). 0 or -errno. */
int mw_file_check(const char *path, const char *what, const char *field, uint64_t max_bytes,
		  struct mw_error *err);

/* Writes data[0..len) to path (a file a user named with an option, field: "-o") whole or not
 * at all: into a temporary file beside it (".NAME.PID.XXXXXX.tmp"), fsync'd, then renamed
 * onto path, and the folder fsync'd. Without force, a path that exists is refused (-EEXIST:
 * "exists: give --force to replace it"); with force, only a regular file is replaced. A
 * symbolic link, a folder, a FIFO, a socket or a device at path is never written through or
 * replaced (-EINVAL), force or not. The check is made before the write and again by the
 * rename itself (RENAME_NOREPLACE, or link() where the filesystem lacks it) without force.
 * The file gets mode 0644, as records do. On failure the temporary file is removed and err
 * names path and why. 0 or -errno. */
int mw_file_write_atomic(const char *path, const char *field, const void *data, size_t len,
			 bool force, struct mw_error *err);
/* mw_file_write_atomic's rule for what may be at path, for a command to check before it
 * spends time on what it will write (the write checks again): nothing, or with force a
 * regular file. 0, or -EEXIST / -EINVAL (not a regular file: a link, dangling or not, is not
 * followed) / -errno, with err naming path and field. */
int mw_file_target_check(const char *path, const char *field, bool force, struct mw_error *err);
/* Whether a and b name one file (device and inode, links followed: a hard link or a link to
 * it is the file), for an output that must not be one of the command's inputs. False when
 * either cannot be examined or is NULL. */
bool mw_file_same(const char *a, const char *b);

#endif
