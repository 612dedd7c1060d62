/* src/base/outdir.h: a folder of files a command writes whole or not at all (`-o DIR`).
 *
 * The rules every folder memwall writes follows (mw_file_write_atomic's, for a folder):
 *  - DIR is made by memwall. Its parent must exist: nothing is created outside DIR.
 *  - Everything is written into a temporary folder beside DIR (".NAME.tmp-XXXXXX", the same
 *    file system), and renamed onto DIR at the end: a failure, a crash or a full disk leaves
 *    DIR as it was and no half-written folder under its name.
 *  - What may be at DIR: nothing; an empty folder; or a folder memwall wrote before, known by
 *    the marker file it leaves there (MARKER, below). Anything else (a file, a link, a device,
 *    a folder holding other files) is refused; with force a folder holding other files is
 *    replaced, its old contents removed, but never a link, never the working folder, the
 *    home folder or a folder above them, and never a folder that holds one of the caller's
 *    own inputs (`db site` names its SQLite store).
 *  - A folder replaced is swapped in one rename (RENAME_EXCHANGE) and the old one removed
 *    after, without following the links it holds. */
#ifndef MEMWALL_OUTDIR_H
#define MEMWALL_OUTDIR_H

#include <stdbool.h>
#include <stdio.h>

#include "mw.h"

struct mw_outdir {
	char dir[4096];    /* the folder asked for, trailing slashes dropped */
	char tmp[8300];    /* the temporary folder written into (beside dir); "" once committed or
			    * aborted */
	const char *field; /* the option that named it ("-o"), for messages */
	bool exists;       /* something is at dir: it is replaced at commit */
};

/* Checks what is at dir against the rules above and makes the temporary folder, with the
 * marker file (marker: its name; marker_text: its contents) already in it. inputs[0..n_inputs)
 * are files the command reads that must not be inside dir (NULL entries are skipped).
 * 0, or -errno with err naming dir and field: -EEXIST (a folder of other files, no force),
 * -EINVAL (not a folder, a link, the working or home folder), -ENOENT (no parent). */
int mw_outdir_begin(struct mw_outdir *o, const char *dir, const char *field, bool force,
		    const char *marker, const char *marker_text, const char *const *inputs,
		    size_t n_inputs, struct mw_error *err);

/* A subfolder rel (a relative path memwall chose: no "..", no leading '/') of the temporary
 * folder. 0 or -errno. */
int mw_outdir_mkdir(struct mw_outdir *o, const char *rel, struct mw_error *err);

/* Creates the new file rel in the temporary folder for writing (never through a link, never
 * over an existing file); NULL with err filled. The caller fcloses it and checks the close. */
FILE *mw_outdir_fopen(struct mw_outdir *o, const char *rel, struct mw_error *err);

/* Puts the temporary folder at dir (a rename; a folder at dir is swapped out and removed).
 * 0, or -errno with err filled and the temporary folder removed. */
int mw_outdir_commit(struct mw_outdir *o, struct mw_error *err);

/* Removes the temporary folder and everything in it (after a failure); nothing at dir is
 * touched. Safe to call after commit (does nothing). */
void mw_outdir_abort(struct mw_outdir *o);

#endif
