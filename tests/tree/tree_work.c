/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_work.c - the process shapes of a whole process tree (forks,
 * daemons, wrappers), for tests/tree/.
 *
 *   tree_work burn SECS OUT          burn SECS of this thread's CPU here
 *   tree_work fork-exit SECS OUT     a fork child burns, then exit()
 *   tree_work fork-_exit SECS OUT    the same, then _exit()
 *   tree_work daemon SECS OUT        double fork: the grandchild (setsid)
 *                                    burns, the child _exits at once
 *   tree_work fork-sigprof SECS OUT  the parent handles SIGPROF (the default
 *                                    sampling signal); the child burns under
 *                                    its own ITIMER_PROF and exits 4 unless
 *                                    its handler got its ticks and is still
 *                                    installed
 *
 * It also serves as a script's interpreter ("#!/path/to/tree_work" then
 * `script MODE SECS OUT`): the script's path comes first and is skipped.
 *
 * Built as ember_tree_work_api (EMBER_TREE_API, linked with
 * libemberprof.so), the program starts an agent of its own through the
 * API when EMBER_TREE_API_DIR is set: a local reporter writing there,
 * following its fork children (ember_builder_follow_forks), each child
 * given a local reporter of its own into the same directory, unless
 * EMBER_TREE_API_FOLLOW=0 (no following) or EMBER_TREE_API_DECLINE=1 (the
 * callback declines every child). The parent stops its agent before it
 * returns; the children stop theirs only by leaving.
 *
 * The process that burned appends "PID CPU_SECONDS" to OUT (its main
 * thread's CPU from getrusage(RUSAGE_THREAD): the program's own time,
 * without the agent's threads) when done. The parent waits for its child
 * and burns 0.05 s itself.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef EMBER_TREE_API
#include "emberprof.h"
#endif

static volatile unsigned long sink;
static volatile int prof_hits;

static void on_prof(int sig)
{
	(void)sig;
	prof_hits++;
}

static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void tree_burn(double secs)
{
	double t0 = thread_cpu();
	while (thread_cpu() - t0 < secs)
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * (unsigned long)i;
}

static void note(const char *out)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	double s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	char line[64];
	int n = snprintf(line, sizeof(line), "%d %.3f\n", (int)getpid(), s);
	int fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0 || write(fd, line, (size_t)n) != n) {
		perror(out);
		_exit(3);
	}
	close(fd);
}

#ifdef EMBER_TREE_API
static int api_child(void *dir, ember_builder *b)
{
	const char *decline = getenv("EMBER_TREE_API_DECLINE");
	if (decline && !strcmp(decline, "1"))
		return -1;
	ember_reporter r;
	if (ember_reporter_local(&r, dir) < 0 || ember_builder_add_reporter(b, &r) < 0) {
		fprintf(stderr, "tree_work: child reporter: %s\n", ember_last_error());
		return -1;
	}
	return 0;
}

/* The program's own agent, or NULL without EMBER_TREE_API_DIR. Exits 5
 * when it cannot start. */
static ember_running *api_start(void)
{
	const char *dir = getenv("EMBER_TREE_API_DIR"), *follow = getenv("EMBER_TREE_API_FOLLOW");
	if (!dir || !*dir)
		return NULL;
	ember_builder *b;
	ember_agent *a;
	ember_running *r;
	ember_reporter rep;
	if (ember_builder_new(&b, "tree_work") < 0 || ember_reporter_local(&rep, dir) < 0 ||
	    ember_builder_add_reporter(b, &rep) < 0 ||
	    (!(follow && !strcmp(follow, "0")) &&
	     ember_builder_follow_forks(b, api_child, (void *)dir) < 0) ||
	    ember_builder_build(&a, b) < 0 || ember_agent_start(&r, a) < 0) {
		fprintf(stderr, "tree_work: cannot start the agent: %s\n", ember_last_error());
		exit(5);
	}
	return r;
}

static void api_stop(ember_running *r)
{
	ember_agent *a;
	if (!r)
		return;
	if (ember_running_stop(&a, r) < 0)
		fprintf(stderr, "tree_work: stop: %s\n", ember_last_error());
	ember_agent_shutdown(a);
}
#endif

int main(int argc, char **argv)
{
	if (argc == 5 && access(argv[1], F_OK) == 0) { /* run as an interpreter */
		argv++;
		argc--;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: tree_work burn|fork-exit|fork-_exit|daemon|fork-sigprof SECS OUT\n");
		return 2;
	}
	const char *mode = argv[1], *out = argv[3];
	double secs = atof(argv[2]);
	if (!strcmp(mode, "burn")) {
		tree_burn(secs);
		note(out);
		return 0;
	}
#ifdef EMBER_TREE_API
	ember_running *agent = api_start();
#endif
	int sigprof = !strcmp(mode, "fork-sigprof");
	if (sigprof) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_prof;
		sigaction(SIGPROF, &sa, NULL);
	}
	pid_t p = fork();
	if (p < 0) {
		perror("fork");
		return 1;
	}
	if (p == 0) {
		if (!strcmp(mode, "daemon")) {
			pid_t q = fork();
			if (q != 0)
				_exit(q < 0);
			setsid();
		}
		struct itimerval it = {{0, 10000}, {0, 10000}};
		if (sigprof)
			setitimer(ITIMER_PROF, &it, NULL);
		tree_burn(secs);
		note(out);
		if (sigprof) {
			struct itimerval off;
			memset(&off, 0, sizeof(off));
			setitimer(ITIMER_PROF, &off, NULL);
			struct sigaction cur;
			sigaction(SIGPROF, NULL, &cur);
			/* Its own timer reaches its own handler: any tick at all.
			 * How many depends on the load (the kernel checks CPU
			 * timers at the ticks a thread runs on: 5-8 of 100 a
			 * CPU second with 10 busy loops on 2 cores, unprofiled);
			 * a profiler that took the signal leaves it none. */
			if (cur.sa_handler != on_prof || prof_hits < 1) {
				fprintf(stderr, "child: %d SIGPROF ticks, handler %s\n", prof_hits,
					cur.sa_handler == on_prof ? "kept" : "lost");
				_exit(4);
			}
		}
		if (!strcmp(mode, "fork-_exit") || !strcmp(mode, "daemon"))
			_exit(0);
		exit(0);
	}
	int st;
	waitpid(p, &st, 0);
	/* enough CPU for the parent's own samples on a loaded machine (0.05 s
	 * once gave none: "no profile but the child's") */
	tree_burn(0.2);
#ifdef EMBER_TREE_API
	api_stop(agent);
#endif
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
