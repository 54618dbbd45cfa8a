/*
 * vec.c: growing arrays by doubling.  One copy of the arithmetic, so that
 * every list the tools build (runs, findings, plan entries, writes) has
 * its sizes checked for overflow the same way.
 */
#include "lib/vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_CAP 16 /* items in a new array */

int fk_vec_next_cap(size_t cap, size_t need, size_t size, size_t *ncap)
{
	size_t n = cap ? cap : FIRST_CAP;

	while (n < need)
		n = n > SIZE_MAX / 2 ? need : n * 2;
	if (!size || n > SIZE_MAX / size)
		return -ENOMEM;
	*ncap = n;
	return 0;
}

int fk_vec_reserve(void *arrp, size_t *cap, size_t need, size_t size)
{
	size_t ncap;
	void *old, *p;

	if (need <= *cap)
		return 0;
	if (fk_vec_next_cap(*cap, need, size, &ncap))
		return -ENOMEM;
	/* The caller's pointer may be any object pointer type: copy its
	 * bytes rather than read it through a void ** it is not. */
	memcpy(&old, arrp, sizeof(old));
	if (!(p = realloc(old, ncap * size)))
		return -ENOMEM;
	memcpy(arrp, &p, sizeof(p));
	*cap = ncap;
	return 0;
}
