/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfmaps.h - for unit tests: whether this process has mapped a file, as
 * /proc/self/maps shows it (which lazily loaded libraries are in).
 */
#ifndef EMBER_TEST_SELFMAPS_H
#define EMBER_TEST_SELFMAPS_H

#include <stdio.h>
#include <string.h>

/* Does a line of /proc/self/maps contain `what` (e.g. "/libdw")? */
static inline int ember_test_mapped(const char *what)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, what))
			found = 1;
	if (f)
		fclose(f);
	return found;
}

/*
 * Whether a check that libdw (and what it brings) is NOT mapped can mean
 * anything in this test binary. Not in the sanitizer build when libdw is
 * mapped already: GCC links with -fsanitize without --as-needed, so the
 * test binary names libdw itself (DT_NEEDED: the tests link elfutils for
 * their own calls), and the library's lazy loading is checked in the
 * normal build. Says so on stdout when it answers no.
 */
static inline int ember_test_unmapped_checkable(const char *who)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	if (ember_test_mapped("/libdw")) {
		printf("skip %s: libdw is linked into this sanitizer-built test binary; the "
		       "normal build checks what is not mapped\n",
		       who);
		return 0;
	}
#else
	(void)who;
#endif
	return 1;
}

#endif
