/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deep.c - a 60-frame recursion for the flame page's browser test: every
 * sample's stack is main, then deep_recurse 60 times, then deep_leaf, so
 * the page must show a root far below a tall tower.
 * Usage: deep SECONDS
 */
#include <stdlib.h>
#include <time.h>

#define DEPTH 60

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void deep_leaf(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i ^ (sink >> 1);
}

__attribute__((noinline)) static void deep_recurse(int n)
{
	if (n > 1)
		deep_recurse(n - 1);
	else
		deep_leaf();
	sink++; /* no tail call: every level keeps its frame */
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	double end = now() + seconds;
	while (now() < end)
		deep_recurse(DEPTH);
	return 0;
}
