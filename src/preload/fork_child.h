/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork_child.h - profiling a fork child that keeps running (fork_child.c),
 * for the preload entry point (preload.c), the _exit hook (exit_hook.c)
 * and the exec wrappers (signal_wrap.c).
 */
#ifndef EMBER_PRELOAD_FORK_CHILD_H
#define EMBER_PRELOAD_FORK_CHILD_H

/*
 * From now on, a fork child of this process (and of its fork children)
 * starts its own agent with `start` (preload.c's, from the environment),
 * lazily: see fork_child.c. Called once the process's own agent runs, on
 * the thread that started it; registers the atfork handler once per
 * program image. Not async-signal-safe.
 */
void ember__fork_follow_enable(int (*start)(void));

/*
 * From now on, a fork child gets no agent (an API agent that followed
 * forks stopped: ember_builder_follow_forks). A helper already waiting in
 * a child forked before still starts one. Not async-signal-safe.
 */
void ember__fork_follow_disable(void);

/*
 * The same lazy start for this process itself, a program image exec'd
 * inside a profiled tree (not the command `emberprof run` started): a
 * helper starts the agent with `start` once the process has used 2 ms of
 * CPU or lived 20 ms, and exit or exec before that cancel it. Also
 * enables ember__fork_follow_enable(start). Called from the preload
 * constructor, with the environment snapshot taken and the sampling
 * signal claimed (ember__sigpath_preclaim). Not async-signal-safe.
 */
void ember__fork_lazy_start(int (*start)(void));

/*
 * Settles this process's lazy start before an exit or an exec: a start
 * not yet begun is cancelled (the process leaves before it would have
 * been worth an agent); a start under way is waited for, at most about
 * 10 s, so the caller then sees the agent it made (or none). Nothing to do
 * in a process whose agent started before main. Async-signal-safe
 * (atomics, nanosleep): called from _exit and the exec wrappers.
 */
void ember__fork_child_settle(void);

/*
 * Before an exec: holds a lazy start not yet begun (the helper keeps
 * waiting; the exec ends it) and returns 1, or waits, bounded, for a
 * start under way and returns 0. After an exec that failed, pass what it
 * returned to ember__fork_child_exec_failed(), which lets a held start
 * go on. Async-signal-safe.
 */
int ember__fork_child_exec_hold(void);
void ember__fork_child_exec_failed(int held);

#endif
