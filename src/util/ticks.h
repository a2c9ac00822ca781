/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ticks.h - the CPU's cycle counter, and readings of it paired with a
 * clock: what the poll clock (src/pollcatch/) and the allocation samples'
 * times (src/heap/tsclock.c) are built on.
 */
#ifndef EMBER_UTIL_TICKS_H
#define EMBER_UTIL_TICKS_H

#include <stdint.h>
#include <time.h>

/* The counter: the TSC (x86-64 rdtsc), the virtual counter (aarch64
 * cntvct_el0), else CLOCK_MONOTONIC in ns. Async-signal-safe. */
static inline uint64_t ember__ticks_now(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* The counter's nominal rate in Hz where the CPU states it (aarch64:
 * CNTFRQ_EL0), else 0 (x86-64: the TSC's rate is measured). Readable
 * from user space; async-signal-safe. */
static inline uint64_t ember__ticks_hz(void)
{
#if defined(__aarch64__)
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
#else
	return 0;
#endif
}

/* A (ticks, nanoseconds of clock `id`) pair read as close together as we
 * can: the tightest of a few tries, so a preemption between the two
 * reads does not skew it. Not async-signal-safe only in that it takes a
 * few hundred nanoseconds. */
void ember__ticks_pair(clockid_t id, uint64_t *ticks, int64_t *ns);

#endif
