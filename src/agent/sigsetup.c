/*
 * sigsetup.c - installing and removing the sampling signal handler.
 *
 * Runs on the thread calling start/stop, never in a handler: it may use
 * sigaction, format error messages and sleep. The handler itself and the
 * atomics it reads live in src/sample/handler.c.
 */
#include "agent/sigsetup.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "emberprof.h"
#include "util/error.h"

int ember__sigpath_install(ember__sigstate *st, int signo, struct sigaction *old)
{
	if (sigaction(signo, NULL, old) != 0)
		return ember__error_errno(EMBER_ERR_SYS, errno, "sigaction(%d)", signo);
	int custom = (old->sa_flags & SA_SIGINFO) ? old->sa_sigaction != NULL
						   : (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN);
	if (custom && !((old->sa_flags & SA_SIGINFO) && old->sa_sigaction == ember__sigpath_handler))
		return ember__error(EMBER_ERR_BUSY,
				    "signal %d (%s) already has a handler at %p installed by the "
				    "application; emberprof will not replace it. Pick a free signal "
				    "with EMBERPROF_SIGNAL (e.g. SIGRTMIN+4)",
				    signo, strsignal(signo),
				    (old->sa_flags & SA_SIGINFO) ? (void *)old->sa_sigaction
								 : (void *)old->sa_handler);
	if (ember__sigpath_attach(st) != 0)
		return ember__error(EMBER_ERR_BUSY, "another emberprof agent is already running in this process");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ember__sigpath_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, NULL) != 0) {
		int e = errno;
		ember__sigpath_detach();
		return ember__error_errno(EMBER_ERR_SYS, e, "sigaction(%d)", signo);
	}
	return 0;
}

int ember__sigpath_quiesce(void)
{
	for (int i = 0; i < 1000; i++) {
		if (ember__sigpath_inflight() == 0)
			return 1;
		struct timespec d = {0, 1000000};
		nanosleep(&d, NULL);
	}
	return 0;
}

void ember__sigpath_uninstall(int signo, const struct sigaction *old)
{
	ember__sigpath_detach();
	/* Setting SIG_IGN discards signals already pending for every thread,
	 * so restoring SIG_DFL next cannot let a late SIGPROF kill the process. */
	struct sigaction ign;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(signo, &ign, NULL);
	sigaction(signo, old, NULL);
	ember__sigpath_quiesce();
}

