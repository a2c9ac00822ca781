/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sigsetup.c - installing and removing the sampling signal handler.
 *
 * Runs on the thread calling start/stop, never in a handler: it may use
 * sigaction, format error messages and sleep. The handler itself and the
 * atomics it reads live in src/sample/handler.c.
 */
#include "engine/sigsetup.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "emberprof.h"
#include "sample/sigvirt.h"
#include "util/error.h"
#include "util/hotpage.h"

/* ember__kernel_sigaction (sample/sigvirt.h) is glibc's sigaction under
 * its other name: emberprof's own libc wrappers (src/preload/signal_wrap.c)
 * export `sigaction`, and the agent must reach the kernel's disposition,
 * not the program's virtual one. */

EMBER_HOT_TEXT void ember__sigpath_our_action(struct sigaction *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_sigaction = ember__sigpath_handler;
	/* SA_ONSTACK: threads with an alternate signal stack (every Go thread
	 * of a cgo program, whose goroutine stacks are small) take samples
	 * there, and a program handler we call for its own signal runs on the
	 * stack it asked for. */
	sa->sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa->sa_mask);
}

int ember__sigpath_install(ember__sigstate *st, int signo, struct sigaction *old)
{
	if (ember__kernel_sigaction(signo, NULL, old) != 0)
		return ember__error_errno(EMBER_ERR_SYS, errno, "sigaction(%d)", signo);
	/* A fork child of a profiled process (src/preload/fork_child.c) still
	 * has our handler installed and the program's action in the virtual
	 * view: that action is the one to keep. */
	ember__sigstate *active = ember__sigpath_enter();
	ember__sigpath_leave();
	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction == ember__sigpath_handler &&
	    ember__sigvirt_signo() == signo && !active)
		ember__sigvirt_release(old);
	int custom = (old->sa_flags & SA_SIGINFO) ? old->sa_sigaction != NULL
						   : (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN);
	/* With the libc wrappers in effect the program's handler is kept and
	 * called for the program's own signals (sigvirt.h); without them the
	 * program could not tell our signals from its own: refuse. */
	if (custom && !((old->sa_flags & SA_SIGINFO) && old->sa_sigaction == ember__sigpath_handler) &&
	    !ember__sigwrap_in_effect())
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
	ember__sigpath_our_action(&sa);
	ember__sigvirt_own(signo, old);
	if (ember__kernel_sigaction(signo, &sa, NULL) != 0) {
		int e = errno;
		struct sigaction ignored;
		ember__sigvirt_release(&ignored);
		ember__sigpath_detach();
		return ember__error_errno(EMBER_ERR_SYS, e, "sigaction(%d)", signo);
	}
	return 0;
}

EMBER_HOT_TEXT int ember__sigpath_preclaim(int signo)
{
	struct sigaction old, sa;
	if (!ember__sigwrap_in_effect() || ember__kernel_sigaction(signo, NULL, &old) != 0)
		return -1;
	if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == ember__sigpath_handler)
		return 0;
	ember__sigpath_our_action(&sa);
	ember__sigvirt_own(signo, &old);
	if (ember__kernel_sigaction(signo, &sa, NULL) != 0) {
		struct sigaction ignored;
		ember__sigvirt_release(&ignored);
		return -1;
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
	(void)old; /* the program's disposition now is the one to restore */
	struct sigaction app;
	ember__sigvirt_release(&app);
	ember__sigpath_detach();
	/* Setting SIG_IGN discards signals already pending for every thread,
	 * so restoring SIG_DFL next cannot let a late SIGPROF kill the process. */
	struct sigaction ign;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	ember__kernel_sigaction(signo, &ign, NULL);
	ember__kernel_sigaction(signo, &app, NULL);
	ember__sigpath_quiesce();
}

