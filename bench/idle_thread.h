/* SPDX-License-Identifier: Apache-2.0 */
/*
 * idle_thread.h - the thread of bench/fork_cost.c's and
 * bench/thread_preload.c's "idle thread" configurations: it allocates
 * 1 MiB in small blocks (so glibc gives it a malloc arena of its own, as
 * an agent's thread gets), frees half, then sleeps for good. What a
 * second thread costs a process's forks, with nothing else done.
 */
#ifndef EMBER_BENCH_IDLE_THREAD_H
#define EMBER_BENCH_IDLE_THREAD_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Calls ready() (may be NULL) once its memory is allocated, then sleeps. */
static inline void ember_bench_idle_thread(void (*ready)(void))
{
	static void *blocks[4096];
	for (int i = 0; i < 4096; i++) {
		blocks[i] = malloc(256);
		if (blocks[i])
			memset(blocks[i], 1, 256);
	}
	for (int i = 0; i < 4096; i += 2)
		free(blocks[i]);
	if (ready)
		ready();
	for (;;)
		pause();
}

#endif
