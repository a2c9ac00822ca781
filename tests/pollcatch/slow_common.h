/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slow_common.h - shared by the long-poll test programs (uv_slow.c,
 * event_slow.c): the agent set-up and a callback body that burns CPU for
 * a given time and measures how long it really ran.
 */
#ifndef EMBER_SLOW_COMMON_H
#define EMBER_SLOW_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emberprof.h"

static double slow_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static volatile unsigned long slow_sink;

/* Burns CPU for `ms` milliseconds; returns the time it took. */
__attribute__((noinline)) static double slow_burn(double ms)
{
	double t0 = slow_now_ms(), t;
	do {
		for (int i = 0; i < 2000; i++)
			slow_sink += (unsigned long)i * 2654435761u;
		t = slow_now_ms();
	} while (t - t0 < ms);
	return t - t0;
}

/* Sleeps `ms` milliseconds (resuming after signals); returns the time it took. */
__attribute__((noinline, unused)) static double slow_sleep(double ms)
{
	double t0 = slow_now_ms(), t;
	while ((t = slow_now_ms()) - t0 < ms) {
		double left = ms - (t - t0);
		struct timespec d = {(time_t)(left / 1e3), (long)(((long long)(left * 1e6)) % 1000000000)};
		nanosleep(&d, NULL); /* a wall-clock sample interrupts it: go on */
	}
	return t - t0;
}

/* Starts an agent writing into `dir`: 500 Hz, thread labels; pprof files,
 * or with SLOW_FORMAT=jfr JFR recordings, SLOW_FORMAT=both both. */
static ember_running *slow_start_agent(const char *dir)
{
	ember_builder *b;
	ember_agent *a;
	ember_running *r;
	ember_reporter rep;
	const char *fmt = getenv("SLOW_FORMAT");
	unsigned formats = !fmt || !*fmt || !strcmp(fmt, "pprof") ? EMBER_FORMAT_PPROF
			   : !strcmp(fmt, "jfr")		   ? EMBER_FORMAT_JFR
			   : !strcmp(fmt, "both")		   ? EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR
							   : 0;
	if (!formats) {
		fprintf(stderr, "SLOW_FORMAT '%s' is not pprof, jfr or both\n", fmt);
		exit(2);
	}
	if (ember_builder_new(&b, "pollcatch-test") || ember_builder_set_sample_rate(b, 500) ||
	    ember_builder_set_thread_labels(b, 1) || ember_builder_apply_env(b) ||
	    ember_reporter_local_ex(&rep, dir, formats) || ember_builder_add_reporter(b, &rep) ||
	    ember_builder_build(&a, b) || ember_agent_start(&r, a)) {
		fprintf(stderr, "agent: %s\n", ember_last_error());
		exit(1);
	}
	return r;
}

static void slow_stop_agent(ember_running *r)
{
	ember_agent *a;
	if (ember_running_stop(&a, r))
		fprintf(stderr, "final report: %s\n", ember_last_error());
	ember_agent_shutdown(a);
}

#endif
