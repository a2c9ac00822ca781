/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_fds.c - the descriptors a profiled program can see. It notes the
 * descriptors open when main starts, burns CPU for the seconds given
 * (in a function of its own, with DWARF, so the agent names it through
 * libdwfl and libc through libelf), then lists every descriptor that was
 * not open at the start: each must be one the agent keeps out of the
 * program's way (util/ownfd.h): numbered EMBER_OWNFD_MIN (256) or above
 * and closed on exec. Prints "fd N -> TARGET" for each one that is not
 * and exits 3; prints "fds ok, N new" and exits 0 otherwise.
 *
 * usage: host_fds SECONDS
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_FD 4096

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

/* open[fd] = 1 for each descriptor open now (the listing's own excepted). */
static void open_fds(unsigned char *open)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		perror("host_fds: /proc/self/fd");
		exit(1);
	}
	int self = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd != self && fd >= 0 && fd < MAX_FD)
			open[fd] = 1;
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	static unsigned char before[MAX_FD], after[MAX_FD];
	if (argc != 2) {
		fprintf(stderr, "usage: host_fds SECONDS\n");
		return 2;
	}
	open_fds(before);
	burn_cpu(atof(argv[1]));
	open_fds(after);
	int bad = 0, fresh = 0;
	for (int fd = 0; fd < MAX_FD; fd++) {
		if (!after[fd] || before[fd])
			continue;
		fresh++;
		int fl = fcntl(fd, F_GETFD);
		if (fd >= 256 && fl >= 0 && (fl & FD_CLOEXEC))
			continue;
		char path[64], target[512];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		printf("fd %d -> %s%s\n", fd, target, fl >= 0 && !(fl & FD_CLOEXEC) ? " (inherited by exec)" : "");
		bad++;
	}
	if (bad)
		return 3;
	printf("fds ok, %d new\n", fresh);
	return 0;
}
