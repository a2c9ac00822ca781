/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork_cost.c - what one fork costs a profiled process.
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
 *
 * With EMBER_BENCH_IDLE_THREAD=1 (and nothing preloaded) it first starts
 * one thread that allocates 1 MiB in small blocks (so glibc gives it a
 * malloc arena of its own, as the agent's thread gets) and then sleeps:
 * what any in-process agent with a thread costs each fork, before it does
 * anything (glibc's fork takes its multi-threaded path for good once a
 * second thread has existed).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "idle_thread.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

static void mark_ready(void)
{
	pthread_mutex_lock(&mu);
	ready = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

static void *idle_thread(void *arg)
{
	(void)arg;
	ember_bench_idle_thread(mark_ready);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	const char *it = getenv("EMBER_BENCH_IDLE_THREAD");
	if (it && !strcmp(it, "1")) {
		pthread_t th;
		if (pthread_create(&th, NULL, idle_thread, NULL) != 0)
			return 1;
		pthread_mutex_lock(&mu);
		while (!ready)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
	}
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
