/* engine/format/hugecopy.c: a file read into anonymous memory in 2 MiB transparent huge pages
 * (hugecopy.h), for the load modes that copy the model (engine.h, enum eng_load_mode), on
 * every CPU the caller may use.
 *
 * The memory is advised MADV_HUGEPAGE before its first touch, so that the faults of the fill
 * itself take huge pages. File pages come in 2 MiB only from file systems with large folios,
 * or from khugepaged or MADV_COLLAPSE (Linux 6.1) under CONFIG_READ_ONLY_THP_FOR_FS; on the VM
 * this was written on, MADV_COLLAPSE returned EINVAL and MADV_HUGEPAGE on the file mapping gave
 * 18 MB of 438 in 2 MiB pages, where reading 4 KiB pages ran at 0.83-0.93x of 2 MiB ones.
 *
 * One pass, in parallel: a serial pread of the whole file into the copy and then an in-place
 * repack (what this file did before) ran at 0.4-0.6 GB/s on Falcon-7B's shape, where `cat`
 * reads the cached file at about 9 GB/s. Plain bytes now come in by pread (the kernel's copy
 * out of the page cache, no page table for the file) and rearranged ones straight from the
 * file's mapping into their final place, each thread taking 2 MiB pieces from a counter.
 *
 * Tried and not kept (stories110M q4_0, CPU per load, perf; shared 2-vCPU VM):
 *  - reading a rearranged piece by pread into a 256 KiB buffer and packing from L2: it cost
 *    what mapping the piece's pages costs (kernel copy against page-table work, each ~15-20%
 *    of the load);
 *  - MADV_POPULATE_WRITE of the destination before packing: no change (the same zeroing,
 *    only earlier);
 *  - unmapping each piece's file pages once packed, rather than all at once in
 *    eng_gguf_seal: nothing saved, and with both threads running a TLB-shootdown IPI per
 *    piece (smp_call_function_many_cond, ~3-5%).
 * Two threads never faulted one 2 MiB page at once (thp_fault_alloc: 33 per load of 33
 * pages). What remains besides the packing is the kernel zeroing each fresh 2 MiB page
 * (clear_page_erms: 30-77% of a load's CPU, varying from run to run): on this Firecracker
 * guest, memory freed in 8 MiB blocks is reported to the host
 * (page_reporting.page_reporting_order=11), and its first touch faults on the host. `cat`
 * reads into a buffer that stays in cache and never pays it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hugecopy.h"

/* A transparent huge page on x86-64 and on arm64 with 4 KiB granules. */
#define HUGE_PAGE ((size_t)2 << 20)
/* Threads at most: far beyond what a fill from the page cache gains from. */
#define FILL_THREADS_MAX 64

int eng_huge_alloc(size_t len, const char *path, void **map, size_t *map_bytes,
		   struct eng_error *err)
{
	size_t bytes = (len + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	int rc;
	if (bytes < len || bytes > SIZE_MAX - HUGE_PAGE)
		return eng_error_set(err, -EFBIG, path, ENG_NO_OFFSET, "too large to copy here");
	/* Over-allocate by one huge page and trim both ends to a 2 MiB aligned start. */
	char *raw = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		rc = -errno;
		return eng_error_set(err, rc, path, ENG_NO_OFFSET,
				     "cannot allocate %zu bytes to copy the model into (the copying "
				     "load modes need the model's size in free RAM; --load mmap "
				     "does not): %s", bytes, strerror(-rc));
	}
	char *start = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (start > raw)
		munmap(raw, (size_t)(start - raw));
	size_t tail = (size_t)(raw + bytes + HUGE_PAGE - (start + bytes));
	if (tail)
		munmap(start + bytes, tail);
	/* A kernel without THP refuses the advice; the copy then works in small pages
	 * (eng_huge_pages_bytes tells which it got). */
	(void)madvise(start, bytes, MADV_HUGEPAGE);
	*map = start;
	*map_bytes = bytes;
	return 0;
}

int eng_fill_add(struct eng_fill_list *l, struct eng_fill_piece p)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct eng_fill_piece *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = p;
	return 0;
}

int eng_fill_add_plain(struct eng_fill_list *l, size_t from, size_t to)
{
	for (size_t off = from; off < to; off += ENG_FILL_PIECE) {
		size_t len = to - off < ENG_FILL_PIECE ? to - off : ENG_FILL_PIECE;
		if (eng_fill_add(l, (struct eng_fill_piece){ .off = off, .len = len }))
			return -ENOMEM;
	}
	return 0;
}

struct fill {
	uint8_t *dst;
	const uint8_t *src;
	int fd;
	const struct eng_fill_list *l;
	atomic_size_t next;
	atomic_size_t done;  /* bytes filled, for the message of a stop */
	atomic_int rc;
	atomic_size_t bad_off; /* where a read failed */
};

/* pread until len bytes are in: 0, or a negative errno (-EIO when the file shrank). */
static int read_all(int fd, uint8_t *dst, size_t len, size_t off)
{
	while (len) {
		ssize_t got = pread(fd, dst, len, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		dst += got;
		off += (size_t)got;
		len -= (size_t)got;
	}
	return 0;
}

static void *fill_worker(void *arg)
{
	struct fill *f = arg;
	for (size_t i; (i = atomic_fetch_add(&f->next, 1)) < f->l->n;) {
		const struct eng_fill_piece *p = &f->l->v[i];
		if (atomic_load(&f->rc))
			break;
		if (eng_cancelled()) {
			atomic_store(&f->rc, -ECANCELED);
			break;
		}
		if (p->fn) {
			/* The piece's file pages mapped in one call rather than a fault per 64 KiB
			 * (the fault-around window); advice, so failure (Linux < 5.14) is harmless. */
			uintptr_t a = (uintptr_t)(f->src + p->off) & ~(uintptr_t)4095;
			(void)madvise((void *)a, (uintptr_t)(f->src + p->off + p->len) - a,
				      MADV_POPULATE_READ);
			p->fn(p, f->dst, f->src);
		} else {
			int rc = read_all(f->fd, f->dst + p->off, p->len, p->off);
			if (rc) {
				atomic_store(&f->bad_off, p->off);
				atomic_store(&f->rc, rc);
				break;
			}
		}
		atomic_fetch_add(&f->done, p->len);
	}
	return NULL;
}

int eng_huge_fill(uint8_t *dst, int fd, const uint8_t *src, const struct eng_fill_list *l,
		  const char *path, int *threads, struct eng_error *err)
{
	struct fill f = { .dst = dst, .src = src, .fd = fd, .l = l };
	size_t total = 0;
	for (size_t i = 0; i < l->n; i++)
		total += l->v[i].len;
	cpu_set_t set;
	int cpus = sched_getaffinity(0, sizeof(set), &set) ? 1 : CPU_COUNT(&set);
	if (cpus > FILL_THREADS_MAX)
		cpus = FILL_THREADS_MAX;
	if ((size_t)cpus > l->n)
		cpus = l->n ? (int)l->n : 1;
	pthread_t th[FILL_THREADS_MAX];
	int n_th = 0;
	for (; n_th < cpus - 1; n_th++)
		if (pthread_create(&th[n_th], NULL, fill_worker, &f))
			break; /* fewer threads: slower, still complete */
	fill_worker(&f);
	for (int i = 0; i < n_th; i++)
		pthread_join(th[i], NULL);
	if (threads)
		*threads = n_th + 1;
	int rc = atomic_load(&f.rc);
	if (rc == -ECANCELED)
		return eng_error_set(err, rc, path, ENG_NO_OFFSET,
				     "stopped by a signal while reading the model into memory "
				     "(%zu of %zu bytes done)", atomic_load(&f.done), total);
	if (rc) {
		size_t off = atomic_load(&f.bad_off);
		return eng_error_set(err, rc, path, off,
				     "cannot read the model into memory at offset %zu: %s", off,
				     rc == -EIO ? "the file shrank or could not be read"
						: strerror(-rc));
	}
	return 0;
}

int eng_huge_copy(int fd, size_t len, const char *path, void **map, size_t *map_bytes,
		  int *threads, struct eng_error *err)
{
	struct eng_fill_list l = { 0 };
	void *p = NULL;
	size_t bytes = 0;
	int rc;
	if ((rc = eng_huge_alloc(len, path, &p, &bytes, err)))
		return rc;
	if (eng_fill_add_plain(&l, 0, len))
		rc = eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
	else
		rc = eng_huge_fill(p, fd, NULL, &l, path, threads, err);
	free(l.v);
	if (rc) {
		munmap(p, bytes);
		return rc;
	}
	*map = p;
	*map_bytes = bytes;
	return 0;
}

int eng_huge_seal(void *map, size_t map_bytes, const char *path, struct eng_error *err)
{
	if (mprotect(map, map_bytes, PROT_READ)) {
		int rc = -errno;
		return eng_error_set(err, rc, path, ENG_NO_OFFSET,
				     "cannot make the model's copy read-only: %s", strerror(-rc));
	}
	return 0;
}

/* proc(5): each mapping's entry starts "start-end perms ..." and lists "AnonHugePages: N kB". */
int64_t eng_huge_pages_bytes(const void *map)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false;
	int64_t rc = -ENOENT;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t a, b;
		unsigned long long kb;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &a, &b) == 2 && strchr(line, '-') <
		    strchr(line, ' ')) {
			in = a <= (uintptr_t)map && (uintptr_t)map < b;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) {
			rc = (int64_t)kb * 1024;
			break;
		}
	}
	fclose(f);
	return rc;
}
