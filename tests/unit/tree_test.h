/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_test.h - what the tests of the out-of-process tree sampler share:
 * running this very test binary as the sampled tree, and draining the
 * rings until it exits.
 */
#ifndef EMBER_TREE_TEST_H
#define EMBER_TREE_TEST_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"
#include "tree/perf_tree.h"

/* This process's CPU time in seconds. */
static inline double tree_test_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Runs `self arg` as a child sampled by the tree sampler with options o,
 * handing every record to cb, until it exits: 0 and *status (its wait
 * status), *st and *records; 77 when the kernel refuses perf events (the
 * reason printed); -1 on another failure.
 */
static inline int tree_test_run(const char *self, const char *arg, const ember__ptree_opts *o,
				ember__ptree_cb cb, void *cbarg, int *status,
				ember__ptree_stats *st, size_t *records)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char b;
		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(126);
		execl(self, self, arg, (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	ember__ptree *t = NULL;
	int rc = ember__ptree_open(&t, pid, o);
	if (rc != 0) {
		printf("%s: %s\n", rc == EMBER_ERR_UNSUPPORTED ? "SKIP" : "FAIL", ember_last_error());
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(go[1]);
		return rc == EMBER_ERR_UNSUPPORTED ? 77 : -1;
	}
	if (write(go[1], "g", 1) != 1)
		return -1;
	close(go[1]);
	*records = 0;
	for (;;) {
		ember__ptree_wait(t, 50);
		*records += ember__ptree_drain(t, 0, cb, cbarg);
		if (waitpid(pid, status, WNOHANG) == pid)
			break;
	}
	*records += ember__ptree_drain(t, 1, cb, cbarg);
	ember__ptree_get_stats(t, st);
	ember__ptree_free(t);
	return 0;
}

#endif
