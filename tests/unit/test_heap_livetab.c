/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_heap_livetab.c - the live table of sampled allocations
 * (src/heap/livetab.c): lookups, pass-through of unknown pointers and
 * double frees, a counted overflow instead of growth, and concurrent
 * inserts and removals from several threads (each removing what another
 * inserted), and the filter in front of the table: no false negatives,
 * back to zero once everything is removed, a saturated counter that
 * stays a (harmless) false positive, pinned chunks.
 */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "heap/livetab.h"

typedef struct sum {
	uint64_t n, bytes;
} sum;

static void add(void *ud, uintptr_t p, const ember__live_val *v)
{
	(void)p;
	sum *s = ud;
	s->n++;
	s->bytes += v->size;
}

static void test_insert_remove(void)
{
	ember__livetab t;
	CHECK(ember__livetab_init(&t, 1024) == 0);
	CHECK(!ember__livetab_any(&t));
	for (uintptr_t i = 1; i <= 100; i++)
		CHECK(ember__livetab_insert(&t, i * 16, i, 7) == 0);
	CHECK(ember__livetab_any(&t));
	sum s = {0, 0};
	CHECK(ember__livetab_scan(&t, add, &s) == 100);
	CHECK(s.bytes == 5050);
	/* Unknown pointers: nothing happens. */
	CHECK(ember__livetab_remove(&t, 8) == 0);
	CHECK(ember__livetab_remove(&t, 16 * 1000) == 0);
	CHECK(ember__livetab_remove(&t, 0) == 0);
	/* A free, then the same pointer freed again: the second is unknown. */
	CHECK(ember__livetab_remove(&t, 16 * 50) == 1);
	CHECK(ember__livetab_remove(&t, 16 * 50) == 0);
	s = (sum){0, 0};
	ember__livetab_scan(&t, add, &s);
	CHECK(s.n == 99 && s.bytes == 5000);
	ember__livetab_clear(&t);
	CHECK(!ember__livetab_any(&t));
	s = (sum){0, 0};
	CHECK(ember__livetab_scan(&t, add, &s) == 0);
	ember__livetab_destroy(&t);
}

static void test_overflow_counted(void)
{
	ember__livetab t;
	CHECK(ember__livetab_init(&t, 64) == 0); /* 8 buckets of 8 */
	int ok = 0, refused = 0;
	for (uintptr_t i = 1; i <= 1000; i++) {
		if (ember__livetab_insert(&t, i * 64, 1, 1) == 0)
			ok++;
		else
			refused++;
	}
	CHECK(ok <= 64);
	CHECK(ok >= 48); /* two choices fill most of it before refusing */
	CHECK_EQ_INT(atomic_load(&t.overflow), refused);
	CHECK_EQ_INT(atomic_load(&t.count), ok);
	/* A removal makes room again. */
	sum s = {0, 0};
	CHECK(ember__livetab_scan(&t, add, &s) == (size_t)ok);
	ember__livetab_destroy(&t);
}

/* Pseudo-random heap-like addresses (16-byte aligned, spread over 4 GiB). */
static uintptr_t addr_of(uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL;
	x ^= x >> 29;
	return (uintptr_t)(0x7f0000000000ULL + ((x & 0xffffffffULL) & ~(uint64_t)15));
}

static void test_filter(void)
{
	ember__livetab t;
	CHECK(ember__livetab_init(&t, 1u << 14) == 0);
	enum { N = 4000 };
	for (uint64_t i = 0; i < N; i++)
		CHECK(!ember__livetab_maybe(&t, addr_of(i))); /* empty: filter all zero */
	int inserted = 0;
	for (uint64_t i = 0; i < N; i += 2)
		inserted += ember__livetab_insert(&t, addr_of(i), 1, 1) == 0;
	CHECK_EQ_INT(inserted, N / 2);
	/* Every entry passes the filter (no false negatives). */
	for (uint64_t i = 0; i < N; i += 2)
		CHECK(ember__livetab_maybe(&t, addr_of(i)));
	/* Most absent pointers are stopped by it (2000 of 16384 counters set:
	 * about 12 % false positives expected; a broken filter that says
	 * "maybe" to everything gives 100 %). */
	int fp = 0;
	for (uint64_t i = 1; i < N; i += 2)
		fp += ember__livetab_maybe(&t, addr_of(i));
	CHECK(fp < N / 2 / 4);
	/* The removal of an absent pointer that passed the filter changes
	 * nothing; removing the rest empties every counter again. */
	for (uint64_t i = 1; i < N; i += 2)
		CHECK(ember__livetab_remove(&t, addr_of(i)) == 0);
	for (uint64_t i = 0; i < N / 2; i += 2)
		CHECK(ember__livetab_remove(&t, addr_of(i)) == 1);
	for (uint64_t i = N / 2; i < N; i += 2)
		CHECK(ember__livetab_maybe(&t, addr_of(i)));
	ember__livetab_clear(&t);
	for (uint64_t i = 0; i < N; i++)
		CHECK(!ember__livetab_maybe(&t, addr_of(i)));

	/* 300 entries in one chunk: the counter saturates at 255 and stays. */
	uintptr_t chunk = 0x7f1234560000ULL;
	CHECK(300 * 2 + 2 < (1u << EMBER_LIVETAB_FILTER_GRAIN));
	for (uintptr_t i = 1; i <= 300; i++)
		CHECK(ember__livetab_insert(&t, chunk + 2 * i, 1, 1) == 0);
	CHECK(ember__livetab_maybe(&t, chunk + 1));
	for (uintptr_t i = 1; i <= 300; i++)
		CHECK(ember__livetab_remove(&t, chunk + 2 * i) == 1);
	CHECK(ember__livetab_maybe(&t, chunk + 1)); /* sticky, never a miss */
	CHECK(!ember__livetab_any(&t));
	ember__livetab_destroy(&t);
}

/* Pinned chunks (the hook's bootstrap arena) always pass the filter, also
 * after a clear and after entries on them come and go. */
static void test_filter_pinned(void)
{
	static unsigned char arena[3 * 4096 + 100];
	static _Atomic uint8_t filter[EMBER_LIVETAB_FILTER_SLOTS];
	uintptr_t lo = (uintptr_t)arena + 100, hi = (uintptr_t)arena + sizeof(arena);
	/* As the hook does: the filter is the caller's, pinned chunk by chunk
	 * before the table exists. */
	uintptr_t grain = (uintptr_t)1 << EMBER_LIVETAB_FILTER_GRAIN;
	for (uintptr_t p = lo & ~(grain - 1); p < hi; p += grain)
		ember__livetab_filter_pin(filter, p);
	ember__livetab t;
	CHECK(ember__livetab_init_filter(&t, 1024, filter) == 0);
	for (uintptr_t p = lo; p < hi; p += 16)
		CHECK(ember__livetab_maybe(&t, p));
	CHECK(ember__livetab_remove(&t, lo) == 0); /* pinned, but not in the table */
	CHECK(ember__livetab_insert(&t, lo + 64, 8, 1) == 0);
	CHECK(ember__livetab_remove(&t, lo + 64) == 1);
	ember__livetab_clear(&t);
	CHECK(ember__livetab_maybe(&t, lo) && ember__livetab_maybe(&t, hi - 1));
	ember__livetab_destroy(&t);
}

#define NTHREADS 4
#define PER_THREAD 20000

typedef struct ctx {
	ember__livetab *t;
	int idx;
	int removed_other;
} ctx;

static pthread_barrier_t barrier;

static uintptr_t key_of(int thread, int i)
{
	return ((uintptr_t)(thread + 1) << 32) | ((uintptr_t)i << 6); /* 64 a page */
}

static void *worker(void *arg)
{
	ctx *c = arg;
	for (int i = 0; i < PER_THREAD; i++)
		ember__livetab_insert(c->t, key_of(c->idx, i), 16, (uint64_t)c->idx);
	pthread_barrier_wait(&barrier);
	/* Free what the next thread allocated: cross-thread frees. */
	int other = (c->idx + 1) % NTHREADS;
	for (int i = 0; i < PER_THREAD; i++)
		c->removed_other += ember__livetab_remove(c->t, key_of(other, i));
	return NULL;
}

static void test_threads_cross_free(void)
{
	ember__livetab t;
	CHECK(ember__livetab_init(&t, 1u << 17) == 0);
	pthread_barrier_init(&barrier, NULL, NTHREADS);
	pthread_t th[NTHREADS];
	ctx c[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		c[i] = (ctx){&t, i, 0};
		pthread_create(&th[i], NULL, worker, &c[i]);
	}
	int total = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		total += c[i].removed_other;
	}
	uint64_t overflow = atomic_load(&t.overflow);
	CHECK_EQ_INT(overflow, 0);
	CHECK_EQ_INT(total, NTHREADS * PER_THREAD);
	CHECK_EQ_INT(atomic_load(&t.count), 0);
	/* The filter counted every insert and every cross-thread removal. */
	for (int k = 0; k < NTHREADS; k++)
		for (int i = 0; i < PER_THREAD; i++)
			CHECK(!ember__livetab_maybe(&t, key_of(k, i)));
	pthread_barrier_destroy(&barrier);
	ember__livetab_destroy(&t);
}

int main(void)
{
	RUN(test_insert_remove);
	RUN(test_overflow_counted);
	RUN(test_filter);
	RUN(test_filter_pinned);
	RUN(test_threads_cross_free);
	return CHECK_DONE();
}
