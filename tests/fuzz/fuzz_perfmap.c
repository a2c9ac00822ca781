/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_perfmap.c - libFuzzer target for the perf map parser
 * (src/symbols/perfmap.c), the text a JIT runtime writes to
 * /tmp/perf-PID.map. The first byte says where to cut the rest in two
 * (the file read as it grows: the second piece starts with what the first
 * call left unconsumed); then every entry's start, end - 1 and end are
 * looked up. A crash, a sanitizer report, an answer whose range does not
 * hold the address or a consumed count past the input is a bug.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_find(ember__perfmap *m, uint64_t addr)
{
	const char *name = ember__perfmap_find(m, addr);
	if (!name)
		return;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].name == name && addr >= m->v[i].start && addr < m->v[i].end)
			return;
	abort(); /* a name whose entry does not hold addr */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t cut = data[0];
	data++, size--;
	if (cut > size)
		cut = size;
	ember__perfmap m = EMBER_PERFMAP_INIT;
	int err;
	size_t used = ember__perfmap_parse(&m, (const char *)data, cut, &err);
	if (used > cut)
		abort();
	size_t rest = size - used;
	size_t used2 = ember__perfmap_parse(&m, (const char *)data + used, rest, &err);
	if (used2 > rest)
		abort();
	size_t n = m.n < 64 ? m.n : 64;
	uint64_t probes[3 * 64];
	for (size_t i = 0; i < n; i++) {
		probes[3 * i] = m.v[i].start;
		probes[3 * i + 1] = m.v[i].end - 1;
		probes[3 * i + 2] = m.v[i].end;
	}
	for (size_t i = 0; i < 3 * n; i++)
		check_find(&m, probes[i]);
	ember__perfmap_reset(&m);
	return 0;
}
