/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap_common.h - what the two malloc-heavy benchmark programs share
 * (heap_workload.c, heap_paired.c): the random stream and the size mix,
 * so that both make the same allocations.
 */
#ifndef EMBER_BENCH_HEAP_COMMON_H
#define EMBER_BENCH_HEAP_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* xorshift64: the next value of stream *s. */
static inline uint64_t heap_bench_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* A size from r: 70 % 16..128 bytes, 25 % 128..1024, 5 % 1..16 KiB. */
static inline size_t heap_bench_size(uint64_t r)
{
	unsigned bucket = (unsigned)(r % 100);
	r /= 100;
	if (bucket < 70)
		return 16 + r % 113;
	if (bucket < 95)
		return 128 + r % 897;
	return 1024 + r % 15361;
}

#endif
