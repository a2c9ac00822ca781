/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nosignal_cost.c - sampling without a signal, against the signal path
 * (threads that block the sampling signal).
 *
 * A thread that blocks the sampling signal with a raw system call cannot
 * be sampled by a signal. perf_events can sample it anyway: with
 * PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER the kernel copies the
 * interrupted registers and the top of the user stack into a ring buffer
 * the agent maps, and the agent could unwind that copy on its own thread.
 * This measures what that costs next to the path emberprof uses today
 * (the same task-clock perf event delivering a signal to a handler that
 * walks the stack), on the same workload, in the same process:
 *
 *   base    no sampling
 *   event   the task-clock event overflowing every PERIOD ns with nowhere
 *           to go (no signal, no ring): the kernel's timer and overflow
 *           cost that both ways share (large in a VM: timer exits)
 *   signal  task-clock every PERIOD ns, F_SETSIG SIGPROF, a handler that
 *           walks the frame pointers with emberprof's own unwinder
 *   ring8k  task-clock every PERIOD ns, no signal (the thread raw-blocks
 *           every signal), REGS_USER + 8 KiB of STACK_USER per sample into
 *           a 256 KiB ring drained every millisecond by a reader thread
 *   ring32k the same with 32 KiB of stack per sample
 *
 * Rounds interleave the modes (rotating order); per mode the median of the
 * sampled thread's CPU time over a fixed amount of work (depth-32 call
 * chain), and the cost per sample: (median - base median) / samples, and
 * above the bare event's: (median - event median) / samples. For
 * the rings also the reader's CPU per sample (copying the record out, as
 * an agent would before unwinding it) and records lost.
 *
 *     build/bench/ember_bench_nosignal_cost [ROUNDS] [PERIOD_NS]
 *
 * x86-64 only (the register mask). Judges nothing; docs/BENCHMARKS.md
 * holds the figures.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "unwind/unwind.h"
#include "median.h"

#if defined(__x86_64__)

#define DEPTH 32
#define RING_PAGES 64 /* data pages: 256 KiB */

enum { M_BASE, M_EVENT, M_SIGNAL, M_RING8, M_RING32, NMODES };
static const char *const mode_name[NMODES] = {"base", "event", "signal", "ring8k", "ring32k"};

static double cpu_now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the workload: a fixed amount of work at the bottom of a call chain ---- */

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t leaf_work(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	return x;
}

__attribute__((noinline)) static uint64_t chain(int depth, uint64_t n)
{
	if (depth == 0)
		return leaf_work(n);
	uint64_t r = chain(depth - 1, n);
	sink += r; /* not a tail call */
	return r;
}

/* ---- the signal path ---- */

static ember__stack_bounds g_bounds;
static atomic_ulong sig_samples;
static uint64_t sig_pcs[128];

static void on_sample(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	ember__regs regs;
	ember__regs_from_ucontext(uc, &regs);
	unsigned flags = 0;
	int n = ember__unwind(EMBER_UNWIND_MODE_FP, NULL, &regs, &g_bounds, sig_pcs, 128, &flags);
	sink += (uint64_t)n;
	atomic_fetch_add_explicit(&sig_samples, 1, memory_order_relaxed);
}

static int perf_open(uint64_t period, int ring_stack)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = period;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	if (ring_stack) {
		a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		/* perf_regs.h (x86): BP 6, SP 7, IP 8 */
		a.sample_regs_user = (1ull << 6) | (1ull << 7) | (1ull << 8);
		a.sample_stack_user = (uint32_t)ring_stack;
		a.wakeup_events = 0;
		a.watermark = 0;
	} else {
		a.wakeup_events = 1;
	}
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* ---- the ring reader (an agent thread) ---- */

struct ring {
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t size;
	atomic_int stop;
	uint64_t samples, lost, bytes;
	double cpu; /* reader's CPU seconds */
	uint8_t copy[65536];
};

static void drain(struct ring *r)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;
	while (tail < head) {
		struct perf_event_header h;
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = r->data[(tail + i) % r->size];
		if (h.size == 0)
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			/* copied out, as an agent must before unwinding it */
			size_t n = h.size; /* a record is at most 64 KiB: r->copy */
			size_t off = tail % r->size, first = r->size - off < n ? r->size - off : n;
			memcpy(r->copy, r->data + off, first);
			memcpy(r->copy + first, r->data, n - first);
			r->samples++;
			r->bytes += h.size;
		} else if (h.type == PERF_RECORD_LOST) {
			uint64_t lost;
			for (size_t i = 0; i < 8; i++)
				((uint8_t *)&lost)[i] = r->data[(tail + sizeof(h) + 8 + i) % r->size];
			r->lost += lost;
		}
		tail += h.size;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

static void *reader(void *arg)
{
	struct ring *r = arg;
	double c0 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
	struct timespec ms = {0, 1000000};
	while (!atomic_load(&r->stop)) {
		drain(r);
		nanosleep(&ms, NULL);
	}
	drain(r);
	r->cpu = cpu_now(CLOCK_THREAD_CPUTIME_ID) - c0;
	return NULL;
}

/* ---- one measured block ---- */

struct result {
	double cpu;      /* sampled thread's CPU seconds */
	uint64_t samples;
	double reader_cpu;
	uint64_t lost, bytes;
};

static struct result run_block(int mode, uint64_t period, uint64_t work)
{
	struct result res = {0};
	int fd = -1, stack = mode == M_RING8 ? 8192 : mode == M_RING32 ? 32768 : 0;
	struct ring *ring = NULL;
	pthread_t rt;
	if (mode != M_BASE) {
		fd = perf_open(period, stack);
		if (fd < 0) {
			fprintf(stderr, "perf_event_open: %s\n", strerror(errno));
			exit(77);
		}
	}
	if (mode == M_SIGNAL) {
		struct f_owner_ex own = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
		if (fcntl(fd, F_SETOWN_EX, &own) || fcntl(fd, F_SETSIG, SIGPROF) ||
		    fcntl(fd, F_SETFL, O_ASYNC)) {
			perror("fcntl");
			exit(1);
		}
	}
	if (stack) {
		ring = calloc(1, sizeof(*ring));
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		void *m = mmap(NULL, page * (1 + RING_PAGES), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			perror("mmap perf ring");
			exit(1);
		}
		ring->meta = m;
		ring->data = (uint8_t *)m + page;
		ring->size = page * RING_PAGES;
		pthread_create(&rt, NULL, reader, ring);
	}
	/* The ring modes: this thread blocks every signal, as liblzma's
	 * workers do (the signal mode cannot: it is the comparison). */
	sigset_t all, old;
	sigfillset(&all);
	if (stack)
		pthread_sigmask(SIG_BLOCK, &all, &old);
	unsigned long s0 = atomic_load(&sig_samples);
	if (fd >= 0) {
		ioctl(fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	double c0 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
	sink += chain(DEPTH, work);
	res.cpu = cpu_now(CLOCK_THREAD_CPUTIME_ID) - c0;
	if (fd >= 0)
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (stack)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (mode == M_SIGNAL)
		res.samples = atomic_load(&sig_samples) - s0;
	if (mode == M_EVENT) { /* overflows: the count over the period */
		uint64_t v = 0;
		if (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			res.samples = v / period;
	}
	if (ring) {
		atomic_store(&ring->stop, 1);
		pthread_join(rt, NULL);
		res.samples = ring->samples;
		res.reader_cpu = ring->cpu;
		res.lost = ring->lost;
		res.bytes = ring->bytes;
		munmap(ring->meta, (size_t)sysconf(_SC_PAGESIZE) * (1 + RING_PAGES));
		free(ring);
	}
	if (fd >= 0)
		close(fd);
	return res;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 9;
	uint64_t period = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000; /* 5 kHz */
	if (rounds < 1 || rounds > 200 || period < 10000) {
		fprintf(stderr, "usage: %s [ROUNDS 1-200] [PERIOD_NS >= 10000]\n", argv[0]);
		return 2;
	}
	pthread_attr_t at;
	void *lo;
	size_t sz;
	pthread_getattr_np(pthread_self(), &at);
	pthread_attr_getstack(&at, &lo, &sz);
	g_bounds.lo = (uintptr_t)lo;
	g_bounds.hi = (uintptr_t)lo + sz;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sample;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);

	/* work for ~0.5 s of CPU */
	uint64_t work = 1000000;
	double t = run_block(M_BASE, period, work).cpu;
	work = (uint64_t)((double)work * 0.5 / (t > 1e-4 ? t : 1e-4));

	double cpu[NMODES][200];
	double samples[NMODES][200], rcpu[NMODES][200];
	uint64_t lost[NMODES] = {0}, bytes[NMODES] = {0}, nsamp[NMODES] = {0};
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < NMODES; k++) {
			int m = (k + r) % NMODES;
			struct result x = run_block(m, period, work);
			cpu[m][r] = x.cpu;
			samples[m][r] = (double)x.samples;
			rcpu[m][r] = x.reader_cpu;
			lost[m] += x.lost;
			bytes[m] += x.bytes;
			nsamp[m] += x.samples;
		}
	}
	double base = bench_median(cpu[M_BASE], rounds);
	printf("period %llu ns, %d rounds, depth %d, work %.3f s of CPU (median, unsampled)\n",
	       (unsigned long long)period, rounds, DEPTH, base);
	double event = bench_median(cpu[M_EVENT], rounds);
	printf("%-8s %10s %9s %8s %11s %14s %14s %10s %8s\n", "mode", "cpu s", "ratio", "samples",
	       "us/sample", "over event us", "reader us/smp", "bytes/smp", "lost");
	for (int m = 0; m < NMODES; m++) {
		double c = bench_median(cpu[m], rounds), s = bench_median(samples[m], rounds);
		double per = m == M_BASE || s < 1 ? 0 : (c - base) / s * 1e6;
		double over = m <= M_EVENT || s < 1 ? 0 : (c - event) / s * 1e6;
		double rc = bench_median(rcpu[m], rounds);
		printf("%-8s %10.4f %9.4f %8.0f %11.2f %14.2f %14.2f %10.0f %8llu\n", mode_name[m], c,
		       c / base, s, per, over, s >= 1 ? rc / s * 1e6 : 0.0,
		       nsamp[m] ? (double)bytes[m] / (double)nsamp[m] : 0.0,
		       (unsigned long long)lost[m]);
	}
	return 0;
}

#else
int main(void)
{
	printf("nosignal_cost: x86-64 only (the perf register mask)\n");
	return 0;
}
#endif
