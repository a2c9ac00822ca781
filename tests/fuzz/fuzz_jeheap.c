/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_jeheap.c - libFuzzer target for the jemalloc heap_v2 parser
 * (src/heap/jeheap.c): any input must either parse or fail with an error;
 * what parses must hold together (depths within bounds, mappings
 * non-empty), survive dropping the frames of its first mapping's module,
 * and unsample to finite, non-negative numbers. Crashes, leaks and
 * sanitizer reports are bugs.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "heap/jeheap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ember__jeheap h;
	if (ember__jeheap_parse((const char *)data, size, &h) != 0)
		return 0;
	for (size_t i = 0; i < h.nstacks; i++)
		if (h.stacks[i].depth < 1 || h.stacks[i].depth > EMBER_JEHEAP_MAX_DEPTH)
			abort();
	for (size_t i = 0; i < h.nmaps; i++)
		if (h.maps[i].limit <= h.maps[i].start || !h.maps[i].path)
			abort();
	if (h.nmaps)
		ember__jeheap_strip_module(&h, h.maps[0].start);
	for (size_t i = 0; i < h.nstacks; i++) {
		const ember__jeheap_stack *s = &h.stacks[i];
		if (s->depth < 1)
			abort();
		double o, b;
		ember__jeheap_unsample(s->curobjs, s->curbytes, h.period, &o, &b);
		if (!(o >= 0) || !(b >= 0) || isnan(o) || isnan(b))
			abort();
		ember__jeheap_unsample(s->accumobjs, s->accumbytes, h.period, &o, &b);
		if (!(o >= 0) || !(b >= 0))
			abort();
	}
	ember__jeheap_release(&h);
	return 0;
}
