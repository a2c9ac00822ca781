/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap_sites.c - a C program for tests/cli/test_heap_next_allocator.sh:
 * two call sites allocate in a 3:1 byte ratio (with pauses, so the
 * profiler's sample buffer keeps up), then every block is checked with
 * malloc_usable_size and freed. emberprof does not define
 * malloc_usable_size: it comes from the allocator that follows emberprof
 * in the search order, so if emberprof's malloc had taken the block from
 * another allocator than that one, the check fails (or crashes).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 50000

static void *blocks[2 * N];

__attribute__((noinline)) static void *site_a(void)
{
	void *p = malloc(96);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

__attribute__((noinline)) static void *site_b(void)
{
	void *p = calloc(1, 32);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(void)
{
	for (int i = 0; i < N; i++) {
		blocks[2 * i] = site_a();
		blocks[2 * i + 1] = site_b();
		if (!blocks[2 * i] || !blocks[2 * i + 1])
			return 3;
		memset(blocks[2 * i], 1, 96);
		if (i % 500 == 499) {
			struct timespec d = {0, 10 * 1000000};
			nanosleep(&d, NULL);
		}
	}
	for (int i = 0; i < 2 * N; i++) {
		size_t want = i % 2 ? 32 : 96;
		if (malloc_usable_size(blocks[i]) < want) {
			fprintf(stderr, "block %d: usable size %zu < %zu\n", i,
				malloc_usable_size(blocks[i]), want);
			return 4;
		}
		free(blocks[i]);
	}
	void *r = realloc(NULL, 10);
	r = realloc(r, 100000);
	free(r);
	printf("heap_sites done\n");
	return 0;
}
