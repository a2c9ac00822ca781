/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pthread_versions.c - libemberprof.so's pthread_create entry points.
 *
 * A program linked against glibc references pthread_create with a symbol
 * version (GLIBC_2.34 since glibc moved it into libc.so.6, before that
 * the architecture's first glibc version: GLIBC_2.2.5 on x86-64,
 * GLIBC_2.17 on aarch64; arch.h: EMBER_GLIBC_BASE), and the dynamic
 * linker binds a versioned reference only to a definition with the same
 * version name. So the library defines both versions (declared in
 * src/emberprof.map, src/emberprof-aarch64.map); anything else would
 * silently leave every LD_PRELOADed program unhooked.
 */
#include <pthread.h>

#include "unwind/arch.h"

#include "engine/threads.h"

int ember__pthread_create_v234(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			       void *arg);
int ember__pthread_create_v225(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			       void *arg);

__attribute__((visibility("default"))) int
ember__pthread_create_v234(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	return ember__hooked_pthread_create(th, attr, fn, arg);
}

__attribute__((visibility("default"))) int
ember__pthread_create_v225(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	return ember__hooked_pthread_create(th, attr, fn, arg);
}

__asm__(".symver ember__pthread_create_v234, pthread_create@@GLIBC_2.34");
__asm__(".symver ember__pthread_create_v225, pthread_create@" EMBER_GLIBC_BASE);

void *ember__pthread_create_entry(void)
{
	return (void *)ember__pthread_create_v234;
}
