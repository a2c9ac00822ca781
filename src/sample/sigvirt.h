/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sigvirt.h - the application's own view of the sampling signal.
 *
 * While an agent samples with signal N, the kernel's disposition of N is
 * emberprof's handler and N is never really blocked in application
 * threads. Where emberprof's libc wrappers are in effect (LD_PRELOAD, or
 * libemberprof.so linked into the program: src/preload/signal_wrap.c), the
 * program still sees and controls N as if we were not there:
 *
 *  - sigaction()/signal() on N read and write a *virtual* disposition kept
 *    here; the kernel's stays ours;
 *  - sigprocmask()/pthread_sigmask() that block N record a per-thread
 *    *virtual* block bit and leave N unblocked in the kernel, and the
 *    masks they report include N again;
 *  - a signal N that is not one of ours (the program's own setitimer,
 *    timer_create, kill, raise, sigqueue) reaches the program's handler,
 *    its default action (terminate: the process dies by N as it would
 *    have) or nothing (SIG_IGN), and waits while the thread virtually
 *    blocks N, to be delivered when it unblocks.
 *
 * Everything named here is async-signal-safe unless it says otherwise:
 * programs call sigaction() and sigprocmask() from their own handlers.
 */
#ifndef EMBER_SIGVIRT_H
#define EMBER_SIGVIRT_H

#include <signal.h>

/*
 * Starts virtualizing `signo` with `app` as the program's disposition (what
 * it had installed before the agent's handler). Called by the agent while
 * it installs its handler, before any sampling signal can be sent.
 */
void ember__sigvirt_own(int signo, const struct sigaction *app);

/*
 * Stops virtualizing and copies the program's current disposition into
 * *app (the one to restore). Called by the agent when it removes its
 * handler.
 */
void ember__sigvirt_release(struct sigaction *app);

/* The signal being virtualized, or 0. */
int ember__sigvirt_signo(void);

/*
 * If `signo` is virtualized: stores the program's disposition in *old (if
 * not NULL), replaces it with *act (if not NULL) and returns 1. Else 0 and
 * nothing happens: the caller uses the real sigaction().
 */
int ember__sigvirt_action(int signo, const struct sigaction *act, struct sigaction *old);

/*
 * Whether the calling thread virtually blocks the sampling signal, and
 * setting it. Unblocking delivers a signal of the program's that arrived
 * while it was blocked. The bit is per thread; a thread created through
 * emberprof's pthread_create hook inherits its creator's.
 */
int ember__sigvirt_blocked(void);
void ember__sigvirt_set_blocked(int blocked);

/*
 * A sampling-signal delivery that is not emberprof's: deliver it as the
 * program asked (called from the signal handler with its arguments).
 */
void ember__sigvirt_foreign(int sig, siginfo_t *si, void *uc);

/* The handler got EMBER_REDELIVER_VALUE (a request from sigvirt.c
 * itself): delivers the program's signal kept for this thread, if it no
 * longer blocks it. */
void ember__sigvirt_redeliver(int sig, void *uc);

/*
 * sigwait, sigwaitinfo and sigtimedwait on a set holding the sampling
 * signal: the kernel would hand the waiter our sampling signals, and the
 * program's own one goes to the handler instead (it is not really
 * blocked). ember__sigvirt_take_pending() gives the waiter the program's
 * own signal that arrived (0 if none: *si untouched); the handler counts
 * the calling thread's deliveries of ours (ember__sigvirt_ours), so a
 * wait interrupted only by ours is resumed rather than failed with EINTR.
 */
int ember__sigvirt_take_pending(siginfo_t *si);
/* The calling thread is (on) or is no longer (off) waiting in one of them:
 * a process-directed signal of the program's is sent to it. */
void ember__sigvirt_set_waiter(int on);
unsigned ember__sigvirt_ours(void);
void ember__sigvirt_count_ours(void);

/*
 * raise() of the sampling signal (src/preload/signal_wrap.c): glibc's
 * raise blocks every signal around its tgkill, so a sample falling due in
 * that window is pending first and the kernel merges the program's signal
 * into it (standard signals do not queue): the program's is lost. Sends
 * the program's signal to the calling thread with the sampling signal
 * unblocked, so it is delivered before the call returns, and sends it
 * again (at most 3 times) if the handler saw only ours. Where the signal
 * really is blocked (inside a handler of it) it is sent once and stays
 * pending, as libc's would. 0, or -1 with errno. Async-signal-safe.
 */
int ember__sigvirt_raise(int sig);

/*
 * For exec (src/engine/threads.c): makes the kernel's state of `signo` on
 * the calling thread what the program's would be - blocked if it virtually
 * blocks it, with a pending signal of its own queued again, and SIG_IGN if
 * it ignores it - so the new program inherits them. Returns a token for
 * ember__sigvirt_exec_undo(), called if the exec fails.
 */
int ember__sigvirt_exec_prepare(void);
void ember__sigvirt_exec_undo(int token, const struct sigaction *ours);

/*
 * The calling thread's real signal mask, bypassing emberprof's own
 * pthread_sigmask wrapper: for emberprof's threads, which really block
 * every signal. `set` must come from sigfillset/sigemptyset/sigaddset
 * (glibc's sigfillset leaves out its own internal signals). Returns 0 or
 * an errno value, as pthread_sigmask.
 */
int ember__sigmask_kernel(int how, const sigset_t *set, sigset_t *old);

/*
 * The kernel's disposition, past emberprof's own `sigaction` wrapper
 * (src/preload/signal_wrap.c): glibc's __sigaction. Async-signal-safe.
 * Under ThreadSanitizer it is the `sigaction` TSan intercepts instead:
 * __sigaction would hide the handler from TSan, which then sees it run
 * in the middle of its own runtime (inside a blocking call it ignores
 * synchronization, so the handler's release stores go unrecorded and
 * every sample it publishes is reported as a race). The TSan build links
 * no wrapper (src/link/sigwrap_none.c), so there both names reach libc.
 */
#if defined(__SANITIZE_THREAD__)
#define ember__kernel_sigaction sigaction
#else
extern int __sigaction(int, const struct sigaction *, struct sigaction *);
#define ember__kernel_sigaction __sigaction
#endif

#endif
