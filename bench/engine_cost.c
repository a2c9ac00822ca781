/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_cost.c - what a sampling mechanism costs a CPU-bound thread, with
 * no profiler code at all: the kernel's share of each engine, split into
 * its parts (bench/engine_cost.sh, docs/BENCHMARKS.md "Engines").
 *
 *     ember_bench_engine_cost [ROUNDS [HZ [ITERS [hash|read]]]]
 *
 * One thread runs a fixed amount of work (ITERS iterations of the bench
 * workload's hash loop; with `read`, ITERS read(2)s of 64 KiB from
 * /dev/zero, CPU spent in the kernel) once per arm per round; the arms are interleaved
 * and rotated as in abrun.c. For each run it measures the thread's CPU
 * time (CLOCK_THREAD_CPUTIME_ID, which on Linux includes the interrupts
 * and signal delivery the thread suffers) and reports, per arm, the median
 * over rounds of (arm - none) / signals: the CPU time each delivered
 * sample added, in microseconds, and the ratio to the unsampled run.
 *
 * Arms:
 *   none         no sampling: the reference of each round
 *   none2        no sampling again: the noise floor
 *   perf-nosig   a task-clock perf event with a period of 1/HZ, no signal
 *                (the hrtimer alone: its interrupt and reprogramming)
 *   perf-sig     the same, O_ASYNC|F_SETSIG to this thread (the kernel
 *                queues an irq_work per overflow, which sends the signal),
 *                empty handler
 *   perf-read    perf-sig plus a read(2) of the count in the handler (as
 *                emberprof's handler does to weigh the sample)
 *   perf-kchain  perf-read with kernel frames as the library takes them:
 *                the event records its kernel callchain
 *                (PERF_SAMPLE_CALLCHAIN, exclude_callchain_user, 48 frames
 *                at most) into a ring of one data page, which the handler
 *                reads with emberprof's own ember__kring_take
 *                (src/sample/kring.c) before it returns; the time of
 *                those calls is printed after the table
 *   perf-sigtrap the event with attr.sigtrap: the kernel sends SIGTRAP
 *                (TRAP_PERF) through task_work on the way back to user
 *                mode, without perf-sig's irq_work self-interrupt
 *   cputimer     a per-thread CPU-time POSIX timer at HZ (fires on ticks)
 *   monotimer    a CLOCK_MONOTONIC POSIX timer at HZ aimed at this thread
 *                (an hrtimer that signals from its interrupt, no irq_work)
 *
 * A benchmark: it prints numbers and judges nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "median.h"
#include "sample/kring.h"
#include <sys/mman.h>

enum { A_NONE, A_NONE2, A_PERF_NOSIG, A_PERF_SIG, A_PERF_READ, A_PERF_KCHAIN, A_PERF_SIGTRAP,
       A_CPUTIMER, A_MONOTIMER, A_COUNT };
static const char *arm_names[A_COUNT] = {"none",      "none2",	      "perf-nosig",
					 "perf-sig",  "perf-read",    "perf-kchain",
					 "perf-sigtrap", "cputimer",  "monotimer"};

static volatile sig_atomic_t g_signals;
static int g_fd = -1;
static int g_mode;
static volatile uint64_t g_sink;
static void *g_ring; /* perf-kchain's mapped ring */
static size_t g_ring_len;
static volatile long g_kframes; /* kernel frames the handler took */
static volatile long g_ktakes;  /* ... in this many calls, each timed */
static double g_ktake_ns[1 << 16]; /* (CLOCK_MONOTONIC, the first 65536) */

static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	int saved = errno;
	g_signals++;
	if (g_mode == A_PERF_READ || g_mode == A_PERF_KCHAIN) {
		uint64_t c;
		if (read(g_fd, &c, sizeof(c)) == sizeof(c))
			g_sink += c;
	}
	if (g_mode == A_PERF_KCHAIN && g_ring) {
		uint64_t ips[EMBER_KRING_MAX_FRAMES];
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int n = ember__kring_take(g_ring, ips, EMBER_KRING_MAX_FRAMES);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (g_ktakes < (long)(sizeof(g_ktake_ns) / sizeof(g_ktake_ns[0])))
			g_ktake_ns[g_ktakes] = (double)((t1.tv_sec - t0.tv_sec) * 1000000000LL +
							(t1.tv_nsec - t0.tv_nsec));
		g_ktakes++;
		if (n > 0)
			g_kframes += n;
	}
	errno = saved;
}

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int g_read_work; /* the `read` workload */

__attribute__((noinline)) static uint64_t work(uint64_t x, long iters)
{
	if (g_read_work) {
		static char buf[64 << 10];
		int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		for (long i = 0; fd >= 0 && i < iters; i++)
			x += (uint64_t)read(fd, buf, sizeof(buf));
		if (fd >= 0)
			close(fd);
		return x;
	}
	for (long i = 0; i < iters; i++) {
		x ^= x >> 31;
		x *= 0x9e3779b97f4a7c15ULL;
		x += (uint64_t)i;
	}
	return x;
}

static int open_perf(int64_t period_ns, int with_signal, int sigtrap, int kchain)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.sample_period = (uint64_t)period_ns;
	attr.disabled = 1;
	attr.exclude_hv = 1;
	attr.wakeup_events = 1;
	attr.sigtrap = sigtrap ? 1 : 0;
	attr.remove_on_exec = sigtrap ? 1 : 0; /* the kernel requires it with sigtrap */
	if (kchain) { /* as src/engine/engine_perf.c asks it */
		attr.sample_type = PERF_SAMPLE_CALLCHAIN;
		attr.exclude_callchain_user = 1;
		attr.sample_max_stack = EMBER_KRING_MAX_FRAMES;
	}
	int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && !kchain) {
		attr.exclude_kernel = 1;
		fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (with_signal) {
		struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = (pid_t)gettid()};
		if (fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 ||
		    fcntl(fd, F_SETFL, O_ASYNC) != 0) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* One run of arm `a`: CPU ns of the work, signals delivered. */
static int run_arm(int a, int64_t period_ns, long iters, int64_t *cpu_ns, long *nsig)
{
	g_mode = a;
	g_signals = 0;
	timer_t tm;
	int have_timer = 0;
	if (a >= A_PERF_NOSIG && a <= A_PERF_SIGTRAP) {
		g_fd = open_perf(period_ns, a == A_PERF_SIG || a == A_PERF_READ || a == A_PERF_KCHAIN,
				 a == A_PERF_SIGTRAP, a == A_PERF_KCHAIN);
		if (g_fd < 0)
			return -1;
		if (a == A_PERF_KCHAIN) {
			g_ring_len = 2 * (size_t)sysconf(_SC_PAGESIZE);
			g_ring = mmap(NULL, g_ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, g_fd, 0);
			if (g_ring == MAP_FAILED) {
				g_ring = NULL;
				close(g_fd);
				g_fd = -1;
				return -1;
			}
		}
		ioctl(g_fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(g_fd, PERF_EVENT_IOC_ENABLE, 0);
	} else if (a == A_CPUTIMER || a == A_MONOTIMER) {
		struct sigevent sev;
		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = SIGPROF;
		sev._sigev_un._tid = (pid_t)gettid();
		if (timer_create(a == A_CPUTIMER ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &sev,
				 &tm) != 0)
			return -1;
		struct itimerspec its = {{0, period_ns}, {0, period_ns}};
		timer_settime(tm, 0, &its, NULL);
		have_timer = 1;
	}
	int64_t t0 = thread_cpu_ns();
	g_sink += work(g_sink, iters);
	int64_t t1 = thread_cpu_ns();
	if (g_fd >= 0) {
		ioctl(g_fd, PERF_EVENT_IOC_DISABLE, 0);
		g_mode = A_NONE; /* the handler leaves the ring alone from here */
		if (g_ring)
			munmap(g_ring, g_ring_len);
		g_ring = NULL;
		close(g_fd);
		g_fd = -1;
	}
	if (have_timer)
		timer_delete(tm);
	*cpu_ns = t1 - t0;
	*nsig = g_signals;
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 9;
	long hz = argc > 2 ? atol(argv[2]) : 1000;
	g_read_work = argc > 4 && !strcmp(argv[4], "read");
	long iters = argc > 3 ? atol(argv[3]) : g_read_work ? 100000L : 300000000L;
	if (rounds < 1 || rounds > 200 || hz < 1 || hz > 100000 || iters < 1 ||
	    (argc > 4 && !g_read_work && strcmp(argv[4], "hash"))) {
		fprintf(stderr, "usage: ember_bench_engine_cost [ROUNDS [HZ [ITERS [hash|read]]]]\n");
		return 2;
	}
	int64_t period_ns = 1000000000LL / hz;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	sigaction(SIGTRAP, &sa, NULL);

	static double ratio[A_COUNT][200], per_sig_us[A_COUNT][200], sigs[A_COUNT][200];
	int ok[A_COUNT];
	for (int a = 0; a < A_COUNT; a++)
		ok[a] = 1;
	for (int r = 0; r < rounds; r++) {
		int64_t cpu[A_COUNT];
		long ns[A_COUNT];
		for (int k = 0; k < A_COUNT; k++) {
			int a = (k + r) % A_COUNT;
			if (run_arm(a, period_ns, iters, &cpu[a], &ns[a]) != 0) {
				ok[a] = 0;
				cpu[a] = 0;
				ns[a] = 0;
			}
		}
		for (int a = 0; a < A_COUNT; a++) {
			ratio[a][r] = (double)cpu[a] / (double)cpu[A_NONE];
			/* perf-nosig sends nothing: per expected overflow instead */
			double n = ns[a] ? (double)ns[a]
				   : a == A_PERF_NOSIG ? (double)cpu[a] / (double)period_ns : 0;
			per_sig_us[a][r] = n > 0 ? (double)(cpu[a] - cpu[A_NONE]) / 1e3 / n : 0;
			sigs[a][r] = (double)ns[a];
		}
		fprintf(stderr, "round %d/%d: none %.3f s\n", r + 1, rounds, (double)cpu[A_NONE] / 1e9);
	}
	printf("%ld Hz, %d rounds, medians of per-round values (none = the round's unsampled run)\n",
	       hz, rounds);
	printf("%-12s %10s %12s %16s\n", "arm", "CPU ratio", "signals", "added us/signal");
	for (int a = 0; a < A_COUNT; a++) {
		if (!ok[a]) {
			printf("%-12s (not available here)\n", arm_names[a]);
			continue;
		}
		printf("%-12s %10.4f %12.0f %16.2f\n", arm_names[a], bench_median(ratio[a], rounds),
		       bench_median(sigs[a], rounds), bench_median(per_sig_us[a], rounds));
	}
	long timed = g_ktakes < (long)(sizeof(g_ktake_ns) / sizeof(g_ktake_ns[0]))
			     ? g_ktakes
			     : (long)(sizeof(g_ktake_ns) / sizeof(g_ktake_ns[0]));
	printf("%s workload; perf-kchain's handler took %ld kernel frames in %ld calls of "
	       "ember__kring_take, median %.0f ns per call (clock reads included)\n",
	       g_read_work ? "read" : "hash", (long)g_kframes, (long)g_ktakes,
	       timed ? bench_median(g_ktake_ns, (int)timed) : 0.0);
	return 0;
}
