/*
 * dlgen.c - the dynamic loader's load and unload counters (dlgen.h).
 */
#include "util/dlgen.h"

#include <link.h>
#include <stddef.h>

static int counters_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *out = data;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		out[0] = info->dlpi_adds;
		out[1] = info->dlpi_subs;
		out[2] = 1;
	}
	return 1; /* the counters are the same in every entry: one is enough */
}

int ember__dl_counters(unsigned long long *adds, unsigned long long *subs)
{
	unsigned long long c[3] = {0, 0, 0};
	dl_iterate_phdr(counters_cb, c);
	if (!c[2])
		return 0;
	*adds = c[0];
	*subs = c[1];
	return 1;
}
