/* runner.c: runs every suite and prints `N passed, N failed`. */
#include "tap.h"

#include <stdarg.h>

static int passed, failed;

void tap_ok(int is_ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", is_ok ? "ok" : "not ok", passed + failed + 1);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!is_ok)
		printf(" (%s:%d)", file, line);
	printf("\n");
	if (is_ok)
		passed++;
	else
		failed++;
}

int main(void)
{
	suite_cli();
	suite_names();
	suite_fat_boot();
	suite_fat();
	suite_bigmem();
	suite_json();
	suite_device();
	suite_alloc();
	suite_cache_evict();
	suite_fat_reserved();
	suite_alloc_policy();
	suite_slot();
	suite_dirplan();
	suite_vec();
	suite_exfat();
	suite_exfat_slots();
	suite_ownmap();
	printf("1..%d\n%d passed, %d failed\n", passed + failed, passed,
	       failed);
	return failed != 0;
}
