/* SPDX-License-Identifier: Apache-2.0 */
/*
 * noop_malloc.c - the least an interposed malloc can be: malloc and free
 * that only jump to glibc's (__libc_malloc, __libc_free). Preloaded under
 * ember_bench_heap_paired, its hooked/raw ratio is the cost of
 * interposition itself on this machine - the floor under any profiler
 * that sees allocations through malloc's symbol (benchmark 7 of
 * docs/BENCHMARKS.md). The other allocation functions are left to glibc:
 * the benchmark calls only these two.
 */
#include <stdlib.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

__attribute__((visibility("default"))) void *malloc(size_t n)
{
	return __libc_malloc(n);
}

__attribute__((visibility("default"))) void free(void *p)
{
	__libc_free(p);
}
