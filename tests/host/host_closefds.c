/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_closefds.c - a program that behaves like a daemon towards every
 * descriptor it did not open, then burns CPU.
 *
 *   host_closefds TRAPDIR SECONDS
 *
 * At start it closes every descriptor from 3 up (close_range, or a loop
 * where that is missing), then takes numbers the agent may have used for
 * files of its own: TRAPDIR (a directory, opened at the lowest free
 * numbers and dup2'd onto 256..263, where the agent keeps descriptors)
 * and a regular file TRAPDIR/trapfile also dup2'd onto 264..271. Then it
 * burns CPU for SECONDS in a function named burn_cpu. At the end it
 * checks that nothing was written into its own descriptors: TRAPDIR holds
 * only trapfile, trapfile is empty, and its descriptors still name them.
 * Exit status 0 if so, 3 if the agent touched its files.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "host_common.h"

static void close_all_from_3(void)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
		return;
#endif
	for (int fd = 3; fd < 4096; fd++)
		close(fd);
}


int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: host_closefds TRAPDIR SECONDS\n");
		return 2;
	}
	close_all_from_3();
	const char *dir = argv[1];
	char file[4096];
	snprintf(file, sizeof(file), "%s/trapfile", dir);
	int low_dir = open(dir, O_RDONLY | O_DIRECTORY);
	int low_file = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (low_dir < 0 || low_file < 0) {
		perror("host_closefds: open");
		return 2;
	}
	for (int fd = 256; fd < 264; fd++)
		dup2(low_dir, fd);
	for (int fd = 264; fd < 272; fd++)
		dup2(low_file, fd);
	/* More low numbers, as a daemon's sockets would take them. */
	int extra[8];
	for (int i = 0; i < 8; i++)
		extra[i] = open(dir, O_RDONLY | O_DIRECTORY);

	burn_cpu(atof(argv[2]));
	report_cpu();

	int bad = 0;
	struct stat st;
	if (stat(file, &st) != 0 || st.st_size != 0) {
		fprintf(stderr, "host_closefds: %s was written to (%lld bytes)\n", file,
			(long long)st.st_size);
		bad = 1;
	}
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "trapfile")) {
			fprintf(stderr, "host_closefds: the agent wrote %s/%s\n", dir, de->d_name);
			bad = 1;
		}
	if (d)
		closedir(d);
	struct stat sd, sf;
	stat(dir, &sd);
	stat(file, &sf);
	for (int fd = 256; fd < 272; fd++) {
		struct stat s;
		const struct stat *want = fd < 264 ? &sd : &sf;
		if (fstat(fd, &s) != 0 || s.st_ino != want->st_ino) {
			fprintf(stderr, "host_closefds: descriptor %d was closed or replaced\n", fd);
			bad = 1;
		}
	}
	for (int i = 0; i < 8; i++)
		if (extra[i] < 0 || fstat(extra[i], &st) != 0 || st.st_ino != sd.st_ino) {
			fprintf(stderr, "host_closefds: descriptor %d was closed or replaced\n", extra[i]);
			bad = 1;
		}
	return bad ? 3 : 0;
}
