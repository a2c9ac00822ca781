/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tsclock.h - wall-clock times for allocation samples, read from the
 * CPU's time-stamp counter.
 *
 * The sampled malloc path stamps each record with the time (the window it
 * belongs to, the JFR event's time). clock_gettime costs ~700 cycles
 * there: a sample comes once per ~80 µs per thread on a malloc-bound
 * program, so the vDSO's data page is never cached (docs/BENCHMARKS.md
 * section 7). rdtsc (ember__ticks_now, util/ticks.h) reads a register.
 * So the hook records raw ticks
 * (EMBER_HEAP_REC_TSC) once the agent knows their rate, and the agent
 * converts them when it drains the ring.
 *
 * Only where the counter ticks at a constant rate in every power state
 * (the CPU's constant_tsc and nonstop_tsc flags); elsewhere the hook keeps
 * calling clock_gettime. The rate comes from CLOCK_MONOTONIC over the run
 * so far (immune to steps of the wall clock); each conversion starts from
 * the latest (ticks, CLOCK_REALTIME) pair, taken at the drain, so a step
 * of the wall clock reaches the samples at the next drain.
 *
 * Agent thread only; ember__tsclock_realtime is a pure function.
 */
#ifndef EMBER_HEAP_TSCLOCK_H
#define EMBER_HEAP_TSCLOCK_H

#include <stdint.h>

#include "util/ticks.h"

typedef struct ember__tsclock {
	int usable;          /* the TSC ticks at a constant rate */
	uint64_t tsc0;       /* the baseline: ticks and CLOCK_MONOTONIC */
	int64_t mono0;
	uint64_t tsc1;       /* the latest anchor: ticks and CLOCK_REALTIME */
	int64_t real1;
	double ns_per_tick;  /* 0 until known */
} ember__tsclock;

/* Whether a /proc/cpuinfo text says the TSC is constant and non-stop
 * (both flags on the first "flags" line). */
int ember__tsclock_constant(const char *cpuinfo);

/* Starts: decides usability (reads /proc/cpuinfo) and takes the
 * baseline. The rate is not known yet. */
void ember__tsclock_start(ember__tsclock *c);

/* Takes a new anchor and, once the baseline is 10 ms old, the rate.
 * Returns 1 when ticks can be converted, else 0. */
int ember__tsclock_update(ember__tsclock *c);

/* CLOCK_REALTIME nanoseconds of a tick count taken near the last anchor
 * (before or after it). Only when ember__tsclock_update returned 1. */
int64_t ember__tsclock_realtime(const ember__tsclock *c, uint64_t tsc);

#endif
