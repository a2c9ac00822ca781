/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attach_watch.h - the agent that `emberprof attach --wall` started in a
 * running process stops itself when that emberprof is gone.
 *
 * emberprof stops the agent it injected when the attach ends (Ctrl-C,
 * --duration, the process's exit). Killed (SIGKILL, an OOM kill, a lost
 * terminal) it cannot, and the agent would go on sampling and writing
 * profiles in someone else's process until that process exits. The
 * watch is one thread of ours, blocked in poll() on a pidfd of the
 * emberprof process (EMBERPROF_ATTACHER_PID in the attach settings) and
 * on an eventfd: the pidfd becomes readable when emberprof exits, and the
 * watch then stops the agent itself, so the process is left as a detach
 * leaves it (no thread, handler, timer or descriptor of ours).
 *
 * Nothing here is async-signal-safe. Called from src/preload/preload.c
 * only (the attach entry points), on the thread emberprof borrowed.
 */
#ifndef EMBER_PRELOAD_ATTACH_WATCH_H
#define EMBER_PRELOAD_ATTACH_WATCH_H

#include <sys/types.h>

/*
 * Starts the watch on `attacher` (a pid in this process's pid namespace,
 * alive now: it is the process injecting us); when it exits, `stop` runs
 * on the watch's thread, which then ends by itself (detached). 0, or -1
 * with the reason in *why (a static string): no pidfd_open (Linux < 5.3),
 * no descriptor or thread to spare. At most one watch at a time.
 */
int ember__attach_watch_start(pid_t attacher, void (*stop)(void), const char **why);

/*
 * Ends the watch before emberprof stops the agent itself: wakes the
 * thread and joins it, closes both descriptors. 1 if the watch had
 * already fired (the agent is stopped or being stopped by it: the caller
 * must not stop it again), else 0 (also when no watch runs).
 */
int ember__attach_watch_end(void);

#endif
