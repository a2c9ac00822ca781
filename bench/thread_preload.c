/* SPDX-License-Identifier: Apache-2.0 */
/*
 * thread_preload.c - for bench/startcost.sh's loop case: the floor of an
 * in-process profiler that has a thread in the shell. Preloaded into every
 * process like empty_preload.c; the process whose pid is the value of
 * EMBER_BENCH_IDLE_THREAD (the shell: `EMBER_BENCH_IDLE_THREAD=$$ bash -c`
 * from a shell that execs its last command in place, as bash -c does)
 * starts one thread that allocates 1 MiB in small blocks, which gives it
 * a malloc arena of its own as the agent's thread has, then sleeps for
 * good. Nothing is sampled and nothing is written: what is left is what a
 * second thread costs every fork (glibc's multi-threaded fork path, the
 * thread's stack and arena in the copied address space), whatever the
 * profiler does (docs/BENCHMARKS.md sections 13 and 14).
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "idle_thread.h"

static void *idle_thread(void *arg)
{
	(void)arg;
	ember_bench_idle_thread(NULL);
	return NULL;
}

__attribute__((constructor)) static void start(void)
{
	/* (the shell's children inherit the variable: only the pid it names
	 * gets the thread) */
	const char *v = getenv("EMBER_BENCH_IDLE_THREAD");
	if (!v || strtol(v, NULL, 10) != (long)getpid())
		return;
	pthread_t th;
	if (pthread_create(&th, NULL, idle_thread, NULL) == 0)
		pthread_detach(th);
}
