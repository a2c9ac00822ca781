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
#include "util/hashmap.h"

/*
 * Locations of one profile being built: each distinct address becomes one
 * Location, symbolized through `sym` (NULL: addresses only), with its
 * Mapping and Functions shared. Used by the window profiles and by other
 * profile builders (src/heap/jemalloc.c). Zero-initialize, set p and sym.
 */
typedef struct ember__window_locs {
	ember__profile *p;
	ember__symbolizer *sym;
	ember__u64map locs;  /* lookup address -> location index */
	ember__u64map maps;  /* module id + 1 -> mapping index */
	ember__u64map funcs; /* string hash (+probe) -> function index */
} ember__window_locs;

/* The 1-based Location for exactly `addr` (callers pass return address
 * - 1), added on first use; 0 on out-of-memory. */
uint32_t ember__window_location(ember__window_locs *b, uint64_t addr);
void ember__window_locs_release(ember__window_locs *b);

/* Which profile a window's aggregate becomes. */
enum { EMBER__PROFILE_CPU = 0, EMBER__PROFILE_WALL = 1 };

/*
 * Builds the CPU (kind EMBER__PROFILE_CPU: samples/count, cpu/nanoseconds)
 * or wall-clock (EMBER__PROFILE_WALL: samples/count, wall/nanoseconds)
 * profile of [start_ns, end_ns) from `a`, whose weights are nanoseconds.
 * `sym` may be NULL (then locations carry addresses only). On success
 * *out is the caller's, freed with ember__profile_free(). 0 or ember_err.
 */
int ember__window_profile(const ember__agg *a, ember__symbolizer *sym, const ember__config *cfg,
			  int kind, int64_t start_ns, int64_t end_ns, ember__profile **out);

#endif
