/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpurun.c - runs one command and prints what it cost, for bench/startcost.sh:
 *
 *     ember_bench_cpurun CMD [ARGS...]
 *
 * prints one line "CPU_S WALL_S MAXRSS_KIB EXIT FAULTS" on stdout: the CPU
 * time (user + sys) of the command and of every descendant it waited for
 * (wait4's rusage of the child, which holds its reaped children's), the wall
 * time around fork..wait4 (CLOCK_MONOTONIC), the largest max RSS among the
 * child and those descendants, its exit status, and the page faults (minor
 * and major) of the command and those descendants: a count that, unlike
 * time, hardly varies from run to run. The command's own stdout and
 * stderr go to /dev/null. Links nothing but libc, so that the runner adds
 * nothing of emberprof's to what it measures.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double secs(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ember_bench_cpurun CMD [ARGS...]\n");
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	int status = 0;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("wait4");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%.4f %.4f %ld %d %ld\n", secs(ru.ru_utime) + secs(ru.ru_stime), wall, ru.ru_maxrss,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ru.ru_minflt + ru.ru_majflt);
	return 0;
}
