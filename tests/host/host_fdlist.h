/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_fdlist.h - the descriptors a tests/host program can see (host_fds,
 * host_dwzalt): those open at start, and the new ones after the agent
 * worked, each of which must be one the agent keeps out of the program's
 * way (util/ownfd.h): numbered 256 or above and closed on exec.
 */
#ifndef EMBER_HOST_FDLIST_H
#define EMBER_HOST_FDLIST_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define HOST_MAX_FD 4096

/* open[fd] = 1 for each descriptor open now (the listing's own excepted). */
static inline void host_open_fds(unsigned char *open)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		perror("/proc/self/fd");
		exit(1);
	}
	int self = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd != self && fd >= 0 && fd < HOST_MAX_FD)
			open[fd] = 1;
	}
	closedir(d);
}

/*
 * Lists the descriptors open now that were not in before[]: "fd N ->
 * TARGET" for each below 256 or without FD_CLOEXEC (and, with show_ours,
 * "agent's fd N -> TARGET" for the others). Returns 3 when any was
 * listed as "fd"; else prints "fds ok, N new" and returns 0.
 */
static inline int host_check_new_fds(const unsigned char *before, int show_ours)
{
	static unsigned char after[HOST_MAX_FD];
	host_open_fds(after);
	int bad = 0, fresh = 0;
	for (int fd = 0; fd < HOST_MAX_FD; fd++) {
		if (!after[fd] || before[fd])
			continue;
		fresh++;
		int fl = fcntl(fd, F_GETFD);
		int ours = fd >= 256 && fl >= 0 && (fl & FD_CLOEXEC);
		if (ours && !show_ours)
			continue;
		char path[64], target[512];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		if (ours) {
			printf("agent's fd %d -> %s\n", fd, target);
			continue;
		}
		printf("fd %d -> %s%s\n", fd, target,
		       fl >= 0 && !(fl & FD_CLOEXEC) ? " (inherited by exec)" : "");
		bad++;
	}
	if (bad)
		return 3;
	printf("fds ok, %d new\n", fresh);
	return 0;
}

#endif
