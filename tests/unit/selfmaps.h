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

#endif
