/*
 * exit_hook.h - what the _exit hook (exit_hook.c) needs from preload.c.
 */
#ifndef EMBER_PRELOAD_EXIT_HOOK_H
#define EMBER_PRELOAD_EXIT_HOOK_H

#include "emberprof.h"

/* The agent this process started, or NULL (none, a fork child, stopped).
 * Async-signal-safe. */
ember_running *ember__preload_agent(void);

#endif
