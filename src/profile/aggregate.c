/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aggregate.c - stack deduplication for one window (aggregate.h).
 */
#include "profile/aggregate.h"

#include <stdlib.h>
#include <string.h>

#include "emberprof.h"

void ember__agg_init(ember__agg *a)
{
	memset(a, 0, sizeof(*a));
}

void ember__agg_release(ember__agg *a)
{
	ember__arena_release(&a->arena);
	ember__u64map_free(&a->index);
	ember__u64map_free(&a->names);
	free(a->events);
	free(a->stacks);
	free(a->next);
	memset(a, 0, sizeof(*a));
}

static uint64_t stack_hash(int32_t tid, const uint64_t *pcs, uint32_t depth,
			   const uint8_t *labels, uint32_t label_len)
{
	uint64_t h = ember__hash_bytes(pcs, depth * sizeof(*pcs),
				       (uint64_t)(uint32_t)tid * 0x9e3779b97f4a7c15ULL + depth);
	return label_len ? ember__hash_bytes(labels, label_len, h) : h;
}

int ember__agg_add(ember__agg *a, int32_t tid, const uint64_t *pcs, uint32_t depth,
		   const uint8_t *labels, uint32_t label_len, uint64_t weight)
{
	uint64_t h = stack_hash(tid, pcs, depth, labels, label_len);
	int inserted;
	uint64_t *head = ember__u64map_put(&a->index, h, &inserted);
	if (!head)
		return EMBER_ERR_NOMEM;
	for (uint64_t pos = inserted ? 0 : *head; pos; pos = a->next[pos - 1]) {
		ember__agg_stack *s = a->stacks[pos - 1];
		if (s->tid == tid && s->depth == depth && s->label_len == label_len &&
		    !memcmp(s->pcs, pcs, depth * sizeof(*pcs)) &&
		    (!label_len || !memcmp(ember__agg_labels(s), labels, label_len))) {
			s->count++;
			s->weight += weight;
			a->last = (uint32_t)(pos - 1);
			a->samples++;
			a->weight += weight;
			return 0;
		}
	}
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 256;
		ember__agg_stack **ns = realloc(a->stacks, ncap * sizeof(*ns));
		if (!ns)
			return EMBER_ERR_NOMEM;
		a->stacks = ns;
		uint32_t *nn = realloc(a->next, ncap * sizeof(*nn));
		if (!nn)
			return EMBER_ERR_NOMEM;
		a->next = nn;
		a->cap = ncap;
	}
	ember__agg_stack *s =
		ember__arena_alloc(&a->arena, sizeof(*s) + depth * sizeof(*pcs) + label_len);
	if (!s)
		return EMBER_ERR_NOMEM;
	s->tid = tid;
	s->depth = depth;
	s->count = 1;
	s->weight = weight;
	s->hash = h;
	memcpy(s->pcs, pcs, depth * sizeof(*pcs));
	s->label_len = label_len;
	if (label_len)
		memcpy((uint8_t *)(s->pcs + depth), labels, label_len);
	a->stacks[a->n] = s;
	a->next[a->n] = inserted ? 0 : (uint32_t)*head;
	a->last = (uint32_t)a->n;
	a->n++;
	*head = a->n;
	a->samples++;
	a->weight += weight;
	return 0;
}

int ember__agg_log(ember__agg *a, size_t cap, int64_t time_ns, int32_t tid, uint64_t weight,
		   uint8_t kind, uint8_t state)
{
	if (a->nevents >= cap) {
		a->events_dropped++;
		return 0;
	}
	if (a->nevents == a->cap_events) {
		size_t ncap = a->cap_events ? a->cap_events * 2 : 1024;
		if (ncap > cap)
			ncap = cap;
		ember__agg_event *n = realloc(a->events, ncap * sizeof(*n));
		if (!n) {
			a->events_dropped++;
			return EMBER_ERR_NOMEM;
		}
		a->events = n;
		a->cap_events = ncap;
	}
	a->events[a->nevents++] = (ember__agg_event){time_ns, weight, a->last, tid, kind, state};
	return 0;
}

int ember__agg_set_name(ember__agg *a, int32_t tid, const char *name)
{
	int inserted;
	uint64_t *v = ember__u64map_put(&a->names, (uint64_t)(uint32_t)tid, &inserted);
	if (!v)
		return EMBER_ERR_NOMEM;
	if (inserted || !*v) {
		char *copy = ember__arena_strdup(&a->arena, name);
		if (!copy)
			return EMBER_ERR_NOMEM;
		*v = (uint64_t)(uintptr_t)copy;
	}
	return 0;
}

int ember__agg_rename(ember__agg *a, int32_t tid, const char *name)
{
	uint64_t *v = ember__u64map_put(&a->names, (uint64_t)(uint32_t)tid, NULL);
	char *copy = v ? ember__arena_strdup(&a->arena, name) : NULL;
	if (!copy)
		return EMBER_ERR_NOMEM;
	*v = (uint64_t)(uintptr_t)copy;
	return 0;
}

const char *ember__agg_name(const ember__agg *a, int32_t tid)
{
	uint64_t *v = ember__u64map_get(&a->names, (uint64_t)(uint32_t)tid);
	return v ? (const char *)(uintptr_t)*v : NULL;
}

int ember__agg_has_name(const ember__agg *a, int32_t tid)
{
	return ember__u64map_get(&a->names, (uint64_t)(uint32_t)tid) != NULL;
}
