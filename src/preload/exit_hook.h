/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exit_hook.h - what the _exit hook (exit_hook.c) needs from preload.c.
 */
#ifndef EMBER_PRELOAD_EXIT_HOOK_H
#define EMBER_PRELOAD_EXIT_HOOK_H

#include "emberprof.h"

/* The agent this process started, or NULL (none, a fork child, stopped).
 * Async-signal-safe. */
ember_running *ember__preload_agent(void);

/* The same without settling a fork child's lazy start (fork_child.h):
 * NULL while it has not started. Async-signal-safe. */
ember_running *ember__preload_agent_now(void);

/*
 * Before an exec (signal_wrap.c): the program image ends, the process
 * (the same pid) goes on as another program, so this agent's last window
 * is reported first, as at _exit; skipped when `path` names a file that
 * cannot be executed (the exec will fail and the program goes on here).
 * After a flush the agent reports nothing more: if the exec fails anyway
 * the rest of this image's run is not profiled. Async-signal-safe.
 */
void ember__preload_exec_flush(const char *path);

#endif
