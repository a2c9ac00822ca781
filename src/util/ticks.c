/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ticks.c - a cycle-counter reading paired with a clock (ticks.h).
 */
#include "util/ticks.h"

void ember__ticks_pair(clockid_t id, uint64_t *ticks, int64_t *ns)
{
	int64_t best = INT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t t0 = ember__ticks_now();
		struct timespec ts;
		clock_gettime(id, &ts);
		uint64_t t1 = ember__ticks_now();
		if ((int64_t)(t1 - t0) < best) {
			best = (int64_t)(t1 - t0);
			*ticks = t0 + (t1 - t0) / 2;
			*ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		}
	}
}
