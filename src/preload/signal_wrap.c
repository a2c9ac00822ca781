/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signal_wrap.c - libemberprof.so's wrappers of the libc calls through
 * which a program could notice the sampling signal: sigaction, signal,
 * sigprocmask, pthread_sigmask and the exec family.
 *
 * Where libemberprof.so comes first in the symbol search order (LD_PRELOAD
 * by `emberprof run`, or linked into the program) these are the program's
 * calls:
 *  - on the sampling signal, sigaction/signal and the masks act on the
 *    program's virtual view (src/sample/sigvirt.h): its handler is kept
 *    and called for its own signals, never for ours, and a thread that
 *    blocks the signal is still sampled while its own deliveries wait;
 *  - exec first disarms every sampling source and makes sure no sampling
 *    signal is pending (ember__threads_exec_begin), so the new program,
 *    which starts with the default disposition, never receives one; if
 *    the exec fails sampling resumes. In a fork child whose agent starts
 *    lazily (fork_child.c), a start not yet begun is held meanwhile and a
 *    start under way is waited for. A running agent reports its last
 *    window first (the program image ends; exit_hook.c).
 * Every other signal, and every call while no agent samples, goes straight
 * to libc. emberprof's own threads (agent, uploads, wall clock) bypass the
 * virtual view: they really block every signal.
 *
 * The exported names carry glibc's symbol versions (src/emberprof.map):
 * a program's versioned reference binds only to a definition of the same
 * version. pthread_sigmask has two, as in glibc (2.2.5 from libpthread,
 * 2.32 in libc).
 *
 * sigwait, sigwaitinfo and sigtimedwait on the sampling signal return the
 * program's own signals and never ours. A signalfd cannot be given them
 * (the kernel queues a signal to it only while the signal is really
 * blocked, and the sampling signal never is in the program's threads):
 * signalfd() on a mask holding the sampling signal says so once on
 * standard error, naming the way out (another sampling signal), and
 * creates the descriptor as asked. A known limit
 * (tests/host/test_host_signals.sh shows it). raise() of it is delivered once,
 * never lost in a sample of ours; so is pthread_kill() of the calling
 * thread (glibc's blocks every signal around its tgkill too).
 *
 * sigaction, signal, sigprocmask and pthread_sigmask are async-signal-safe
 * here as in libc (programs call them from handlers). The exec wrappers are
 * as safe as ember__threads_exec_begin: bounded waits, no allocation.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "engine/sigsetup.h"
#include "engine/threads.h"
#include "heap/hook.h"
#include "preload/exit_hook.h"
#include "preload/fork_child.h"
#include "sample/sigvirt.h"
#include "util/hotpage.h"
#include "util/logfd.h"
#include "unwind/arch.h" /* EMBER_GLIBC_BASE */

#define EXPORT __attribute__((visibility("default")))

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef int (*sigtimedwait_fn)(const sigset_t *, siginfo_t *, const struct timespec *);
typedef int (*raise_fn)(int);
typedef int (*signalfd_fn)(int, const sigset_t *, int);

static struct {
	_Atomic(mask_fn) pthread_sigmask, sigprocmask;
	_Atomic(signal_fn) signal, bsd_signal, sysv_signal;
	_Atomic(execve_fn) execve, execvpe;
	_Atomic(execv_fn) execv, execvp;
	_Atomic(fexecve_fn) fexecve;
	_Atomic(execveat_fn) execveat;
	_Atomic(sigtimedwait_fn) sigtimedwait;
	_Atomic(raise_fn) raise;
	_Atomic(signalfd_fn) signalfd;
} real EMBER_HOT_DATA;

/* glibc's own definition, after this library in the search order. */
static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

#define REAL(field, type)                                                                    \
	({                                                                                   \
		type f_ = atomic_load_explicit(&real.field, memory_order_acquire);          \
		if (!f_) {                                                                   \
			f_ = (type)next(#field);                                             \
			atomic_store_explicit(&real.field, f_, memory_order_release);       \
		}                                                                            \
		f_;                                                                          \
	})

/* Resolved before main, so that no later call (from a signal handler, a
 * vfork child) has to run dlsym. */
__attribute__((constructor(101))) static void resolve_all(void)
{
	(void)REAL(pthread_sigmask, mask_fn);
	(void)REAL(sigprocmask, mask_fn);
	(void)REAL(signal, signal_fn);
	(void)REAL(bsd_signal, signal_fn);
	(void)REAL(sysv_signal, signal_fn);
	(void)REAL(execve, execve_fn);
	(void)REAL(execvpe, execve_fn);
	(void)REAL(execv, execv_fn);
	(void)REAL(execvp, execv_fn);
	(void)REAL(fexecve, fexecve_fn);
	(void)REAL(execveat, execveat_fn);
	(void)REAL(sigtimedwait, sigtimedwait_fn);
	(void)REAL(raise, raise_fn);
	(void)REAL(signalfd, signalfd_fn);
}

/* Is the definition the program's calls to `name` reach this library's? */
EMBER_HOT_TEXT static int ours(const char *name)
{
	Dl_info sym, self;
	void *p = dlsym(RTLD_DEFAULT, name);
	return p && dladdr(p, &sym) && dladdr((void *)resolve_all, &self) &&
	       sym.dli_fbase == self.dli_fbase;
}

EMBER_HOT_TEXT int ember__sigwrap_in_effect(void)
{
	return ours("sigaction") && ours("pthread_sigmask") && ours("sigprocmask") &&
	       ours("execve");
}

/* ---- dispositions ---- */

EXPORT EMBER_HOT_TEXT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (ember__sigvirt_action(sig, act, old))
		return 0;
	return __sigaction(sig, act, old);
}

EMBER_HOT_TEXT static sighandler_t virtual_signal(int sig, sighandler_t h, int flags)
{
	struct sigaction sa, old;
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	if (!(flags & SA_NODEFER))
		sigaddset(&sa.sa_mask, sig);
	sa.sa_flags = flags;
	ember__sigvirt_action(sig, &sa, &old);
	return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction : old.sa_handler;
}

EXPORT EMBER_HOT_TEXT sighandler_t signal(int sig, sighandler_t h)
{
	if (sig > 0 && sig == ember__sigvirt_signo())
		return virtual_signal(sig, h, SA_RESTART); /* BSD semantics, as glibc's */
	signal_fn f = REAL(signal, signal_fn);
	return f ? f(sig, h) : SIG_ERR;
}

sighandler_t bsd_signal(int sig, sighandler_t h); /* not declared by every glibc */

EXPORT EMBER_HOT_TEXT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	if (sig > 0 && sig == ember__sigvirt_signo())
		return virtual_signal(sig, h, SA_RESTART);
	signal_fn f = REAL(bsd_signal, signal_fn);
	return f ? f(sig, h) : SIG_ERR;
}

EXPORT EMBER_HOT_TEXT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	if (sig > 0 && sig == ember__sigvirt_signo())
		return virtual_signal(sig, h, SA_RESETHAND | SA_NODEFER);
	signal_fn f = REAL(sysv_signal, signal_fn);
	return f ? f(sig, h) : SIG_ERR;
}

/* ---- masks ---- */

EMBER_HOT_TEXT static int virtual_mask(mask_fn f, int how, const sigset_t *set, sigset_t *old)
{
	int sig = ember__sigvirt_signo();
	if (!f)
		return EINVAL;
	if (!sig || ember__heap_internal())
		return f(how, set, old);
	int was = ember__sigvirt_blocked(), want = was;
	sigset_t copy;
	const sigset_t *pass = set;
	if (set) {
		copy = *set; /* `old` may be the same object */
		int has = sigismember(&copy, sig) == 1;
		switch (how) {
		case SIG_BLOCK:
			want = was || has;
			break;
		case SIG_UNBLOCK:
			want = was && !has;
			break;
		case SIG_SETMASK:
			want = has;
			break;
		default:
			return f(how, set, old); /* libc reports the error */
		}
		sigdelset(&copy, sig);
		pass = &copy;
	}
	int rc = f(how, pass, old);
	if (rc != 0)
		return rc;
	if (old && was)
		sigaddset(old, sig);
	if (set)
		ember__sigvirt_set_blocked(want);
	return 0;
}

EXPORT EMBER_HOT_TEXT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return virtual_mask(REAL(sigprocmask, mask_fn), how, set, old);
}

int ember__pthread_sigmask_v232(int how, const sigset_t *set, sigset_t *old);
int ember__pthread_sigmask_v225(int how, const sigset_t *set, sigset_t *old);

EXPORT EMBER_HOT_TEXT int ember__pthread_sigmask_v232(int how, const sigset_t *set, sigset_t *old)
{
	return virtual_mask(REAL(pthread_sigmask, mask_fn), how, set, old);
}

EXPORT EMBER_HOT_TEXT int ember__pthread_sigmask_v225(int how, const sigset_t *set, sigset_t *old)
{
	return virtual_mask(REAL(pthread_sigmask, mask_fn), how, set, old);
}

__asm__(".symver ember__pthread_sigmask_v232, pthread_sigmask@@GLIBC_2.32");
__asm__(".symver ember__pthread_sigmask_v225, pthread_sigmask@" EMBER_GLIBC_BASE);

/* ---- synchronous waits ---- */

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * A wait for signals that include the sampling signal. The kernel would
 * dequeue our sampling signals for the program, and the program's own
 * goes to our handler (the signal is not really blocked), which keeps it
 * for the thread: the wait leaves the sampling signal out of the kernel's
 * set, returns the kept one, and resumes (with the time left) when only a
 * sampling signal of ours interrupted it.
 */
static int virtual_wait_loop(sigtimedwait_fn f, int sig, const sigset_t *rest, siginfo_t *info,
			     const int64_t *end_ns);

static int virtual_wait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	sigtimedwait_fn f = REAL(sigtimedwait, sigtimedwait_fn);
	int sig = ember__sigvirt_signo();
	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	if (!sig || !set || sigismember(set, sig) != 1 || ember__heap_internal())
		return f(set, info, timeout);
	sigset_t rest = *set;
	sigdelset(&rest, sig);
	int64_t end = timeout ? mono_ns() + timeout->tv_sec * 1000000000LL + timeout->tv_nsec : 0;
	ember__sigvirt_set_waiter(1);
	int rc = virtual_wait_loop(f, sig, &rest, info, timeout ? &end : NULL);
	ember__sigvirt_set_waiter(0);
	return rc;
}

static int virtual_wait_loop(sigtimedwait_fn f, int sig, const sigset_t *rest, siginfo_t *info,
			     const int64_t *end_ns)
{
	for (;;) {
		int got = ember__sigvirt_take_pending(info);
		if (got)
			return got;
		struct timespec left, *lp = NULL;
		if (end_ns) {
			int64_t l = *end_ns - mono_ns();
			if (l < 0)
				l = 0;
			left.tv_sec = l / 1000000000;
			left.tv_nsec = l % 1000000000;
			lp = &left;
		}
		unsigned ours = ember__sigvirt_ours();
		int rc = f(rest, info, lp);
		if (rc >= 0 || errno != EINTR)
			return rc;
		if (ember__sigvirt_take_pending(info))
			return sig;
		if (ember__sigvirt_ours() == ours)
			return rc; /* another handler of the program's interrupted it */
	}
}

/* Once per process: the program's own sampling signal will not reach its
 * signalfd (above). Async-signal-safe. */
static void signalfd_warn(int sig)
{
	static atomic_int said;
	if (atomic_exchange(&said, 1))
		return;
	char line[512];
	size_t n = 0;
	static const char a[] = "emberprof: warning: the program reads signal ";
	static const char b[] = " from a signalfd, and emberprof samples with it: the program's own "
				"signal will not reach that signalfd while it is profiled; sample with "
				"another signal (--signal, EMBERPROF_SIGNAL)\n";
	memcpy(line, a, sizeof(a) - 1);
	n = sizeof(a) - 1;
	n += ember__logfd_decimal(line + n, (unsigned long)sig);
	memcpy(line + n, b, sizeof(b) - 1);
	n += sizeof(b) - 1;
	ember__logfd_write(line, n);
}

EXPORT int signalfd(int fd, const sigset_t *mask, int flags)
{
	int sig = ember__sigvirt_signo();
	if (sig > 0 && sigismember(mask, sig) == 1) /* (mask: nonnull, as in libc) */
		signalfd_warn(sig);
	signalfd_fn f = REAL(signalfd, signalfd_fn);
	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	return f(fd, mask, flags);
}

EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	return virtual_wait(set, info, timeout);
}

EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return virtual_wait(set, info, NULL);
}

EXPORT int sigwait(const sigset_t *set, int *sig)
{
	siginfo_t si;
	int rc;
	do
		rc = virtual_wait(set, &si, NULL);
	while (rc < 0 && errno == EINTR); /* sigwait does not fail with EINTR */
	if (rc < 0)
		return errno;
	*sig = rc;
	return 0;
}

/* raise() of the sampling signal: delivered once, never merged into a
 * sample of ours (sigvirt.h); any other signal goes to libc's. */
EXPORT int raise(int sig)
{
	int vs = ember__sigvirt_signo();
	if (vs && sig == vs)
		return ember__sigvirt_raise(sig);
	return REAL(raise, raise_fn)(sig);
}

/* pthread_kill() of the calling thread with the sampling signal: as
 * raise() (glibc's blocks every signal around its tgkill too). */
typedef int (*pthread_kill_fn)(pthread_t, int);
static _Atomic(pthread_kill_fn) real_pthread_kill EMBER_HOT_DATA;

static int wrapped_pthread_kill(pthread_t th, int sig)
{
	int vs = ember__sigvirt_signo();
	if (vs && sig == vs && pthread_equal(th, pthread_self()))
		return ember__sigvirt_raise(sig) == 0 ? 0 : errno;
	pthread_kill_fn f = atomic_load_explicit(&real_pthread_kill, memory_order_acquire);
	if (!f) {
		f = (pthread_kill_fn)dlvsym(RTLD_NEXT, "pthread_kill", "GLIBC_2.34");
		if (!f)
			f = (pthread_kill_fn)dlvsym(RTLD_NEXT, "pthread_kill", EMBER_GLIBC_BASE);
		if (!f)
			return ENOSYS;
		atomic_store_explicit(&real_pthread_kill, f, memory_order_release);
	}
	return f(th, sig);
}

int ember__pthread_kill_v234(pthread_t th, int sig);
int ember__pthread_kill_v225(pthread_t th, int sig);

EXPORT int ember__pthread_kill_v234(pthread_t th, int sig)
{
	return wrapped_pthread_kill(th, sig);
}

EXPORT int ember__pthread_kill_v225(pthread_t th, int sig)
{
	return wrapped_pthread_kill(th, sig);
}

__asm__(".symver ember__pthread_kill_v234, pthread_kill@@GLIBC_2.34");
__asm__(".symver ember__pthread_kill_v225, pthread_kill@" EMBER_GLIBC_BASE);

/* ---- exec ---- */

#define AROUND_EXEC(path, call)                                                              \
	do {                                                                                 \
		int held_ = ember__fork_child_exec_hold();                                   \
		ember__preload_exec_flush(path);                                             \
		int state_ = ember__threads_exec_begin();                                    \
		int rc_ = (call);                                                            \
		int errno_ = errno;                                                          \
		ember__threads_exec_end(state_);                                             \
		ember__fork_child_exec_failed(held_);                                        \
		errno = errno_;                                                              \
		return rc_;                                                                  \
	} while (0)

#define NO_REAL(f)                                                                           \
	do {                                                                                 \
		if (!(f)) {                                                                  \
			errno = ENOSYS;                                                      \
			return -1;                                                           \
		}                                                                            \
	} while (0)

EXPORT EMBER_HOT_TEXT int execve(const char *path, char *const argv[], char *const envp[])
{
	execve_fn f = REAL(execve, execve_fn);
	NO_REAL(f);
	AROUND_EXEC(path, f(path, argv, envp));
}

EXPORT EMBER_HOT_TEXT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	execve_fn f = REAL(execvpe, execve_fn);
	NO_REAL(f);
	AROUND_EXEC(file, f(file, argv, envp));
}

EXPORT EMBER_HOT_TEXT int execv(const char *path, char *const argv[])
{
	execv_fn f = REAL(execv, execv_fn);
	NO_REAL(f);
	AROUND_EXEC(path, f(path, argv));
}

EXPORT EMBER_HOT_TEXT int execvp(const char *file, char *const argv[])
{
	execv_fn f = REAL(execvp, execv_fn);
	NO_REAL(f);
	AROUND_EXEC(file, f(file, argv));
}

EXPORT EMBER_HOT_TEXT int fexecve(int fd, char *const argv[], char *const envp[])
{
	fexecve_fn f = REAL(fexecve, fexecve_fn);
	NO_REAL(f);
	AROUND_EXEC(NULL, f(fd, argv, envp));
}

EXPORT EMBER_HOT_TEXT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	execveat_fn f = REAL(execveat, execveat_fn);
	NO_REAL(f);
	AROUND_EXEC(dirfd == AT_FDCWD ? path : NULL, f(dirfd, path, argv, envp, flags));
}

/* The list forms gather their arguments and call the vector forms above. */
EMBER_HOT_TEXT static size_t count_args(va_list ap)
{
	size_t n = 1; /* arg0 */
	while (va_arg(ap, char *))
		n++;
	return n;
}

#define GATHER_ARGS(argv, arg0, last)                                                        \
	va_list ap_;                                                                         \
	va_start(ap_, last);                                                                 \
	size_t n_ = count_args(ap_);                                                         \
	va_end(ap_);                                                                         \
	char *argv[n_ + 1];                                                                  \
	argv[0] = (char *)(arg0);                                                            \
	va_start(ap_, last);                                                                 \
	for (size_t i_ = 1; i_ <= n_; i_++)                                                  \
		argv[i_] = va_arg(ap_, char *);                                              \
	argv[n_] = NULL

EXPORT EMBER_HOT_TEXT int execl(const char *path, const char *arg, ...)
{
	GATHER_ARGS(argv, arg, arg);
	va_end(ap_);
	return execv(path, argv);
}

EXPORT EMBER_HOT_TEXT int execlp(const char *file, const char *arg, ...)
{
	GATHER_ARGS(argv, arg, arg);
	va_end(ap_);
	return execvp(file, argv);
}

EXPORT EMBER_HOT_TEXT int execle(const char *path, const char *arg, ...)
{
	GATHER_ARGS(argv, arg, arg);
	char *const *envp = va_arg(ap_, char *const *); /* after the NULL */
	va_end(ap_);
	return execve(path, argv, envp);
}
