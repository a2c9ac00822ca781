/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork_child.c - a fork child that keeps running is profiled as its own
 * process: its own agent, pid, windows and files.
 *
 * A fork child inherits none of its parent's sampling (timers and perf
 * events are not inherited, the agent thread is not copied), and the
 * parent's agent object must stay untouched there: another thread may
 * have held any of its mutexes at the fork. So the child starts an agent
 * of its own, built from the environment as the preload constructor
 * builds the first one, lazily:
 *
 *  - the atfork child handler (on the forking thread, before fork()
 *    returns in the child, while the child has that one thread) makes
 *    the configuration come from the environment the program image
 *    started with (util/envsnap.h: a forked worker may replace its
 *    environment, nginx's keep only TZ) and creates one small helper
 *    thread, every signal blocked, through the real pthread_create;
 *  - the helper waits until the child shows it will not exec right away:
 *    2 ms of CPU used or 20 ms lived, checked every millisecond. Most
 *    fork children (a shell's before each command) exec within a
 *    millisecond: exec ends the helper and nothing else was done;
 *  - then it checks that the dynamic loader's list lock can be taken
 *    (below), starts the agent (preload.c's start) and ends.
 *
 * A program image exec'd inside a profiled tree, other than the command
 * `emberprof run` started (a shell loop's /bin/true, a compiler driver's
 * cc1), starts the same way from the preload constructor
 * (ember__fork_lazy_start): most such processes live a millisecond or
 * two, and an agent's start and stop cost several times that. Its
 * constructor first claims the sampling signal (sigsetup.h,
 * ember__sigpath_preclaim): our handler and the virtual view of the
 * program's action and masks are in place from before main(), as in a
 * fork child, so a thread the program starts with every signal blocked
 * before the agent exists (xz -T2 does in its first millisecond) keeps
 * the signal deliverable.
 *
 * Cost per fork that execs at once: the helper's creation (measured in
 * docs/BENCHMARKS.md "fork"). What a child runs before its agent starts
 * (2 ms of its CPU plus the agent's start-up) is not sampled; the mark
 * arm_helper sets lets the agent measure it and report it as
 * "[before sampling]" (engine/threads.h, catch-up).
 *
 * The exec wrappers (signal_wrap.c) hold a lazy start while an exec is
 * under way (released if it fails) and wait for a start in progress, so
 * an exec never races with an agent arming its timers. A fork does the
 * same (the atfork prepare and parent handlers), waiting at most 1 s and
 * not while the start loads a library (util/forkguard.h says why): a
 * start under way holds locks (the allocator's, the agent's) that the
 * new child would inherit held, with no thread to release them, and the
 * child's own start would then wait on them for good. exit, _exit and
 * _Exit cancel a start not yet begun (the process leaves too early to be
 * worth an agent) or wait, bounded, for one under way, then stop that
 * agent as any other (preload.c, exit_hook.c); a start still under way
 * at the bound is reported on stderr (its profile is lost), never
 * silently dropped.
 *
 * glibc's fork re-initializes its own locks (malloc's arenas, the thread
 * stack cache, stdio's list, the loader's dlopen lock) before the child
 * handlers run, which is what makes the helper's creation and the later
 * start safe. It does not reset the lock that guards the loader's list of
 * objects (dl_load_write_lock, taken by dl_iterate_phdr and briefly by
 * dlopen and dlclose): a fork while another thread of the parent holds it
 * (a dlopen/dlclose loop, a C++ throw walking the objects) leaves it held
 * for good in the child, and the agent's start, which lists the objects
 * with dl_iterate_phdr, would wait on it for ever. So the helper first
 * takes that lock once itself (the probe), before the start begins: while
 * it waits there, an exec or exit treats the start as not begun and goes
 * on at once (never the 10 s bound: CI's soak saw one exec wait it), and
 * the helper stays blocked until the process ends. Such a process is not
 * profiled; its exit says so. A lock another thread of the parent held
 * that the start needs later can only stop the helper, never the
 * program's thread, whose exit waits at most the bound.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/threads.h"
#include "heap/hook.h"
#include "sample/handler.h"
#include "sample/sigvirt.h"
#include "preload/fork_child.h"
#include "util/envsnap.h"
#include "util/forkguard.h"
#include "util/logfd.h"
#include "util/hotpage.h"

enum {
	FC_NONE = 0,      /* no lazy start in this process */
	FC_PENDING = 1,   /* the helper waits */
	FC_HELD = 2,      /* an exec is under way: the helper keeps waiting */
	FC_STARTING = 3,  /* the helper is starting the agent */
	FC_DONE = 4,      /* started (or failed: preload.c said why) */
	FC_CANCELLED = 5, /* the process left first */
	FC_PROBING = 6,   /* the helper waits for the loader's list lock (top) */
};

#define FC_POLL_NS 1000000LL   /* the helper looks every 1 ms */
#define FC_CPU_NS 2000000LL    /* start after 2 ms of CPU... */
#define FC_LIFE_NS 20000000LL  /* ...or 20 ms of life */
#define FC_SETTLE_MS 10000     /* the longest exit or exec waits for a start (as _exit for a flush) */
#define FC_FORK_WAIT_MS 1000   /* the longest a fork waits for one (it takes milliseconds) */

/* Set in the first profiled process, inherited; NULL again once an API
 * agent that followed forks stops (ember__fork_follow_disable). Read and
 * written with __atomic builtins: another thread may fork meanwhile. */
static int (*g_start)(void) EMBER_HOT_DATA;
typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn g_create EMBER_HOT_DATA;    /* libc's pthread_create, found before main() */
/* The helper's stack: a fork child inherits it untouched (no mmap, no
 * guard page to make, pages faulted in only as used). glibc keeps the
 * thread's descriptor at its top. Enough for the agent's start. Aligned
 * to 64 bytes, not a page: a page alignment would start .bss on a page
 * of its own, and the C runtime's exit flag at its start would cost every
 * process a fault at exit (util/hotpage.h). */
#define FC_STACK (256u << 10)
static char g_stack[FC_STACK] __attribute__((aligned(64)));
static _Atomic int g_state EMBER_HOT_DATA;
static _Atomic pid_t g_pid EMBER_HOT_DATA;   /* the process g_state belongs to */
static int64_t g_forked_ns EMBER_HOT_DATA;   /* CLOCK_MONOTONIC at the fork */
/* The process's CPU time then: 0 after a fork, but an exec'd image has
 * used some in the loader (ours and our libraries' relocations) before
 * its constructor arms the helper, which must not count. */
static int64_t g_cpu0_ns EMBER_HOT_DATA;
static _Atomic int g_probing EMBER_HOT_DATA; /* the probe began (read at exit) */
static _Atomic int g_probed EMBER_HOT_DATA;  /* the probe came back: the lock is usable */
/* The helper is inside the probe (may hold the lock), and the probe did
 * not come back within FC_PROBE_WAIT_US once (its lock is held for good:
 * forks stop waiting for it). */
static _Atomic int g_probe_in EMBER_HOT_DATA;
static _Atomic int g_probe_stuck EMBER_HOT_DATA;
#define FC_PROBE_WAIT_US 2000 /* a probe takes microseconds */

EMBER_HOT_TEXT static pid_t raw_getpid(void)
{
	return (pid_t)syscall(SYS_getpid);
}

/* Through the system call, not the vDSO: a fork child or a new image that
 * execs or exits within a millisecond (most do) would fault in the vDSO's
 * code and data pages for the two reads of arm_helper alone, ≈ 30 µs each
 * on a paravirtualized VM, against ≈ 1 µs for the call (the helper's
 * polls, once a millisecond, pay the same microsecond). */
EMBER_HOT_TEXT static int64_t clock_ns(clockid_t clk)
{
	struct timespec ts = {0, 0};
	syscall(SYS_clock_gettime, clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int probe_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info;
	(void)size;
	(void)data;
	return 1; /* the lock was taken: that is all the probe asks */
}

static void bind_child_path(void);

EMBER_HOT_TEXT static void *helper_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec nap = {0, FC_POLL_NS};
		nanosleep(&nap, NULL);
		int s = atomic_load(&g_state);
		if (s == FC_HELD)
			continue;
		if (s != FC_PENDING)
			return NULL;
		if (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - g_cpu0_ns < FC_CPU_NS &&
		    clock_ns(CLOCK_MONOTONIC) - g_forked_ns < FC_LIFE_NS)
			continue;
		if (!atomic_load(&g_probed)) {
			/* Still "not begun" for exec and exit while it waits
			 * (see the top); an exec or fork may hold the start
			 * meanwhile, and the loop then goes on waiting. */
			if (!atomic_compare_exchange_strong(&g_state, &s, FC_PROBING))
				continue;
			atomic_store(&g_probing, 1);
			/* A fork must not copy the lock while the probe holds
			 * it: the prepare handler holds the state, then waits
			 * while g_probe_in is set. Both sides store, then load
			 * (sequentially consistent): if the fork's hold is not
			 * seen here, g_probe_in is seen there. */
			atomic_store(&g_probe_in, 1);
			if (atomic_load(&g_state) != FC_PROBING) {
				atomic_store(&g_probe_in, 0);
				continue; /* held by a fork or exec, or cancelled */
			}
			dl_iterate_phdr(probe_cb, NULL);
			atomic_store(&g_probe_in, 0);
			atomic_store(&g_probed, 1);
			s = FC_PROBING;
			if (!atomic_compare_exchange_strong(&g_state, &s, FC_PENDING))
				continue; /* held (the loop waits) or cancelled (it ends) */
		}
		int expect = FC_PENDING;
		if (atomic_compare_exchange_strong(&g_state, &expect, FC_STARTING))
			break;
	}
	/* (not before: most helpers end at an exec within a millisecond) */
	ember__heap_set_internal(1); /* our allocations are never profiled */
	/* Every getenv on this thread, the libraries' the start loads
	 * included (libcurl, OpenSSL, GnuTLS), reads the copy taken before
	 * main() (preload/getenv_hook.c): the program may be calling setenv. */
	ember__env_own_thread();
	pthread_setname_np(pthread_self(), "emberprof-fork");
	int (*start)(void) = __atomic_load_n(&g_start, __ATOMIC_ACQUIRE);
	if (start && start() == 0)
		bind_child_path(); /* this process may fork: see bind_child_path */
	atomic_store(&g_state, FC_DONE);
	return NULL;
}

static void arm_helper(int64_t thread_cpu0);

/* "emberprof: warning: process PID" and `rest` (which ends the line), on
 * stderr as the agent's log is written. Async-signal-safe. */
static void say(pid_t pid, const char *rest)
{
	char line[512] = "emberprof: warning: process ";
	size_t n = strlen(line);
	n += ember__logfd_decimal(line + n, (unsigned long)pid);
	size_t r = strlen(rest);
	if (r > sizeof(line) - n)
		r = sizeof(line) - n;
	memcpy(line + n, rest, r);
	ember__logfd_write(line, n + r);
}

/* Waits while a start is under way, at most max_ms; with `not_in_loads`,
 * not while a thread loads a library (util/forkguard.h). Returns whether
 * it is still under way. Async-signal-safe. */
static int wait_starting(int max_ms, int not_in_loads)
{
	for (int i = 0; i < max_ms && atomic_load(&g_state) == FC_STARTING &&
			!(not_in_loads && ember__forkguard_busy());
	     i++) {
		struct timespec nap = {0, 1000000};
		nanosleep(&nap, NULL);
	}
	return atomic_load(&g_state) == FC_STARTING;
}

/* Whether the prepare handler held a pending start. (glibc holds its
 * atfork lock from the prepare handlers to the parent's and child's, so
 * forks do not overlap.) */
static int g_fork_held EMBER_HOT_DATA;

/* Before a fork: a start not begun waits (held) until the fork is done;
 * one under way is waited for (bounded), so the child never inherits its
 * locks held (see the top). */
EMBER_HOT_TEXT static void atfork_prepare(void)
{
	/* Written only when it changes: a page the parent writes between
	 * two forks costs it a fault after each (util/hotpage.h). */
	if (g_fork_held)
		g_fork_held = 0;
	if (atomic_load(&g_pid) != raw_getpid())
		return;
	int s = FC_PENDING;
	if (atomic_compare_exchange_strong(&g_state, &s, FC_HELD)) {
		g_fork_held = 1;
		return;
	}
	s = FC_PROBING; /* not begun either, once the probe has let go */
	if (atomic_compare_exchange_strong(&g_state, &s, FC_HELD)) {
		g_fork_held = 1;
		/* The probe may hold the loader's list lock for a moment: the
		 * child must not inherit it held. One that waits on a lock
		 * held for good (see the top) is not waited for again. */
		for (int us = 0; atomic_load(&g_probe_in) && !atomic_load(&g_probe_stuck); us += 50) {
			if (us >= FC_PROBE_WAIT_US) {
				atomic_store(&g_probe_stuck, 1);
				break;
			}
			struct timespec nap = {0, 50000};
			nanosleep(&nap, NULL);
		}
		return;
	}
	/* A start under way: wait, at most FC_FORK_WAIT_MS, and not while it
	 * loads a library, whose initialization may call pthread_atfork and
	 * wait for glibc's atfork lock, which this fork holds
	 * (util/forkguard.h). */
	wait_starting(FC_FORK_WAIT_MS, 1);
}

EMBER_HOT_TEXT static void atfork_parent(void)
{
	int s = FC_HELD;
	if (g_fork_held) {
		atomic_compare_exchange_strong(&g_state, &s, FC_PENDING);
		g_fork_held = 0;
	}
}

EMBER_HOT_TEXT static void atfork_child(void)
{
	g_fork_held = 0;
	/* The fork may have come during the image's first agent start (its
	 * signal handler attached, the agent's atfork handlers, which detach
	 * it in a child, not yet registered: an agent started on another
	 * thread). The child's own start would then fail with "another
	 * emberprof agent is already running" on the program's stderr. Seen
	 * with starts deferred in exec'd images (since reverted); later
	 * starts find the handlers registered, inherited from the first. */
	ember__sigpath_forget();
	ember__sigpath_forget_tid();
	atomic_store(&g_pid, raw_getpid());
	atomic_store(&g_state, FC_NONE);
	if (!__atomic_load_n(&g_start, __ATOMIC_ACQUIRE))
		return;
	ember__env_snapshot_use();
	arm_helper(-1); /* a new process: its one thread's clock is the process's */
}

/* Creates the helper that starts this process's agent lazily. On the
 * process's only thread (the atfork child handler) or its main thread
 * before main (the constructor). thread_cpu0: that thread's CPU clock
 * now, or -1 where the process's clock reads the same (a fork child). */
EMBER_HOT_TEXT static void arm_helper(int64_t thread_cpu0)
{
	g_forked_ns = clock_ns(CLOCK_MONOTONIC);
	g_cpu0_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	/* What the thread runs from here until its engine is armed is in no
	 * sample; the agent's start measures it (threads.h, catch-up). */
	ember__threads_catch_up_from(atomic_load(&g_pid),
				     (uint64_t)(thread_cpu0 >= 0 ? thread_cpu0 : g_cpu0_ns));
	atomic_store(&g_probing, 0);
	atomic_store(&g_probed, 0); /* a fork child probes its own lock again */
	atomic_store(&g_probe_in, 0);
	atomic_store(&g_probe_stuck, 0);
	atomic_store(&g_state, FC_PENDING);
	pthread_attr_t attr;
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, g_stack, sizeof(g_stack));
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* the program's signals are never delivered to our thread: it starts
	 * with every signal blocked */
	ember__sigmask_kernel(SIG_SETMASK, &all, &old);
	pthread_t th;
	int err = g_create ? g_create(&th, &attr, helper_main, NULL) : ENOSYS;
	if (err) {
		atomic_store(&g_state, FC_NONE); /* runs unprofiled: say so */
		say(raw_getpid(), err == EAGAIN ? " is not profiled: the thread that would start its "
						  "agent could not be created (EAGAIN)\n"
						: " is not profiled: the thread that would start its "
						  "agent could not be created\n");
	}
	ember__sigmask_kernel(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/*
 * Binds, in this process, the libc functions a fork child calls before it
 * execs (arm_helper, the helper's first nap, the exec wrappers' check).
 * The library is bound lazily: otherwise every child resolves them again
 * itself, a symbol lookup over every loaded object and a copied GOT page
 * each (perf of a profiled shell loop showed _dl_fixup and do_lookup_x in
 * the children before their exec; LD_DEBUG=bindings now shows no binding
 * in them). Called where forks may follow (a started agent, not an image
 * still waiting to start); a child inherits the bound entries.
 */
EMBER_HOT_TEXT static void bind_child_path(void)
{
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_setstack(&attr, g_stack, sizeof(g_stack));
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_destroy(&attr);
	}
	struct timespec zero = {0, 0};
	nanosleep(&zero, NULL);
	const char *volatile path = "/";
	const char *volatile found = strchr(path, '/'); /* kept: strchr is pure */
	(void)found;
	(void)!access(path, X_OK);
}

EMBER_HOT_TEXT static void follow_enable(int (*start)(void))
{
	static int registered EMBER_HOT_DATA; /* per program image; a fork child inherits it */
	__atomic_store_n(&g_start, start, __ATOMIC_RELEASE);
	if (!g_create)
		g_create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	/* The agent's own atfork handlers first: prepare handlers run last
	 * registered first, so ours waits for a start under way before the
	 * registry's locks its mutex, and no start registers one while a
	 * fork holds glibc's atfork lock. */
	ember__threads_atfork_init();
	ember__heap_atfork_init();
	if (!registered && pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0)
		registered = 1;
}

EMBER_HOT_TEXT void ember__fork_follow_enable(int (*start)(void))
{
	follow_enable(start);
	bind_child_path();
}

void ember__fork_follow_disable(void)
{
	__atomic_store_n(&g_start, NULL, __ATOMIC_RELEASE);
}

EMBER_HOT_TEXT void ember__fork_lazy_start(int (*start)(void))
{
	/* (the binding waits for the start: most such images exit first) */
	follow_enable(start);
	/* The helper reads the configuration on its own thread, while the
	 * program may be calling setenv (git does at once): glibc's getenv is
	 * not safe against that (the array it walks may be freed; CI saw git
	 * commit crash in the helper's getenv). The copy taken before main()
	 * is read instead. */
	ember__env_snapshot_use();
	atomic_store(&g_pid, raw_getpid());
	/* an exec'd image: the process clock also holds what the threads
	 * before the exec used */
	arm_helper(clock_ns(CLOCK_THREAD_CPUTIME_ID));
}

/* Is this the process the lazy-start state belongs to? (Not a vfork
 * child sharing our memory, not a fork child before its handler.) */
EMBER_HOT_TEXT static int ours(void)
{
	pid_t pid = atomic_load(&g_pid); /* 0: never armed, no system call */
	return pid != 0 && pid == raw_getpid();
}

/* Waits, at most FC_SETTLE_MS, for a start under way; says so on stderr
 * if it is still under way then (once per process). Async-signal-safe. */
EMBER_HOT_TEXT static void wait_started(void)
{
	static _Atomic pid_t said EMBER_HOT_DATA;
	pid_t me = raw_getpid();
	if (!wait_starting(FC_SETTLE_MS, 0) || atomic_exchange(&said, me) == me)
		return;
	say(me, ": its agent did not finish starting within 10 s (blocked on a lock?); this "
		"process is not profiled\n");
}

/* At exit: the probe never came back, so this process was never profiled;
 * says so on stderr, once. Async-signal-safe. */
static void say_probe_stuck(void)
{
	static _Atomic pid_t said EMBER_HOT_DATA;
	pid_t me = raw_getpid();
	if (!atomic_load(&g_probing) || atomic_load(&g_probed) || atomic_exchange(&said, me) == me)
		return;
	say(me, " was not profiled: another thread of its parent held the dynamic loader's list "
		"lock when it forked (a dlopen, dlclose or dl_iterate_phdr under way), glibc leaves "
		"that lock held in the child, and the agent's start needs it\n");
}

EMBER_HOT_TEXT void ember__fork_child_settle(void)
{
	if (!ours())
		return;
	static const int not_begun[] = {FC_PENDING, FC_HELD, FC_PROBING};
	int s = FC_NONE;
	for (size_t i = 0; i < sizeof(not_begun) / sizeof(not_begun[0]); i++) {
		s = not_begun[i];
		if (atomic_compare_exchange_strong(&g_state, &s, FC_CANCELLED)) {
			say_probe_stuck();
			return;
		}
	}
	if (s == FC_STARTING)
		wait_started();
}

EMBER_HOT_TEXT int ember__fork_child_exec_hold(void)
{
	if (!ours())
		return 0;
	int s = FC_PENDING;
	if (atomic_compare_exchange_strong(&g_state, &s, FC_HELD))
		return 1;
	s = FC_PROBING; /* not begun: the exec goes on at once */
	if (atomic_compare_exchange_strong(&g_state, &s, FC_HELD))
		return 1;
	if (s == FC_STARTING)
		wait_started();
	return 0;
}

EMBER_HOT_TEXT void ember__fork_child_exec_failed(int held)
{
	int s = FC_HELD;
	if (held && ours())
		atomic_compare_exchange_strong(&g_state, &s, FC_PENDING);
}
