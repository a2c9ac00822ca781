/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_fds.c - the descriptors a profiled program can see. It notes the
 * descriptors open when main starts, burns CPU for the seconds given
 * (in a function of its own, with DWARF, so the agent names it through
 * libdwfl and libc through libelf), then lists every descriptor that was
 * not open at the start (host_fdlist.h): each must be one the agent
 * keeps out of the program's way (util/ownfd.h): numbered
 * EMBER_OWNFD_MIN (256) or above and closed on exec. Prints "fd N -> TARGET" for each one that is not
 * and exits 3; prints "fds ok, N new" and exits 0 otherwise.
 *
 * usage: host_fds SECONDS
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include "host_fdlist.h"

static volatile double sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn_cpu(double seconds)
{
	double end = now_s() + seconds;
	while (now_s() < end)
		for (int i = 0; i < 100000; i++)
			sink += i * 0.5;
}

int main(int argc, char **argv)
{
	static unsigned char before[HOST_MAX_FD];
	if (argc != 2) {
		fprintf(stderr, "usage: host_fds SECONDS\n");
		return 2;
	}
	host_open_fds(before);
	burn_cpu(atof(argv[1]));
	return host_check_new_fds(before, 0);
}
