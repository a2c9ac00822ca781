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
 * already has a handler that is not SIG_DFL/SIG_IGN.
 */
int ember__sigpath_install(ember__sigstate *st, int signo, struct sigaction *old);

/*
 * Detaches the state, discards pending `signo` signals, restores `old`,
 * then waits until no handler is running. After it returns, the state is
 * unreachable from any handler.
 */
void ember__sigpath_uninstall(int signo, const struct sigaction *old);

/* Waits (bounded, ~1 s) until no handler runs; 1 if quiescent. */
int ember__sigpath_quiesce(void);

#endif
