/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pthread_create.c - the pthread_create entry point of the static library
 * (emberprof_internal), used by programs that link emberprof in: the
 * program's own calls bind to it at link time. The shared library has
 * versioned entry points instead (src/preload/pthread_versions.c).
 */
#include <pthread.h>

#include "engine/threads.h"

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	return ember__hooked_pthread_create(th, attr, fn, arg);
}

void *ember__pthread_create_entry(void)
{
	return (void *)pthread_create;
}
