/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exports.h - the definitions of malloc, free and the rest that forward
 * to the hook (hook.h). Included by exactly two files: the shared
 * library's src/preload/heap_exports.c (exported under glibc's symbol
 * versions through src/emberprof.map) and src/link/heap_link.c (an object
 * a program links in). Not built with AddressSanitizer, which owns these
 * names: there the files define nothing and ember__heap_malloc_entry()
 * stays NULL.
 *
 * Each definition lives in the hook's section, so that sampled stacks
 * lose these frames too.
 */
#ifndef EMBER_HEAP_EXPORTS_H
#define EMBER_HEAP_EXPORTS_H

#include <malloc.h>
#include <stdlib.h>

#include "heap/gotpatch.h"
#include "heap/hook.h"

#define EMBER_HEAP_EXPORT __attribute__((visibility("default"))) EMBER_HEAP_HOOK_SECTION

/* The hot two: their fast paths written out here (hook.h), no jump to a
 * second function. Without frame pointers: they only ever jump. */
#if defined(__clang__)
#define EMBER_HEAP_HOT EMBER_HEAP_EXPORT
#else
#define EMBER_HEAP_HOT EMBER_HEAP_EXPORT __attribute__((optimize("omit-frame-pointer")))
#endif

EMBER_HEAP_HOT void *malloc(size_t n)
{
	return ember__heap_malloc_fast(n);
}

EMBER_HEAP_HOT void free(void *p)
{
	ember__heap_free_fast(p);
}

EMBER_HEAP_EXPORT void *calloc(size_t n, size_t size)
{
	return ember__heap_calloc(n, size);
}

EMBER_HEAP_EXPORT void *realloc(void *p, size_t n)
{
	return ember__heap_realloc(p, n);
}

EMBER_HEAP_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	return ember__heap_reallocarray(p, n, size);
}

EMBER_HEAP_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	return ember__heap_posix_memalign(out, align, n);
}

EMBER_HEAP_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	return ember__heap_aligned_alloc(align, n);
}

EMBER_HEAP_EXPORT void *memalign(size_t align, size_t n)
{
	return ember__heap_memalign(align, n);
}

EMBER_HEAP_EXPORT void *valloc(size_t n)
{
	return ember__heap_valloc(n);
}

EMBER_HEAP_EXPORT void *pvalloc(size_t n)
{
	return ember__heap_pvalloc(n);
}

/* Hidden names of the definitions above: a reference to one binds to
 * this object's own definition, whatever comes first in the process's
 * symbol search order (in a library loaded by dlopen, `malloc` itself
 * would name libc's). */
#if defined(__GNUC__) && !defined(__clang__)
/* (the aliases need not repeat glibc's declarations' attributes) */
#pragma GCC diagnostic ignored "-Wmissing-attributes"
#endif
#define EMBER_HEAP_SELF(fn) \
	extern __typeof(fn) ember__heap_self_##fn __attribute__((alias(#fn), visibility("hidden")))
EMBER_HEAP_SELF(malloc);
EMBER_HEAP_SELF(free);
EMBER_HEAP_SELF(calloc);
EMBER_HEAP_SELF(realloc);
EMBER_HEAP_SELF(reallocarray);
EMBER_HEAP_SELF(posix_memalign);
EMBER_HEAP_SELF(aligned_alloc);
EMBER_HEAP_SELF(memalign);
EMBER_HEAP_SELF(valloc);
EMBER_HEAP_SELF(pvalloc);

void *ember__heap_malloc_entry(void)
{
	/* `malloc` as the process names it (through this object's GOT): in a
	 * program that takes malloc's address without being PIE, that is the
	 * program's PLT entry, as dlsym(RTLD_DEFAULT) gives it too; the
	 * hidden alias would be our code's own address and never compare
	 * equal there (python3, an EXEC, said "malloc is not emberprof's") */
	return (void *)malloc;
}

const ember__got_fn *ember__heap_wrappers(size_t *n)
{
	static const ember__got_fn fns[] = {
		{"malloc", (void *)ember__heap_self_malloc},
		{"free", (void *)ember__heap_self_free},
		{"calloc", (void *)ember__heap_self_calloc},
		{"realloc", (void *)ember__heap_self_realloc},
		{"reallocarray", (void *)ember__heap_self_reallocarray},
		{"posix_memalign", (void *)ember__heap_self_posix_memalign},
		{"aligned_alloc", (void *)ember__heap_self_aligned_alloc},
		{"memalign", (void *)ember__heap_self_memalign},
		{"valloc", (void *)ember__heap_self_valloc},
		{"pvalloc", (void *)ember__heap_self_pvalloc},
	};
	*n = sizeof(fns) / sizeof(fns[0]);
	return fns;
}

#endif
