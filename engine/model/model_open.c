/* engine/model/model_open.c: eng_model_open, which checks a model file and the load options and
 * hands the file to its format's loader (model.c for llama2.c checkpoints, gguf_model.c for
 * GGUF, which finds its architecture's row; a llama2.c checkpoint's is the row that says
 * llama2c); and the load modes' names.
 *
 * Above both loaders: they fill the model this file makes, and this file closes it when they
 * fail, so neither loader calls back here.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"
#include "gguf_model.h"
#include "model.h"

/* The load modes' names, as protocols, results and the command line spell them: the engine
 * owns the enum, so it owns the one table that converts it. */
static const char *const load_mode_names[] = {
	[ENG_LOAD_MMAP] = "mmap",
	[ENG_LOAD_HUGE_COPY] = "huge-copy",
	[ENG_LOAD_REPACK] = "repack",
};
static_assert(sizeof(load_mode_names) / sizeof(load_mode_names[0]) == ENG_LOAD_REPACK + 1,
	      "a name for every enum eng_load_mode (ENG_LOAD_REPACK is the last)");

const char *eng_load_mode_name(enum eng_load_mode m)
{
	if ((unsigned)m >= sizeof(load_mode_names) / sizeof(load_mode_names[0]))
		return NULL;
	return load_mode_names[m];
}

int eng_load_mode_parse(const char *name, enum eng_load_mode *out)
{
	for (int m = 0; name && m < eng_load_mode_count(); m++) {
		if (!strcmp(name, load_mode_names[m])) {
			*out = (enum eng_load_mode)m;
			return 0;
		}
	}
	return -EINVAL;
}

int eng_load_mode_count(void)
{
	return (int)(sizeof(load_mode_names) / sizeof(load_mode_names[0]));
}

/* True when the file at fd starts with GGUF's magic (ggml's docs/gguf.md). */
static bool is_gguf(int fd)
{
	char magic[4];
	return pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	       !memcmp(magic, "GGUF", sizeof(magic));
}

int eng_model_open(struct eng_model **out, const char *path, const struct eng_model_options *opt,
		   struct eng_error *err)
{
	*out = NULL;
	/* O_NONBLOCK: a FIFO without a writer would otherwise block this open forever; it is
	 * refused as not a regular file, and the flag cleared for a file that is one. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return eng_error_set(err, -errno, path, ENG_NO_OFFSET, "cannot open the model: %s",
				     strerror(errno));
	return eng_model_open_fd(out, path, fd, opt, err);
}

/* Checks the file and the options, then hands an empty model to the loader of the file's
 * format, with the file open: a model file is opened once (the GGUF reader maps and parses
 * this fd). The model is made and closed here, never by a loader: the loaders depend on
 * model.h and not on this file. */
int eng_model_open_fd(struct eng_model **out, const char *path, int fd,
		      const struct eng_model_options *opt, struct eng_error *err)
{
	static const struct eng_model_options defaults = { 0 };
	struct eng_model *m = NULL;
	struct stat st;
	int rc = 0, flags;

	*out = NULL;
	if (!opt)
		opt = &defaults;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "not a regular file: give the path of a model file");
		goto out;
	}
	if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		rc = eng_error_set(err, -errno, path, ENG_NO_OFFSET, "cannot read the model: %s",
				   strerror(errno));
		goto out;
	}
	if (st.st_size == 0) {
		rc = eng_error_set(err, -EINVAL, path, 0, "the file is empty");
		goto out;
	}
	if ((unsigned)opt->load > ENG_LOAD_REPACK) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET, "unknown load mode %d",
				   (int)opt->load);
		goto out;
	}
	size_t len = strlen(path);
	m = calloc(1, sizeof(*m) + len + 1);
	if (!m) {
		rc = eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	memcpy(m->path, path, len + 1);
	m->map = MAP_FAILED;
	m->load.mode = opt->load;
	if (is_gguf(fd)) {
		/* The GGUF reader maps and parses this same open file. */
		int gfd = fd;
		fd = -1;
		rc = eng_gguf_model_load(m, gfd, opt, err);
	} else {
		rc = eng_llama2c_model_load(m, fd, (uint64_t)st.st_size, opt, err);
		m->arch = eng_arch_llama2c();
		m->info.arch = m->arch->info.name;
	}
	if (rc)
		goto out;
	*out = m;
	m = NULL;
out:
	if (fd >= 0)
		close(fd);
	eng_model_close(m);
	return rc;
}

const struct eng_load_report *eng_model_load_report(const struct eng_model *m)
{
	return &m->load;
}
