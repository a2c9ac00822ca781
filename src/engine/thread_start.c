/* SPDX-License-Identifier: Apache-2.0 */
/*
 * thread_start.c - emberprof's own threads (thread_start.h).
 */
#include "engine/thread_start.h"

#include <signal.h>

#include "engine/threads.h"
#include "sample/sigvirt.h"

int ember__thread_start(pthread_t *th, size_t stack_size, void *(*fn)(void *), void *arg,
			const char *name)
{
	sigset_t all, old;
	sigfillset(&all);
	ember__sigmask_kernel(SIG_BLOCK, &all, &old);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, stack_size);
	int rc = ember__real_pthread_create(th, &attr, fn, arg, name);
	pthread_attr_destroy(&attr);
	ember__sigmask_kernel(SIG_SETMASK, &old, NULL);
	return rc;
}
