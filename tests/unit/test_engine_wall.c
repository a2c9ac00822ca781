/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_engine_wall.c - the wall-clock engine's rotation and pacing: each
 * tick picks the threads after the previous batch in tid order, wrapping;
 * a pass covers every thread once however the batches fall; threads
 * coming and going between ticks do not break the rotation; ticks spread
 * a pass over the interval but never come closer than the floor.
 */
#include "engine/engine_wall.h"
#include "check.h"

typedef struct rec {
	int32_t tid;
	int other; /* records are bigger than a tid: the stride matters */
} rec;

static void test_rotation(void)
{
	rec r[20];
	for (int i = 0; i < 20; i++)
		r[i] = (rec){.tid = 100 + 3 * i};
	int32_t cursor = 0;
	size_t idx[8];
	int hits[20] = {0};
	/* Three passes of 20 threads, 8 per tick: 7.5 ticks per pass. */
	for (int tick = 0; tick < 15; tick++) {
		size_t n = ember__wall_pick(r, sizeof(rec), 20, &cursor, 8, idx);
		CHECK_EQ_INT(n, 8);
		for (size_t k = 0; k < n; k++)
			hits[idx[k]]++;
		CHECK_EQ_INT(cursor, r[idx[n - 1]].tid);
	}
	for (int i = 0; i < 20; i++)
		CHECK_EQ_INT(hits[i], 6); /* 15 x 8 = 120 = 6 x 20 */
	/* First batch starts at the smallest tid, the next continues after. */
	cursor = 0;
	ember__wall_pick(r, sizeof(rec), 20, &cursor, 8, idx);
	CHECK_EQ_INT(idx[0], 0);
	CHECK_EQ_INT(idx[7], 7);
	ember__wall_pick(r, sizeof(rec), 20, &cursor, 8, idx);
	CHECK_EQ_INT(idx[0], 8);
	ember__wall_pick(r, sizeof(rec), 20, &cursor, 8, idx);
	CHECK_EQ_INT(idx[0], 16);
	CHECK_EQ_INT(idx[3], 19);
	CHECK_EQ_INT(idx[4], 0); /* wrapped */
}

static void test_rotation_changes(void)
{
	rec r[10];
	for (int i = 0; i < 10; i++)
		r[i] = (rec){.tid = 10 * (i + 1)}; /* 10..100 */
	size_t idx[8];
	int32_t cursor = 0;
	CHECK_EQ_INT(ember__wall_pick(r, sizeof(rec), 10, &cursor, 4, idx), 4);
	CHECK_EQ_INT(cursor, 40);
	/* Thread 40 (the cursor) and 50 exit: the next batch starts at 60. */
	rec s[8] = {{10, 0}, {20, 0}, {30, 0}, {60, 0}, {70, 0}, {80, 0}, {90, 0}, {100, 0}};
	CHECK_EQ_INT(ember__wall_pick(s, sizeof(rec), 8, &cursor, 4, idx), 4);
	CHECK_EQ_INT(s[idx[0]].tid, 60);
	CHECK_EQ_INT(cursor, 90);
	/* Fewer threads than the batch: each once, no duplicates. */
	rec few[3] = {{5, 0}, {6, 0}, {7, 0}};
	cursor = 6;
	CHECK_EQ_INT(ember__wall_pick(few, sizeof(rec), 3, &cursor, 8, idx), 3);
	CHECK_EQ_INT(few[idx[0]].tid, 7);
	CHECK_EQ_INT(few[idx[1]].tid, 5);
	CHECK_EQ_INT(few[idx[2]].tid, 6);
	CHECK_EQ_INT(ember__wall_pick(few, sizeof(rec), 0, &cursor, 8, idx), 0);
	CHECK_EQ_INT(ember__wall_pick(few, sizeof(rec), 3, &cursor, 0, idx), 0);
}

static void test_tick(void)
{
	const int64_t ms = 1000000;
	/* Up to 8 threads: one tick per interval. */
	CHECK_EQ_INT(ember__wall_tick_ns(50 * ms, 1, 8, ms), 50 * ms);
	CHECK_EQ_INT(ember__wall_tick_ns(50 * ms, 8, 8, ms), 50 * ms);
	/* 80 threads: 10 ticks per pass of 50 ms. */
	CHECK_EQ_INT(ember__wall_tick_ns(50 * ms, 80, 8, ms), 5 * ms);
	/* 81: 11 ticks. */
	CHECK_EQ_INT(ember__wall_tick_ns(55 * ms, 81, 8, ms), 5 * ms);
	/* 5000 threads: the floor holds (a pass then takes 625 ms). */
	CHECK_EQ_INT(ember__wall_tick_ns(50 * ms, 5000, 8, ms), ms);
	CHECK_EQ_INT(ember__wall_tick_ns(50 * ms, 0, 8, ms), 50 * ms);
}

int main(void)
{
	RUN(test_rotation);
	RUN(test_rotation_changes);
	RUN(test_tick);
	return CHECK_DONE();
}
