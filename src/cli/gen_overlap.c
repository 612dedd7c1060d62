/* src/cli/gen_overlap.c: `memwall generate --load overlap` (gen_overlap.h).
 *
 * Why: the repacked image (ENG_LOAD_REPACK, engine/hugecopy.c) decodes faster than the file
 * mapping (1.17-1.22x on a Falcon-7B shape, AVX2, with the mapping's kernels prefetching; 1.8x
 * before they did), but building it costs seconds on a 5 GB model, mostly the kernel zeroing
 * fresh anonymous pages (clear_page_erms), while the mapping's first token comes in about
 * half a second. So the first token runs on the mapping, then a thread of its own builds the
 * image, on the CPUs the session's threads leave free (none left: no image, unless the run
 * waits for it), while decoding goes on on the mapping; before the first token after the
 * image is ready, the session's state moves onto a session over the image
 * (eng_session_adopt) and the mapping is closed, so decoding never waits for it (issue 30:
 * token 2 of a Falcon-7B-shape run had waited 5.4 s). The mapping's and the image's kernels
 * agree to float rounding only, so a run whose switch falls elsewhere may differ in a
 * near-tie; `--switch-at N` fixes the point (waiting if need be) for bit-reproducible runs.
 * The image is not built alongside the first token: that slowed the token 1.1-3.9x even with
 * the image on a CPU of its own (engine/README.md, "Load modes": the two compete for memory
 * bandwidth and the kernel's page handling). A prompt over MW_OVERLAP_PROMPT_MAX tokens waits
 * for the image instead.
 *
 * The image's thread is named "mw-image", and so are the fill threads it starts (Linux gives
 * a new thread its creator's name): that is how the first token's page faults are told from
 * the image's (/proc/self/task/TID/stat, proc(5)) when the image is built before it.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "gen_overlap.h"
#include "mw.h"

#define VERB "generate"

static const char image_comm[] = "mw-image";

/* The engine's cancellation flag while an image is built: only this file sets it, to stop an
 * image nobody will use. */
static atomic_int image_stop;

struct mw_image {
	pthread_t th;
	bool started, joined;
	atomic_bool done; /* the open returned (the thread is about to end) */
	char *path;
	int fd; /* the model file, open (-1: the image opens path); the image's open takes it */
	struct eng_model_options opt;
	struct eng_model *model; /* the image once opened, until the switch takes it */
	struct eng_error err;
	int rc;
	double t_end;
};

static void *image_main(void *arg)
{
	struct mw_image *im = arg;
	(void)pthread_setname_np(pthread_self(), image_comm);
	eng_error_clear(&im->err);
	im->rc = im->fd >= 0 ? eng_model_open_fd(&im->model, im->path, im->fd, &im->opt, &im->err)
			     : eng_model_open(&im->model, im->path, &im->opt, &im->err);
	im->fd = -1;
	im->t_end = mw_now_s();
	atomic_store(&im->done, true);
	return NULL;
}

/* "0-1,3" for the CPUs in set, into buf. */
static void cpus_text(const cpu_set_t *set, char *buf, size_t n)
{
	size_t j = 0;
	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE && j + 16 < n; c++) {
		if (!CPU_ISSET(c, set) || (c > 0 && CPU_ISSET(c - 1, set)))
			continue;
		int e = c;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		j += (size_t)snprintf(buf + j, n - j, "%s%d", j ? "," : "", c);
		if (e > c)
			j += (size_t)snprintf(buf + j, n - j, "-%d", e);
	}
}

int mw_overlap_start(struct mw_overlap *ov, const char *path, int fd)
{
	struct mw_image *im = calloc(1, sizeof(*im));
	ov->state = MW_IMAGE_BUILDING;
	if (!im || !(im->path = strdup(path))) {
		free(im);
		if (fd >= 0)
			close(fd);
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	}
	im->fd = fd;
	im->opt.load = ENG_LOAD_REPACK;
	ov->img = im;
	return 0;
}

/* The CPUs of set after its first `skip`, at most `keep` of them (-1: all), kept in set; how
 * many are left. */
static int cpus_after(cpu_set_t *set, int skip, int keep)
{
	int left = 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, set))
			continue;
		if (skip > 0 || (keep >= 0 && left == keep)) {
			CPU_CLR(c, set);
			skip--;
		} else {
			left++;
		}
	}
	return left;
}

/* The image's thread gets its CPUs as its affinity mask, and the fill takes every CPU of it
 * (engine/hugecopy.c; its threads inherit the mask). The caller is pinned only inside a run
 * (engine/pool.c), so the mask read here is the caller's own. A cgroup's CPU quota is shared
 * by every thread of the process, so the image gets the whole CPUs the quota leaves beyond
 * the session's threads, however many more the mask holds: in a container of `--cpus=2` on
 * 16 CPUs, 14 fill threads beside two decoding ones would throttle the decoding too. */
void mw_overlap_launch(struct mw_overlap *ov, int threads, bool needed)
{
	struct mw_image *im = ov->img;
	cpu_set_t set, all;
	pthread_attr_t attr;
	bool has_mask;
	int rc;
	if (!im || im->started || ov->state == MW_IMAGE_SKIPPED)
		return;
	has_mask = sched_getaffinity(0, sizeof(all), &all) == 0;
	struct mw_cpu_quota q;
	bool quota = mw_cpu_quota(NULL, &q) == 1;
	int spare = quota ? (int)floor(q.cpus + 1e-9) - threads : -1;
	set = all;
	int mask_left = has_mask ? cpus_after(&set, threads, -1) : 1, left = mask_left;
	if (quota && left > spare) {
		left = spare;
		if (has_mask && spare > 0)
			cpus_after(&set, 0, spare);
	}
	if (left <= 0) {
		if (!needed) {
			char mask[64];
			ov->state = MW_IMAGE_SKIPPED;
			snprintf(ov->cpus, sizeof(ov->cpus), "none");
			cpus_text(&all, mask, sizeof(mask));
			if (mask_left == 0)
				snprintf(ov->why, sizeof(ov->why), "every CPU of the affinity mask "
					 "(%s)", mask);
			else
				snprintf(ov->why, sizeof(ov->why), "the whole CPUs of the cgroup's "
					 "CPU quota, %.2f CPUs (%.600s: %s)", q.cpus, q.file,
					 q.value);
			return;
		}
		set = all;
	}
	im->started = true;
	if (has_mask)
		cpus_text(&set, ov->cpus, sizeof(ov->cpus));
	image_stop = 0;
	eng_cancel_hook(&image_stop);
	ov->t_start = mw_now_s();
	if (!(rc = pthread_attr_init(&attr))) {
		if (has_mask)
			rc = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		if (!rc)
			rc = pthread_create(&im->th, &attr, image_main, im);
		pthread_attr_destroy(&attr);
	}
	if (rc) {
		eng_cancel_hook(NULL);
		im->joined = true;
		ov->state = MW_IMAGE_FAILED;
		snprintf(ov->why, sizeof(ov->why), "cannot start the thread that builds it: %s",
			 strerror(rc));
	}
}

bool mw_overlap_ready(const struct mw_overlap *ov)
{
	const struct mw_image *im = ov->img;
	return im && im->started && atomic_load(&im->done);
}

/* Joins the image's thread once; the state follows from what it got. */
static void image_join(struct mw_overlap *ov)
{
	struct mw_image *im = ov->img;
	if (!im || !im->started || im->joined)
		return;
	pthread_join(im->th, NULL);
	im->joined = true;
	eng_cancel_hook(NULL);
	ov->image_s = im->t_end - ov->t_start;
	if (im->rc) {
		ov->state = image_stop ? MW_IMAGE_UNUSED : MW_IMAGE_FAILED;
		snprintf(ov->why, sizeof(ov->why), "%s%s%s", im->err.source,
			 im->err.source[0] ? ": " : "", im->err.text);
		return;
	}
	const struct eng_load_report *lr = eng_model_load_report(im->model);
	ov->image_threads = lr->threads;
	ov->huge_bytes = lr->huge_bytes;
}

void mw_overlap_switch(struct mw_overlap *ov, struct eng_model **model,
		       struct eng_session **session, long after_tokens)
{
	struct mw_image *im = ov->img;
	struct eng_session *s = NULL;
	struct eng_error err;
	double t = mw_now_s();

	if (!im || ov->switched || ov->state == MW_IMAGE_SKIPPED)
		return;
	ov->switched = true;
	mw_overlap_launch(ov, 0, true);
	image_join(ov);
	ov->wait_s = mw_now_s() - t;
	ov->switched_after = after_tokens;
	if (ov->state == MW_IMAGE_FAILED) {
		fprintf(stderr, "memwall %s: --load overlap: the repacked image could not be built "
			"(%s); decoding goes on on the file mapping, at mmap's speed\n", VERB,
			ov->why);
		return;
	}
	t = mw_now_s();
	eng_error_clear(&err);
	if (eng_session_new(&s, im->model, &ov->sopt, &err) ||
	    eng_session_adopt(s, *session, &err)) {
		eng_session_free(s);
		eng_model_close(im->model);
		im->model = NULL;
		ov->state = MW_IMAGE_FAILED;
		snprintf(ov->why, sizeof(ov->why), "%s%s%s", err.source, err.source[0] ? ": " : "",
			 err.text);
		fprintf(stderr, "memwall %s: --load overlap: cannot move the session onto the "
			"repacked image (%s); decoding goes on on the file mapping, at mmap's "
			"speed\n", VERB, ov->why);
		return;
	}
	eng_session_free(*session);
	eng_model_close(*model);
	*session = s;
	*model = im->model;
	im->model = NULL;
	ov->t_switched = mw_now_s();
	ov->switch_s = ov->t_switched - t;
	ov->state = MW_IMAGE_USED;
}

/* proc(5): /proc/self/task/TID/stat is "tid (comm) state ..." with minflt the 10th field and
 * majflt the 12th; comm may hold spaces and parentheses, so fields count from the last ')'. */
static void task_faults(const char *tid, long *all, long *major)
{
	char path[288], line[1024];
	snprintf(path, sizeof(path), "/proc/self/task/%s/stat", tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return; /* the thread ended between the listing and the read */
	size_t got = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[got] = '\0';
	char *open = strchr(line, '('), *close = strrchr(line, ')');
	if (!open || !close || close < open)
		return;
	if ((size_t)(close - open - 1) == strlen(image_comm) &&
	    !strncmp(open + 1, image_comm, strlen(image_comm)))
		return;
	long minflt = 0, majflt = 0;
	if (sscanf(close + 1, " %*c %*d %*d %*d %*d %*d %*u %ld %*d %ld", &minflt, &majflt) == 2) {
		*all += minflt + majflt;
		*major += majflt;
	}
}

void mw_overlap_mark(struct mw_overlap *ov, bool first)
{
	long all = 0, major = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			task_faults(e->d_name, &all, &major);
	if (d)
		closedir(d);
	if (first) {
		ov->faults_first = all;
		ov->major_first = major;
	} else {
		ov->faults_loaded = all;
		ov->major_loaded = major;
	}
}

void mw_overlap_end(struct mw_overlap *ov)
{
	struct mw_image *im = ov->img;
	if (!im)
		return;
	if (im->started && !im->joined) {
		image_stop = 1;
		image_join(ov);
		if (ov->state == MW_IMAGE_BUILDING)
			ov->state = MW_IMAGE_UNUSED;
	}
	if (ov->state == MW_IMAGE_BUILDING)
		ov->state = MW_IMAGE_UNUSED;
	eng_model_close(im->model);
	if (im->fd >= 0)
		close(im->fd);
	free(im->path);
	free(im);
	ov->img = NULL;
}

static const char *state_name(enum mw_image_state s)
{
	static const char *const names[] = {
		[MW_IMAGE_BUILDING] = "building",
		[MW_IMAGE_USED] = "used",
		[MW_IMAGE_FAILED] = "failed",
		[MW_IMAGE_UNUSED] = "unused",
		[MW_IMAGE_SKIPPED] = "skipped",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* Tokens decoded after the first (whose time is the prompt's) and after the switch, per
 * second from the switch (or the first token, if later) to the last; 0 when there are none. */
static double rate_after_switch(const struct mw_overlap *ov, long generated, double t_first,
				double t_end)
{
	long after = ov->switched_after > 1 ? ov->switched_after : 1;
	double from = ov->switched_after >= 1 ? ov->t_switched : t_first;
	if (ov->state != MW_IMAGE_USED || generated <= after || t_end <= from)
		return 0;
	return (double)(generated - after) / (t_end - from);
}

void mw_overlap_explain(const struct mw_overlap *ov, long generated, double t_first,
			double t_end, char *buf, size_t n)
{
	long faults = ov->faults_first - ov->faults_loaded, major = ov->major_first - ov->major_loaded;
	int j = ov->switched && !ov->switched_after
		? snprintf(buf, n, ", overlap: a prompt over %d tokens runs on the image, %ld page "
			   "faults (%ld major) in the first token; ", MW_OVERLAP_PROMPT_MAX, faults,
			   major)
		: snprintf(buf, n, ", overlap: first token on the mapping, %ld page faults (%ld "
			   "major) in it, counted in its time; ", faults, major);
	if (j < 0 || (size_t)j >= n)
		return;
	double r = rate_after_switch(ov, generated, t_first, t_end);
	char rate[48] = "";
	if (r > 0)
		snprintf(rate, sizeof(rate), ", %.2f tok/s decode after it", r);
	if (ov->state == MW_IMAGE_USED)
		snprintf(buf + j, n - (size_t)j, "repacked image on %d thread%s, CPUs %s, in %.1f "
			 "ms, %.0f MB in 2 MiB pages; %ld token%s on the mapping, %ld on the image; "
			 "%s waited %.1f ms for it, switch %.1f ms%s",
			 ov->image_threads, ov->image_threads == 1 ? "" : "s", ov->cpus,
			 ov->image_s * 1e3, (double)ov->huge_bytes / 1e6, ov->switched_after,
			 ov->switched_after == 1 ? "" : "s", generated - ov->switched_after,
			 ov->switched_after ? "the switch" : "the prompt", ov->wait_s * 1e3,
			 ov->switch_s * 1e3, rate);
	else if (ov->state == MW_IMAGE_FAILED)
		snprintf(buf + j, n - (size_t)j, "the image failed: every token ran on the mapping");
	else if (ov->state == MW_IMAGE_SKIPPED)
		snprintf(buf + j, n - (size_t)j, "no image: the session's threads take %s, so all "
			 "%ld tokens ran on the mapping (--load repack builds the image before the "
			 "prompt)", ov->why, generated);
	else if (generated > 1)
		snprintf(buf + j, n - (size_t)j, "all %ld tokens ran on the mapping: the run ended "
			 "before the image was ready", generated);
	else
		snprintf(buf + j, n - (size_t)j, "no image needed (one token)");
}

void mw_overlap_fields(const struct mw_overlap *ov, long generated, double t_first, double t_end,
		       char *buf, size_t n)
{
	long on_mapping = ov->state == MW_IMAGE_USED ? ov->switched_after : generated;
	int j = snprintf(buf, n, " image=%s image_ms=%.3f image_cpus=%s tokens_on_mapping=%ld "
			 "tokens_on_image=%ld", state_name(ov->state), ov->image_s * 1e3, ov->cpus,
			 on_mapping, generated - on_mapping);
	if (j < 0 || (size_t)j >= n || ov->state != MW_IMAGE_USED)
		return;
	j += snprintf(buf + j, n - (size_t)j, " image_threads=%d switch_after=%ld "
		      "switch_wait_ms=%.3f switch_ms=%.3f", ov->image_threads, ov->switched_after,
		      ov->wait_s * 1e3, ov->switch_s * 1e3);
	double r = rate_after_switch(ov, generated, t_first, t_end);
	if (j > 0 && (size_t)j < n && r > 0)
		snprintf(buf + j, n - (size_t)j, " decode_after_switch_tok_s=%.3f", r);
}
