/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utctime.h - UTC calendar time from Unix time and back, computed here.
 *
 * Not glibc's gmtime_r/timegm: their first call in a process runs
 * tzset_internal(), which reads TZ with glibc's own getenv (which no
 * interposition sees). On one of our threads that races a program thread's
 * setenv, which may move the environment array as it is read: a crash of
 * the program in our thread (host.test_setenv caught it in CI: SIGSEGV in
 * getenv under gmtime_r, on the agent thread naming a file). UTC needs no
 * time zone, so nothing here reads the environment.
 *
 * Pure functions on caller-owned values; async-signal-safe.
 */
#ifndef EMBER_UTIL_UTCTIME_H
#define EMBER_UTIL_UTCTIME_H

#include <stdint.h>

typedef struct ember__utc {
	int64_t year; /* proleptic Gregorian, e.g. 2026 */
	int mon;      /* 1..12 */
	int mday;     /* 1..31 */
	int hour, min, sec;
} ember__utc;

/* The UTC calendar time of `secs` seconds since 1970-01-01T00:00:00Z
 * (negative: before). */
void ember__utc_from_unix(int64_t secs, ember__utc *out);

/* Seconds since the epoch of a UTC calendar time (fields in their ranges
 * above; not normalised). */
int64_t ember__utc_to_unix(const ember__utc *t);

#endif
