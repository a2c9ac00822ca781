/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sigsetup.h - installing and removing the sampling signal handler
 * (agent side; not async-signal-safe).
 */
#ifndef EMBER_SIGSETUP_H
#define EMBER_SIGSETUP_H

#include <signal.h>

#include "sample/handler.h"

/*
 * Makes `st` the state handlers use and installs the handler for `signo`,
 * saving the previous action in *old. Fails with EMBER_ERR_BUSY (and a
 * message naming the handler) if another agent is active or if `signo`
 * already has a handler that is not SIG_DFL/SIG_IGN while the libc
 * wrappers are not in effect (with them, that handler is kept as the
 * program's and called for its own signals: sigvirt.h).
 */
int ember__sigpath_install(ember__sigstate *st, int signo, struct sigaction *old);

/*
 * Detaches the state, discards pending `signo` signals, restores the
 * program's disposition (the one it last set through the wrappers, else
 * `old`),
 * then waits until no handler is running. After it returns, the state is
 * unreachable from any handler.
 */
void ember__sigpath_uninstall(int signo, const struct sigaction *old);

/*
 * Claims `signo` before any agent exists: installs our handler and makes
 * the program's action and masks of the signal virtual (sigvirt.h), as a
 * fork child inherits them, so that a thread the program starts with
 * every signal blocked still takes the signal once an agent starts later
 * (src/preload/fork_child.c, ember__fork_lazy_start). The agent's
 * ember__sigpath_install then takes over. Returns 0, or -1 when the libc
 * wrappers are not in effect or sigaction fails (the caller then starts
 * its agent at once). On the constructor's thread before main.
 */
int ember__sigpath_preclaim(int signo);

/* The disposition the agent installs for its signal. */
void ember__sigpath_our_action(struct sigaction *sa);

/*
 * Whether emberprof's libc wrappers (sigaction, pthread_sigmask, exec...:
 * src/preload/signal_wrap.c) are what the program calls: 1 in
 * libemberprof.so when it comes first in the symbol search order
 * (LD_PRELOAD, linked), else 0 (dlopen'ed, or the static library, whose
 * stub is src/link/sigwrap_none.c).
 */
int ember__sigwrap_in_effect(void);

/* Waits (bounded, ~1 s) until no handler runs; 1 if quiescent. */
int ember__sigpath_quiesce(void);

#endif
