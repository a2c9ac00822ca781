/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_threadtab.c - the lock-free tid -> bounds table: insert, find,
 * invalidation, reuse of an id, the 3/4 fill limit, and a reader racing a
 * writer never seeing a torn (lo, hi) pair.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "sample/threadtab.h"

static void test_basic(void)
{
	ember__threadtab *t = ember__threadtab_new(10);
	CHECK(t && t->cap == 64);
	ember__stack_bounds b;
	CHECK(!ember__threadtab_bounds(t, 42, &b));
	ember__thread_ent *e = ember__threadtab_insert(t, 42);
	CHECK(e != NULL);
	CHECK(!ember__threadtab_bounds(t, 42, &b)); /* no bounds yet */
	ember__threadtab_set_bounds(e, 0x1000, 0x2000);
	CHECK(ember__threadtab_bounds(t, 42, &b));
	CHECK_EQ_INT(b.lo, 0x1000);
	CHECK_EQ_INT(b.hi, 0x2000);
	CHECK(ember__threadtab_insert(t, 42) == e); /* same id, same entry */
	ember__threadtab_set_bounds(e, 0, 0);        /* thread exited */
	CHECK(!ember__threadtab_bounds(t, 42, &b));
	ember__threadtab_free(t);
}

static void test_fill_limit(void)
{
	ember__threadtab *t = ember__threadtab_new(64);
	int inserted = 0;
	for (int tid = 1; tid <= 64; tid++)
		if (ember__threadtab_insert(t, tid))
			inserted++;
	CHECK_EQ_INT(inserted, 48); /* (used + 1) * 4 <= 3 * cap */
	for (int tid = 1; tid <= 48; tid++)
		CHECK(ember__threadtab_find(t, tid) != NULL);
	CHECK(ember__threadtab_find(t, 1000) == NULL);
	ember__threadtab_free(t);
}

static ember__threadtab *shared;
static _Atomic int stop;
static _Atomic long torn, seen;

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		ember__stack_bounds b;
		if (ember__threadtab_bounds(shared, 7, &b)) {
			atomic_fetch_add(&seen, 1);
			if (b.hi != b.lo + 0x1000)
				atomic_fetch_add(&torn, 1);
		}
	}
	return NULL;
}

static void test_no_torn_reads(void)
{
	shared = ember__threadtab_new(64);
	ember__thread_ent *e = ember__threadtab_insert(shared, 7);
	pthread_t th;
	pthread_create(&th, NULL, reader, NULL);
	/* Write until the reader has read plenty (bounded: 50M writes). */
	for (uintptr_t i = 1; i < 50000000 && atomic_load(&seen) < 200000; i++)
		ember__threadtab_set_bounds(e, i * 0x10000, i * 0x10000 + 0x1000);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("  reads %ld, torn %ld\n", atomic_load(&seen), atomic_load(&torn));
	CHECK_EQ_INT(atomic_load(&torn), 0);
	CHECK(atomic_load(&seen) > 0);
	ember__threadtab_free(shared);
}

int main(void)
{
	RUN(test_basic);
	RUN(test_fill_limit);
	RUN(test_no_torn_reads);
	return CHECK_DONE();
}
