/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampbuf.c - the multi-producer, single-consumer sample ring (sampbuf.h).
 *
 * Producers: ember__sampbuf_claim/commit, called in the signal handler,
 * lock-free, with one CAS loop, and async-signal-safe. Consumer: the agent
 * thread. The ring memory is mmap'd up front so that the handler never
 * allocates; pages are touched lazily, so RSS grows only with use.
 */
#include "sample/sampbuf.h"

#include <errno.h>
#include <sys/mman.h>

#include "emberprof.h"
#include "sample/labels.h"

enum { SLOT_FREE = 0, SLOT_WRITING = 1, SLOT_READY = 2 };

static ember__sample_rec *slot(ember__sampbuf *b, uint64_t i)
{
	return (ember__sample_rec *)(b->mem + (size_t)(i % b->nslots) * b->slot_size);
}

int ember__sampbuf_init(ember__sampbuf *b, uint32_t nslots, uint32_t max_depth)
{
	if (nslots == 0 || max_depth == 0)
		return EMBER_ERR_INVALID;
	b->nslots = nslots;
	b->max_depth = max_depth;
	b->slot_size = (sizeof(ember__sample_rec) + (size_t)max_depth * sizeof(uint64_t) +
			EMBER__LABEL_BYTES + 63u) & ~(size_t)63u;
	b->mem_size = b->slot_size * nslots;
	void *m = mmap(NULL, b->mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		b->mem = NULL;
		return errno == ENOMEM ? EMBER_ERR_NOMEM : EMBER_ERR_SYS;
	}
	b->mem = m;
	atomic_init(&b->head, 0);
	atomic_init(&b->tail, 0);
	return 0;
}

void ember__sampbuf_destroy(ember__sampbuf *b)
{
	if (b->mem)
		munmap(b->mem, b->mem_size);
	b->mem = NULL;
}

ember__sample_rec *ember__sampbuf_claim(ember__sampbuf *b)
{
	uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed);
	for (;;) {
		uint64_t t = atomic_load_explicit(&b->tail, memory_order_acquire);
		if ((int64_t)(h - t) < 0) { /* h went stale while tail moved on */
			h = atomic_load_explicit(&b->head, memory_order_relaxed);
			continue;
		}
		if (h - t >= b->nslots)
			return NULL;
		/* The consumer frees a slot before it advances tail past it, and
		 * we read tail with acquire: a claimed index's slot is free. */
		if (atomic_compare_exchange_weak_explicit(&b->head, &h, h + 1, memory_order_acq_rel,
							  memory_order_relaxed)) {
			ember__sample_rec *r = slot(b, h);
			atomic_store_explicit(&r->state, SLOT_WRITING, memory_order_relaxed);
			return r;
		}
	}
}

void ember__sampbuf_commit(ember__sample_rec *r)
{
	atomic_store_explicit(&r->state, SLOT_READY, memory_order_release);
}

ember__sample_rec *ember__sampbuf_peek(ember__sampbuf *b)
{
	uint64_t t = atomic_load_explicit(&b->tail, memory_order_relaxed);
	if (t == atomic_load_explicit(&b->head, memory_order_acquire))
		return NULL;
	ember__sample_rec *r = slot(b, t);
	if (atomic_load_explicit(&r->state, memory_order_acquire) != SLOT_READY)
		return NULL;
	return r;
}

void ember__sampbuf_release(ember__sampbuf *b, ember__sample_rec *r)
{
	atomic_store_explicit(&r->state, SLOT_FREE, memory_order_relaxed);
	uint64_t t = atomic_load_explicit(&b->tail, memory_order_relaxed);
	atomic_store_explicit(&b->tail, t + 1, memory_order_release);
}

uint64_t ember__sampbuf_pending(ember__sampbuf *b)
{
	return atomic_load_explicit(&b->head, memory_order_acquire) -
	       atomic_load_explicit(&b->tail, memory_order_acquire);
}
