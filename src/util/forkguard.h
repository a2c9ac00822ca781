/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forkguard.h - marks the code during which a fork must not wait for the
 * calling thread.
 *
 * A fork in a process whose agent is starting lazily waits for that start
 * (preload/fork_child.c), from an atfork prepare handler, that is while
 * glibc holds its atfork lock. A start that loads a library (dlopen of
 * libdw, libcurl, libzip, async-profiler) runs that library's
 * initialization, which may register atfork handlers itself (OpenSSL,
 * under libcurl, does): pthread_atfork waits for the same lock, and the
 * two would wait for each other. Such code runs between
 * ember__forkguard_enter() and ember__forkguard_leave(); the prepare
 * handler does not wait while any thread is inside.
 *
 * All three are async-signal-safe (one atomic each).
 */
#ifndef EMBER_UTIL_FORKGUARD_H
#define EMBER_UTIL_FORKGUARD_H

void ember__forkguard_enter(void);
void ember__forkguard_leave(void);
/* Is any thread inside such code now? */
int ember__forkguard_busy(void);

#endif
