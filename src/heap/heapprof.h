/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heapprof.h - allocation profiling, agent side: the malloc hook's ring
 * drained into per-window sums, the live table read at each window's end,
 * and other heap profile sources (the jemalloc backend) added in; one
 * memory profile per window (profile_type "memory"). Agent thread only,
 * except where a function says otherwise.
 *
 * Life cycle, from agent.c: ember__heapprof_start on the agent thread
 * (after the unwind tables exist, before the first window); then each
 * drain ember__heapprof_drain and each window end ember__heapprof_window;
 * at stop ember__heapprof_detach on the stopping thread BEFORE the signal
 * handler is uninstalled (whose quiesce then also waits for any sampled
 * allocation in flight), the final drain and window on the agent thread,
 * then ember__heapprof_stop once that thread has exited. The struct lives
 * as long as the agent (ember__heapprof_free at shutdown).
 */
#ifndef EMBER_HEAP_HEAPPROF_H
#define EMBER_HEAP_HEAPPROF_H

#include <stdint.h>

#include "heap/memagg.h"
#include "profile/profile.h"
#include "profile/window.h"
#include "symbols/symbolizer.h"
#include "util/log.h"

typedef struct ember__heapprof ember__heapprof;

/*
 * What allocation profiling takes from the agent's settings (filled from
 * its ember__config: ember__config_heap, agent/core.h). Borrowed for
 * each call that takes it; nothing keeps it.
 */
typedef struct ember__heap_cfg {
	uint64_t alloc_mean;       /* mean bytes between samples */
	unsigned max_depth;        /* frames kept per stack */
	int alloc_backend;         /* ember_alloc_backend */
	ember__window_cfg window;  /* the memory profile's static tags */
	const ember__logger *log;  /* may be NULL: nothing logged */
} ember__heap_cfg;

/*
 * A source of heap profile data other than the malloc hook (the jemalloc
 * backend, src/heap/jemalloc*.c). Called on the agent thread.
 *  - start (optional): when sampling starts; `mean` is the configured
 *    sampling mean in bytes. A negative return disables the source for
 *    this run (the message from ember_last_error() is logged).
 *  - collect: at the end of each window [start_ns, end_ns), adds to
 *    `out` (ember__memagg_add) what was allocated in the window and what
 *    is live at its end, already unsampled (EMBER_MEM_* values). 0 or
 *    ember_err (logged and counted; the window is still reported).
 *  - stop (optional): when sampling stops, after the last collect.
 *  - destroy (optional): with the agent.
 * flags: EMBER_HEAP_SOURCE_EXCLUSIVE when the source sees the process's
 * allocations itself (jemalloc's own sampling): the malloc hook then
 * stays detached for the run, so nothing is counted twice.
 */
#define EMBER_HEAP_SOURCE_EXCLUSIVE 0x1u

typedef struct ember__heap_source {
	const char *name;
	void *ud;
	unsigned flags;
	int (*start)(void *ud, uint64_t mean);
	int (*collect)(void *ud, int64_t start_ns, int64_t end_ns, ember__memagg *out);
	void (*stop)(void *ud);
	void (*destroy)(void *ud);
} ember__heap_source;

/* One sampled allocation of the closed window (for the JFR encoder). */
typedef struct ember__heap_event {
	int64_t time_ns;   /* CLOCK_REALTIME */
	int32_t tid;
	int32_t sample;    /* index of its stack's sample in the window's memory
			      profile (set when the window closes); -1: none */
	uint64_t size;     /* bytes requested */
	uint64_t address;  /* the block */
	double weight;     /* bytes it stands for (unsampled) */
	uint64_t stack;    /* stack hash: ember__heapprof_stack */
} ember__heap_event;

/* Counters since the agent was built. */
typedef struct ember__heap_stats {
	uint64_t sampled;       /* allocations recorded */
	uint64_t dropped_full;  /* sampled, ring full: lost (counted, logged at stop) */
	uint64_t no_bounds;     /* recorded without a stack: thread bounds unknown */
	uint64_t live_overflow; /* live table full: missing from inuse_* */
	uint64_t live_unknown;  /* live blocks whose stack was not drained yet */
} ember__heap_stats;

/*
 * Starts allocation profiling with the sampling mean cfg->alloc_mean
 * (bytes): maps the ring and the live table, attaches the hook, starts
 * the sources. *hp is created on the first call and kept across runs.
 * With `want_events` (a reporter takes JFR) each sampled allocation is
 * also kept as an event (ember__heapprof_events), at most 100000 per
 * window. Logs a warning when malloc is not interposed in this process.
 * 0 or ember_err.
 */
int ember__heapprof_start(ember__heapprof **hp, const ember__heap_cfg *cfg, int want_events);

/* Adds a source (copied). The heapprof owns it from then on. */
int ember__heapprof_add_source(ember__heapprof **hp, const ember__heap_source *src);

/* Stops the hook taking new samples (any thread; see above). NULL ok. */
void ember__heapprof_detach(ember__heapprof *hp);

/* Moves the ring's records into the window sums: records at or after
 * win_end go to the next window. Returns how many it moved. NULL ok. */
uint32_t ember__heapprof_drain(ember__heapprof *hp, int64_t win_end);

/*
 * The agent's wait before the next drain, from the last wait cur_ns and
 * the records the drain after it found (`drained`) in a ring of `slots`:
 * EMBER_HEAP_DRAIN_MIN_NS at once if it was over half full, halved (down
 * to that) if over a quarter full, so that a burst of samples (many
 * threads allocating at the default mean, or a small mean) is drained
 * before the ring fills and drops them; doubled back, up to
 * EMBER_HEAP_DRAIN_MAX_NS, once drains find it under a sixteenth full.
 * A pure function.
 */
#define EMBER_HEAP_DRAIN_MIN_NS 1000000LL
#define EMBER_HEAP_DRAIN_MAX_NS 50000000LL
int64_t ember__heap_drain_interval(int64_t cur_ns, uint32_t drained, uint32_t slots);

/* The next drain interval for hp after a drain that moved `drained`
 * records (EMBER_HEAP_DRAIN_MAX_NS without a ring). NULL ok. */
int64_t ember__heapprof_next_drain(const ember__heapprof *hp, int64_t cur_ns, uint32_t drained);

/*
 * Closes the window [start_ns, end_ns): the live table and the sources
 * give the in-use values; the profile goes to *out (NULL when the window
 * saw nothing and is not final) and *nsamples is the number of sampled
 * events in it. The window's allocation events stay readable through
 * ember__heapprof_events until the next call. 0 or ember_err.
 */
int ember__heapprof_window(ember__heapprof *hp, ember__symbolizer *sym, const ember__heap_cfg *cfg,
			   int64_t start_ns, int64_t end_ns, int final, ember__profile **out,
			   uint64_t *nsamples);

/* The sampled allocations of the window last closed. */
void ember__heapprof_events(const ember__heapprof *hp, const ember__heap_event **ev, size_t *n);
/* An event's stack (leaf first, as ember__memagg_add), valid until the
 * next ember__heapprof_window; NULL with *depth 0 if unknown. */
const uint64_t *ember__heapprof_stack(const ember__heapprof *hp, uint64_t stack, uint32_t *depth);

/* After the agent thread exited: unmaps the ring, empties the live table,
 * stops the sources. NULL ok. */
void ember__heapprof_stop(ember__heapprof *hp);

void ember__heapprof_stats(const ember__heapprof *hp, ember__heap_stats *out);
/* Whether the malloc hook is attached (this run samples through it). */
int ember__heapprof_hooked(const ember__heapprof *hp);
void ember__heapprof_free(ember__heapprof *hp);

#endif
