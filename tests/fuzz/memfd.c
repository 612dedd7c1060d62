/* tests/fuzz/memfd.c: the input as a file, for loaders that take a path (see fuzz.h). */
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

const char *fuzz_memfd_path(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		/* memfd_create(2): an anonymous tmpfs file; MFD_CLOEXEC keeps it from children. */
		fd = memfd_create("memwall-fuzz", MFD_CLOEXEC);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0) {
		perror("ftruncate");
		abort();
	}
	size_t done = 0;
	while (done < size) {
		ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
		if (n <= 0) {
			perror("pwrite");
			abort();
		}
		done += (size_t)n;
	}
	return path;
}
