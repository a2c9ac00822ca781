/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jeheap.h - parser for jemalloc's heap profile dump ("heap_v2" text, what
 * `mallctl("prof.dump")` and `jeprof` exchange), and jeprof's unsampling.
 *
 * The format (jemalloc 4.x/5.x, src/prof_data.c):
 *
 *   heap_v2/<sample period in bytes>
 *     t*: <curobjs>: <curbytes> [<accumobjs>: <accumbytes>]     totals
 *     t<i>: ...                                                 per thread
 *   @ 0x<pc> 0x<pc> ...                                          a stack, innermost first
 *     t*: <curobjs>: <curbytes> [<accumobjs>: <accumbytes>]
 *     t<i>: ...
 *   ...
 *   MAPPED_LIBRARIES:
 *   <the dumping process's /proc/self/maps>
 *
 * Counts are of *sampled* allocations: jemalloc samples allocations as a
 * Poisson process over bytes with mean `period` between samples, so an
 * allocation of size s is sampled with probability 1 - exp(-s/period).
 * accum* are zero unless the process runs with `prof_accum:true`.
 *
 * Pure parsing: no system calls, no global state; not async-signal-safe
 * (allocates). Everything the parser returns lives in the result's arena.
 */
#ifndef EMBER_JEHEAP_H
#define EMBER_JEHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"

/* Deepest stack accepted; jemalloc records at most 128 frames. */
#define EMBER_JEHEAP_MAX_DEPTH 1024

/* One "@" stack with its process-wide ("t*") counts, as sampled. */
typedef struct ember__jeheap_stack {
	const uint64_t *pcs; /* as dumped (return addresses), innermost first */
	uint32_t depth;
	uint64_t curobjs, curbytes;     /* live now */
	uint64_t accumobjs, accumbytes; /* since start or prof.reset (prof_accum) */
} ember__jeheap_stack;

/* An executable mapping of the dumping process (MAPPED_LIBRARIES). */
typedef struct ember__jeheap_map {
	uint64_t start, limit, offset;
	const char *path; /* "" for an anonymous mapping */
} ember__jeheap_map;

typedef struct ember__jeheap {
	ember__arena arena;
	uint64_t period; /* mean bytes between samples; 0 = every allocation */
	/* The header's t* line (zeros if absent). */
	uint64_t curobjs, curbytes, accumobjs, accumbytes;
	ember__jeheap_stack *stacks;
	size_t nstacks, cap_stacks;
	ember__jeheap_map *maps;
	size_t nmaps, cap_maps;
} ember__jeheap;

/*
 * Parses `len` bytes of a dump (no terminating NUL needed) into *out,
 * which must be zeroed or released. Returns 0, EMBER_ERR_FORMAT (with a
 * message naming the line) or EMBER_ERR_NOMEM. On error *out is released.
 */
int ember__jeheap_parse(const char *buf, size_t len, ember__jeheap *out);

/* Frees everything the parser allocated; *h is empty and reusable. */
void ember__jeheap_release(ember__jeheap *h);

/*
 * jeprof's unsampling for heap_v2 (AdjustSamples): with the average size
 * s = bytes/objs, both counts are scaled by 1 / (1 - exp(-s/period)).
 * objs == 0 gives zeros; period == 0 or bytes == 0 leaves the counts as
 * they are. Results are estimates, hence doubles.
 */
void ember__jeheap_unsample(uint64_t objs, uint64_t bytes, uint64_t period, double *objs_out,
			    double *bytes_out);

/*
 * Drops, from the innermost end of every stack, the frames that lie in an
 * executable mapping of the file holding `addr` (per the dump's
 * MAPPED_LIBRARIES): jemalloc's own frames (prof_backtrace, imalloc,
 * malloc, ...) above the caller. A stack made only of such frames keeps
 * its last one. Returns how many mappings matched (0: nothing dropped).
 */
size_t ember__jeheap_strip_module(ember__jeheap *h, uint64_t addr);

#endif
