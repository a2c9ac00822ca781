/* SPDX-License-Identifier: Apache-2.0 */
/*
 * thread_start.h - starting one of emberprof's own threads (the agent
 * thread, the wall-clock timer thread, an uploader, the async-profiler
 * backend's thread): the one way they are made.
 *
 * Lives in src/engine, not src/util, because it needs the real
 * pthread_create past emberprof's own hook (engine/threads.h: the thread
 * is not registered for sampling and its allocations are never profiled)
 * and the kernel signal mask past emberprof's pthread_sigmask wrapper
 * (sample/sigvirt.h); engine is the lowest folder that may include both.
 */
#ifndef EMBER_ENGINE_THREAD_START_H
#define EMBER_ENGINE_THREAD_START_H

#include <pthread.h>
#include <stddef.h>

/*
 * Starts fn(arg) on a new thread with a stack of `stack_size` bytes,
 * through the real pthread_create. Every signal is blocked in the kernel
 * mask of the creating thread around the creation, so the new thread
 * inherits a mask blocking them all from its first instruction (sampling
 * signals land on the application's threads, never on ours); the
 * caller's mask is restored before returning. The thread names itself
 * `name` (a static string of at most 15 bytes) before fn runs.
 * Returns 0 or an errno value, as pthread_create (ENOMEM: no trampoline).
 * Not async-signal-safe.
 */
int ember__thread_start(pthread_t *th, size_t stack_size, void *(*fn)(void *), void *arg,
			const char *name);

#endif
