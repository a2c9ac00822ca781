/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sample_cost.c - what one sample costs the interrupted thread, at stack
 * depths 8, 32 and 128 (bench/run.sh runs it).
 *
 * A real agent is started through the public API (a reporter that only
 * tallies the depths of the samples in the final profile, no files). The
 * main thread then recurses until the frame-pointer chain the handler will
 * walk is D frames long, and there, in rounds, times four loops of BATCH
 * iterations each:
 *
 *   direct/sample   calls ember__sigpath_handler() itself with a siginfo
 *                   whose si_code is SI_TIMER and a ucontext from
 *                   getcontext(): the handler body alone (claim a ring
 *                   slot, look up the thread's stack bounds, walk D frames,
 *                   read the clock, publish);
 *   direct/foreign  the same call with si_code SI_MESGQ, which the handler
 *                   counts as foreign and returns from: its fixed entry and
 *                   exit cost;
 *   signal/sample   sends itself SIGPROF with rt_tgsigqueueinfo() and
 *                   si_code SI_TIMER; the kernel delivers it on the return
 *                   from that system call, through the same signal frame
 *                   and sigreturn as a timer's signal, and the handler
 *                   takes a full sample: the whole cost a sample adds to
 *                   the application thread, kernel included (except the
 *                   timer's own expiry work in the tick, and plus the cost
 *                   of the sending system call);
 *   signal/foreign  the same with SI_MESGQ: the kernel's share (sending
 *                   system call, signal frame, sigreturn) plus the
 *                   handler's entry and exit.
 *
 * "our cost" = signal/sample - signal/foreign, paired per round. Between
 * rounds the thread sleeps so the agent (which drains the ring every 50 ms)
 * empties the ring; the drop counter of ember_running_stats() is printed so
 * a full ring would show. Each cell is the median over rounds of the
 * per-call time of a batch (CLOCK_MONOTONIC, ns), with the 25th and 75th
 * percentiles in brackets. Before the first round the program waits a
 * second (the agent thread loads symbols at start) and runs one untimed
 * warm-up round. After the table come the agent's counters, the cost of
 * gettid() and clock_gettime() alone (the handler calls each once per
 * sample), and the stack depths actually found in the agent's final
 * profile.
 *
 *     ember_bench_sample_cost [--signals N] [--batch B] [--rate HZ]
 *                             [--unwind auto|fp|dwarf]
 *
 * N (default 100000) is the number of calls per depth and per loop kind.
 * The agent runs at HZ (default 4000) only to get a big ring: 4096 slots
 * on two CPUs (agent.c sizes it to half a second of samples at full CPU
 * use), so that the two sample loops of a round (2 x BATCH, default 1000)
 * fill at most half of it even if the agent misses one drain; keep it so
 * when changing HZ or BATCH. A big ring is also the realistic case: in an
 * application the slot a sample lands in was last touched long ago and is
 * not in the cache. The agent's own CPU timer also fires on this thread at
 * HZ, which adds a handful of real samples; they are negligible next to N.
 * --unwind picks the agent's unwinding method (default: the library's
 * default, auto). "recorded" is always computed with the frame-pointer
 * walker, which sets the recursion depth; another walker may find a frame
 * or two more above main(), as the last line then shows.
 *
 * This is a benchmark: it prints numbers and judges nothing; it exits
 * non-zero only if the agent cannot be started.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "emberprof.h"
#include "encode/pprof.h"
#include "read/pprof_read.h"
#include "profile/profile.h"
#include "sample/handler.h"
#include "unwind/unwind.h"

#define MAX_DEPTH_SEEN 1024
#define MAX_ROUNDS 4096

enum { K_DIRECT_SAMPLE, K_DIRECT_FOREIGN, K_SIGNAL_SAMPLE, K_SIGNAL_FOREIGN, K_COUNT };
static const char *const kind_names[K_COUNT] = {"direct/sample", "direct/foreign",
						 "signal/sample", "signal/foreign"};

/* What the tallying reporter saw: samples per recorded stack depth. */
typedef struct tally {
	uint64_t by_depth[MAX_DEPTH_SEEN + 1];
	uint64_t windows;
	int failed;
} tally;

typedef struct bench {
	long signals, batch;
	int depth;      /* wanted recorded depth */
	int levels;     /* recursion levels that give it */
	double *ns[K_COUNT];
	int rounds;
	int recorded;   /* depth our own unwind of the bottom frame gave */
} bench;

static ember_running *g_running;

/* ---- the reporter ---- */

static int tally_report(void *ud, const ember_report *rep)
{
	tally *t = ud;
	ember__profile *p = NULL;
	if (ember__pprof_read(rep->pprof, rep->pprof_len, &p) != 0) {
		t->failed = 1;
		return EMBER_ERR_FORMAT;
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		uint32_t d = p->samples[i].nlocs;
		t->by_depth[d > MAX_DEPTH_SEEN ? MAX_DEPTH_SEEN : d] += (uint64_t)p->samples[i].values[0];
	}
	t->windows++;
	ember__profile_free(p);
	return 0;
}

/* ---- timing ---- */

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec d = {ms / 1000, (ms % 1000) * 1000000};
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
}

static void make_info(siginfo_t *si, int code)
{
	memset(si, 0, sizeof(*si));
	si->si_signo = SIGPROF;
	si->si_code = code;
	si->si_pid = getpid();
	si->si_uid = getuid();
	if (code == SI_TIMER) /* one of the agent's timers, not the program's */
		si->si_value.sival_ptr = (void *)EMBER_TIMER_VALUE;
}

/* Frames the handler would record for the context `uc` (-1: unknown). */
static int own_depth(ucontext_t *uc)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return -1;
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	ember__regs regs;
	ember__regs_from_ucontext(uc, &regs);
	ember__stack_bounds bounds = {(uintptr_t)addr, (uintptr_t)addr + size};
	static uint64_t pcs[MAX_DEPTH_SEEN];
	unsigned flags = 0;
	int n = ember__unwind_fp(&regs, &bounds, pcs, MAX_DEPTH_SEEN, &flags);
	/* TRUNCATED is expected: on the main thread glibc's start code leaves
	 * a non-zero frame pointer above main(), which ends the walk there. */
	return (flags & EMBER_UNWIND_NO_BOUNDS) ? -1 : n;
}

/*
 * One batch of one kind; returns ns per call. The context for the direct
 * calls is taken here, in the function that also sends the signals, so
 * that both kinds record the same frames: the leaf (here, or the
 * syscall() stub, which keeps our frame pointer) and our callers. With
 * n == 0 it only stores that depth in *depth.
 */
__attribute__((noinline)) static double run_batch(int kind, long n, pid_t pid, pid_t tid,
						  int *depth)
{
	ucontext_t uc;
	getcontext(&uc);
	if (depth)
		*depth = own_depth(&uc);
	if (n == 0)
		return 0;
	siginfo_t si;
	make_info(&si, kind == K_DIRECT_SAMPLE || kind == K_SIGNAL_SAMPLE ? SI_TIMER : SI_MESGQ);
	double t0 = now_ns();
	if (kind == K_DIRECT_SAMPLE || kind == K_DIRECT_FOREIGN) {
		for (long i = 0; i < n; i++)
			ember__sigpath_handler(SIGPROF, &si, &uc);
	} else {
		for (long i = 0; i < n; i++) {
			/* The kernel copies our siginfo; pass a fresh copy anyway. */
			siginfo_t s = si;
			syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGPROF, &s);
		}
	}
	return (now_ns() - t0) / (double)n;
}

/* The bottom of the recursion: everything is measured from here. */
__attribute__((noinline)) static void measure_here(bench *b)
{
	pid_t pid = getpid(), tid = (pid_t)gettid();
	run_batch(K_DIRECT_SAMPLE, 0, pid, tid, &b->recorded);
	b->rounds = 0;
	for (long done = 0; done < b->signals && b->rounds < MAX_ROUNDS; done += b->batch) {
		long n = b->signals - done < b->batch ? b->signals - done : b->batch;
		for (int k = 0; k < K_COUNT; k++) {
			/* Rotate the order so no kind always runs right after the pause. */
			int kind = (k + b->rounds) % K_COUNT;
			b->ns[kind][b->rounds] = run_batch(kind, n, pid, tid, NULL);
		}
		b->rounds++;
		sleep_ms(60); /* let the agent drain the ring */
	}
}

__attribute__((noinline)) static int recurse(bench *b, int level)
{
	if (level <= 1)
		measure_here(b);
	else
		recurse(b, level - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep the frame */
	return level;
}

/*
 * The two system-level calls the handler makes once per sample, timed
 * alone over n calls: gettid() (a real system call) and
 * clock_gettime(CLOCK_REALTIME) (the vDSO, when the clock source allows).
 */
static void time_calls(long n, double *gettid_ns, double *clock_ns)
{
	volatile long sink = 0;
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		sink += gettid();
	double t1 = now_ns();
	struct timespec ts;
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_REALTIME, &ts);
		sink += ts.tv_nsec;
	}
	double t2 = now_ns();
	(void)sink;
	*gettid_ns = (t1 - t0) / (double)n;
	*clock_ns = (t2 - t1) / (double)n;
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n), interpolated; 0 if n == 0. */
static double quantile(const double *v, int n, double q)
{
	if (n == 0)
		return 0;
	double *t = malloc((size_t)n * sizeof(*t));
	if (!t)
		return 0;
	memcpy(t, v, (size_t)n * sizeof(*t));
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	double pos = q * (n - 1);
	int i = (int)pos;
	double r = i + 1 < n ? t[i] + (pos - i) * (t[i + 1] - t[i]) : t[i];
	free(t);
	return r;
}

/* "median [p25..p75]" of v[0..n). */
static void print_cell(const double *v, int n)
{
	char cell[40];
	snprintf(cell, sizeof(cell), "%.0f [%.0f..%.0f]", quantile(v, n, 0.5), quantile(v, n, 0.25),
		 quantile(v, n, 0.75));
	printf(" %-21s", cell);
}

/* ---- main ---- */

static long opt_long(int argc, char **argv, const char *name, long def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name)) {
			char *end;
			long v = strtol(argv[i + 1], &end, 10);
			if (*end || v <= 0) {
				fprintf(stderr, "ember_bench_sample_cost: %s needs a positive number\n", name);
				exit(2);
			}
			return v;
		}
	return def;
}

static int start_agent(unsigned rate, unsigned max_depth, int unwind, tally *t)
{
	ember_builder *b = NULL;
	ember_agent *a = NULL;
	ember_reporter rep = {.name = "tally", .report = tally_report, .userdata = t};
	if (ember_builder_new(&b, "sample_cost") < 0 || ember_builder_set_sample_rate(b, rate) < 0 ||
	    ember_builder_set_max_depth(b, max_depth) < 0 ||
	    ember_builder_set_unwind(b, (ember_unwind_mode)unwind) < 0 ||
	    ember_builder_set_interval_ms(b, 3600000) < 0 || ember_builder_add_reporter(b, &rep) < 0 ||
	    ember_builder_build(&a, b) < 0 || ember_agent_start(&g_running, a) < 0) {
		fprintf(stderr, "ember_bench_sample_cost: cannot start the agent: %s\n", ember_last_error());
		return -1;
	}
	return 0;
}

/* Waits until a sample taken on this thread is a full stack, not a leaf. */
static int wait_for_bounds(void)
{
	ucontext_t uc;
	siginfo_t si;
	make_info(&si, SI_TIMER);
	getcontext(&uc);
	for (int i = 0; i < 300; i++) {
		ember_stats before, after;
		ember_running_stats(g_running, &before);
		ember__sigpath_handler(SIGPROF, &si, &uc);
		ember_running_stats(g_running, &after);
		if (after.samples > before.samples && after.samples_no_bounds == before.samples_no_bounds)
			return 0;
		sleep_ms(10);
	}
	return -1;
}

int main(int argc, char **argv)
{
	long signals = opt_long(argc, argv, "--signals", 100000);
	long batch = opt_long(argc, argv, "--batch", 1000);
	unsigned rate = (unsigned)opt_long(argc, argv, "--rate", 4000);
	/* Unwinding method by name; the numbers are those of ember_unwind_mode
	 * (2 is the DWARF walker, where the library has one). */
	static const char *const unwind_names[] = {"auto", "fp", "dwarf"};
	int unwind = 0;
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--unwind")) {
			unwind = -1;
			for (int m = 0; m < 3; m++)
				if (!strcmp(argv[i + 1], unwind_names[m]))
					unwind = m;
			if (unwind < 0) {
				fprintf(stderr, "ember_bench_sample_cost: --unwind is auto, fp or dwarf\n");
				return 2;
			}
		}
	static const int depths[] = {8, 32, 128};
	enum { NDEPTHS = sizeof(depths) / sizeof(depths[0]) };

	/* The foreign signals go where the program asked (sigvirt.h): SIGPROF's
	 * default action would end the process, so this program ignores it. */
	signal(SIGPROF, SIG_IGN);
	static tally t;
	if (start_agent(rate, 160, unwind, &t) != 0)
		return 1;
	if (wait_for_bounds() != 0)
		fprintf(stderr, "ember_bench_sample_cost: this thread's stack bounds never became known; "
				"samples will be leaf-only\n");

	/* The agent thread may still be loading symbols: let it settle, and
	 * warm up (one untimed round at the shallowest depth). */
	sleep_ms(1000);
	bench warm = {.signals = batch, .batch = batch};
	for (int k = 0; k < K_COUNT; k++)
		warm.ns[k] = calloc(1, sizeof(double));
	recurse(&warm, 1);
	for (int k = 0; k < K_COUNT; k++)
		free(warm.ns[k]);

	/* How many frames sit above the recursion (main, libc start code). */
	bench probe = {.signals = 0};
	recurse(&probe, 1);
	int base = probe.recorded - 1;

	printf("sample cost: %ld calls per depth and kind, batches of %ld, agent at %u Hz, unwind %s\n",
	       signals, batch, rate, unwind_names[unwind]);
	printf("%-6s %-9s", "depth", "recorded");
	for (int k = 0; k < K_COUNT; k++)
		printf(" %-21s", kind_names[k]);
	printf(" %-21s %s\n", "our cost (paired)", "dropped");
	for (int d = 0; d < NDEPTHS; d++) {
		bench b = {.signals = signals, .batch = batch, .depth = depths[d]};
		b.levels = depths[d] - base;
		if (b.levels < 1)
			b.levels = 1;
		long maxr = (signals + batch - 1) / batch;
		if (maxr > MAX_ROUNDS)
			maxr = MAX_ROUNDS;
		for (int k = 0; k < K_COUNT; k++)
			b.ns[k] = calloc((size_t)maxr, sizeof(double));
		ember_stats s0, s1;
		ember_running_stats(g_running, &s0);
		recurse(&b, b.levels);
		ember_running_stats(g_running, &s1);

		printf("%-6d %-9d", depths[d], b.recorded);
		for (int k = 0; k < K_COUNT; k++)
			print_cell(b.ns[k], b.rounds);
		double *diff = calloc((size_t)b.rounds + 1, sizeof(double));
		for (int r = 0; r < b.rounds; r++)
			diff[r] = b.ns[K_SIGNAL_SAMPLE][r] - b.ns[K_SIGNAL_FOREIGN][r];
		print_cell(diff, b.rounds);
		printf(" %llu\n",
		       (unsigned long long)(s1.samples_dropped_full - s0.samples_dropped_full));
		free(diff);
		for (int k = 0; k < K_COUNT; k++)
			free(b.ns[k]);
	}

	ember_stats st;
	ember_running_stats(g_running, &st);
	ember_agent *a = NULL;
	int rc = ember_running_stop(&a, g_running);
	if (rc != 0)
		fprintf(stderr, "ember_bench_sample_cost: final report: %s\n", ember_last_error());
	ember_agent_stats(a, &st);
	ember_agent_shutdown(a);
	printf("agent: %llu samples, %llu dropped (ring full), %llu truncated, %llu leaf-only, "
	       "%llu foreign signals\n",
	       (unsigned long long)st.samples, (unsigned long long)st.samples_dropped_full,
	       (unsigned long long)st.samples_truncated, (unsigned long long)st.samples_no_bounds,
	       (unsigned long long)st.signals_foreign);
	double g, c;
	time_calls(signals, &g, &c);
	printf("for reference, per call: gettid() %.0f ns, clock_gettime(CLOCK_REALTIME) %.0f ns "
	       "(the handler makes one of each per sample)\n",
	       g, c);
	printf("depths in the final profile (depth: samples):");
	for (int i = 0; i <= MAX_DEPTH_SEEN; i++)
		if (t.by_depth[i] >= 100)
			printf(" %d: %llu", i, (unsigned long long)t.by_depth[i]);
	printf("%s\n", t.failed ? " (the profile could not be decoded)" : "");
	return 0;
}
