/* src/run/protocol_find.h: where `memwall run NAME` finds a shipped protocol, and `run --list`.
 *
 * A protocol argument is searched for in this order (scripts/README.md, "Installing"):
 *   1. a path: the argument names something that exists (relative to the current directory
 *      or absolute; the loader refuses what is not a regular file, saying what it is);
 *   2. the data directory's protocols/: $MEMWALL_DATA_DIR when set, else the compiled-in
 *      PREFIX/DATADIR/memwall (MW_DATA_DIR, from meson's prefix and datadir options);
 *   3. the source tree's protocols/ (MW_SOURCE_ROOT in config.h), only when the running binary
 *      lies inside the build tree it was built in (MW_BUILD_ROOT), never for an installed one.
 * In 2 and 3 NAME, NAME.json and NAME with its folder are tried; relative paths inside the
 * protocol then resolve against the folder it was found in, so an installed protocol's
 * calibration text and model paths keep their meaning (mw_protocol_load).
 */
#ifndef MEMWALL_PROTOCOL_FIND_H
#define MEMWALL_PROTOCOL_FIND_H

#include <stddef.h>
#include <stdio.h>

#include "mw.h"

/* The data directory: $MEMWALL_DATA_DIR when set and not empty, else MW_DATA_DIR. Borrowed:
 * the environment's string or static storage. */
const char *mw_data_dir(void);

/* The folders searched for protocols by name, in order (at most 2; see above), written into
 * dirs[i] (each n bytes). Returns how many. */
int mw_protocol_dirs(char dirs[][4096], size_t n);

/* Resolves a protocol argument to a file's path in path (n bytes). 0, or -ENOENT with err
 * naming every place that was searched. */
int mw_protocol_find(const char *arg, char *path, size_t n, struct mw_error *err);

/* Prints every protocol in the search folders, one line each: its name and the first sentence
 * of its description (shortened to one line), a folder header before each folder's list; a
 * name found in an earlier folder hides a later one. Returns how many were listed. */
int mw_protocol_list(FILE *f);

#endif
