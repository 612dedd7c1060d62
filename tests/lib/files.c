/* tests/lib/files.c: files and scratch folders (files.h). */
#include "files.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include "test.h"

void *t_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n = -1;
	if (len)
		*len = 0;
	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (!buf)
		return NULL;
	buf[n] = '\0';
	if (len)
		*len = (size_t)n;
	return buf;
}

char *t_slurp_fd(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;
	lseek(fd, 0, SEEK_SET);
	while (buf && (n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

void t_write_file(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(body, f);
	fclose(f);
}

void t_write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

void t_scratch(char *dir, size_t n, const char *name)
{
	struct statfs fs;
	bool shm = statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
		   access("/dev/shm", W_OK | X_OK) == 0;
	snprintf(dir, n, "%s/mw-test-%s-XXXXXX", shm ? "/dev/shm" : "/tmp", name);
	t_mkdtemp(dir);
}

void t_mkdtemp(char *tmpl)
{
	if (!mkdtemp(tmpl))
		t_skip("cannot create a scratch folder %s", tmpl);
}

void t_tmp_file(char *tmpl)
{
	int fd = mkstemp(tmpl);
	if (fd < 0)
		t_skip("cannot create a file in /tmp");
	close(fd);
}

void t_tmpdir_scratch(char *dir, size_t n, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, n, "%s/memwall-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
	if (!mkdtemp(dir))
		t_skip("cannot make a temporary directory under %s", dir);
}

int t_rm_tree(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	int st = system(cmd);
	if (st != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return st;
}

void t_setenv_in(const char *name, const char *dir, const char *sub)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	setenv(name, path, 1);
}

void t_need_memwall(void)
{
	if (!getenv("MEMWALL_BIN"))
		t_skip("MEMWALL_BIN is not set (run under meson test)");
}

int t_done_rm(const char *dir, int keep_if_failed)
{
	if (!keep_if_failed || !t_failures)
		t_rm_tree(dir);
	return t_done();
}
