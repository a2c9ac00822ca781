/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inject.h - calling a function of libemberprof inside a running process
 * (`emberprof attach --wall`), with ptrace, leaving the process as it was.
 *
 * How: one thread is borrowed, one that waits in a system call the kernel
 * restarts (read, futex, accept, wait4, poll without a timeout...: see
 * inject.c), so that no call returns EINTR to the program and no lock of
 * its user-space code is held. It is seized (PTRACE_SEIZE: never a
 * SIGSTOP; should emberprof die, the kernel detaches and the thread runs
 * on) and interrupted (PTRACE_INTERRUPT: that thread only), its registers
 * saved, and made to run one mmap system call (a page of ours); a stub is
 * written there that calls dlopen(lib), dlsym(fn) and fn(arg) on the
 * thread's own stack, then restores every register itself and restarts
 * the interrupted system call as the kernel would have. The thread is
 * detached before it runs the stub: from then on emberprof's death
 * changes nothing, the thread finishes on its own. emberprof reads the
 * stub's results from the page (/proc/PID/mem).
 *
 * The windows where emberprof's death would harm the thread are the
 * mmap system call and, at the end, the munmap (microseconds each): after
 * each the original registers are put back before anything else. The
 * page (32 KiB, anonymous) stays mapped between calls. With the
 * in-memory copy (below), death while the copy is filled (the thread
 * seized, the memfd open in the process) leaves that one close-on-exec
 * descriptor in the process, nothing else.
 *
 * Architectures: the registers and the stub are in inject_<arch>.c
 * behind inject_arch.h (x86-64; aarch64 written, not run here).
 * Not async-signal-safe; one thread of emberprof calls it at a time.
 */
#ifndef EMBER_INJECT_H
#define EMBER_INJECT_H

#include <stdint.h>
#include <sys/types.h>

typedef struct ember__inject ember__inject;

/* The name of the in-memory copy (memfd_create's): /proc/PID/maps shows
 * its mappings as "/" EMBER_INJECT_MEMFD " (deleted)". */
#define EMBER_INJECT_MEMFD_NAME "emberprof"
#define EMBER_INJECT_MEMFD "memfd:" EMBER_INJECT_MEMFD_NAME

/*
 * Calls fn(arg) (int fn(const char *)) of library `lib` (an absolute path
 * in emberprof's mount namespace), dlopen'ed in process pid first
 * (RTLD_NOW; once loaded, dlopen finds it again). copy 0: the process
 * opens `lib` itself (the same file from its root). copy 1 (a process in
 * another mount namespace, where lib is not that file): the library goes
 * in as an in-memory copy: the borrowed thread creates a memfd named
 * EMBER_INJECT_MEMFD_NAME (close-on-exec), emberprof fills it through
 * /proc/PID/fd/N and seals it, the stub dlopens /proc/self/fd/N and
 * closes N at once (the mappings keep the pages: no descriptor of ours
 * stays); while it is mapped (this or an earlier attach), later calls
 * find it by lib's SONAME (RTLD_NOLOAD: never a second copy). copy is
 * read at the first call. *inj carries the page between calls:
 * NULL at the first (then set; free with ember__inject_free, which leaves
 * the page in the process). Waits up to timeout_ms for the call to end.
 * 0 and *result (fn's return); else EMBER_ERR_INVALID with a one-line
 * reason (the process exited, ptrace refused, no thread to borrow, the
 * loader failed: its dlerror()), the process untouched or restored.
 */
int ember__inject_call(ember__inject **inj, pid_t pid, const char *lib, int copy, const char *fn,
		       const char *arg, unsigned timeout_ms, int *result);

/*
 * The page unmapped once the last call has ended (after the agent's stop):
 * one munmap system call made the same way as the mmap (a waiting thread
 * seized, interrupted, its registers put back at once). 0, or
 * EMBER_ERR_INVALID with the reason (the page then stays: harmless).
 */
int ember__inject_unmap(ember__inject *inj);

/* Frees inj (NULL is ok); a page not unmapped stays in the process. */
void ember__inject_free(ember__inject *inj);

/* Test knob (tests kill emberprof at each step): called with the step's
 * number as the injection passes it. NULL: none. */
extern void (*ember__inject_step_hook)(int step);

#endif
