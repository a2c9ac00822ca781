/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aggregate.h - one window's samples, deduplicated by stack.
 *
 * The agent thread drains the sample ring into the current window's
 * aggregate: identical stacks (and, with thread labels, the same thread)
 * share one entry holding a sample count and a summed weight in
 * nanoseconds (CPU or wall time). Thread names are captured when a thread
 * first appears in the window. Not async-signal-safe; agent thread only.
 */
#ifndef EMBER_AGGREGATE_H
#define EMBER_AGGREGATE_H

#include <stdint.h>

#include "util/arena.h"
#include "util/hashmap.h"

typedef struct ember__agg_stack {
	int32_t tid; /* 0 when threads are not distinguished */
	uint32_t depth;
	uint64_t count;  /* samples */
	uint64_t weight; /* nanoseconds they stand for */
	uint64_t hash;
	uint32_t label_len; /* packed labels (sample/labels.h format) after pcs */
	uint32_t reserved;
	uint64_t pcs[];  /* leaf first */
} ember__agg_stack;

/*
 * One sample as an event, kept (only when a reporter wants JFR) next to
 * the stack it was merged into: `stack` is its position in `stacks`, which
 * is also the index of its sample in the window's profile (window.c builds
 * sample i from stacks[i]).
 */
typedef struct ember__agg_event {
	int64_t time_ns; /* the ring record's CLOCK_REALTIME stamp */
	uint64_t weight; /* ns */
	uint32_t stack;
	int32_t tid;     /* the real thread id, thread labels or not */
	uint8_t kind;    /* EMBER_JFR_CPU or EMBER_JFR_WALL (encode/jfr.h) */
	uint8_t state;   /* EMBER_JFR_STATE_* */
} ember__agg_event;

/* Most events one aggregate logs per window (32 bytes each: 8 MiB); more
 * are dropped and counted in events_dropped. */
#define EMBER__AGG_MAX_EVENTS ((size_t)1 << 18)

typedef struct ember__agg {
	ember__arena arena;
	ember__u64map index; /* hash -> position+1 in stacks (chained through next) */
	ember__agg_stack **stacks;
	uint32_t *next;      /* collision chain: position+1 of the next stack with the same hash slot */
	size_t n, cap;
	uint64_t samples, weight;
	ember__u64map names; /* tid -> const char * (arena) */
	uint32_t last;       /* position in stacks of the last sample added */
	ember__agg_event *events; /* the event log, or NULL */
	size_t nevents, cap_events;
	uint64_t events_dropped; /* samples not logged: log full or out of memory */
} ember__agg;

void ember__agg_init(ember__agg *a);
void ember__agg_release(ember__agg *a);
/*
 * Adds one sample: `labels` holds `label_len` bytes of packed dynamic
 * labels (may be 0). Samples are merged when tid, stack and labels are
 * equal. 0 or EMBER_ERR_NOMEM.
 */
int ember__agg_add(ember__agg *a, int32_t tid, const uint64_t *pcs, uint32_t depth,
		   const uint8_t *labels, uint32_t label_len, uint64_t weight);
/* The packed labels of a stack. */
static inline const uint8_t *ember__agg_labels(const ember__agg_stack *s)
{
	return (const uint8_t *)(s->pcs + s->depth);
}
/*
 * Logs the sample ember__agg_add() just added as an event (its stack is
 * the one that call merged it into), keeping at most `cap` events; one
 * more is counted in events_dropped instead. 0 or EMBER_ERR_NOMEM (also
 * counted).
 */
int ember__agg_log(ember__agg *a, size_t cap, int64_t time_ns, int32_t tid, uint64_t weight,
		   uint8_t kind, uint8_t state);
/* Records a thread's name unless one is known. */
int ember__agg_set_name(ember__agg *a, int32_t tid, const char *name);
/* Records a thread's name, replacing a known one (a thread that renamed
 * itself: the window's samples of it all take the new name). */
int ember__agg_rename(ember__agg *a, int32_t tid, const char *name);
/* A thread's name or NULL; borrowed from the aggregate. */
const char *ember__agg_name(const ember__agg *a, int32_t tid);
int ember__agg_has_name(const ember__agg *a, int32_t tid);

#endif
