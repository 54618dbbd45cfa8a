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

int fk_vec_reserve(void *arrp, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : FIRST_CAP;
	void *old, *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if (!size || ncap > SIZE_MAX / size)
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
