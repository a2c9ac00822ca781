/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attach_target.h - the running processes `emberprof attach` profiles:
 * found by pid or by name (as `pgrep -x` matches), checked before
 * anything touches them (each refusal a one-line reason), and their
 * process trees and threads listed from /proc.
 *
 * Nothing here changes a process: it reads /proc and calls kill(pid, 0).
 * Not async-signal-safe; the caller owns every list.
 */
#ifndef EMBER_ATTACH_TARGET_H
#define EMBER_ATTACH_TARGET_H

#include <stddef.h>
#include <sys/types.h>

/* A growing list of pids (or tids). */
typedef struct ember__pidlist {
	pid_t *v;
	size_t n, cap;
} ember__pidlist;

/* Adds pid unless it is there already: 1 added, 0 there, -1 no memory. */
int ember__pidlist_add(ember__pidlist *l, pid_t pid);
int ember__pidlist_has(const ember__pidlist *l, pid_t pid);
void ember__pidlist_free(ember__pidlist *l);

/*
 * The processes whose name (/proc/PID/comm, 15 characters at most) is
 * exactly `name`, as `pgrep -x NAME` finds them, this process excepted,
 * added to *out. 0, or EMBER_ERR_INVALID when the name is longer than a
 * process name can be (it could never match), or EMBER_ERR_NOMEM.
 */
int ember__attach_find_name(const char *name, ember__pidlist *out);

/* What a check asks for: the library loaded (--wall, --alloc) or not. */
typedef struct ember__attach_check {
	int inject;        /* 1: the library will be loaded into the process */
	int uid_differs;   /* out: the process runs as another user */
	int is_static;     /* out: no dynamic loader in the process */
	int has_agent;     /* out: an emberprof agent runs in it (libemberprof
			      mapped, and its threads there) */
} ember__attach_check;

/*
 * Can process `pid` be profiled? 0, or EMBER_ERR_INVALID with the reason,
 * one line naming the process: it does not exist, has exited, belongs to
 * another user (kill(pid, 0) gives EPERM), already runs an emberprof
 * agent (libemberprof in its maps and threads named emberprof), or, with c->inject, is statically
 * linked (no loader to call) or Yama's ptrace_scope forbids attaching.
 */
int ember__attach_check_process(pid_t pid, ember__attach_check *c);

/* Would the kernel let this process open perf events on process pid?
 * Opens and closes one disabled user-mode counter on it (nothing
 * sampled). 0, or -errno (EACCES, EPERM: refused). */
int ember__attach_perf_allowed(pid_t pid);

/* Every descendant of the processes in *l (by the parent pids in
 * /proc/PID/stat), added to *l. 0 or EMBER_ERR_NOMEM. */
int ember__attach_add_descendants(ember__pidlist *l);

/* The threads of process pid (/proc/PID/task) added to *out: the number
 * added (0 when the process has exited), or EMBER_ERR_NOMEM. */
int ember__attach_add_threads(pid_t pid, ember__pidlist *out);

/* /proc/PID/stat's state letter, or 0 when the process is gone. */
char ember__attach_state(pid_t pid);

#endif
