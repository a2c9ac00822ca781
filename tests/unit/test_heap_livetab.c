/*
 * test_heap_livetab.c - the live table of sampled allocations
 * (src/heap/livetab.c): lookups, pass-through of unknown pointers and
 * double frees, a counted overflow instead of growth, and concurrent
 * inserts and removals from several threads (each removing what another
 * inserted).
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
	return ((uintptr_t)(thread + 1) << 32) | ((uintptr_t)i << 4);
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
	pthread_barrier_destroy(&barrier);
	ember__livetab_destroy(&t);
}

int main(void)
{
	RUN(test_insert_remove);
	RUN(test_overflow_counted);
	RUN(test_threads_cross_free);
	return CHECK_DONE();
}
