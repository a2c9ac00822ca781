/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tree_pidreuse.c - the tree engine's check that a pid whose EXIT
 * record was lost is still held by the process its FORK record saw
 * (ember__tree_started_by): kill(pid, 0) alone would count a process that
 * reused the pid as the tree's, and keep `emberprof run` waiting for it.
 *
 * A child is forked; CLOCK_MONOTONIC read before the fork and after it
 * bracket its FORK record's time. Its start time is at or after the first
 * reading and at or before the second, whatever the scheduler does:
 *  - as a FORK record time, the second reading matches it (the same process);
 *  - a FORK record 5 s before the first reading belongs to a process that
 *    started earlier: the child holds a reused pid;
 *  - a pid no process holds cannot be told (-1).
 */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tree/tree_engine.h"

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void test_started_by(void)
{
	int64_t before = mono_ns();
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	int64_t after = mono_ns();
	CHECK(c > 0);
	CHECK_EQ_INT(ember__tree_started_by(c, after), 1);
	CHECK_EQ_INT(ember__tree_started_by(c, before - 5000000000LL), 0);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	/* reaped: the pid is free (a pid no process holds: -1) */
	CHECK_EQ_INT(ember__tree_started_by(c, after), -1);
	/* ours, as the engine sees the processes it does not know the fork of */
	CHECK_EQ_INT(ember__tree_started_by(getpid(), mono_ns()), 1);
}

int main(void)
{
	RUN(test_started_by);
	return CHECK_DONE();
}
