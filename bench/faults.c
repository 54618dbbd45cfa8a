/*
 * bench/faults.c: what first touches of anonymous memory cost on this
 * machine, the measurement behind src/bigmem.c.  Touches 4 MiB one byte
 * per 4 KiB page: in ordinary pages, pre-faulted with MAP_POPULATE, and in
 * a 2 MiB-aligned region advised MADV_HUGEPAGE.
 *
 *   cc -O2 -o /tmp/faults bench/faults.c && /tmp/faults
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

#define LEN  ((size_t)4 << 20)
#define HUGE ((size_t)2 << 20)

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double touch(int flags, int is_huge)
{
	size_t map_len = LEN + (is_huge ? HUGE : 0), i;
	double t0 = now_ms(), t1;
	char *p = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	char *q = p;

	if (p == MAP_FAILED)
		return -1;
	if (is_huge) {
		q = (char *)(((uintptr_t)p + HUGE - 1) &
			     ~(uintptr_t)(HUGE - 1));
		madvise(q, LEN, MADV_HUGEPAGE);
	}
	for (i = 0; i < LEN; i += 4096)
		q[i] = 1;
	t1 = now_ms();
	munmap(p, map_len);
	return t1 - t0;
}

int main(void)
{
	int r;

	for (r = 0; r < 5; r++)
		printf("4 MiB: 4 KiB faults %.2f ms, MAP_POPULATE %.2f ms, "
		       "huge pages %.2f ms\n",
		       touch(0, 0), touch(MAP_POPULATE, 0), touch(0, 1));
	return 0;
}
