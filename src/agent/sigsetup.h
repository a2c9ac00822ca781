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
