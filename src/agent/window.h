/*
 * window.h - turns one window's aggregated stacks into a symbolized
 * profile (the pprof model of profile.h). Agent thread only.
 */
#ifndef EMBER_WINDOW_H
#define EMBER_WINDOW_H

#include "agent/aggregate.h"
#include "agent/agent_internal.h"
#include "profile/profile.h"
#include "symbols/symbolizer.h"

/* Which profile a window's aggregate becomes. */
enum { EMBER__PROFILE_CPU = 0, EMBER__PROFILE_WALL = 1 };

/*
 * Builds the CPU (kind EMBER__PROFILE_CPU: samples/count, cpu/nanoseconds)
 * or wall-clock (EMBER__PROFILE_WALL: samples/count, wall/nanoseconds)
 * profile of [start_ns, end_ns) from `a`, whose weights are nanoseconds.
 * `sym` may be NULL (then locations carry addresses only). Sample i is
 * a->stacks[i], always (the JFR event log relies on it). On success
 * *out is the caller's, freed with ember__profile_free(). 0 or ember_err.
 */
int ember__window_profile(const ember__agg *a, ember__symbolizer *sym, const ember__config *cfg,
			  int kind, int64_t start_ns, int64_t end_ns, ember__profile **out);

#endif
