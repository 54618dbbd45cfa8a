/*
 * tap.h: a tiny test runner.  Each test_<module>.c registers table-driven
 * cases; the runner prints TAP lines and ends with `N passed, N failed`.
 */
#ifndef FATKIT_TAP_H
#define FATKIT_TAP_H

#include <stdio.h>

void tap_ok(int is_ok, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define OK(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Suites: each test_<module>.c defines one, runner.c calls them all. */
void suite_cli(void);
void suite_names(void);
void suite_fat_boot(void);
void suite_fat(void);
void suite_bigmem(void);
void suite_json(void);
void suite_device(void);
void suite_alloc(void);
void suite_cache_evict(void);
void suite_fat_reserved(void);
void suite_alloc_policy(void);
void suite_slot(void);
void suite_dirplan(void);
void suite_vec(void);
void suite_exfat(void);
void suite_exfat_slots(void);
void suite_ownmap(void);

#endif
