/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tsclock.c - TSC ticks to wall-clock time for allocation samples
 * (tsclock.h).
 */
#include "heap/tsclock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Conversions are trusted over this much of the baseline. */
#define MIN_BASELINE_NS INT64_C(10000000)

static int has_word(const char *line, size_t len, const char *w)
{
	size_t n = strlen(w);
	for (size_t i = 0; i + n <= len; i++) {
		if (memcmp(line + i, w, n) != 0)
			continue;
		int left = i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t';
		int right = i + n == len || line[i + n] == ' ' || line[i + n] == '\n';
		if (left && right)
			return 1;
	}
	return 0;
}

int ember__tsclock_constant(const char *cpuinfo)
{
	for (const char *p = cpuinfo; p && *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > 5 && !strncmp(p, "flags", 5) && (p[5] == ' ' || p[5] == '\t' || p[5] == ':'))
			return has_word(p, len, "constant_tsc") && has_word(p, len, "nonstop_tsc");
		p = end ? end + 1 : NULL;
	}
	return 0;
}

void ember__tsclock_start(ember__tsclock *c)
{
	memset(c, 0, sizeof(*c));
#if defined(__x86_64__)
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (f) {
		char line[8192];
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "flags", 5)) {
				c->usable = ember__tsclock_constant(line);
				break;
			}
		}
		fclose(f);
	}
#elif defined(__aarch64__)
	/* The generic timer's virtual count (CNTVCT_EL0) runs at the
	 * constant CNTFRQ_EL0 rate by the architecture, in every power state:
	 * usable whenever the frequency register is set. The rate is still
	 * measured against CLOCK_MONOTONIC below, with the same checks. */
	c->usable = ember__ticks_hz() != 0;
#endif
	if (c->usable)
		ember__ticks_pair(CLOCK_MONOTONIC, &c->tsc0, &c->mono0);
}

int ember__tsclock_update(ember__tsclock *c)
{
	if (!c->usable)
		return 0;
	int64_t mono;
	uint64_t t;
	ember__ticks_pair(CLOCK_MONOTONIC, &t, &mono);
	if (mono - c->mono0 >= MIN_BASELINE_NS && t > c->tsc0) {
		double r = (double)(mono - c->mono0) / (double)(t - c->tsc0);
		/* 10 MHz .. 100 GHz: anything else is not a working counter. */
		if (r > 0.01 && r < 100.0)
			c->ns_per_tick = r;
		else
			c->usable = 0;
	}
	ember__ticks_pair(CLOCK_REALTIME, &c->tsc1, &c->real1);
	return c->usable && c->ns_per_tick > 0;
}

int64_t ember__tsclock_realtime(const ember__tsclock *c, uint64_t tsc)
{
	int64_t d = (int64_t)(tsc - c->tsc1); /* before the anchor: negative */
	return c->real1 + (int64_t)((double)d * c->ns_per_tick);
}
