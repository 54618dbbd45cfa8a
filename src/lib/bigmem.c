/*
 * bigmem.c: large zeroed arrays in transparent huge pages.  Filling the
 * free map of a 9-million-cluster volume (1.2 MiB) or 4 MiB of dirty FAT
 * sectors one 4 KiB page fault at a time cost more than the work done in
 * them (bench/RESULTS.md); a huge page is one fault.  An array filled in
 * pieces (a lazily read free map) takes huge pages only where a piece is
 * large, so that a run that reads 4 KiB of a small card's map does not
 * clear 2 MiB for it.  Under AddressSanitizer everything comes from
 * calloc() so that overruns are still caught.
 */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include "lib/bigmem.h"
#include "lib/vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1 uapi; glibc 2.36 lacks the name */
#endif

#define HUGE_LEN ((size_t)2 << 20)  /* x86-64 and arm64 PMD size */
#define MIN_LEN	 ((size_t)64 << 10) /* below this, calloc() */

/* Bytes mapped for @len bytes, or 0 when @len goes to calloc(). */
static size_t mapped_len(size_t len)
{
	if (!FK_BIGMEM_MAPS || len < MIN_LEN || len > SIZE_MAX - 2 * HUGE_LEN)
		return 0;
	return (len + HUGE_LEN - 1) & ~(HUGE_LEN - 1);
}

/* @map_len bytes mapped on a 2 MiB boundary, or NULL. */
static unsigned char *map_aligned(size_t map_len)
{
	size_t head;
	unsigned char *p;

	/* Linux 6.7 and later place an anonymous mapping of whole huge
	 * pages on a huge page boundary: then one system call does. */
	p = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (!((uintptr_t)p % HUGE_LEN))
		return p;
	munmap(p, map_len);
	/* One huge page more, so that an aligned start can be cut out. */
	p = mmap(NULL, map_len + HUGE_LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	head = (HUGE_LEN - (uintptr_t)p % HUGE_LEN) % HUGE_LEN;
	if (head)
		munmap(p, head);
	munmap(p + head + map_len, HUGE_LEN - head);
	return p + head;
}

/* @n * @size bytes of zeros: calloc()'d when small, else mapped and
 * given @advice (advice only: a kernel without THP ignores it). */
static void *alloc_advised(size_t n, size_t size, int advice)
{
	size_t map_len;
	unsigned char *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	if (!(map_len = mapped_len(n * size)))
		return calloc(n, size);
	if ((p = map_aligned(map_len)))
		madvise(p, map_len, advice);
	return p;
}

void *fk_bigmem_alloc(size_t n, size_t size)
{
	return alloc_advised(n, size, MADV_HUGEPAGE);
}

void *fk_bigmem_alloc_lazy(size_t n, size_t size)
{
	/* Where THP is "always", a first touch would clear a huge page. */
	return alloc_advised(n, size, MADV_NOHUGEPAGE);
}

void fk_bigmem_will_fill(void *p, size_t n, size_t size, size_t off, size_t len)
{
	size_t map_len = mapped_len(n * size), lo, hi;

	if (!map_len || len < MIN_LEN || off >= map_len)
		return;
	lo = off & ~(HUGE_LEN - 1);
	hi = off + len < map_len ? off + len : map_len;
	hi = (hi + HUGE_LEN - 1) & ~(HUGE_LEN - 1);
	madvise((unsigned char *)p + lo, hi - lo, MADV_HUGEPAGE);
	/* Pages an earlier, smaller fill mapped would keep the piece in
	 * 4 KiB pages: one copy into a huge page (Linux 6.1; older kernels
	 * refuse it, and the pages stay as they are). */
	madvise((unsigned char *)p + lo, hi - lo, MADV_COLLAPSE);
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
	 * first touched (a read maps the shared zero page).  Linux aligns a
	 * mapping this large to 2 MiB, where THP "always" would clear a huge
	 * page at the first touch. */
	p = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, map_len, MADV_NOHUGEPAGE);
	return p;
}

/* Move the mapped array @old (@old_len bytes mapped) to a mapping of
 * @new_len bytes on a 2 MiB boundary, in huge pages.  NULL: no memory. */
static unsigned char *move_mapped(unsigned char *old, size_t old_len,
				  size_t new_len)
{
	unsigned char *p = map_aligned(new_len), *q;

	if (!p)
		return NULL;
	/* The kernel moves the page tables, the huge pages whole where
	 * both ends are aligned; if it will not, a copy. */
	q = mremap(old, old_len, new_len, MREMAP_MAYMOVE | MREMAP_FIXED, p);
	if (q == MAP_FAILED) {
		memcpy(p, old, old_len);
		munmap(old, old_len);
		q = p;
	}
	madvise(q, new_len, MADV_HUGEPAGE);
	return q;
}

int fk_bigmem_grow(void *arrp, size_t *cap, size_t need, size_t size)
{
	size_t ncap, old_len, map_len;
	unsigned char *old, *p;

	if (need <= *cap)
		return 0;
	if (fk_vec_next_cap(*cap, need, size, &ncap))
		return -ENOMEM;
	memcpy(&old, arrp, sizeof(old));
	old_len = mapped_len(*cap * size);
	map_len = mapped_len(ncap * size);
	if (old_len && !map_len)
		return -ENOMEM; /* past what a mapping can be */
	if (!map_len) {
		if (!(p = realloc(old, ncap * size)))
			return -ENOMEM;
	} else if (old_len) {
		if (!(p = move_mapped(old, old_len, map_len)))
			return -ENOMEM;
		ncap = map_len / size;
	} else {
		if (!(p = map_aligned(map_len)))
			return -ENOMEM;
		madvise(p, map_len, MADV_HUGEPAGE);
		if (*cap)
			memcpy(p, old, *cap * size);
		free(old);
		ncap = map_len / size;
	}
	memcpy(arrp, &p, sizeof(p));
	*cap = ncap;
	return 0;
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
