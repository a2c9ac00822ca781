/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_common.h - what the tests/host programs share: a CPU burner whose
 * name the profiles must show.
 */
#ifndef EMBER_HOST_COMMON_H
#define EMBER_HOST_COMMON_H

#include <stdio.h>
#include <time.h>

static inline double host_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burns CPU for `seconds` of wall time; the profiles must name it. */
__attribute__((noinline, unused)) static unsigned long burn_cpu(double seconds)
{
	volatile unsigned long x = 0;
	double end = host_now() + seconds;
	while (host_now() < end)
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i * 2654435761u;
	return x;
}

/* Burns `seconds` of the calling thread's own CPU time, however loaded
 * the machine (a wall-clock burn gets a fraction of that under load). */
__attribute__((noinline, unused)) static unsigned long burn_thread_cpu(double seconds)
{
	volatile unsigned long x = 0;
	struct timespec ts;
	double end;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + seconds;
	do {
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i * 2654435761u;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < end);
	return x;
}

/* Prints "cpu_ms N" on stderr, unbuffered: the calling (main) thread's CPU
 * time so far - what the profiles sample; the agent's own threads (whose
 * start is slow under ASan) are not profiled and not counted. */
static inline void report_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	dprintf(2, "cpu_ms %ld\n", (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

#endif
