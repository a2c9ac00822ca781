/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sigvirt.c - the application's own view of the sampling signal
 * (sigvirt.h). Async-signal-safe throughout: no locks, no allocation.
 *
 * The program's disposition is a struct sigaction, too big to store
 * atomically. Each change writes a fresh slot of a small ring and then
 * publishes the slot's address with one atomic store; a reader copies the
 * slot it loaded. A slot is written again only after EMBER_SIGVIRT_SLOTS
 * more changes, far more than a program makes while one handler copies
 * 150 bytes.
 *
 * Kernel calls that must not go through emberprof's own libc wrappers
 * (signal_wrap.c exports sigaction and pthread_sigmask) use glibc's
 * __sigaction (ember__kernel_sigaction, sigvirt.h) and the raw
 * rt_sigprocmask, tgkill and rt_tgsigqueueinfo system calls.
 */
#include "sample/sigvirt.h"

#include "sample/handler.h"
#include "util/hotpage.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EMBER_SIGVIRT_SLOTS 64
#define KSIGSET_BYTES 8 /* the kernel's sigset_t: signals 1..64 */

static struct sigaction slots[EMBER_SIGVIRT_SLOTS];
static _Atomic unsigned slot_next EMBER_HOT_DATA;
static _Atomic(const struct sigaction *) app_action EMBER_HOT_DATA;
static _Atomic int owned_signo EMBER_HOT_DATA;

/* The program's virtual block bit and the one signal of its own that
 * waits for it to clear (a standard signal is pending at most once; a
 * real-time one would queue, and further ones are dropped). */
static __thread int tls_blocked __attribute__((tls_model("initial-exec")));
static __thread int tls_pending __attribute__((tls_model("initial-exec")));
static __thread siginfo_t tls_pending_si __attribute__((tls_model("initial-exec")));
static __thread unsigned tls_ours __attribute__((tls_model("initial-exec")));
/* The program's own tgkill()/raise() signals this thread's handler saw
 * (ember__sigvirt_raise; not its timers', which a process-directed
 * SIGPROF can bring at the same moment). volatile: a handler changes it
 * between the raise wrapper's two reads. */
static __thread volatile unsigned tls_foreign __attribute__((tls_model("initial-exec")));

/* A process-directed signal of the program's (kill, sigqueue, its
 * itimer) that reached a thread which virtually blocks it: it belongs to
 * the process, not that thread. It goes to the thread waiting for it in
 * sigwait & co if there is one (`waiter`), else it is kept here for the
 * first thread that unblocks or waits. proc_state: 0 empty, 1 being
 * written or read, 2 full. */
static _Atomic int proc_state EMBER_HOT_DATA;
static siginfo_t proc_si;
static _Atomic int waiter_tid EMBER_HOT_DATA;

/* The default action, as current() reports a NULL app_action: stored as
 * NULL, it leaves slots[] untouched, and with it a page of .bss that each
 * process of a profiled tree would otherwise fault in at its start, when
 * ember__sigpath_preclaim() records the program's SIGPROF (util/hotpage.h). */
EMBER_HOT_TEXT static int is_default(const struct sigaction *sa)
{
	if (sa->sa_handler != SIG_DFL || sa->sa_flags != 0)
		return 0;
	for (int s = 1; s <= 8 * KSIGSET_BYTES; s++)
		if (sigismember(&sa->sa_mask, s) == 1)
			return 0;
	return 1;
}

EMBER_HOT_TEXT static void publish(const struct sigaction *sa)
{
	if (is_default(sa)) {
		atomic_store_explicit(&app_action, NULL, memory_order_release);
		return;
	}
	unsigned i = atomic_fetch_add_explicit(&slot_next, 1, memory_order_relaxed) %
		     EMBER_SIGVIRT_SLOTS;
	memcpy(&slots[i], sa, sizeof(*sa));
	atomic_store_explicit(&app_action, &slots[i], memory_order_release);
}

EMBER_HOT_TEXT static void current(struct sigaction *out)
{
	const struct sigaction *p = atomic_load_explicit(&app_action, memory_order_acquire);
	if (p)
		memcpy(out, p, sizeof(*out));
	else {
		memset(out, 0, sizeof(*out));
		out->sa_handler = SIG_DFL;
	}
}

EMBER_HOT_TEXT void ember__sigvirt_own(int signo, const struct sigaction *app)
{
	publish(app);
	atomic_store_explicit(&owned_signo, signo, memory_order_release);
}

void ember__sigvirt_release(struct sigaction *app)
{
	atomic_store_explicit(&owned_signo, 0, memory_order_release);
	current(app);
}

int ember__sigvirt_signo(void)
{
	return atomic_load_explicit(&owned_signo, memory_order_acquire);
}

int ember__sigvirt_action(int signo, const struct sigaction *act, struct sigaction *old)
{
	if (signo <= 0 || signo != ember__sigvirt_signo())
		return 0;
	struct sigaction prev;
	current(&prev);
	if (act)
		publish(act);
	if (old)
		memcpy(old, &prev, sizeof(prev));
	return 1;
}

int ember__sigvirt_blocked(void)
{
	return tls_blocked;
}

static pid_t self_pid(void)
{
	return (pid_t)syscall(SYS_getpid);
}

static pid_t self_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Asks thread `tid` (a queued signal of ours, EMBER_REDELIVER_VALUE) to
 * deliver the program's signal kept for it, or, if it waits in sigwait &
 * co, to look for it. The kernel lets a thread queue only negative
 * si_codes to another thread, so the signal itself cannot be sent on. */
static void poke(int sig, pid_t tid)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = self_pid();
	si.si_uid = (uid_t)syscall(SYS_getuid);
	si.si_value.sival_ptr = (void *)EMBER_REDELIVER_VALUE;
	syscall(SYS_rt_tgsigqueueinfo, si.si_pid, tid, sig, &si);
}

/* Leaves `si` pending on the calling thread for an exec: with its own
 * code where the kernel allows it, else as a queued signal with its
 * value. */
static void requeue_self(const siginfo_t *si)
{
	siginfo_t copy = *si;
	if (syscall(SYS_rt_tgsigqueueinfo, self_pid(), self_tid(), copy.si_signo, &copy) == 0)
		return;
	copy.si_code = SI_QUEUE;
	syscall(SYS_rt_tgsigqueueinfo, self_pid(), self_tid(), copy.si_signo, &copy);
}

static int take_proc(siginfo_t *si)
{
	int full = 2;
	if (!atomic_compare_exchange_strong(&proc_state, &full, 1))
		return 0;
	*si = proc_si;
	atomic_store(&proc_state, 0);
	return 1;
}

static void keep_proc(const siginfo_t *si)
{
	int empty = 0;
	if (!atomic_compare_exchange_strong(&proc_state, &empty, 1))
		return; /* one is pending already: standard signals merge */
	proc_si = *si;
	atomic_store(&proc_state, 2);
}

EMBER_HOT_TEXT void ember__sigvirt_set_blocked(int blocked)
{
	tls_blocked = blocked ? 1 : 0;
	int sig = ember__sigvirt_signo();
	if (!blocked && sig && (tls_pending || atomic_load(&proc_state) == 2))
		poke(sig, self_tid()); /* its handler runs now, with its own siginfo */
}

void ember__sigvirt_redeliver(int sig, void *uc)
{
	siginfo_t si;
	if (!tls_blocked && ember__sigvirt_take_pending(&si))
		ember__sigvirt_foreign(sig, &si, uc);
}

void ember__sigvirt_set_waiter(int on)
{
	atomic_store(&waiter_tid, on ? (int)self_tid() : 0);
}

/* Signals whose default action is to do nothing. */
static int default_ignores(int sig)
{
	return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH;
}

/* The default action of a terminating signal, as the kernel would take it:
 * the disposition goes back to SIG_DFL and the signal is sent again to this
 * thread; it is blocked while this handler runs and is taken as soon as
 * the handler returns, so the process ends by it (status, core dump) as
 * it would have without us. */
static void default_action(int sig)
{
	if (default_ignores(sig))
		return;
	if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
		syscall(SYS_kill, self_pid(), SIGSTOP);
		return;
	}
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	ember__kernel_sigaction(sig, &dfl, NULL);
	syscall(SYS_tgkill, self_pid(), self_tid(), sig);
}

int ember__sigvirt_take_pending(siginfo_t *si)
{
	siginfo_t got;
	if (tls_pending) {
		tls_pending = 0;
		got = tls_pending_si;
	} else if (!take_proc(&got)) {
		return 0;
	}
	if (si)
		*si = got;
	return got.si_signo;
}

unsigned ember__sigvirt_ours(void)
{
	return tls_ours;
}

void ember__sigvirt_count_ours(void)
{
	tls_ours++;
}

void ember__sigvirt_foreign(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code == SI_TKILL)
		tls_foreign++;
	if (tls_blocked) {
		/* tgkill/raise name this thread; anything else (kill, sigqueue,
		 * a process timer) could have gone to any thread that takes it. */
		int waiter = atomic_load(&waiter_tid);
		if (si->si_code == SI_TKILL || waiter == (int)self_tid()) {
			if (!tls_pending) {
				tls_pending_si = *si;
				tls_pending = 1;
			}
		} else {
			keep_proc(si);
			if (waiter)
				poke(sig, waiter);
		}
		return;
	}
	struct sigaction app;
	current(&app);
	int info = (app.sa_flags & SA_SIGINFO) != 0;
	if (!info && app.sa_handler == SIG_IGN)
		return;
	if (!info && app.sa_handler == SIG_DFL) {
		default_action(sig);
		return;
	}
	if (app.sa_flags & SA_RESETHAND) {
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		publish(&dfl);
	}
	/* The program's handler runs with its sa_mask blocked too, as the
	 * kernel would have arranged; the signal itself is blocked already,
	 * except for an SA_NODEFER handler, which the kernel would have run
	 * with it unblocked: its own raise of the signal is delivered at
	 * once, nested (ours too then: a sample taken inside its handler). */
	sigset_t old;
	int masked = syscall(SYS_rt_sigprocmask, SIG_BLOCK, &app.sa_mask, &old, KSIGSET_BYTES) == 0;
	if (masked && (app.sa_flags & SA_NODEFER) && sigismember(&app.sa_mask, sig) != 1) {
		sigset_t self;
		sigemptyset(&self);
		sigaddset(&self, sig);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &self, NULL, KSIGSET_BYTES);
	}
	if (info)
		app.sa_sigaction(sig, si, uc);
	else
		app.sa_handler(sig);
	if (masked)
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, KSIGSET_BYTES);
}

EMBER_HOT_TEXT int ember__sigvirt_exec_prepare(void)
{
	int sig = ember__sigvirt_signo();
	if (!sig)
		return 0;
	int token = 0;
	if (tls_blocked) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, sig);
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &s, NULL, KSIGSET_BYTES);
		token |= 1;
		siginfo_t psi;
		if (tls_pending) /* pending across exec, as it would have been */
			requeue_self(&tls_pending_si);
		else if (take_proc(&psi))
			requeue_self(&psi);
	}
	struct sigaction app;
	current(&app);
	if (!(app.sa_flags & SA_SIGINFO) && app.sa_handler == SIG_IGN) {
		ember__kernel_sigaction(sig, &app, NULL); /* exec keeps SIG_IGN, resets handlers */
		token |= 2;
	}
	return token;
}

EMBER_HOT_TEXT void ember__sigvirt_exec_undo(int token, const struct sigaction *ours)
{
	int sig = ember__sigvirt_signo();
	if (!sig)
		return;
	if (token & 2)
		ember__kernel_sigaction(sig, ours, NULL);
	if (token & 1) {
		/* A signal of the program's queued for the exec is taken back
		 * into the pending slot when the unblock below delivers it. */
		tls_pending = 0;
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, sig);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &s, NULL, KSIGSET_BYTES);
	}
}

int ember__sigvirt_raise(int sig)
{
	sigset_t cur;
	int blocked = syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, KSIGSET_BYTES) != 0 ||
		      sigismember(&cur, sig);
	pid_t pid = self_pid(), tid = self_tid();
	for (int tries = 0;; tries++) {
		unsigned seen = tls_foreign;
		if (syscall(SYS_tgkill, pid, tid, sig) != 0)
			return -1;
		/* Unblocked: delivered on the way back from tgkill. The program's
		 * handler (or its deferral, or its default action) counted it,
		 * unless the kernel merged it into a sample of ours. */
		if (blocked || tls_foreign != seen || tries == 2)
			return 0;
	}
}

int ember__sigmask_kernel(int how, const sigset_t *set, sigset_t *old)
{
	if (old)
		sigemptyset(old); /* the kernel fills only its 8 bytes */
	return syscall(SYS_rt_sigprocmask, how, set, old, KSIGSET_BYTES) == 0 ? 0 : errno;
}
