/* src/cli/gen_overlap.h: `memwall generate --load overlap` (gen_overlap.c): the first token
 * on the file mapping, the repacked image built on a thread of its own, then the session's
 * state moved onto a session over the image (eng_session_adopt) for the rest. */
#ifndef MEMWALL_CLI_GEN_OVERLAP_H
#define MEMWALL_CLI_GEN_OVERLAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* Prompts longer than this many tokens wait for the image and run on it (its multi-token
 * kernels read the x8 layout, about 3x the mapping's prompt rate); shorter ones run on the
 * mapping. From a measurement on synthetic Falcon-7B Q4_K_M (engine/README.md, "Load modes"). */
#define MW_OVERLAP_PROMPT_MAX 16
/* Where the image stands. */
enum mw_image_state {
	MW_IMAGE_BUILDING, /* the thread runs, or has not been waited for */
	MW_IMAGE_USED,     /* the session moved onto it */
	MW_IMAGE_FAILED,   /* the open failed or was cancelled (why says which): the session
			    * stayed on the mapping */
	MW_IMAGE_UNUSED,   /* no step needed it (one token, or the run ended first): cancelled */
	MW_IMAGE_SKIPPED,  /* not built: the session's threads took every CPU (why says so) */
};

struct mw_image;

/* One overlap: the image's thread and what the switch measured. Zero it, then
 * mw_overlap_start. */
struct mw_overlap {
	struct mw_image *img;
	/* The session's options, for the one over the image: set before the switch; its
	 * pointers must outlive ov. */
	struct eng_session_options sopt;
	enum mw_image_state state;
	char why[1300];      /* MW_IMAGE_FAILED: the engine's message (struct eng_error's);
			      * MW_IMAGE_SKIPPED: what the session's threads take, "every
			      * CPU of the affinity mask (0-1)" or the cgroup's quota */
	int image_threads;   /* threads that filled the image */
	int64_t huge_bytes;  /* its bytes in 2 MiB pages (eng_load_report) */
	char cpus[64];       /* the CPUs the image was built on, e.g. "0-1" ("none": skipped) */
	double t_start;      /* CLOCK_MONOTONIC seconds: the image's thread started */
	double image_s;      /* the open on its thread, start to ready (or to failure) */
	double wait_s;       /* how long the switch waited for the image */
	double switch_s;     /* the new session, the state's move and the mapping's close */
	double t_switched;   /* CLOCK_MONOTONIC seconds when the session ran on the image */
	bool switched;       /* the switch was made (or tried) */
	long switched_after; /* tokens generated before the switch (0: before the prompt) */
	/* Page faults of every thread but the image's (minor + major, and major), at the load
	 * and at the first token: the first token's own faults under overlap. */
	long faults_loaded, major_loaded, faults_first, major_first;
};

/* Prepares the image of path, open as fd (the image's, closed by the end whatever happens; -1:
 * the image opens path):
 * ENG_LOAD_REPACK (huge-copy for a llama2.c checkpoint, which has
 * nothing to interleave). Its thread starts at mw_overlap_launch. The caller sets ov->sopt
 * before the switch. One overlap per process at a time: the image hooks the engine's
 * cancellation flag while it is built. 0, or an MW_EXIT_* code (message printed). */
int mw_overlap_start(struct mw_overlap *ov, const char *path, int fd);
/* Starts building the image on a thread of its own, once (later calls do nothing), on the CPUs
 * of the caller's affinity mask that the session's `threads` do not run on: engine/pool.c
 * pins thread t to the mask's t-th CPU, so the image gets the CPUs after the first `threads`,
 * no more of them than the whole CPUs the cgroup's CPU quota leaves (src/base/cgroup.h).
 * When that leaves none, the image takes every CPU of the mask if `needed` (the run will wait
 * for it: a long prompt, --switch-at), and otherwise is not built (MW_IMAGE_SKIPPED): built
 * on the CPUs that decode, it slowed a Falcon-7B-shape run of 48 tokens at 2 threads of 2
 * 1.5x (engine/README.md, "Load modes"). Called after the first token: built alongside it, the image
 * slowed the first token 1.1-3.9x even on a CPU of its own. A thread that cannot start makes
 * the image failed (the switch says so). */
void mw_overlap_launch(struct mw_overlap *ov, int threads, bool needed);
/* Whether the image's thread has finished (built or failed): the switch would not wait.
 * Never blocks. */
bool mw_overlap_ready(const struct mw_overlap *ov);
/* The switch, once (later calls do nothing): launches the image if need be (on every CPU:
 * the switch waits for it), waits for it,
 * moves *session's state onto a new session over it (ov->sopt), closes *model (the mapping)
 * and puts the image and the new session in their place; after_tokens is the tokens generated
 * so far, for the report. When the image or the move failed, says so on stderr and leaves
 * both as they are: decoding goes on on the mapping (ov->state says which). */
void mw_overlap_switch(struct mw_overlap *ov, struct eng_model **model,
		       struct eng_session **session, long after_tokens);
/* Records the page faults so far of every thread but the image's, for the load (first =
 * false) or the first token (true). */
void mw_overlap_mark(struct mw_overlap *ov, bool first);
/* Stops the image's thread if it still runs (cancelled: MW_IMAGE_UNUSED), frees what was not
 * used, and unhooks the cancellation flag. Safe on a zeroed ov and twice. */
void mw_overlap_end(struct mw_overlap *ov);
/* ", overlap: first token on the mapping, ... tok/s decode after it" for the summary line,
 * into buf (arguments as mw_overlap_fields'). */
void mw_overlap_explain(const struct mw_overlap *ov, long generated, double t_first,
			double t_end, char *buf, size_t n);
/* The memwall-load line's overlap fields (" image=used image_ms=... switch_wait_ms=...
 * decode_after_switch_tok_s=..."), into buf: generated tokens in all, the first's and the
 * last's times (CLOCK_MONOTONIC seconds). */
void mw_overlap_fields(const struct mw_overlap *ov, long generated, double t_first, double t_end,
		       char *buf, size_t n);

#endif
