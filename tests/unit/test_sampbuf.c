/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sampbuf.c - the sample ring: order, full-ring drops, wrap-around,
 * and many concurrent producers against one consumer losing nothing.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "check.h"
#include "emberprof.h"
#include "sample/sampbuf.h"

static void test_order_and_full(void)
{
	ember__sampbuf b;
	CHECK_EQ_INT(ember__sampbuf_init(&b, 4, 8), 0);
	for (int i = 0; i < 4; i++) {
		ember__sample_rec *r = ember__sampbuf_claim(&b);
		CHECK(r != NULL);
		if (!r)
			return;
		r->depth = 1;
		r->pcs[0] = (uint64_t)i;
		ember__sampbuf_commit(r);
	}
	CHECK(ember__sampbuf_claim(&b) == NULL); /* full: the handler drops */
	CHECK_EQ_INT(ember__sampbuf_pending(&b), 4);
	for (int i = 0; i < 4; i++) {
		ember__sample_rec *r = ember__sampbuf_peek(&b);
		CHECK(r != NULL);
		if (!r)
			return;
		CHECK_EQ_INT(r->pcs[0], i);
		ember__sampbuf_release(&b, r);
	}
	CHECK(ember__sampbuf_peek(&b) == NULL);
	/* Wrap around several times. */
	for (int i = 0; i < 37; i++) {
		ember__sample_rec *r = ember__sampbuf_claim(&b);
		CHECK(r != NULL);
		if (!r)
			return;
		r->pcs[0] = (uint64_t)(100 + i);
		ember__sampbuf_commit(r);
		r = ember__sampbuf_peek(&b);
		CHECK(r && r->pcs[0] == (uint64_t)(100 + i));
		ember__sampbuf_release(&b, r);
	}
	ember__sampbuf_destroy(&b);
}

static void test_claimed_not_committed_blocks_consumer(void)
{
	ember__sampbuf b;
	CHECK_EQ_INT(ember__sampbuf_init(&b, 8, 4), 0);
	ember__sample_rec *r1 = ember__sampbuf_claim(&b);
	ember__sample_rec *r2 = ember__sampbuf_claim(&b);
	ember__sampbuf_commit(r2);
	CHECK(ember__sampbuf_peek(&b) == NULL); /* r1 still being written */
	ember__sampbuf_commit(r1);
	CHECK(ember__sampbuf_peek(&b) == r1);
	ember__sampbuf_destroy(&b);
}

#define PRODUCERS 4
#define PER_PRODUCER 50000

static ember__sampbuf shared;
static _Atomic uint64_t dropped;

static void *producer(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	for (uint64_t i = 0; i < PER_PRODUCER; i++) {
		ember__sample_rec *r = ember__sampbuf_claim(&shared);
		for (int tries = 0; !r && tries < 1000; tries++) {
			sched_yield(); /* let the consumer catch up */
			r = ember__sampbuf_claim(&shared);
		}
		if (!r) {
			atomic_fetch_add(&dropped, 1);
			continue;
		}
		r->depth = 2;
		r->pcs[0] = id;
		r->pcs[1] = i;
		ember__sampbuf_commit(r);
	}
	return NULL;
}

static void test_concurrent(void)
{
	CHECK_EQ_INT(ember__sampbuf_init(&shared, 256, 4), 0);
	pthread_t th[PRODUCERS];
	for (uintptr_t i = 0; i < PRODUCERS; i++)
		pthread_create(&th[i], NULL, producer, (void *)i);
	uint64_t got = 0, last[PRODUCERS];
	int in_order = 1;
	for (int i = 0; i < PRODUCERS; i++)
		last[i] = UINT64_MAX;
	int done = 0;
	while (!done || ember__sampbuf_pending(&shared)) {
		ember__sample_rec *r = ember__sampbuf_peek(&shared);
		if (!r) {
			done = got + atomic_load(&dropped) == (uint64_t)PRODUCERS * PER_PRODUCER;
			continue;
		}
		uint64_t id = r->pcs[0], seq = r->pcs[1];
		if (id < PRODUCERS) {
			if (last[id] != UINT64_MAX && seq <= last[id])
				in_order = 0;
			last[id] = seq;
		}
		got++;
		ember__sampbuf_release(&shared, r);
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(th[i], NULL);
	printf("  consumed %llu, dropped %llu\n", (unsigned long long)got,
	       (unsigned long long)atomic_load(&dropped));
	CHECK_EQ_INT(got + atomic_load(&dropped), (uint64_t)PRODUCERS * PER_PRODUCER);
	CHECK(in_order); /* each producer's samples come out in its order */
	CHECK(got > (uint64_t)PRODUCERS * PER_PRODUCER / 2);
	ember__sampbuf_destroy(&shared);
}

int main(void)
{
	RUN(test_order_and_full);
	RUN(test_claimed_not_committed_blocks_consumer);
	RUN(test_concurrent);
	return CHECK_DONE();
}
