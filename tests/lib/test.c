/* tests/lib/test.c: the tally of checks and the helpers declared in test.h. */
#include <errno.h>
#include "test.h"

int t_failures;
int t_checks;

const char *const t_shared_models[T_SHARED_MODELS] = {
	"models/stories260K.bin",
	"fixtures/gguf/models/tiny-llama-Q4_0.gguf",
	"fixtures/gguf/models/tiny-falcon-Q8_0.gguf",
};

void t_skip(const char *fmt, ...)
{
	va_list ap;
	fputs("SKIP: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	exit(77);
}

int t_done(void)
{
	if (t_failures) {
		fprintf(stderr, "%d of %d checks failed\n", t_failures, t_checks);
		return 1;
	}
	printf("all %d checks passed\n", t_checks);
	return 0;
}

const char *t_shared(const char *rel)
{
	static char path[4096];
	const char *root = getenv("MEMWALL_SHARED");
	struct stat st;
	if (!root || !*root)
		t_skip("MEMWALL_SHARED is not set (meson sets it to the source tree's ../shared)");
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (stat(path, &st) != 0)
		t_skip("%s is absent: this test needs the shared data folder beside the checkout",
		       path);
	return path;
}

void t_put(const char *root, const char *rel, const char *text)
{
	char path[4096];
	size_t skip = strlen(root) + 1;
	snprintf(path, sizeof(path), "%s%s", root, rel);
	/* The folders are made only when the file cannot be: trees of a few thousand files
	 * (test_dram's 200 PMUs) spent 2.6 s of system time in mkdir calls that found their
	 * folder there already (issue 44, the suite's CPU). */
	FILE *f = fopen(path, "w");
	if (!f && errno == ENOENT) {
		mkdir(root, 0755);
		for (char *p = path + (skip < strlen(path) ? skip : strlen(path)); *p; p++)
			if (*p == '/') {
				*p = '\0';
				mkdir(path, 0755);
				*p = '/';
			}
		f = fopen(path, "w");
	}
	t_checks++;
	if (!f) {
		t_failures++;
		fprintf(stderr, "FAIL: cannot write %s\n", path);
		return;
	}
	fputs(text, f);
	fclose(f);
}

void t_cgroup_tree(const char *root, const char *cpu_max)
{
	t_put(root, "/proc/self/cgroup", "0::/\n");
	t_put(root, "/proc/self/mountinfo",
	      "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
	t_put(root, "/sys/fs/cgroup/cpu.max", cpu_max);
}

void t_source(char *path, size_t n, const char *rel)
{
	const char *root = getenv("MEMWALL_SOURCE_ROOT");
	snprintf(path, n, "%s/%s", root ? root : ".", rel);
}

const char *t_data(const char *rel)
{
	static char path[4096];
	const char *root = getenv("MEMWALL_TEST_DATA");
	snprintf(path, sizeof(path), "%s/%s", root ? root : "tests/data", rel);
	return path;
}

bool t_have_shared(const char *rel, char *path, size_t n)
{
	struct stat st;
	const char *root = getenv("MEMWALL_SHARED");
	snprintf(path, n, "%s/%s", root ? root : "../shared", rel);
	if (stat(path, &st) == 0)
		return true;
	printf("skipped a part: %s is absent\n", path);
	return false;
}
