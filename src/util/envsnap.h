/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envsnap.h - the environment the configuration is read from.
 *
 * Every EMBERPROF_*, PYROSCOPE_* and AWS_* variable the library reads goes
 * through ember__getenv(). Normally that is getenv(). Where the agent
 * starts lazily on a helper thread (src/preload/fork_child.c: a fork
 * child, an image exec'd in the profiled tree) it is the environment the
 * program image started with, taken before main(): a forked worker may
 * replace its environment before the child's agent starts (nginx's
 * workers keep only TZ), and glibc's getenv on the helper is not safe
 * while the program calls setenv (git commit crashed so).
 */
#ifndef EMBER_UTIL_ENVSNAP_H
#define EMBER_UTIL_ENVSNAP_H

/* Copies the current environment (once per program image; a fork child
 * inherits the copy; later calls do nothing). Before main() in the
 * preloaded library, else on the thread that starts the agent: not
 * async-signal-safe. */
void ember__env_snapshot_take(void);

/* From now on, ember__getenv() in this process reads the copy, if one
 * was taken. Async-signal-safe (one store): called in an atfork child
 * handler. */
void ember__env_snapshot_use(void);

/*
 * `emberprof attach`: the copy becomes `settings` ("KEY=VALUE" lines, as
 * emberprof gives them; copied) followed by the process's own variables
 * except EMBERPROF_* ones, and is used from now on. A process that was
 * started without our variables cannot have its environment changed from
 * outside: the attach passes them here instead. 0, or -1 out of memory
 * (nothing changed). Not async-signal-safe.
 */
int ember__env_snapshot_set(const char *settings);

/* Marks the calling thread as one of emberprof's own (the agent, uploader,
 * wall-clock and fork helper threads call it first thing): ember__getenv()
 * there always reads the copy, never the live environment, which the
 * program may change meanwhile (glibc's setenv moves and frees the array
 * a concurrent getenv walks). The copy must have been taken (by the thread
 * that starts the agent or the uploader, ember__env_snapshot_take()); if
 * it could not be, every variable reads as unset there. Not
 * async-signal-safe (thread-local store; call it from the thread's start). */
void ember__env_own_thread(void);

/* Whether ember__env_own_thread() marked the calling thread (threads
 * that such a thread creates are marked too: engine/thread_hook.c).
 * Async-signal-safe. */
int ember__env_is_own_thread(void);

/* getenv(), or the copy's value after ember__env_snapshot_use() or on a
 * thread marked by ember__env_own_thread(). The string is owned by the
 * environment (or the copy); do not free it. */
const char *ember__getenv(const char *name);

/* The value of `name` in `env` (a NULL-terminated "NAME=value" array,
 * may be NULL), or NULL. The string is owned by `env`. Async-signal-safe
 * (reads only); the caller keeps `env` alive and unchanged meanwhile. */
const char *ember__env_find(char *const *env, const char *name);

/* secure_getenv() in the same way (NULL in a set-user-ID program). */
const char *ember__secure_getenv(const char *name);

#endif
