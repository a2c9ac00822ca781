/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wall_replay.c - per-thread copies of the last sleeping wall sample, for
 * the records of threads left asleep (wall_replay.h).
 */
#include "engine/wall_replay.h"

#include <stdlib.h>
#include <string.h>

#include "emberprof.h"

#define REPLAY_MAX_AGE_NS (600LL * 1000000000LL)
#define REPLAY_SWEEP_EVERY 4096

typedef struct replay_ent {
	uint32_t seq;
	uint32_t depth;
	uint32_t label_len;
	uint32_t state;  /* the sample's EMBER_SAMPLE_SLEEPING/RUNNING bits */
	size_t room;     /* bytes allocated at pcs */
	int64_t last_ns; /* time of the sample or of its latest repeat */
	uint64_t poll_start; /* pollcatch: the poll the thread slept in, 0: none */
	uint64_t *pcs;   /* depth pcs, then label_len bytes of labels */
} replay_ent;

static replay_ent *ent_of(const ember__wall_replay *w, int32_t tid)
{
	uint64_t *v = ember__u64map_get(&w->by_tid, (uint64_t)(uint32_t)tid);
	return v ? (replay_ent *)(uintptr_t)*v : NULL;
}

static void clear_ent(replay_ent *e)
{
	free(e->pcs);
	e->pcs = NULL;
	e->room = 0;
	e->seq = 0;
	e->depth = e->label_len = 0;
}

/* Frees the copies of threads not sampled for REPLAY_MAX_AGE_NS (their
 * map slots stay, empty: the map has no removal, and they are small). */
static void sweep(ember__wall_replay *w, int64_t now_ns)
{
	for (size_t i = 0; i < w->by_tid.cap; i++) {
		if (!w->by_tid.slots[i].used)
			continue;
		replay_ent *e = (replay_ent *)(uintptr_t)w->by_tid.slots[i].value;
		if (e && e->pcs && now_ns - e->last_ns > REPLAY_MAX_AGE_NS)
			clear_ent(e);
	}
}

int ember__wall_replay_note(ember__wall_replay *w, int32_t tid, uint32_t seq, uint32_t state,
			    int64_t time_ns, const uint64_t *pcs, uint32_t depth,
			    const uint8_t *labels, uint32_t label_len, uint64_t poll_start)
{
	if (++w->notes % REPLAY_SWEEP_EVERY == 0)
		sweep(w, time_ns);
	replay_ent *e = ent_of(w, tid);
	if (!seq) {
		if (e)
			clear_ent(e);
		return 0;
	}
	if (!e) {
		int inserted = 0;
		uint64_t *v = ember__u64map_put(&w->by_tid, (uint64_t)(uint32_t)tid, &inserted);
		if (!v)
			return EMBER_ERR_NOMEM;
		e = calloc(1, sizeof(*e));
		if (!e)
			return EMBER_ERR_NOMEM;
		*v = (uint64_t)(uintptr_t)e;
	}
	/* Every wall sample passes here (running ones too): the copy's room
	 * is reused, grown only for a deeper stack or longer labels. */
	size_t need = (size_t)depth * sizeof(*pcs) + label_len + 1;
	if (need > e->room) {
		size_t room = need < 512 ? 512 : need;
		uint64_t *copy = malloc(room);
		if (!copy) {
			clear_ent(e);
			return EMBER_ERR_NOMEM;
		}
		free(e->pcs);
		e->pcs = copy;
		e->room = room;
	}
	if (depth)
		memcpy(e->pcs, pcs, (size_t)depth * sizeof(*pcs));
	if (label_len)
		memcpy(e->pcs + depth, labels, label_len);
	e->seq = seq;
	e->state = state;
	e->depth = depth;
	e->label_len = label_len;
	e->last_ns = time_ns;
	e->poll_start = poll_start;
	return 0;
}

int ember__wall_replay_find(ember__wall_replay *w, int32_t tid, uint32_t seq, int64_t time_ns,
			    const uint64_t **pcs, uint32_t *depth, const uint8_t **labels,
			    uint32_t *label_len, uint64_t *poll_start, uint32_t *state)
{
	replay_ent *e = ent_of(w, tid);
	if (!e || !e->pcs || e->seq != seq) {
		atomic_fetch_add_explicit(&w->lost, 1, memory_order_relaxed);
		return 0;
	}
	e->last_ns = time_ns;
	*pcs = e->pcs;
	*depth = e->depth;
	*labels = (const uint8_t *)(e->pcs + e->depth);
	*label_len = e->label_len;
	*poll_start = e->poll_start;
	*state = e->state;
	atomic_fetch_add_explicit(&w->repeated, 1, memory_order_relaxed);
	return 1;
}

void ember__wall_replay_free(ember__wall_replay *w)
{
	for (size_t i = 0; i < w->by_tid.cap; i++) {
		if (!w->by_tid.slots[i].used)
			continue;
		replay_ent *e = (replay_ent *)(uintptr_t)w->by_tid.slots[i].value;
		if (e) {
			free(e->pcs);
			free(e);
		}
	}
	ember__u64map_free(&w->by_tid);
	w->notes = 0; /* the counters are totals: kept */
}
