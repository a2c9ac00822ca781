/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap_paired.c - what emberprof's malloc hook costs, measured inside one
 * process (benchmark 7 of docs/BENCHMARKS.md, "paired blocks").
 *
 * Why. Run against run, this VM's CPU time moves by 15-25 % (steal time
 * is charged to the guest), far more than the few percent to resolve. So
 * this program compares the two paths side by side in the same threads,
 * a few milliseconds apart: each worker thread runs the workload of
 * heap_workload.c (free a random slot's block, allocate one of a random
 * size: 70 % 16-128 bytes, 25 % 128-1024, 5 % 1-16 KiB) in three modes,
 * each with its own table of LIVE blocks and its own copy of the same
 * random stream:
 *
 *   raw      glibc's allocator called by its second name (__libc_malloc,
 *            __libc_free): what an unprofiled program's malloc costs
 *   control  the same again: raw vs control is this method's noise floor
 *   hooked   malloc and free: under LD_PRELOAD=libemberprof.so, through
 *            emberprof's interposer (and, with EMBERPROF_ALLOC, its
 *            sampler and live table)
 *
 * in BLOCKS rounds of OPS operations per mode, the order of the three
 * rotating from round to round, each mode's time the thread's own CPU
 * clock (CLOCK_THREAD_CPUTIME_ID) around its OPS operations. A signal
 * (the CPU profiler's) lands in whichever mode runs, so it weighs on all
 * three alike; what the agent's own threads spend (windows, encoding,
 * symbols) is the process's CPU minus the workers', reported apart.
 *
 * Output: per mode the summed CPU, ns per malloc/free pair, and per
 * round ratios hooked/raw and control/raw as median [p10..p90] and as the
 * ratio of sums; then the agent threads' CPU as a fraction of the
 * workers'. Each mode's checksum is printed too: all three must match
 * (the same allocations were made). A benchmark: it judges nothing.
 *
 *     ember_bench_heap_paired [THREADS [BLOCKS [OPS [LIVE [TOUCH [MODE]]]]]]
 *         (default 4 300 20000 4096 0 glibc)
 *
 * TOUCH 1 writes every allocated byte (memset) instead of the first and
 * last only: a program that does something with its memory, where
 * malloc and free take a smaller share of the time.
 *
 * MODE jeprof measures jemalloc's own sampler the same way: under
 * LD_PRELOAD=libjemalloc.so.2 MALLOC_CONF=prof:true,lg_prof_sample:19,
 * all three modes call malloc and free (jemalloc's), and each block
 * switches the thread's sampling (mallctl thread.prof.active) off for raw
 * and control, on for hooked. That is the cost of its sampled path and
 * of freeing sampled objects; what prof:true costs in jemalloc's fast
 * path either way is not in it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "heap_common.h"

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

enum { RAW, CONTROL, HOOKED, NMODES };
static const char *const mode_name[NMODES] = {"raw", "control", "hooked"};

static long blocks = 300, ops = 20000, live = 4096;
/* 1: the program writes every byte it allocates (and reads one back), as
 * real code initialises what it allocates; 0: only the first and last. */
static int touch;
/* The first rounds fill the tables and grow the heap (page faults): left
 * out of every figure. */
static long warmup;

typedef struct mode_state {
	unsigned char **slot;
	uint64_t seed, sum;
	long i;
} mode_state;

typedef struct job {
	_Alignas(64) int id; /* one job per cache line pair: no false sharing */
	mode_state m[NMODES];
	double *ns; /* blocks x NMODES thread-CPU nanoseconds */
	double cpu_total;
	char pad[64];
} job;

static double thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One block of one mode. The two loops differ only in the functions they
 * call; noinline keeps each a separate, identical-shaped loop. The state
 * is copied to locals: the stores through p may alias anything, which
 * would otherwise keep it in memory (shared cache lines between threads
 * then cost one mode more than another). */
#define BLOCK_BODY(ALLOC, FREE)                                                     \
	unsigned char **slot = m->slot;                                             \
	uint64_t seed = m->seed, sum = m->sum;                                      \
	long i = m->i;                                                              \
	for (long e = i + ops; i < e; i++) {                                        \
		uint64_t r = heap_bench_next(&seed);                                \
		size_t k = (size_t)(r % (uint64_t)live);                            \
		FREE(slot[k]);                                                      \
		size_t n = heap_bench_size(heap_bench_next(&seed));                 \
		unsigned char *p = ALLOC(n);                                        \
		if (!p)                                                             \
			abort();                                                    \
		if (touch) {                                                        \
			memset(p, (int)(i & 0x7f), n);                              \
			sum += p[n / 2];                                            \
		}                                                                   \
		p[0] = (unsigned char)i;                                            \
		p[n - 1] = (unsigned char)n;                                        \
		slot[k] = p;                                                        \
		sum += n + p[0];                                                    \
	}                                                                           \
	m->seed = seed;                                                             \
	m->sum = sum;                                                               \
	m->i = i;

__attribute__((noinline)) static void block_raw(mode_state *m)
{
	BLOCK_BODY(__libc_malloc, __libc_free)
}

__attribute__((noinline)) static void block_hooked(mode_state *m)
{
	BLOCK_BODY(malloc, free)
}

/* jemalloc mode: both paths are jemalloc's malloc and free, with its
 * sampler switched off (raw, control) or on (hooked) for the calling
 * thread. */
static int (*je_mallctl)(const char *, void *, size_t *, void *, size_t);

static void je_thread_prof(int on)
{
	_Bool v = on != 0;
	if (je_mallctl("thread.prof.active", NULL, NULL, &v, sizeof(v)) != 0)
		abort();
}

__attribute__((noinline)) static void block_je(mode_state *m, int prof)
{
	je_thread_prof(prof);
	BLOCK_BODY(malloc, free)
}

static void *worker(void *arg)
{
	job *j = arg;
	for (int md = 0; md < NMODES; md++) {
		j->m[md].slot = __libc_malloc((size_t)live * sizeof(unsigned char *));
		if (!j->m[md].slot)
			abort();
		memset(j->m[md].slot, 0, (size_t)live * sizeof(unsigned char *));
		j->m[md].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(j->id + 1);
	}
	double t_start = thread_ns();
	for (long b = 0; b < blocks; b++) {
		for (int s = 0; s < NMODES; s++) {
			/* Rotate, and reverse every other round: no mode always
			 * follows the same one. */
			int md = (int)((b + (b & 1 ? NMODES - s : s)) % NMODES);
			double t0 = thread_ns();
			if (je_mallctl)
				block_je(&j->m[md], md == HOOKED);
			else if (md == HOOKED)
				block_hooked(&j->m[md]);
			else
				block_raw(&j->m[md]);
			j->ns[b * NMODES + md] = thread_ns() - t0;
		}
	}
	j->cpu_total = thread_ns() - t_start;
	for (long k = 0; k < live; k++) {
		for (int md = 0; md < NMODES; md++) {
			if (md == HOOKED || je_mallctl)
				free(j->m[md].slot[k]);
			else
				__libc_free(j->m[md].slot[k]);
		}
	}
	for (int md = 0; md < NMODES; md++)
		__libc_free(j->m[md].slot);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double process_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
}

/* Per-round ratios of mode md over raw, pooled over threads. */
static void ratio_line(job *jobs, int threads, int md)
{
	size_t n = (size_t)threads * (size_t)blocks;
	double *r = __libc_malloc(n * sizeof(double)), num = 0, den = 0;
	if (!r)
		abort();
	size_t k = 0;
	for (int t = 0; t < threads; t++)
		for (long b = warmup; b < blocks; b++) {
			double x = jobs[t].ns[b * NMODES + md], y = jobs[t].ns[b * NMODES + RAW];
			num += x;
			den += y;
			if (y > 0)
				r[k++] = x / y;
		}
	qsort(r, k, sizeof(double), cmp_double);
	printf("ratio %-8s/raw  median %.4f  [p10 %.4f .. p90 %.4f]  sums %.4f  (%zu blocks)\n",
	       mode_name[md], r[k / 2], r[k / 10], r[k * 9 / 10], num / den, k);
	__libc_free(r);
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	if (argc > 2)
		blocks = atol(argv[2]);
	if (argc > 3)
		ops = atol(argv[3]);
	if (argc > 4)
		live = atol(argv[4]);
	if (argc > 5)
		touch = atoi(argv[5]) != 0;
	if (argc > 6 && !strcmp(argv[6], "jeprof")) {
		/* jemalloc preloaded with MALLOC_CONF=prof:true,...: its sampler,
		 * per thread, is what "hooked" switches on. */
		je_mallctl = (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(
			RTLD_DEFAULT, "mallctl");
		_Bool prof = 0;
		size_t len = sizeof(prof);
		if (!je_mallctl || je_mallctl("opt.prof", &prof, &len, NULL, 0) != 0 || !prof) {
			fprintf(stderr, "jeprof: needs jemalloc preloaded with MALLOC_CONF=prof:true\n");
			return 2;
		}
		printf("jemalloc mode: raw and control with thread.prof.active off, hooked on\n");
	} else if (argc > 6 && strcmp(argv[6], "glibc")) {
		fprintf(stderr, "MODE is glibc or jeprof\n");
		return 2;
	}
	if (threads < 1 || threads > 64 || blocks < 10 || ops < 1 || live < 1) {
		fprintf(stderr, "usage: %s [THREADS [BLOCKS>=10 [OPS [LIVE [TOUCH [MODE]]]]]]\n",
			argv[0]);
		return 2;
	}
	warmup = blocks / 20 > 2 ? blocks / 20 : 2;
	void *m = dlsym(RTLD_DEFAULT, "malloc"), *lm = dlsym(RTLD_DEFAULT, "__libc_malloc");
	Dl_info info = {0};
	dladdr(m, &info);
	printf("malloc is %s (%s)\n", m == lm ? "glibc's own: hooked == raw" : "interposed",
	       info.dli_fname ? info.dli_fname : "?");

	pthread_t tid[64];
	job jobs[64];
	double p0 = process_ns();
	for (int t = 0; t < threads; t++) {
		jobs[t] = (job){.id = t};
		jobs[t].ns = __libc_malloc((size_t)blocks * NMODES * sizeof(double));
		if (!jobs[t].ns || pthread_create(&tid[t], NULL, worker, &jobs[t]) != 0)
			abort();
	}
	double workers = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		workers += jobs[t].cpu_total;
	}
	double others = process_ns() - p0 - workers;

	double sum[NMODES] = {0};
	uint64_t check[NMODES] = {0};
	for (int t = 0; t < threads; t++)
		for (int md = 0; md < NMODES; md++) {
			check[md] += jobs[t].m[md].sum;
			for (long b = warmup; b < blocks; b++)
				sum[md] += jobs[t].ns[b * NMODES + md];
		}
	double pairs = (double)threads * (double)(blocks - warmup) * (double)ops;
	for (int md = 0; md < NMODES; md++)
		printf("mode %-8s cpu %.3f s  %.2f ns/pair  checksum %llu\n", mode_name[md],
		       sum[md] / 1e9, sum[md] / pairs, (unsigned long long)check[md]);
	ratio_line(jobs, threads, CONTROL);
	ratio_line(jobs, threads, HOOKED);
	/* The agent's threads ran for the whole run; the part of their work
	 * driven by samples came from the hooked third only. So a program
	 * always hooked pays between others/workers (all of it per unit of
	 * time) and others/hooked (all of it caused by the hooked blocks). */
	printf("other threads cpu %.3f s (agent, main) = %.4f of the workers', %.4f of the hooked "
	       "blocks'\n",
	       others / 1e9, others / workers, others / sum[HOOKED]);
	printf("estimate: always-hooked / unprofiled = %.4f .. %.4f\n",
	       sum[HOOKED] / sum[RAW] + others / workers, sum[HOOKED] / sum[RAW] + others / sum[HOOKED]);
	int ok = check[RAW] == check[CONTROL] && check[RAW] == check[HOOKED];
	if (!ok)
		printf("CHECKSUMS DIFFER\n");
	for (int t = 0; t < threads; t++)
		__libc_free(jobs[t].ns);
	return ok ? 0 : 1;
}
