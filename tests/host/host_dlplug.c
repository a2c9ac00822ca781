/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_dlplug.c - the plugin host_dlclose dlopens: built twice
 * (dlplug_one.so, dlplug_two.so), its one function named PLUG_FN, which
 * burns `seconds` of the calling thread's CPU in its own loop, so that
 * the samples' leaf frames are in the plugin under that name.
 */
#include <time.h>

#ifndef PLUG_FN
#error "PLUG_FN names the plugin's function"
#endif

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((visibility("default"))) unsigned long PLUG_FN(double seconds);

__attribute__((noinline, visibility("default"))) unsigned long PLUG_FN(double seconds)
{
	volatile unsigned long x = 0;
	double end = thread_cpu() + seconds;
	do {
		for (int i = 0; i < 200000; i++)
			x += (unsigned long)i * 2654435761u;
	} while (thread_cpu() < end);
	return x;
}
