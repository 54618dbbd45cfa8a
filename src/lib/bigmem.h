/*
 * bigmem.h: zeroed memory for the few large arrays a run fills densely
 * (the free-cluster map, the cache's dirty sectors), in transparent huge
 * pages where the kernel offers them.
 */
#ifndef FATKIT_BIGMEM_H
#define FATKIT_BIGMEM_H

#include <stddef.h>

/*
 * FK_BIGMEM_MAPS is 1 when large arrays are mapped (in huge pages where
 * the kernel allows), 0 under AddressSanitizer, where everything comes
 * from calloc() so that overruns are still caught.
 */
#if defined(__SANITIZE_ADDRESS__)
#define FK_BIGMEM_MAPS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FK_BIGMEM_MAPS 0
#endif
#endif
#ifndef FK_BIGMEM_MAPS
#define FK_BIGMEM_MAPS 1
#endif

/*
 * @n zeroed elements of @size bytes, or NULL when out of memory or when
 * the product overflows.  Arrays of 64 KiB or more are mapped in 2 MiB
 * huge pages when the kernel allows it: on the VM we measured, a 4 KiB
 * page fault cost about 10 us and a 2 MiB one about 70 us, so from 7 pages
 * on one huge page is faster, at the price of up to 2 MiB of memory per
 * array.  Smaller arrays come from calloc().  Free with fk_bigmem_free()
 * and the same @n and @size.
 */
void *fk_bigmem_alloc(size_t n, size_t size);
/*
 * The same for an array most of whose pages a run never writes (the
 * checker's ownership map of an emptyish volume): ordinary pages, each
 * mapped when first touched, where calloc() would clear them all (64 KiB
 * to 128 KiB come from the heap, which it clears page by page).  Freed
 * with fk_bigmem_free().
 */
void *fk_bigmem_alloc_sparse(size_t n, size_t size);
/*
 * The same for an array a run fills in pieces it cannot foresee (a free
 * map read as the searches reach it): ordinary pages, each mapped when
 * first touched, on a 2 MiB boundary, so that fk_bigmem_will_fill() can
 * turn a stretch about to be filled densely into huge pages.  Freed with
 * fk_bigmem_free().
 */
void *fk_bigmem_alloc_lazy(size_t n, size_t size);
/*
 * Bytes @off .. @off + @len - 1 of @p (from fk_bigmem_alloc_lazy(@n,
 * @size)) are about to be written.  From 64 KiB on, the 2 MiB pieces they
 * fall in are put in huge pages (advice, and a collapse of the pages
 * already mapped there): a page fault per 4 KiB would cost more than one
 * huge page.  Less than that stays in ordinary pages.  Advice only: no
 * error, and nothing under AddressSanitizer.
 */
void fk_bigmem_will_fill(void *p, size_t n, size_t size, size_t off,
			 size_t len);
/*
 * Make the array at *@arrp (the address of any object pointer; @cap items
 * of @size bytes, from this function, or NULL and 0) hold at least @need
 * items, doubling: from the heap while it is under 64 KiB, then mapped
 * in huge pages, whose whole length *@cap then counts, and moved to a
 * larger mapping by the kernel (no copy, and no page fault again for the
 * pages written).  For a list a run fills with a record per file (the
 * checker's owner records): realloc() would fault its megabytes in one
 * 4 KiB page at a time.  Returns 0, or -ENOMEM with the array and *@cap
 * unchanged.  Freed with fk_bigmem_free(*@arrp, *@cap, @size).
 */
int fk_bigmem_grow(void *arrp, size_t *cap, size_t need, size_t size);
/* Free what fk_bigmem_alloc(@n, @size), fk_bigmem_alloc_sparse(),
 * fk_bigmem_alloc_lazy() or fk_bigmem_grow() (@n: the capacity) returned;
 * NULL is ignored. */
void fk_bigmem_free(void *p, size_t n, size_t size);

#endif
