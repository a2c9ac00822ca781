/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_cost.c - what unwinding costs, frame pointers against DWARF
 * tables, and what the tables cost to build and keep.
 *
 * 1. Tables. The registry (src/cfi/unwind_tables.c) builds tables for
 *    every executable module of this process (libstdc++ and libm are
 *    dlopen'ed first, as a C++ service would have them): modules, rows,
 *    bytes, build time. Then libc, libstdc++ and libm are built alone from
 *    their files, REPEAT times each: rows, bytes, median build time.
 * 2. Cost per unwind. The main thread recurses until the stack is D frames
 *    deep (D = 8, 32, 128, as both walkers record it), takes getcontext()
 *    there and, in batches of BATCH calls, unwinds that context with the
 *    frame-pointer walker and with the DWARF walker (mode auto; the same
 *    code the signal handler runs, called directly: no signal, no ring).
 *    Each cell: the median over batches of the per-call time (ns of this
 *    thread's CPU time, CLOCK_THREAD_CPUTIME_ID, so that time spent
 *    preempted on a busy machine does not count; table builds are timed
 *    with CLOCK_MONOTONIC), with the 25th and 75th percentiles and the minimum
 *    (the least disturbed batch, telling on a busy machine). The recursion
 *    is built with frame pointers so both walkers see the same frames (the
 *    frame-pointer walk ends at libc's start code, which has none).
 *
 *     ember_bench_unwind_cost [--batches N] [--batch B] [--repeat R]
 *
 * A benchmark: it prints numbers and judges nothing.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "cfi/unwind_tables.h"
#include "cfi/cfi_elf.h"
#include "emberprof.h"
#include "unwind/unwind.h"

#define MAXF 256

static double clock_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* This thread's CPU time: time spent preempted by other processes does
 * not count (a busy machine otherwise inflates long batches most). */
static double cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double quantile(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	double pos = q * (n - 1);
	int i = (int)pos;
	return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[i];
}

static long opt_long(int argc, char **argv, const char *name, long def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return strtol(argv[i + 1], NULL, 10) > 0 ? strtol(argv[i + 1], NULL, 10) : def;
	return def;
}

/* ---- tables ---- */

static void bench_tables(int repeat)
{
	static _Atomic(const ember__unwind_snapshot *) slot;
	ember__unwind_tables *t;
	if (ember__unwind_tables_new(&t, &slot, NULL) != 0 || ember__unwind_tables_refresh(t) != 0) {
		fprintf(stderr, "unwind tables: %s\n", ember_last_error());
		exit(1);
	}
	ember__unwind_tables_stats st;
	ember__unwind_tables_get_stats(t, &st);
	printf("whole process: %llu modules with tables, %llu rows, %.1f KiB, built in %.1f ms\n",
	       (unsigned long long)st.modules, (unsigned long long)st.rows, (double)st.bytes / 1024,
	       (double)st.build_ns / 1e6);
	ember__unwind_tables_free(t);

	static const char *const libs[] = {"/usr/lib/x86_64-linux-gnu/libc.so.6",
					   "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
					   "/usr/lib/x86_64-linux-gnu/libm.so.6"};
	printf("%-44s %8s %10s %10s %14s\n", "module", "FDEs", "rows", "KiB", "build ms (med)");
	double *ms = calloc((size_t)repeat, sizeof(*ms));
	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
		ember__cfi_table *tab = NULL;
		ember__cfi_module_info info;
		int ok = 1;
		for (int r = 0; r < repeat && ok; r++) {
			ember__cfi_table_free(tab);
			double t0 = now_ns();
			ok = ember__cfi_build_file(libs[i], &tab, &info) == 0;
			ms[r] = (now_ns() - t0) / 1e6;
		}
		if (!ok) {
			printf("%-44s (not available: %s)\n", libs[i], ember_last_error());
			continue;
		}
		printf("%-44s %8u %10u %10.1f %14.2f\n", libs[i], tab->stats.fdes, tab->nrows,
		       (double)tab->bytes / 1024, quantile(ms, repeat, 0.5));
		ember__cfi_table_free(tab);
	}
	free(ms);
}

/* ---- unwinding ---- */

typedef struct bench {
	long batches, batch;
	int want;     /* frames to record */
	double *fp_ns, *dw_ns;
	int fp_n, dw_n; /* frames recorded */
	unsigned fp_flags, dw_flags;
} bench;

static const ember__unwind_snapshot *g_snap;
static ember__stack_bounds g_bounds;

__attribute__((noinline)) static void measure_here(bench *b)
{
	ucontext_t uc;
	getcontext(&uc);
	ember__regs regs;
	ember__regs_from_ucontext(&uc, &regs);
	uint64_t pcs[MAXF];
	for (long k = 0; k < b->batches; k++) {
		double t0 = cpu_ns();
		for (long i = 0; i < b->batch; i++) {
			b->fp_flags = 0;
			b->fp_n = ember__unwind_fp(&regs, &g_bounds, pcs, b->want, &b->fp_flags);
		}
		double t1 = cpu_ns();
		for (long i = 0; i < b->batch; i++) {
			b->dw_flags = 0;
			b->dw_n = ember__unwind_dwarf(g_snap, 0, &regs, &g_bounds, pcs, b->want,
						      &b->dw_flags);
		}
		double t2 = cpu_ns();
		b->fp_ns[k] = (t1 - t0) / (double)b->batch;
		b->dw_ns[k] = (t2 - t1) / (double)b->batch;
	}
}

__attribute__((noinline)) static int recurse(bench *b, int level)
{
	if (level <= 1)
		measure_here(b);
	else
		recurse(b, level - 1);
	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
	return level;
}

/* "median [p25..p75] min" */
static void cell(double *v, int n)
{
	char s[64];
	snprintf(s, sizeof(s), "%.0f [%.0f..%.0f] %.0f", quantile(v, n, 0.5), quantile(v, n, 0.25),
		 quantile(v, n, 0.75), quantile(v, n, 0.0));
	printf(" %-26s", s);
}

int main(int argc, char **argv)
{
	long batches = opt_long(argc, argv, "--batches", 51);
	long batch = opt_long(argc, argv, "--batch", 2000);
	int repeat = (int)opt_long(argc, argv, "--repeat", 5);
	/* What a C++ service has loaded. */
	if (!dlopen("libstdc++.so.6", RTLD_NOW) || !dlopen("libm.so.6", RTLD_NOW))
		fprintf(stderr, "note: %s\n", dlerror());

	printf("== DWARF unwind tables\n");
	bench_tables(repeat);

	static _Atomic(const ember__unwind_snapshot *) slot;
	ember__unwind_tables *t;
	if (ember__unwind_tables_new(&t, &slot, NULL) != 0 || ember__unwind_tables_refresh(t) != 0)
		return 1;
	g_snap = atomic_load(&slot);
	pthread_attr_t attr;
	void *addr;
	size_t size;
	pthread_getattr_np(pthread_self(), &attr);
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	g_bounds.lo = (uintptr_t)addr;
	g_bounds.hi = (uintptr_t)addr + size;

	/* Frames above the recursion: what one level records, less one. The
	 * probe is called from here, like the measurements below. */
	bench probe = {.batches = 1, .batch = 1, .want = MAXF};
	double p1, p2;
	probe.fp_ns = &p1;
	probe.dw_ns = &p2;
	recurse(&probe, 1);
	int base = probe.dw_n - 1;
	printf("\n== cost per unwind, ns: median [p25..p75] min, over %ld batches of %ld\n", batches,
	       batch);
	printf("%-6s %-10s %-10s %-26s %-26s %s\n", "depth", "fp frames", "dwarf", "fp", "dwarf",
	       "dwarf ns/frame (median)");
	static const int depths[] = {8, 32, 128};
	for (size_t d = 0; d < sizeof(depths) / sizeof(*depths); d++) {
		int levels = depths[d] - base;
		if (levels < 1)
			levels = 1;
		bench b = {.batches = batches, .batch = batch, .want = depths[d]};
		b.fp_ns = calloc((size_t)batches, sizeof(double));
		b.dw_ns = calloc((size_t)batches, sizeof(double));
		recurse(&b, levels);
		printf("%-6d %-10d %-10d", depths[d], b.fp_n, b.dw_n);
		double med = quantile(b.dw_ns, (int)batches, 0.5);
		cell(b.fp_ns, (int)batches);
		cell(b.dw_ns, (int)batches);
		printf(" %.1f\n", med / (b.dw_n ? b.dw_n : 1));
		free(b.fp_ns);
		free(b.dw_ns);
	}
	ember__unwind_tables_free(t);
	return 0;
}
