/*
 * bigmem.c: large zeroed arrays in transparent huge pages.  Filling the
 * free map of a 9-million-cluster volume (1.2 MiB) or 4 MiB of dirty FAT
 * sectors one 4 KiB page fault at a time cost more than the work done in
 * them (bench/RESULTS.md); a huge page is one fault.  Under AddressSanitizer
 * everything comes from calloc() so that overruns are still caught.
 */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include "lib/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_LEN ((size_t)2 << 20)  /* x86-64 and arm64 PMD size */
#define MIN_LEN	 ((size_t)64 << 10) /* below this, calloc() */

/* Bytes mapped for @len bytes, or 0 when @len goes to calloc(). */
static size_t mapped_len(size_t len)
{
	if (!FK_BIGMEM_MAPS || len < MIN_LEN || len > SIZE_MAX - 2 * HUGE_LEN)
		return 0;
	return (len + HUGE_LEN - 1) & ~(HUGE_LEN - 1);
}

void *fk_bigmem_alloc(size_t n, size_t size)
{
	size_t len, map_len, head;
	unsigned char *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	len = n * size;
	if (!(map_len = mapped_len(len)))
		return calloc(n, size);
	/* One huge page more, so that an aligned start can be cut out. */
	p = mmap(NULL, map_len + HUGE_LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	head = (HUGE_LEN - (uintptr_t)p % HUGE_LEN) % HUGE_LEN;
	if (head)
		munmap(p, head);
	munmap(p + head + map_len, HUGE_LEN - head);
	p += head;
	/* Advice only: without it (THP off) the pages are ordinary ones. */
	madvise(p, map_len, MADV_HUGEPAGE);
	return p;
}

void *fk_bigmem_alloc_sparse(size_t n, size_t size)
{
	size_t map_len;
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	if (!(map_len = mapped_len(n * size)))
		return calloc(n, size);
	/* No huge pages and no calloc() memset: a page is mapped when it is
	 * first touched (a read maps the shared zero page). */
	p = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void fk_bigmem_free(void *p, size_t n, size_t size)
{
	size_t map_len = mapped_len(n * size);

	if (!p)
		return;
	if (map_len)
		munmap(p, map_len);
	else
		free(p);
}
