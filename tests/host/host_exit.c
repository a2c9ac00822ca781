/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_exit.c - a program that ends with _exit() or _Exit(): the final
 * window must still be reported.
 *
 *   host_exit _exit|_Exit|exit|signal|fork|assert SECONDS [STATUS]
 *
 * `signal` calls _exit from a SIGUSR1 handler (async-signal context), as
 * programs' termination handlers do. `fork` first forks a child that
 * _exits at once with status 3 (as after a failed exec); the parent checks
 * that status (else exits 9), then burns and _exits.
 * Burns CPU for SECONDS in burn_cpu, then leaves with the given call and
 * STATUS (default 7). Buffered stdout ("unflushed") is not written by
 * _exit, as without emberprof: the hook must not run the program's
 * atexit handlers or flush its stdio.
 *
 * `assert` fails an assertion instead of leaving: libemberprof.so defines
 * __assert_fail (to catch elfutils' own on agent threads), and the
 * program's must still print the C library's message and abort.
 */
#undef NDEBUG /* `assert` must fail in every build type */
#include <assert.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_common.h"


static int exit_status;

static void on_usr1(int sig)
{
	(void)sig;
	_exit(exit_status);
}

static void at_exit_marker(void)
{
	fputs("atexit ran\n", stderr);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: host_exit _exit|_Exit|exit|signal|fork|assert SECONDS [STATUS]\n");
		return 2;
	}
	int status = argc > 3 ? atoi(argv[3]) : 7;
	exit_status = status;
	signal(SIGUSR1, on_usr1);
	atexit(at_exit_marker);
	if (!strcmp(argv[1], "fork")) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(3);
		int ws = 0;
		if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws) || WEXITSTATUS(ws) != 3)
			return 9;
	}
	burn_cpu(atof(argv[2]));
	report_cpu();
	fputs("unflushed", stdout); /* stdout is a file or pipe: fully buffered */
	if (!strcmp(argv[1], "_exit") || !strcmp(argv[1], "fork"))
		_exit(status);
	if (!strcmp(argv[1], "_Exit"))
		_Exit(status);
	if (!strcmp(argv[1], "signal")) {
		raise(SIGUSR1);
		return 99; /* not reached */
	}
	if (!strcmp(argv[1], "assert"))
		assert(status == -1);
	exit(status);
}
