/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memagg.h - one window of a memory profile: distinct stacks, each with
 * the four estimates of the memory profile (already unsampled, so
 * fractional): allocated objects and bytes in the window, objects and
 * bytes live at its end. Agent thread only; not async-signal-safe.
 *
 * This is also the interface of a heap profile source (heapprof.h): the
 * malloc hook's and the jemalloc backend's data both end up here, and
 * ember__memagg_profile turns it into the pprof with sample types
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes.
 */
#ifndef EMBER_HEAP_MEMAGG_H
#define EMBER_HEAP_MEMAGG_H

#include <stdint.h>

#include "profile/profile.h"
#include "profile/window.h"
#include "symbols/symbolizer.h"
#include "util/arena.h"
#include "util/hashmap.h"

enum {
	EMBER_MEM_ALLOC_OBJECTS = 0,
	EMBER_MEM_ALLOC_BYTES = 1,
	EMBER_MEM_INUSE_OBJECTS = 2,
	EMBER_MEM_INUSE_BYTES = 3,
	EMBER_MEM_NVALUES = 4
};

typedef struct ember__memagg_stack {
	uint64_t hash;
	uint32_t depth;
	uint32_t next; /* position+1 of the next stack with the same hash, 0: none */
	int32_t sample; /* its index in the profile ember__memagg_profile built; -1: none */
	double v[EMBER_MEM_NVALUES];
	uint64_t pcs[];
} ember__memagg_stack;

typedef struct ember__memagg {
	ember__arena arena;
	ember__u64map index; /* stack hash -> position+1 of the first stack */
	ember__memagg_stack **stacks;
	size_t n, cap;
	uint64_t samples; /* sampled events added (allocations and live blocks) */
	double total[EMBER_MEM_NVALUES];
} ember__memagg;

void ember__memagg_init(ember__memagg *m);
void ember__memagg_release(ember__memagg *m);

/*
 * Adds v[0..3] (EMBER_MEM_* order) to the stack pcs[0..depth): leaf
 * first, the leaf an exact address (inside the call instruction) and the
 * callers return addresses, as the unwinders record them. A source whose
 * leaf is a return address too subtracts 1 from it. 0 or EMBER_ERR_NOMEM.
 */
int ember__memagg_add(ember__memagg *m, const uint64_t *pcs, uint32_t depth,
		      const double v[EMBER_MEM_NVALUES]);

/* The first stack added with this stack hash, or NULL. */
const ember__memagg_stack *ember__memagg_find(const ember__memagg *m, uint64_t hash);

/*
 * The memory profile of [start_ns, end_ns): sample types
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes (values rounded to integers; default inuse_space),
 * period_type space/bytes with period `mean` (the sampling mean, 0 if
 * unknown). Stacks whose values all round to 0 are left out; each
 * stack's `sample` says which sample it became. On success *out is the
 * caller's. 0 or ember_err.
 */
int ember__memagg_profile(ember__memagg *m, ember__symbolizer *sym, const ember__window_cfg *cfg,
			  uint64_t mean, int64_t start_ns, int64_t end_ns, ember__profile **out);

#endif
