/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decode.h - the long polls recorded in profiles, for `emberprof longpolls`.
 *
 * Three sources:
 *  - pprof written by emberprof (path a): samples labelled poll_id and
 *    poll_duration_ms (poll_open=1: the poll had not ended when its
 *    window closed; the duration is the time so far). The thread comes
 *    from the thread_id/thread_name labels when present.
 *  - JFR (jfr_read.h): async-profiler's recordings with tokio.PollcatchV1
 *    user events (path b). Each event's 16-byte payload holds the poll's
 *    start and end in TSC ticks; the poll is
 *    [event.startTime - (end - start), event.startTime] in the chunk's
 *    ticks, which are the TSC when the chunk's jdk.ActiveSetting says
 *    clock=tsc (required, as async-profiler's decoder requires it), and a
 *    jdk.ExecutionSample or profiler.WallClockSample belongs to it when
 *    it is on the same OS thread and strictly inside. Durations use the
 *    chunk header's ticksPerSecond.
 *  - JFR written by emberprof (encode/jfr.h): emberprof.LongPoll events
 *    {startTime, duration, eventThread, pollId, open}; the poll is
 *    [startTime, startTime + duration], in ns since the epoch through each
 *    chunk's header (our chunks count ticks from their own start), and
 *    the samples on its thread strictly inside belong to it. Its id is
 *    the agent's (as in pprof); events of one id (open in one window,
 *    ended in the next) are one poll, the ended event's span winning. A
 *    LongPoll is listed even without samples.
 *
 * Polls are merged by id across files (PollcatchV1 polls get ids of their
 * own, kept apart with bit 63); their stacks by identical frames.
 * Not async-signal-safe; CLI and tests only.
 */
#ifndef EMBER_POLL_DECODE_H
#define EMBER_POLL_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "util/arena.h"
#include "util/hashmap.h"

typedef struct ember__lp_stack {
	const char **frames; /* function names, leaf first */
	uint32_t nframes;
	uint64_t samples;
} ember__lp_stack;

typedef struct ember__lp_poll {
	uint64_t id;
	int64_t tid;        /* -1 if unknown */
	const char *thread; /* NULL if unknown */
	double duration_ms;
	int open;           /* still running when last seen: duration is a lower bound */
	uint64_t samples;
	ember__lp_stack *stacks;
	size_t nstacks, cap;
} ember__lp_poll;

typedef struct ember__longpolls {
	ember__arena arena;
	ember__lp_poll *polls;
	size_t n, cap;
	ember__u64map index; /* id -> position + 1 */
	uint64_t next_jfr_id; /* ids given to JFR polls */
} ember__longpolls;

void ember__longpolls_init(ember__longpolls *lp);
void ember__longpolls_free(ember__longpolls *lp);

/*
 * Adds `count` samples with stack frames[0..n) (leaf first; copied) to the
 * poll `id`, creating it if new. The longest duration seen wins (a poll
 * reported open in one window and ended in the next). count 0 only
 * records the poll (no stack). 0 or EMBER_ERR_NOMEM.
 */
int ember__longpolls_add(ember__longpolls *lp, uint64_t id, int64_t tid, const char *thread,
			 double duration_ms, int open, const char *const *frames, uint32_t n,
			 uint64_t count);

/* Adds the labelled samples of a pprof profile. Samples without poll_id
 * are ignored; a malformed poll label fails with EMBER_ERR_FORMAT. */
int ember__longpolls_add_pprof(ember__longpolls *lp, const ember__profile *p);

/*
 * Adds the long polls of data[0..len): JFR (starts with "FLR\0") or pprof
 * (gzip'd or raw). `name` names the input in messages. EMBER_ERR_FORMAT
 * with a message naming the problem for bad input.
 */
int ember__longpolls_add_data(ember__longpolls *lp, const uint8_t *data, size_t len,
			      const char *name);
/* The same for a file. EMBER_ERR_IO if it cannot be read. */
int ember__longpolls_add_file(ember__longpolls *lp, const char *path);

/* Sorts polls by duration, longest first, and each poll's stacks by samples. */
void ember__longpolls_sort(ember__longpolls *lp);

#endif
