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
 * __sigaction and the raw rt_sigprocmask, tgkill and rt_tgsigqueueinfo
 * system calls.
 */
#include "sample/sigvirt.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EMBER_SIGVIRT_SLOTS 64
#define KSIGSET_BYTES 8 /* the kernel's sigset_t: signals 1..64 */

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

static struct sigaction slots[EMBER_SIGVIRT_SLOTS];
static _Atomic unsigned slot_next;
static _Atomic(const struct sigaction *) app_action;
static _Atomic int owned_signo;

/* The program's virtual block bit and the one signal of its own that
 * waits for it to clear (a standard signal is pending at most once; a
 * real-time one would queue, and further ones are dropped). */
static __thread int tls_blocked __attribute__((tls_model("initial-exec")));
static __thread int tls_pending __attribute__((tls_model("initial-exec")));
static __thread siginfo_t tls_pending_si __attribute__((tls_model("initial-exec")));

static void publish(const struct sigaction *sa)
{
	unsigned i = atomic_fetch_add_explicit(&slot_next, 1, memory_order_relaxed) %
		     EMBER_SIGVIRT_SLOTS;
	memcpy(&slots[i], sa, sizeof(*sa));
	atomic_store_explicit(&app_action, &slots[i], memory_order_release);
}

static void current(struct sigaction *out)
{
	const struct sigaction *p = atomic_load_explicit(&app_action, memory_order_acquire);
	if (p)
		memcpy(out, p, sizeof(*out));
	else {
		memset(out, 0, sizeof(*out));
		out->sa_handler = SIG_DFL;
	}
}

void ember__sigvirt_own(int signo, const struct sigaction *app)
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

/* Queues `si` again to the calling thread (allowed with any si_code when
 * a process signals itself), keeping its code, sender and value. */
static void requeue_self(const siginfo_t *si)
{
	siginfo_t copy = *si;
	syscall(SYS_rt_tgsigqueueinfo, self_pid(), self_tid(), copy.si_signo, &copy);
}

void ember__sigvirt_set_blocked(int blocked)
{
	tls_blocked = blocked ? 1 : 0;
	if (!blocked && tls_pending) {
		tls_pending = 0;
		requeue_self(&tls_pending_si);
	}
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
	__sigaction(sig, &dfl, NULL);
	syscall(SYS_tgkill, self_pid(), self_tid(), sig);
}

void ember__sigvirt_foreign(int sig, siginfo_t *si, void *uc)
{
	if (tls_blocked) {
		if (!tls_pending) {
			tls_pending_si = *si;
			tls_pending = 1;
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
	 * kernel would have arranged; the signal itself is blocked already. */
	sigset_t old;
	int masked = syscall(SYS_rt_sigprocmask, SIG_BLOCK, &app.sa_mask, &old, KSIGSET_BYTES) == 0;
	if (info)
		app.sa_sigaction(sig, si, uc);
	else
		app.sa_handler(sig);
	if (masked)
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, KSIGSET_BYTES);
}

int ember__sigvirt_exec_prepare(void)
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
		if (tls_pending) /* pending across exec, as it would have been */
			requeue_self(&tls_pending_si);
	}
	struct sigaction app;
	current(&app);
	if (!(app.sa_flags & SA_SIGINFO) && app.sa_handler == SIG_IGN) {
		__sigaction(sig, &app, NULL); /* exec keeps SIG_IGN, resets handlers */
		token |= 2;
	}
	return token;
}

void ember__sigvirt_exec_undo(int token, const struct sigaction *ours)
{
	int sig = ember__sigvirt_signo();
	if (!sig)
		return;
	if (token & 2)
		__sigaction(sig, ours, NULL);
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

int ember__sigmask_kernel(int how, const sigset_t *set, sigset_t *old)
{
	if (old)
		sigemptyset(old); /* the kernel fills only its 8 bytes */
	return syscall(SYS_rt_sigprocmask, how, set, old, KSIGSET_BYTES) == 0 ? 0 : errno;
}
