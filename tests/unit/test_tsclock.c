/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tsclock.c - TSC ticks to wall-clock time for allocation samples
 * (src/heap/tsclock.c): the cpuinfo flags that allow it, and conversions
 * that land between clock readings taken around the ticks. No speed is
 * asserted: a reading bracketed by two tick counts must convert to
 * times on both sides of it, however long the thread was preempted.
 */
#include <time.h>

#include "check.h"
#include "heap/tsclock.h"

static void test_flags(void)
{
	CHECK(ember__tsclock_constant("processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc "
				      "rdtscp\nbugs\t\t: spectre\n"));
	CHECK(ember__tsclock_constant("flags : constant_tsc nonstop_tsc"));
	CHECK(!ember__tsclock_constant("flags\t\t: fpu tsc constant_tsc rdtscp\n"));
	CHECK(!ember__tsclock_constant("flags\t\t: fpu tsc nonstop_tsc\n"));
	/* Words, not substrings; only the flags line counts. */
	CHECK(!ember__tsclock_constant("flags\t\t: xconstant_tsc nonstop_tscx\n"));
	CHECK(!ember__tsclock_constant("bugs\t\t: constant_tsc nonstop_tsc\nflags\t: fpu\n"));
	CHECK(!ember__tsclock_constant(""));
}

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void test_convert(void)
{
	ember__tsclock c;
	ember__tsclock_start(&c);
	if (!c.usable) {
		printf("  (no constant TSC here: conversion not exercised)\n");
		CHECK(!ember__tsclock_update(&c));
		return;
	}
	CHECK(!ember__tsclock_update(&c)); /* the baseline is too young */
	struct timespec d = {0, 30 * 1000000};
	nanosleep(&d, NULL);
	CHECK(ember__tsclock_update(&c));
	CHECK(c.ns_per_tick > 0.01 && c.ns_per_tick < 100);
	/* Ticks before and after a clock reading convert to times before and
	 * after it, up to the rate's error over the distance from the anchor
	 * (a few microseconds here; 1 ms allowed). */
	for (int i = 0; i < 5; i++) {
		nanosleep(&d, NULL);
		uint64_t a = ember__ticks_now();
		int64_t now = realtime_ns();
		uint64_t b = ember__ticks_now();
		int64_t ta = ember__tsclock_realtime(&c, a), tb = ember__tsclock_realtime(&c, b);
		CHECK(ta <= now + 1000000);
		CHECK(tb >= now - 1000000);
		CHECK(tb >= ta);
		if (i == 2)
			CHECK(ember__tsclock_update(&c)); /* a new anchor changes nothing */
	}
}

int main(void)
{
	RUN(test_flags);
	RUN(test_convert);
	return CHECK_DONE();
}
