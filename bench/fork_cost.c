/*
 * fork_cost.c - what one fork costs a profiled process (issue 15).
 *
 *   ember_bench_fork_cost N exit|exec STATIC_TRUE
 *
 * Forks N children one after another and waits for each; a child either
 * _exits at once (exit) or execs STATIC_TRUE, a statically linked program
 * that loads no library (exec: a shell's fork+exec, without the cost of
 * the next program's own start). Prints the mean wall time per fork in
 * microseconds, then the CPU time (user + system) per fork of this process
 * and its children together, which the machine's load does not inflate as
 * much. bench/fork.sh runs it unprofiled, with the library
 * preloaded and EMBERPROF_FOLLOW_CHILDREN=0 (the parent profiled, children
 * not), and with the default (each child would start its own agent
 * lazily), interleaved.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int n = atoi(argv[1]), exec = !strcmp(argv[2], "exec");
	char *targv[] = {argv[3], NULL};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0) {
			if (exec)
				execv(argv[3], targv);
			_exit(0);
		}
		if (p < 0 || waitpid(p, NULL, 0) != p)
			return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3;
	struct rusage self, kids;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	double cpu = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
			      kids.ru_stime.tv_sec) * 1e6 +
		     (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
			      kids.ru_stime.tv_usec);
	printf("%.1f %.1f\n", us / n, cpu / n);
	return 0;
}
