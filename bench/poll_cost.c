/* SPDX-License-Identifier: Apache-2.0 */
/*
 * poll_cost.c - what ember_poll_begin()/ember_poll_end() cost around an
 * empty callback, side by side in one run with two references: the empty
 * callback alone, and the same callback between two
 * clock_gettime(CLOCK_MONOTONIC) calls (what a loop that times its own
 * callbacks would pay). No agent runs, so no sample lands in a poll: this
 * is the cost on every callback; a poll that does get a sample adds one
 * record push, at most once per sample. Rounds interleave the three
 * variants; the median of each is printed, in ns per callback, and the
 * ratios. Judges nothing (docs/BENCHMARKS.md, section 7).
 *
 *     ember_bench_poll_cost [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "emberprof.h"

#define ITERS 2000000

__attribute__((noinline)) static void callback(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile long long sink;

static double run(int variant)
{
	double t0 = now_ns();
	for (int i = 0; i < ITERS; i++) {
		if (variant == 0) {
			callback();
		} else if (variant == 1) {
			ember_poll_begin();
			callback();
			ember_poll_end();
		} else {
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			callback();
			clock_gettime(CLOCK_MONOTONIC, &b);
			sink += b.tv_nsec - a.tv_nsec;
		}
	}
	return (now_ns() - t0) / ITERS;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 15;
	if (rounds < 1 || rounds > 1000)
		rounds = 15;
	double *r[3];
	for (int v = 0; v < 3; v++)
		r[v] = calloc((size_t)rounds, sizeof(double));
	for (int k = 0; k < rounds; k++)
		for (int v = 0; v < 3; v++)
			r[v][k] = run(v); /* the three variants, interleaved, every round */
	double med[3];
	for (int v = 0; v < 3; v++) {
		qsort(r[v], (size_t)rounds, sizeof(double), cmp);
		med[v] = r[v][rounds / 2];
	}
	printf("empty callback:                      %6.2f ns\n", med[0]);
	printf("ember_poll_begin + callback + end:   %6.2f ns (%.2f ns added)\n", med[1],
	       med[1] - med[0]);
	printf("two clock_gettime + callback:        %6.2f ns (%.2f ns added)\n", med[2],
	       med[2] - med[0]);
	printf("pollcatch added / clock_gettime added: %.2f\n",
	       (med[1] - med[0]) / (med[2] - med[0]));
	return 0;
}
