/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_sig.c - small programs that use SIGPROF, signal masks and exec the
 * way real programs do (GNU sort's cleanup handler, a program's own
 * ITIMER_PROF profiler, liblzma's workers started with every signal
 * blocked, exec wrappers). tests/host/test_host_signals.sh runs each
 * under `emberprof run` and without it: the program must not be able to
 * tell the difference. One mode per run: host_sig MODE [ARG].
 * Exit 0 when the program saw what it would see without a profiler.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void burn_cpu(double seconds)
{
	double end = thread_cpu_s() + seconds;
	while (thread_cpu_s() < end)
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i * 2654435761u;
}

/* GNU sort: a cleanup handler for SIGPROF (among others) that removes its
 * temporary files and dies by the same signal. */
static void cleanup_and_die(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
}

/* SA_NODEFER: the handler raises its signal again once, which such a
 * handler gets at once, nested inside itself (depth 2). */
static volatile sig_atomic_t nd_depth, nd_max, nd_calls;
static void nodefer_handler(int sig)
{
	nd_depth++;
	nd_calls++;
	if (nd_depth > nd_max)
		nd_max = nd_depth;
	if (nd_depth == 1)
		raise(sig);
	nd_depth--;
}

static volatile sig_atomic_t ticks;
static void count_tick(int sig)
{
	(void)sig;
	ticks++;
}

static void *burner(void *arg)
{
	burn_cpu(*(double *)arg);
	return NULL;
}

/* Blocks every signal behind libc's back (as code making raw system
 * calls does): out of emberprof's reach, so it must be measured instead. */
static void *raw_blocked_burner(void *arg)
{
	uint64_t all = ~0ull;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof(all));
	burn_cpu(*(double *)arg);
	return NULL;
}

/* Blocks every signal behind libc's back for 30 ms of CPU at a time,
 * unblocked for a moment in between (as glibc's pthread_create does
 * around a clone, or while it waits for the loader's lock): each unblock
 * delivers one timer signal standing for the three expirations merged
 * into it. The thread is sampled, if late: not one that blocks the
 * signal. */
static void *raw_flicker_burner(void *arg)
{
	uint64_t all = ~0ull, old = 0;
	double end = thread_cpu_s() + *(double *)arg;
	while (thread_cpu_s() < end) {
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &old, sizeof(all));
		burn_cpu(0.03);
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(old));
	}
	return NULL;
}

/* The dedicated signal thread: every thread blocks SIGPROF, one waits for
 * it with sigwait; the signals are sent to the process (kill), so the
 * kernel may pick any thread. It counts each one as it comes, so that the
 * sender can wait for it before sending the next: a standard signal is
 * pending at most once, and two sent before this thread runs would be one
 * (seen once on a loaded machine: the test then waited for a third signal
 * until its timeout). */
static _Atomic int g_sigwait_got;

static void *sigwait_thread(void *arg)
{
	(void)arg;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	int sig;
	while (atomic_load(&g_sigwait_got) < 3 && sigwait(&s, &sig) == 0)
		if (sig == SIGPROF)
			atomic_fetch_add(&g_sigwait_got, 1);
	return NULL;
}

static void *idle_burner(void *arg)
{
	burn_cpu(*(double *)arg);
	return NULL;
}

/* The program's own signal waits while it blocks it; the mask it reads
 * back says blocked; unblocking delivers it once. */
static int mask_defer(void)
{
	sigset_t s, cur;
	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	sigprocmask(SIG_BLOCK, &s, NULL);
	pthread_kill(pthread_self(), SIGPROF);
	burn_cpu(0.3);
	int early = ticks;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	int shown = sigismember(&cur, SIGPROF);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	int after = ticks;
	printf("early=%d shown_blocked=%d after=%d\n", early, shown, after);
	fflush(stdout);
	return early == 0 && shown == 1 && after == 1 ? 0 : 1;
}

static void *mask_defer_thread(void *arg)
{
	*(int *)arg = mask_defer();
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: host_sig own-handler|own-itimer|block-all|raise-dfl|raise-ign|raise-count|"
			"mask-defer|query|exec-chain|raw-block|raw-flicker [ARG]\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	const char *mode = argv[1];
	double secs = argc > 2 ? atof(argv[2]) : 1.0;

	if (!strcmp(mode, "own-handler")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = cleanup_and_die;
		sigaction(SIGPROF, &sa, NULL);
		burn_cpu(secs);
		printf("cpu=%.3f\n", cpu_s());
		return 0;
	}
	if (!strcmp(mode, "own-itimer")) {
		/* A program's own profiler: 100 Hz of ITIMER_PROF, counted. */
		signal(SIGPROF, count_tick);
		struct itimerval it = {{0, 10000}, {0, 10000}};
		setitimer(ITIMER_PROF, &it, NULL);
		burn_cpu(secs);
		struct itimerval off;
		memset(&off, 0, sizeof(off));
		setitimer(ITIMER_PROF, &off, NULL);
		printf("ticks=%d cpu=%.3f\n", (int)ticks, cpu_s());
		return 0;
	}
	if (!strcmp(mode, "block-all")) {
		/* liblzma: workers start with every signal blocked. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		pthread_t th[2];
		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, burner, &secs);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		printf("cpu=%.3f\n", cpu_s());
		return 0;
	}
	if (!strcmp(mode, "raw-block") || !strcmp(mode, "raw-flicker")) {
		pthread_t th;
		pthread_create(&th, NULL, mode[4] == 'b' ? raw_blocked_burner : raw_flicker_burner,
			       &secs);
		pthread_join(th, NULL);
		printf("cpu=%.3f\n", cpu_s());
		return 0;
	}
	if (!strcmp(mode, "sigwait")) {
		signal(SIGPROF, cleanup_and_die); /* must never run: SIGPROF is waited for */
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGPROF);
		pthread_sigmask(SIG_BLOCK, &s, NULL);
		double busy = 0.6;
		pthread_t w, b;
		pthread_create(&w, NULL, sigwait_thread, NULL);
		pthread_create(&b, NULL, idle_burner, &busy);
		for (int i = 0; i < 3; i++) {
			burn_cpu(0.1);
			kill(getpid(), SIGPROF);
			/* Until the waiter has it, at most 10 s: a signal that
			 * never arrives is a failure below, not a hang. */
			for (int ms = 0; atomic_load(&g_sigwait_got) <= i && ms < 10000; ms++) {
				struct timespec d = {0, 1000000};
				nanosleep(&d, NULL);
			}
			if (atomic_load(&g_sigwait_got) <= i) {
				printf("sigwait got %d: signal %d of 3 never reached sigwait\n",
				       atomic_load(&g_sigwait_got), i + 1);
				return 1;
			}
		}
		pthread_join(w, NULL);
		pthread_join(b, NULL);
		int got = atomic_load(&g_sigwait_got);
		printf("sigwait got %d\n", got);
		return got == 3 ? 0 : 1;
	}
	if (!strcmp(mode, "raise-dfl")) {
		burn_cpu(0.2);
		raise(SIGPROF); /* default action: the process ends by SIGPROF */
		return 0;
	}
	if (!strcmp(mode, "raise-count")) {
		/* Its own SIGPROF to itself, by raise and by pthread_kill, for
		 * `secs` of CPU: each one handled once, before the call returns. */
		signal(SIGPROF, count_tick);
		double end = cpu_s() + secs;
		long sent = 0, late = 0;
		while (cpu_s() < end) {
			int before = (int)ticks;
			if (sent % 2)
				pthread_kill(pthread_self(), SIGPROF);
			else
				raise(SIGPROF);
			sent++;
			if ((int)ticks != before + 1)
				late++;
			burn_cpu(0.0001);
		}
		printf("sent=%ld seen=%d late=%ld\n", sent, (int)ticks, late);
		return late == 0 && ticks == sent ? 0 : 1;
	}
	if (!strcmp(mode, "nodefer")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = nodefer_handler;
		sa.sa_flags = SA_NODEFER;
		sigaction(SIGPROF, &sa, NULL);
		for (int i = 0; i < 50; i++) {
			burn_cpu(0.004);
			raise(SIGPROF);
		}
		printf("nodefer depth %d calls %d\n", (int)nd_max, (int)nd_calls);
		return nd_max == 2 && nd_calls == 100 ? 0 : 1;
	}
	if (!strcmp(mode, "signalfd")) {
		/* Its SIGPROF read from a signalfd, as event loops do: blocked,
		 * sent to itself 3 times, each read within 0.5 s. */
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGPROF);
		pthread_sigmask(SIG_BLOCK, &s, NULL);
		int fd = signalfd(-1, &s, SFD_CLOEXEC);
		if (fd < 0) {
			perror("signalfd");
			return 2;
		}
		int got = 0, ours = 0;
		for (int i = 0; i < 3; i++) {
			burn_cpu(0.05);
			kill(getpid(), SIGPROF);
			struct pollfd p = {fd, POLLIN, 0};
			while (poll(&p, 1, 500) == 1) {
				struct signalfd_siginfo si;
				if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
					break;
				if (si.ssi_code == SI_USER && (pid_t)si.ssi_pid == getpid()) {
					got++;
					break;
				}
				ours++; /* a signal the program did not send */
			}
		}
		printf("signalfd got %d of 3, %d others\n", got, ours);
		return got == 3 && ours == 0 ? 0 : 1;
	}
	if (!strcmp(mode, "raise-ign")) {
		signal(SIGPROF, SIG_IGN);
		burn_cpu(0.2);
		raise(SIGPROF);
		struct sigaction now;
		sigaction(SIGPROF, NULL, &now);
		return now.sa_handler == SIG_IGN ? 0 : 1;
	}
	if (!strcmp(mode, "mask-defer")) {
		signal(SIGPROF, count_tick);
		int rc_main = mask_defer();
		/* the same on another thread, signalled with pthread_kill */
		pthread_t th;
		int rc_thread = 1;
		ticks = 0;
		pthread_create(&th, NULL, mask_defer_thread, &rc_thread);
		pthread_join(th, NULL);
		return rc_main || rc_thread;
	}
	if (!strcmp(mode, "query")) {
		/* What a program sees of SIGPROF at start without a profiler. */
		struct sigaction now;
		sigaction(SIGPROF, NULL, &now);
		sigset_t cur;
		pthread_sigmask(SIG_BLOCK, NULL, &cur);
		int dfl = !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL;
		printf("dfl=%d blocked=%d\n", dfl, sigismember(&cur, SIGPROF));
		return dfl && !sigismember(&cur, SIGPROF) ? 0 : 1;
	}
	if (!strcmp(mode, "exec-chain")) {
		/* exec itself N times, burning a little CPU in each image. */
		int n = argc > 2 ? atoi(argv[2]) : 0;
		burn_cpu(0.004);
		if (n <= 0) {
			printf("chain done\n");
			return 0;
		}
		char next[16];
		snprintf(next, sizeof(next), "%d", n - 1);
		if (n % 2)
			execl("/proc/self/exe", argv[0], "exec-chain", next, (char *)NULL);
		else
			execv("/proc/self/exe", (char *[]){argv[0], "exec-chain", next, NULL});
		perror("exec");
		return 3;
	}
	return usage();
}
