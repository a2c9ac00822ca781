/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve.h - the agent's side of pollcatch: which samples were taken in
 * a long poll (see pollcatch.h for the application side).
 *
 * The drain hands every sample stamped with a poll start (sample_rec
 * .poll_start) to ember__pollres_hold(), which copies it aside instead of
 * aggregating it. ember__pollres_resolve() then takes the ended polls'
 * records from the ring and releases each held sample to the aggregate
 * through `emit`: with labels poll_id and poll_duration_ms when its poll
 * lasted at least the threshold, as it was otherwise. A sample whose poll
 * has not ended by the time its window closes is released then: labelled
 * with the duration so far (and poll_open=1) if that already reaches the
 * threshold, unlabelled otherwise. A thread's polls follow one another,
 * so a held sample whose thread has since started a later poll belongs to
 * a poll that ended: if its record never came (the ring was full), it is
 * released unlabelled and counted.
 *
 * For JFR, `emit` also gets the long poll itself (ember__pollres_long:
 * id, thread, start and duration in CLOCK_REALTIME ns), and
 * ember__pollres_list collects them per window: the agent writes one
 * emberprof.LongPoll event per long poll its window's samples were in
 * (encode/jfr.h). The poll clock is converted to CLOCK_REALTIME at the
 * time of release (now - age / ticks per second), so the error grows with
 * the poll's age at release (normally one drain period) times the error of
 * the measured tick rate. Agent thread only.
 */
#ifndef EMBER_POLL_RESOLVE_H
#define EMBER_POLL_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "pollcatch/pollcatch.h"
#include "util/hashmap.h"

typedef struct ember__pollres_sample {
	int32_t tid;      /* the thread's id (always) */
	int32_t agg_tid;  /* the id the aggregate uses (0 without thread labels) */
	uint32_t flags;   /* the ring record's flags (EMBER_SAMPLE_WALL ...) */
	uint32_t depth;
	uint32_t label_len;
	uint32_t reserved;
	int64_t time_ns;  /* CLOCK_REALTIME */
	uint64_t weight;
	uint64_t poll_start;
	uint64_t pcs[];   /* then label_len bytes of packed labels */
} ember__pollres_sample;

static inline const uint8_t *ember__pollres_labels(const ember__pollres_sample *s)
{
	return (const uint8_t *)(s->pcs + s->depth);
}

/* Room for a released sample's labels: its own (wall samples add
 * thread_state) plus the poll's. */
#define EMBER_POLLRES_LABEL_BYTES 512

typedef struct ember__pollres_poll {
	ember__poll_rec rec; /* rec.end == 0: still open when last seen */
	uint64_t id;         /* poll_id once labelled, else 0 */
} ember__pollres_poll;

typedef struct ember__pollres {
	unsigned threshold_ms;
	ember__pollres_sample **held;
	size_t nheld, capheld;
	ember__pollres_poll *polls;
	size_t npolls, cappolls;
	ember__u64map index; /* hash(tid, start) -> position + 1 in polls */
	ember__u64map latest; /* tid -> the latest poll start seen (records, samples) */
	uint64_t next_id;
	uint64_t long_polls, samples_labelled, samples_unresolved;
	uint64_t samples_lost_record; /* their poll ended, its record was dropped */
} ember__pollres;

/* A long poll as one released sample saw it. */
typedef struct ember__pollres_long {
	uint64_t id;         /* the poll_id label */
	int64_t start_ns;    /* CLOCK_REALTIME: start of its busy part (ended), of the poll (open) */
	int64_t duration_ns; /* its busy time; open: the time so far */
	int32_t tid;
	int open;            /* had not ended (poll_open=1) */
} ember__pollres_long;

/* Receives a released sample, its long poll (NULL: none) and its labels
 * (the held ones plus the poll's). */
typedef int (*ember__pollres_emit_fn)(void *ud, const ember__pollres_sample *s,
				      const ember__pollres_long *poll, const uint8_t *labels,
				      uint32_t label_len);

void ember__pollres_init(ember__pollres *r, unsigned threshold_ms);
/* Frees what is held (samples not yet released are lost: call resolve first). */
void ember__pollres_free(ember__pollres *r);
/* Empties the record ring of records left from a previous run. */
void ember__pollres_discard_records(void);

/* Copies one sample aside. 0 or EMBER_ERR_NOMEM. */
int ember__pollres_hold(ember__pollres *r, int32_t tid, int32_t agg_tid, uint32_t flags,
			int64_t time_ns, uint64_t weight, uint64_t poll_start, const uint64_t *pcs,
			uint32_t depth, const uint8_t *labels, uint32_t label_len);

/*
 * Takes the records from the ring and releases the held samples whose
 * poll ended, and those taken before `flush_before_ns` (CLOCK_REALTIME)
 * whatever their poll's state. Returns the first error of `emit`, or 0.
 */
int ember__pollres_resolve(ember__pollres *r, int64_t flush_before_ns, ember__pollres_emit_fn emit,
			   void *ud);

/* Appends key=value in the packed label format (sample/labels.h) if it
 * fits in cap; returns the new length. */
uint32_t ember__pollres_put_label(uint8_t *buf, uint32_t len, size_t cap, const char *key,
				  const char *value);

/* The long polls of one window (for its JFR recording), one entry per id. */
typedef struct ember__pollres_list {
	ember__pollres_long *v;
	size_t n, cap;
	ember__u64map index; /* id -> position + 1 */
} ember__pollres_list;

/* Adds `p`, or updates the entry with its id: an ended poll's view
 * replaces an open one's; an open one's grows a still open entry.
 * 0 or EMBER_ERR_NOMEM. */
int ember__pollres_list_note(ember__pollres_list *l, const ember__pollres_long *p);
/* Frees and empties the list (it may be used again). */
void ember__pollres_list_free(ember__pollres_list *l);

#endif
