/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlgen.c - the dynamic loader's load and unload counters (dlgen.h).
 */
#include "util/dlgen.h"

#include <link.h>
#include <stddef.h>

static int counters_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	ember__dlgen *g = data;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		g->adds = info->dlpi_adds;
		g->subs = info->dlpi_subs;
		g->known = 1;
	}
	return 1; /* the counters are the same in every entry: one is enough */
}

void ember__dlgen_read(ember__dlgen *g)
{
	*g = (ember__dlgen){0, 0, 0};
	dl_iterate_phdr(counters_cb, g);
}

int ember__dlgen_moved(const ember__dlgen *seen, const ember__dlgen *now)
{
	return now->known && (!seen->known || now->adds != seen->adds || now->subs != seen->subs);
}
