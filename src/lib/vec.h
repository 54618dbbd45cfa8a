/*
 * vec.h: the one growable array.  A caller keeps a pointer, a count and a
 * size_t capacity; FK_VEC_RESERVE makes room, doubling, with every size
 * checked for overflow.
 */
#ifndef FATKIT_VEC_H
#define FATKIT_VEC_H

#include <stddef.h>

/*
 * Make the array at *@arrp (the address of any object pointer, @cap items
 * of @size bytes) hold at least @need items, doubling its capacity (16
 * items at first).  Returns 0, or -ENOMEM when memory runs out or the size
 * would overflow; the array and *@cap are then unchanged and still the
 * caller's to free.
 */
int fk_vec_reserve(void *arrp, size_t *cap, size_t need, size_t size);

/* The capacity an array of @cap items of @size bytes grows to, doubling,
 * to hold @need: into @ncap; -ENOMEM where its bytes would overflow.  For
 * arrays grown some other way (lib/bigmem.c's mappings). */
int fk_vec_next_cap(size_t cap, size_t need, size_t size, size_t *ncap);

/*
 * fk_vec_reserve() where the room is most often there already: the test
 * inline, the call only to grow (a checker pushes a record per file).
 */
static inline int fk_vec_room(void *arrp, size_t *cap, size_t need, size_t size)
{
	return need <= *cap ? 0 : fk_vec_reserve(arrp, cap, need, size);
}

/* FK_VEC_RESERVE(p, cap, need): fk_vec_reserve() for pointer lvalue @p. */
#define FK_VEC_RESERVE(arr, cap, need)                                         \
	fk_vec_room(&(arr), &(cap), (need), sizeof(*(arr)))

#endif
