/* src/run/plan.c: a run plan resolved once (see plan.h). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "engine.h"
#include "file.h"
#include "machine.h"
#include "plan.h"
#include "sha256.h"

/* Removes what a killed generation left in the cache: "<name>.<pid>.tmp*" files whose writer
 * is gone. A live writer (another memwall generating the same model) keeps its file. */
static void remove_stale_tmp(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t len = strlen(name);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end = NULL;
		if (strncmp(e->d_name, name, len) || e->d_name[len] != '.')
			continue;
		long pid = strtol(e->d_name + len + 1, &end, 10);
		if (end == e->d_name + len + 1 || strncmp(end, ".tmp", 4) || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

/* The cached synthetic model's path for p: CACHE/synth/SHAPE-seedN.bin (or .gguf with the
 * architecture and the quant mix in the name), generated on first use: atomically, a
 * temporary file renamed into place. */
static int synth_path(const struct mw_protocol *p, char *path, size_t n, FILE *log,
		      struct mw_error *err)
{
	char dir[3800], tmp[4096];
	struct stat st;
	struct eng_error eerr;
	int rc;
	if ((rc = mw_cache_dir(dir, sizeof(dir))))
		return mw_error_set(err, rc, p->source, "model.synth",
				    "no cache folder: set MEMWALL_CACHE_DIR, XDG_CACHE_HOME or HOME");
	strncat(dir, "/synth", sizeof(dir) - strlen(dir) - 1);
	const char *arch = p->model.synth_arch, *quant = p->model.synth_quant;
	/* A non-SiLU activation is in the name ("-relu"), so the SiLU files keep theirs. */
	enum eng_ffn_act act = p->model.synth_act;
	char act_part[32] = "";
	if (act != ENG_ACT_SILU)
		snprintf(act_part, sizeof(act_part), "-%s", p->model.synth_activation);
	/* A canonical + delta model's form is in the name too ("-cd-split", "-cd-dense") */
	if (p->model.synth_cd)
		snprintf(act_part + strlen(act_part), sizeof(act_part) - strlen(act_part),
			 "-cd-%s", p->model.synth_cd);
	/* The varied construction too ("-varied"): the legacy files keep their names */
	bool varied = p->model.synth_construction == ENG_SYNTH_VARIED;
	if (varied)
		snprintf(act_part + strlen(act_part), sizeof(act_part) - strlen(act_part),
			 "-varied");
	if (arch && quant)
		snprintf(path, n, "%s/%s-%s-%s%s-seed%llu.gguf", dir, arch, p->model.synth_shape,
			 quant, act_part, (unsigned long long)p->model.synth_seed);
	else
		snprintf(path, n, "%s/%s%s-seed%llu.bin", dir, p->model.synth_shape, act_part,
			 (unsigned long long)p->model.synth_seed);
	if (stat(path, &st) == 0)
		return 0;
	for (char *s = dir + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(dir, 0777);
		*s = '/';
	}
	if (mkdir(dir, 0777) && errno != EEXIST)
		return mw_error_set(err, -errno, dir, "model.synth", "cannot create the cache: %s",
				    strerror(errno));
	remove_stale_tmp(dir, strrchr(path, '/') + 1);
	if (log)
		fprintf(log, "memwall run: generating the synthetic %s checkpoint (seed %llu) into "
			     "%s: first use only\n", p->model.synth_shape,
			(unsigned long long)p->model.synth_seed, path);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	eng_error_clear(&eerr);
	struct eng_canonical_delta cd;
	if (p->model.synth_cd && eng_canonical_delta_parse(p->model.synth_cd, &cd, &eerr))
		return mw_error_set(err, -EINVAL, p->source, "model.synth.canonical_delta", "%s",
				    eerr.text);
	struct eng_synth_opts so = { .construction = p->model.synth_construction, .act = act,
				     .cd = p->model.synth_cd ? &cd : NULL };
	if (arch && quant)
		rc = eng_synth_gguf_opts(tmp, arch, p->model.synth_shape, quant,
					 p->model.synth_seed, &so, &eerr);
	else
		rc = eng_synth_llama2c_opts(tmp, p->model.synth_shape, p->model.synth_seed, &so,
					    &eerr);
	if (rc) {
		unlink(tmp);
		return mw_error_set(err, rc, eerr.source[0] ? eerr.source : tmp, "model.synth",
				    "generating the synthetic model failed: %s", eerr.text);
	}
	/* Another memwall may have finished the same file meanwhile: theirs is identical. */
	if (rename(tmp, path)) {
		rc = -errno;
		unlink(tmp);
		return mw_error_set(err, rc, path, "model.synth", "cannot move into place: %s",
				    strerror(-rc));
	}
	return 0;
}

/* GGUF files start with the magic "GGUF" (ggml's docs/gguf.md); llama2.c checkpoints with a
 * header of int32s. The protocol's model.format is checked against the file here, once. */
static int check_format(const struct mw_plan *pl, struct mw_error *err)
{
	char magic[4] = { 0 };
	int rc;
	FILE *f = mw_file_fopen(pl->model_path, "model", "model.path", MW_FILE_ANY_SIZE, &rc, err);
	if (!f)
		return rc;
	size_t n = fread(magic, 1, 4, f);
	fclose(f);
	bool gguf = n == 4 && !memcmp(magic, "GGUF", 4);
	if (gguf == (pl->p->model.format == MW_MODEL_GGUF))
		return 0;
	return mw_error_set(err, -EINVAL, pl->p->source, "model.format",
			    "says \"%s\" but %s is %s", mw_model_format_name(pl->p->model.format),
			    pl->model_path, gguf ? "a GGUF file" : "not a GGUF file");
}

/* Refused before the model is hashed, mapped and populated: paging would distort every
 * figure and can stall the machine. --force runs it anyway, and preflight records that. */
static enum mw_run_status check_memory(const struct mw_plan *pl, const struct mw_run_options *o,
				       struct mw_error *err)
{
	struct stat st;
	uint64_t avail, need;
	if (o->force || stat(pl->model_path, &st) ||
	    !mw_memory_fits((uint64_t)st.st_size, &avail, &need))
		return MW_RUN_DONE;
	mw_error_set(err, -ENOMEM, "/proc/meminfo", "MemAvailable",
		     "%.0f MiB available, %s needs about %.0f MiB: close programs, pick a smaller "
		     "protocol, or give --force to run it anyway", (double)avail / 1048576.0,
		     pl->model_path, (double)need / 1048576.0);
	return MW_RUN_ENVIRONMENT;
}

static enum mw_run_status check_model(struct mw_plan *pl, const struct mw_run_options *o,
				      struct mw_error *err)
{
	const struct mw_protocol *p = pl->p;
	enum mw_run_status st = check_memory(pl, o, err);
	if (st != MW_RUN_DONE)
		return st;
	/* Through the cache (base/sha256.h): a second run, and each variant, do not read a 5 GB
	 * model again while its device, inode, size, mtime and ctime are unchanged. The ctime
	 * is what makes the model.sha256 pin below hold against a file changed in place with
	 * its size and mtime put back: every write moves it, and no call can set it back. */
	bool cached = false;
	if (mw_sha256_file_cached(pl->model_path, pl->model_sha256, &pl->model_bytes, &cached,
				  err))
		return MW_RUN_BAD_INPUT;
	if (o->log)
		fprintf(o->log, "memwall run: sha256 of %s %s\n", pl->model_path,
			cached ? "from the hash cache (device, inode, size, mtime and ctime "
				 "unchanged)"
			       : "computed (read whole)");
	if (p->model.size_bytes >= 0 && (uint64_t)p->model.size_bytes != pl->model_bytes) {
		mw_error_set(err, -EINVAL, p->source, "model.size_bytes",
			     "%s has %llu bytes, the protocol pins %lld: an incomplete or different "
			     "download; fetch it again from %s", pl->model_path,
			     (unsigned long long)pl->model_bytes, (long long)p->model.size_bytes,
			     p->model.url ? p->model.url : "its source");
		return MW_RUN_BAD_INPUT;
	}
	if (p->model.sha256 && strcmp(p->model.sha256, pl->model_sha256)) {
		mw_error_set(err, -EINVAL, p->source, "model.sha256",
			     "%s has sha256 %s, the protocol pins %s: a different or corrupted file",
			     pl->model_path, pl->model_sha256, p->model.sha256);
		return MW_RUN_BAD_INPUT;
	}
	return check_format(pl, err) ? MW_RUN_BAD_INPUT : MW_RUN_DONE;
}

/* Token counts, with the differential method's short run: short_tokens as the protocol gives
 * it, else a quarter of the long run (at least 1) — also when --tokens changed the long run. */
static enum mw_run_status resolve_tokens(struct mw_plan *pl, const struct mw_run_options *o,
					 struct mw_error *err)
{
	const struct mw_protocol *p = pl->p;
	pl->runs = o->runs > 0 ? o->runs : p->runs;
	pl->warmups = p->warmup_runs;
	pl->decode = o->tokens > 0 ? o->tokens : p->decode_tokens;
	if (pl->kind != MW_ENGINE_EXTERNAL)
		return MW_RUN_DONE;
	pl->short_tokens = p->short_tokens_given || o->tokens <= 0 ? p->short_tokens
				   : (pl->decode / 4 > 0 ? pl->decode / 4 : 1);
	if (pl->short_tokens < pl->decode)
		return MW_RUN_DONE;
	mw_error_set(err, -EINVAL, o->tokens > 0 ? "--tokens" : p->source,
		     "differential.short_tokens", "the short run (%d tokens) must be shorter than "
		     "the long one (%d): ask for more tokens", pl->short_tokens, pl->decode);
	return MW_RUN_BAD_INPUT;
}

/* Threads: the override, else the protocol's, else one per CPU the run may use (the pinned
 * ones, or every CPU this process may run on). More threads than pinned CPUs would
 * oversubscribe them, from the protocol or from --threads alike. */
static enum mw_run_status resolve_threads(struct mw_plan *pl, const struct mw_run_options *o,
					  struct mw_error *err)
{
	const struct mw_protocol *p = pl->p;
	CPU_ZERO(&pl->cpus);
	for (size_t i = 0; i < p->engine.n_cpus; i++)
		CPU_SET(p->engine.cpus[i], &pl->cpus);
	pl->pinned = p->engine.n_cpus > 0;
	pl->threads = o->threads > 0 ? o->threads : p->engine.threads;
	if (pl->threads <= 0 && p->engine.threads_halved && !pl->pinned) {
		/* The AIOS baseline script's rule: os.cpu_count() // 2, at least 1. Python's
		 * cpu_count is the online CPUs, whatever this process's affinity. */
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		pl->threads = online >= 2 ? (int)(online / 2) : 1;
	}
	if (pl->threads <= 0)
		pl->threads = pl->pinned ? (int)p->engine.n_cpus : mw_cpus_default(NULL, 0);
	if (!pl->pinned || pl->threads <= (int)p->engine.n_cpus)
		return MW_RUN_DONE;
	mw_error_set(err, -EINVAL, o->threads > 0 ? "--threads" : p->source, "engine.threads",
		     "%d threads on %zu pinned CPUs (engine.cpus) would oversubscribe them: use "
		     "at most %zu", pl->threads, p->engine.n_cpus, p->engine.n_cpus);
	return MW_RUN_BAD_INPUT;
}

static json_t *overrides_json(const struct mw_run_options *o)
{
	json_t *ov = json_object();
	if (ov && o->runs > 0)
		json_object_set_new(ov, "runs", json_integer(o->runs));
	if (ov && o->tokens > 0)
		json_object_set_new(ov, "decode_tokens", json_integer(o->tokens));
	if (ov && o->threads > 0)
		json_object_set_new(ov, "threads", json_integer(o->threads));
	return ov;
}

enum mw_run_status mw_plan_resolve(struct mw_plan *pl, const struct mw_protocol *p,
				   const struct mw_run_options *o, struct mw_error *err)
{
	enum mw_run_status st;
	int rc;
	memset(pl, 0, sizeof(*pl));
	pl->p = p;
	pl->kind = p->engine.kind;
	if (!(pl->overrides = overrides_json(o))) {
		mw_error_set(err, -ENOMEM, "", "", "out of memory");
		return MW_RUN_ENVIRONMENT;
	}
	if ((st = resolve_tokens(pl, o, err)) != MW_RUN_DONE ||
	    (st = resolve_threads(pl, o, err)) != MW_RUN_DONE)
		return st;
	if (p->model.synth_shape) {
		if ((rc = synth_path(p, pl->model_path, sizeof(pl->model_path), o->log, err)))
			return rc == -EINVAL ? MW_RUN_BAD_INPUT : MW_RUN_ENVIRONMENT;
		snprintf(pl->model_name, sizeof(pl->model_name), "synthetic %s%s%s%s%s%s (seed %llu)",
			 p->model.synth_shape, p->model.synth_act != ENG_ACT_SILU ? " " : "",
			 p->model.synth_act != ENG_ACT_SILU ? p->model.synth_activation : "",
			 p->model.synth_cd ? " canonical+delta " : "",
			 p->model.synth_cd ? p->model.synth_cd : "",
			 p->model.synth_construction == ENG_SYNTH_VARIED ? " varied" : "",
			 (unsigned long long)p->model.synth_seed);
	} else {
		snprintf(pl->model_path, sizeof(pl->model_path), "%s", p->model.path);
		const char *base = strrchr(pl->model_path, '/');
		snprintf(pl->model_name, sizeof(pl->model_name), "%.200s",
			 base ? base + 1 : pl->model_path);
	}
	return check_model(pl, o, err);
}

void mw_plan_free(struct mw_plan *pl)
{
	json_decref(pl->overrides);
	pl->overrides = NULL;
}
