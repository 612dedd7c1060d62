/* tests/fuzz/replay.c: a main() for fuzz targets built without libFuzzer (gcc, or clang with
 * -Dfuzz=disabled): runs the target once on every file named, or on every file in every
 * directory named, and says how many. An input that breaks the target aborts, as it would
 * under libFuzzer; running the seed corpus and the saved crashes this way keeps them
 * regression tests in every build. */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 65536;
			uint8_t *nb = realloc(buf, cap);
			if (!nb)
				abort();
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		if (!n)
			break;
		len += n;
	}
	fclose(f);
	/* Exactly len bytes, as libFuzzer passes them, so a read past the end is caught. */
	uint8_t *exact = fuzz_copy(buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			bad++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad += run_file(argv[i]) != 0;
			files++;
			continue;
		}
		struct dirent **names = NULL;
		int n = scandir(argv[i], &names, NULL, alphasort);
		for (int k = 0; k < n; k++) {
			char path[4096];
			if (names[k]->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
				bad += run_file(path) != 0;
				files++;
			}
			free(names[k]);
		}
		free(names);
	}
	printf("replayed %d inputs%s\n", files, bad ? " (some unreadable)" : "");
	return bad ? 1 : 0;
}
