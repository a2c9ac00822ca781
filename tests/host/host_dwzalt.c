/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_dwzalt.c - a program whose DWARF dwz shares with another build of
 * itself (test_dwzalt.sh builds it twice at test time, -DDWZALT_TWIN for
 * the other, and runs `dwz -m`): its inline function dwzalt_spin and the
 * types are then described only in the common "alt" file its
 * .gnu_debugaltlink names, so naming that frame makes the symbolizer
 * open the alt file.
 *
 * It notes the descriptors open at start, burns CPU in burn_cpu (which
 * inlines dwzalt_spin) until DIR holds a finished profile (the agent
 * symbolized a window: a file ending in .pb.gz, renamed into place when
 * complete), then lists every descriptor that was not open at the start
 * (host_fdlist.h): each must be numbered 256 or above with FD_CLOEXEC.
 * Prints "agent's fd N -> TARGET" for each one that is, "fd N -> TARGET"
 * for each one that is not and exits 3; prints "fds ok, N new" and exits
 * 0; exits 4 if no profile came in a bound of burn rounds far beyond
 * what a loaded machine needs.
 *
 * usage: host_dwzalt DIR
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "host_fdlist.h"

/* shared by both builds: dwz moves its description to the alt file */
struct dwzalt_acc {
	double sum;
	long rounds;
#ifdef DWZALT_TWIN
	int twin;
#endif
};

static volatile double sink;

static inline __attribute__((always_inline)) void dwzalt_spin(struct dwzalt_acc *a)
{
	for (int i = 0; i < 2000000; i++)
		a->sum += i * 0.5;
	a->rounds++;
}

__attribute__((noinline)) static void burn_cpu(struct dwzalt_acc *a)
{
	dwzalt_spin(a);
	sink = a->sum;
}

/* Does dir hold a file ending in .pb.gz? */
static int has_profile(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int found = 0;
	while (!found && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		found = n > 6 && !strcmp(e->d_name + n - 6, ".pb.gz");
	}
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	static unsigned char before[HOST_MAX_FD];
	if (argc != 2) {
		fprintf(stderr, "usage: host_dwzalt DIR\n");
		return 2;
	}
	host_open_fds(before);
	struct dwzalt_acc acc = {0};
	/* 2e6 additions a round: a million rounds is hours of CPU */
	while (!has_profile(argv[1]))
		if (acc.rounds > 1000000) {
			printf("no profile in %s after %ld rounds\n", argv[1], acc.rounds);
			return 4;
		} else {
			burn_cpu(&acc);
		}
	return host_check_new_fds(before, 1);
}
