/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampbuf.h - the preallocated ring that carries samples from the signal
 * handler (many producers: any thread) to the agent thread (one consumer).
 *
 * Fixed-size slots, each big enough for the configured maximum depth, are
 * claimed by a compare-and-swap on the head counter. A slot is written and
 * then published by a release store of its state; the consumer takes
 * published slots in order and frees them. When every slot is in use the
 * sample is dropped and counted: the handler never waits.
 */
#ifndef EMBER_SAMPBUF_H
#define EMBER_SAMPBUF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ember__sample_rec {
	_Atomic uint32_t state; /* SLOT_FREE, SLOT_WRITING, SLOT_READY */
	uint32_t depth;
	int32_t tid;
	uint32_t flags;  /* EMBER_UNWIND_* and EMBER_SAMPLE_* (sample/handler.h) */
	uint32_t label_len; /* bytes of packed labels after pcs[max_depth] */
	uint32_t reserved;
	uint64_t weight; /* nanoseconds this sample stands for (CPU or wall time) */
	int64_t time_ns; /* CLOCK_REALTIME */
	union {
		/* CPU and wall samples: pollcatch's poll clock at the start of
		 * the thread's poll, 0: none */
		uint64_t poll_start;
		/* allocation samples (src/heap/): the block's address, here in
		 * the record's first cache line, which the claim has just
		 * touched (the label area after pcs[] is a cold line) */
		uint64_t addr;
	};
	uint64_t pcs[];  /* leaf first */
} ember__sample_rec;

typedef struct ember__sampbuf {
	unsigned char *mem; /* nslots * slot_size bytes, mmap'd */
	size_t mem_size;
	uint32_t nslots;
	uint32_t max_depth;
	size_t slot_size;
	_Atomic uint64_t head; /* next slot to claim */
	_Atomic uint64_t tail; /* next slot to consume */
} ember__sampbuf;

/* The packed labels of a record (EMBER__LABEL_BYTES of room). */
static inline uint8_t *ember__sample_labels(const ember__sampbuf *b, ember__sample_rec *r)
{
	return (uint8_t *)(r->pcs + b->max_depth);
}

/* Maps the ring. Agent thread; not async-signal-safe. 0 or ember_err. */
int ember__sampbuf_init(ember__sampbuf *b, uint32_t nslots, uint32_t max_depth);
/* Unmaps the ring. The caller guarantees no handler is running. */
void ember__sampbuf_destroy(ember__sampbuf *b);

/* Claims a slot for writing, or NULL when full. Async-signal-safe. */
ember__sample_rec *ember__sampbuf_claim(ember__sampbuf *b);
/* Publishes a claimed slot. Async-signal-safe. */
void ember__sampbuf_commit(ember__sample_rec *r);

/*
 * Consumer side (agent thread only): the oldest published slot, or NULL
 * when the ring is empty or the oldest slot is still being written.
 * Release it with ember__sampbuf_release() before peeking again.
 */
ember__sample_rec *ember__sampbuf_peek(ember__sampbuf *b);
void ember__sampbuf_release(ember__sampbuf *b, ember__sample_rec *r);
/* Slots claimed but not yet consumed. */
uint64_t ember__sampbuf_pending(ember__sampbuf *b);

#endif
