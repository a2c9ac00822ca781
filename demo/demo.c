/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demo.c - emberprof_demo, a CPU-bound workload with a known profile.
 *
 * N threads (--threads, default 4) each burn --seconds (default 3) of
 * their own CPU time, measured with CLOCK_THREAD_CPUTIME_ID. Each round a
 * thread calls stage_one() three times and stage_two() once, in a random
 * order; stage_one()
 * calls hot_a() and stage_two() calls hot_b(), and hot_a and hot_b have
 * identical bodies (pure arithmetic, no system calls). So a correct CPU
 * profile shows about 75% of the time in
 *     worker_main -> stage_one -> hot_a
 * and 25% in
 *     worker_main -> stage_two -> hot_b
 * with the stage functions and worker_main at ~0% flat. --split P makes
 * it P% and (100-P)%, each call drawn at random (for `emberprof diff`).
 *
 * Built with -O2 -g -fno-omit-frame-pointer, and with inlining, cloning,
 * identical-code folding and sibling calls disabled for these functions so
 * that every frame above stays a real frame.
 *
 * The expected split goes to stdout before the work; after it, the CPU
 * time used and the split actually measured (each call is timed with the
 * thread's CPU clock), which is what a profile should agree with.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One unit of work: a few hundred microseconds of dependent arithmetic. */
#define WORK_ITERATIONS 200000u

#define KEEP __attribute__((noipa, noinline))

/* Written after each call, so no call can be optimized away or into a jump. */
static volatile double sink;

/* Same alignment, so that the identical loops also run at the same speed. */
#define HOT KEEP __attribute__((aligned(64)))

HOT double hot_a(double x);
HOT double hot_b(double x);
KEEP double stage_one(double x);
KEEP double stage_two(double x);

/*
 * hot_a and hot_b: identical bodies, so only the call ratio differs.
 *
 * The volatile local gives each a stack frame. GCC (12) sets up no frame
 * pointer in a leaf function that never touches the stack, even with
 * -fno-omit-frame-pointer; a frame-pointer unwinder sampling inside such a
 * leaf then sees its caller's frame as the leaf's and skips the caller
 * (stage_one), which would blur exactly the chains this demo shows.
 */
HOT double hot_a(double x)
{
	volatile unsigned frame_anchor = 0;
	double acc = x;
	for (unsigned i = frame_anchor; i < WORK_ITERATIONS; i++)
		acc = acc * 1.0000001 + 1e-9 * (double)(i & 7);
	return acc;
}

HOT double hot_b(double x)
{
	volatile unsigned frame_anchor = 0;
	double acc = x;
	for (unsigned i = frame_anchor; i < WORK_ITERATIONS; i++)
		acc = acc * 1.0000001 + 1e-9 * (double)(i & 7);
	return acc;
}

KEEP double stage_one(double x)
{
	double r = hot_a(x);
	sink = r;
	return r;
}

KEEP double stage_two(double x)
{
	double r = hot_b(x);
	sink = r;
	return r;
}

typedef struct worker {
	pthread_t thread;
	long index;
	double seconds;  /* CPU time to burn */
	double cpu_used; /* measured, seconds */
	double cpu_one;  /* of which in stage_one (hot_a) */
	double cpu_two;  /* of which in stage_two (hot_b) */
	unsigned long rounds;
	unsigned split; /* percent of the calls that go to stage_one */
	unsigned long calls_one, calls_two;
} worker;

static double thread_cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

KEEP void *worker_main(void *arg);

KEEP void *worker_main(void *arg)
{
	worker *w = arg;
	double start = thread_cpu_seconds(), now = start;
	double x = 1.0;
	uint32_t rng = 2463534242u + (uint32_t)w->index * 7919u;
	while (now - start < w->seconds) {
		/*
		 * 3:1 - the whole point of the demo. The place of the stage_two
		 * call in the round is random: a fixed order would be periodic,
		 * and periodic work sampled by a periodic timer (which the kernel
		 * fires on its scheduler tick) can alias, favoring whichever call
		 * happens to run at the tick.
		 */
		rng ^= rng << 13;
		rng ^= rng >> 17;
		rng ^= rng << 5;
		unsigned two_at = rng & 3;
		for (unsigned k = 0; k < 4; k++) {
			double before = now;
			int two = k == two_at;
			if (w->split != 75) { /* --split: each call drawn on its own */
				rng ^= rng << 13;
				rng ^= rng >> 17;
				rng ^= rng << 5;
				two = rng % 100 >= w->split;
			}
			if (two) {
				w->calls_two++;
				x = stage_two(x) * 1e-9 + 1.0;
				now = thread_cpu_seconds();
				w->cpu_two += now - before;
			} else {
				w->calls_one++;
				x = stage_one(x) * 1e-9 + 1.0;
				now = thread_cpu_seconds();
				w->cpu_one += now - before;
			}
		}
		w->rounds++;
	}
	w->cpu_used = now - start;
	sink = x;
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: emberprof_demo [--threads N] [--seconds S] [--split P]\n"
		     "  --threads N   worker threads, 1..256 (default 4)\n"
		     "  --seconds S   CPU seconds each thread burns, 0.01..3600 (default 3)\n"
		     "  --split P     percent of the calls that go to stage_one (hot_a), 0..100\n"
		     "                (default 75: three of every four, in a random order)\n");
}

static int parse_args(int argc, char **argv, long *threads, double *seconds, long *split)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		}
		if ((strcmp(a, "--threads") && strcmp(a, "--seconds") && strcmp(a, "--split")) ||
		    i + 1 >= argc) {
			fprintf(stderr, "emberprof_demo: bad argument '%s'\n", a);
			usage(stderr);
			return -1;
		}
		const char *v = argv[++i];
		char *end;
		errno = 0;
		if (!strcmp(a, "--split")) {
			*split = strtol(v, &end, 10);
			if (errno || *end || end == v || *split < 0 || *split > 100) {
				fprintf(stderr, "emberprof_demo: --split '%s' is not 0..100\n", v);
				return -1;
			}
		} else if (!strcmp(a, "--threads")) {
			*threads = strtol(v, &end, 10);
			if (errno || *end || end == v || *threads < 1 || *threads > 256) {
				fprintf(stderr, "emberprof_demo: --threads '%s' is not 1..256\n", v);
				return -1;
			}
		} else {
			*seconds = strtod(v, &end);
			if (errno || *end || end == v || !(*seconds >= 0.01 && *seconds <= 3600)) {
				fprintf(stderr, "emberprof_demo: --seconds '%s' is not 0.01..3600\n",
					v);
				return -1;
			}
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	long nthreads = 4;
	double seconds = 3.0;
	long split = 75;
	if (parse_args(argc, argv, &nthreads, &seconds, &split) < 0)
		return 2;

	printf("emberprof_demo: %ld threads x %.2f s of CPU each (%.2f s in total)\n", nthreads,
	       seconds, seconds * (double)nthreads);
	printf("expected profile: hot_a %ld%% (worker_main -> stage_one -> hot_a), "
	       "hot_b %ld%% (worker_main -> stage_two -> hot_b)\n",
	       split, 100 - split);
	fflush(stdout);

	worker *ws = calloc((size_t)nthreads, sizeof(*ws));
	if (!ws) {
		fprintf(stderr, "emberprof_demo: out of memory\n");
		return 1;
	}
	long started = 0;
	for (long i = 0; i < nthreads; i++) {
		ws[i].seconds = seconds;
		ws[i].index = i;
		ws[i].split = (unsigned)split;
		int rc = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
		if (rc) {
			fprintf(stderr, "emberprof_demo: pthread_create: %s\n", strerror(rc));
			break;
		}
		started++;
	}
	double total = 0, one = 0, two = 0;
	unsigned long rounds = 0, calls_one = 0, calls_two = 0;
	for (long i = 0; i < started; i++) {
		pthread_join(ws[i].thread, NULL);
		total += ws[i].cpu_used;
		one += ws[i].cpu_one;
		two += ws[i].cpu_two;
		rounds += ws[i].rounds;
		calls_one += ws[i].calls_one;
		calls_two += ws[i].calls_two;
	}
	free(ws);
	printf("done: %.2f s of CPU in %ld threads, %lu rounds (%lu hot_a calls, %lu hot_b calls)\n",
	       total, started, rounds, calls_one, calls_two);
	if (one + two > 0)
		printf("measured: hot_a %.1f%%, hot_b %.1f%% of the time in the two\n",
		       100.0 * one / (one + two), 100.0 * two / (one + two));
	return started == nthreads ? 0 : 1;
}
