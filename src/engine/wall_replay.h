/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wall_replay.h - the agent's side of the wall-clock engine's "thread left
 * asleep" records (engine_wall.h).
 *
 * The timer thread does not signal a thread that has not run since a wall
 * sample found it asleep; it puts a stackless EMBER_SAMPLE_REPEAT record
 * in the ring instead, naming that sample by its sequence number; so does
 * a thread's exit hook for the time since its last wall sample, asleep or
 * running (threads.c). The agent thread keeps, per thread, a copy of its
 * last wall sample (stack, labels and state) as it drains the ring, and
 * gives that copy to each repeat record that names it. The ring delivers
 * a sample before any repeat of it (the handler publishes the number only
 * after committing the sample), so a repeat normally finds its sample;
 * one that does not (that sample was dropped, or memory ran out) is
 * counted as lost.
 *
 * Agent thread only; not async-signal-safe (it allocates).
 */
#ifndef EMBER_WALL_REPLAY_H
#define EMBER_WALL_REPLAY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hashmap.h"

typedef struct ember__wall_replay {
	ember__u64map by_tid; /* tid -> struct replay_ent * (wall_replay.c) */
	uint64_t notes;       /* samples noted, for the periodic sweep */
	_Atomic uint64_t repeated; /* repeat records resolved (stats read them) */
	_Atomic uint64_t lost;     /* repeat records whose sample was not found */
} ember__wall_replay;

/*
 * Notes a wall sample of thread `tid`: with `seq` nonzero keeps a copy of
 * its stack, of its final labels, of its state (`state`: its
 * EMBER_SAMPLE_SLEEPING/RUNNING bits) and of the pollcatch poll it slept
 * in (`poll_start`, 0: none); with 0 (no number) forgets the thread's copy. `time_ns` (the sample's) ages copies out: a
 * thread not sampled for 10 minutes is presumed gone. 0 or
 * EMBER_ERR_NOMEM (then the copy is missing and its repeats are lost).
 */
int ember__wall_replay_note(ember__wall_replay *w, int32_t tid, uint32_t seq, uint32_t state,
			    int64_t time_ns, const uint64_t *pcs, uint32_t depth,
			    const uint8_t *labels, uint32_t label_len, uint64_t poll_start);

/*
 * Resolves a repeat record of thread `tid` naming sample `seq`: sets the
 * stack, labels, poll and state to repeat (borrowed until the next note) and returns 1,
 * or returns 0 (counted in `lost`) when that sample is not known.
 */
int ember__wall_replay_find(ember__wall_replay *w, int32_t tid, uint32_t seq, int64_t time_ns,
			    const uint64_t **pcs, uint32_t *depth, const uint8_t **labels,
			    uint32_t *label_len, uint64_t *poll_start, uint32_t *state);

void ember__wall_replay_free(ember__wall_replay *w);

#endif
