/* tests/fuzz/fuzz.h: what every fuzz target shares.
 *
 * Each target is one file defining LLVMFuzzerTestOneInput (the libFuzzer entry point,
 * https://llvm.org/docs/LibFuzzer.html). With clang and -Dfuzz it links against libFuzzer; with
 * any other compiler it links against replay.c, which feeds it every file named on the command
 * line, so the corpus and past crashes stay regression tests in every build.
 *
 * A target aborts (FUZZ_CHECK) when a parser breaks its own contract: a return code outside
 * the documented set, a failure without a message, a success whose figures do not add up. The
 * sanitizers catch the rest. */
#ifndef MEMWALL_FUZZ_H
#define MEMWALL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional: called once before the first input. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond)                                                                        \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", __FILE__, __LINE__,  \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A private copy of the input, exactly size bytes (no terminator), so that ASan catches a
 * parser reading past the length it was given. Freed by the caller. */
static inline void *fuzz_copy(const uint8_t *data, size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		abort();
	for (size_t i = 0; i < size; i++)
		((uint8_t *)p)[i] = data[i];
	return p;
}

/* The input as a NUL-terminated string of exactly size bytes plus the NUL. Freed by the
 * caller. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *p = malloc(size + 1);
	if (!p)
		abort();
	for (size_t i = 0; i < size; i++)
		p[i] = (char)data[i];
	p[size] = '\0';
	return p;
}

/* A memfd holding the input, for loaders that take a path: the path is /proc/self/fd/N, so
 * nothing touches the disk. One fd per process, rewritten for every input. Returns the path
 * (static storage). */
const char *fuzz_memfd_path(const uint8_t *data, size_t size);

#endif
