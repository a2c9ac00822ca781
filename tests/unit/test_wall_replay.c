/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wall_replay.c - the agent's copies of wall samples, given to the
 * records of threads left asleep or exiting (src/engine/wall_replay.c).
 */
#include "engine/wall_replay.h"
#include "check.h"
#include "sample/handler.h"

static const int64_t s = 1000000000LL;

static void test_repeat_and_forget(void)
{
	ember__wall_replay w = {0};
	uint64_t pcs[3] = {0x1000, 0x2000, 0x3000};
	const uint8_t lab[] = {2, 'k', 'v', 1, 'x'};
	CHECK_EQ_INT(ember__wall_replay_note(&w, 42, 7, EMBER_SAMPLE_SLEEPING, 1 * s, pcs, 3, lab, sizeof(lab), 1234), 0);
	pcs[0] = 0xdead; /* the copy is the agent's own */

	const uint64_t *p;
	const uint8_t *l;
	uint32_t d, ll, st = 0;
	uint64_t ps = 0;
	CHECK(ember__wall_replay_find(&w, 42, 7, 2 * s, &p, &d, &l, &ll, &ps, &st));
	CHECK_EQ_INT(d, 3);
	CHECK_EQ_INT(ps, 1234); /* still in the poll it slept in */
	CHECK_EQ_INT(st, EMBER_SAMPLE_SLEEPING);
	CHECK_EQ_INT(p[0], 0x1000);
	CHECK_EQ_INT(p[2], 0x3000);
	CHECK_EQ_INT(ll, sizeof(lab));
	CHECK(!memcmp(l, lab, sizeof(lab)));
	/* another sample number, another thread: not found, counted */
	CHECK(!ember__wall_replay_find(&w, 42, 8, 2 * s, &p, &d, &l, &ll, &ps, &st));
	CHECK(!ember__wall_replay_find(&w, 43, 7, 2 * s, &p, &d, &l, &ll, &ps, &st));
	CHECK_EQ_INT(atomic_load(&w.repeated), 1);
	CHECK_EQ_INT(atomic_load(&w.lost), 2);

	/* a newer sleeping sample replaces the copy */
	uint64_t pcs2[1] = {0x4000};
	CHECK_EQ_INT(ember__wall_replay_note(&w, 42, 9, EMBER_SAMPLE_SLEEPING, 3 * s, pcs2, 1, NULL, 0, 0), 0);
	CHECK(!ember__wall_replay_find(&w, 42, 7, 3 * s, &p, &d, &l, &ll, &ps, &st));
	CHECK(ember__wall_replay_find(&w, 42, 9, 3 * s, &p, &d, &l, &ll, &ps, &st));
	CHECK_EQ_INT(d, 1);
	CHECK_EQ_INT(p[0], 0x4000);
	CHECK_EQ_INT(ll, 0);

	/* a running sample is kept too, with its state: an exiting thread's
	 * hook repeats it; its buffer is reused (same room, new contents) */
	uint64_t pcs3[2] = {0x5000, 0x6000};
	CHECK_EQ_INT(ember__wall_replay_note(&w, 42, 10, EMBER_SAMPLE_RUNNING, 3 * s, pcs3, 2, lab, 2, 0), 0);
	CHECK(ember__wall_replay_find(&w, 42, 10, 3 * s, &p, &d, &l, &ll, &ps, &st));
	CHECK_EQ_INT(st, EMBER_SAMPLE_RUNNING);
	CHECK_EQ_INT(d, 2);
	CHECK_EQ_INT(p[1], 0x6000);
	CHECK_EQ_INT(ll, 2);
	CHECK(!memcmp(l, lab, 2));
	CHECK(!ember__wall_replay_find(&w, 42, 9, 3 * s, &p, &d, &l, &ll, &ps, &st));
	/* a deeper stack than the room grows it */
	uint64_t deep[100];
	for (int i = 0; i < 100; i++)
		deep[i] = 0x7000 + (uint64_t)i;
	CHECK_EQ_INT(ember__wall_replay_note(&w, 42, 11, EMBER_SAMPLE_SLEEPING, 3 * s, deep, 100, lab, sizeof(lab), 0), 0);
	CHECK(ember__wall_replay_find(&w, 42, 11, 3 * s, &p, &d, &l, &ll, &ps, &st));
	CHECK_EQ_INT(d, 100);
	CHECK_EQ_INT(p[99], 0x7000 + 99);
	CHECK(!memcmp(l, lab, sizeof(lab)));

	/* a sample without a number (seq 0) forgets the thread's copy */
	CHECK_EQ_INT(ember__wall_replay_note(&w, 42, 0, EMBER_SAMPLE_SLEEPING, 4 * s, pcs2, 1, NULL, 0, 0), 0);
	CHECK(!ember__wall_replay_find(&w, 42, 9, 4 * s, &p, &d, &l, &ll, &ps, &st));
	ember__wall_replay_free(&w);
	CHECK_EQ_INT(atomic_load(&w.repeated), 4); /* totals survive */
}

static void test_age_out(void)
{
	/* Copies of threads not seen for 10 minutes are freed by the sweep
	 * that runs every 4096 notes; a thread repeated meanwhile stays. */
	ember__wall_replay w = {0};
	uint64_t pc = 0x1000;
	const uint64_t *p;
	const uint8_t *l;
	uint32_t d, ll, st;
	uint64_t ps;
	CHECK_EQ_INT(ember__wall_replay_note(&w, 1, 1, EMBER_SAMPLE_SLEEPING, 0, &pc, 1, NULL, 0, 0), 0); /* gone later */
	CHECK_EQ_INT(ember__wall_replay_note(&w, 2, 2, EMBER_SAMPLE_SLEEPING, 0, &pc, 1, NULL, 0, 0), 0); /* still asleep */
	CHECK(ember__wall_replay_find(&w, 2, 2, 700 * s, &p, &d, &l, &ll, &ps, &st));
	for (int i = 0; i < 4096; i++)
		ember__wall_replay_note(&w, 3, (uint32_t)i + 10, EMBER_SAMPLE_SLEEPING, 700 * s, &pc, 1, NULL, 0, 0);
	CHECK(!ember__wall_replay_find(&w, 1, 1, 700 * s, &p, &d, &l, &ll, &ps, &st));
	CHECK(ember__wall_replay_find(&w, 2, 2, 700 * s, &p, &d, &l, &ll, &ps, &st));
	ember__wall_replay_free(&w);
}

int main(void)
{
	RUN(test_repeat_and_forget);
	RUN(test_age_out);
	return CHECK_DONE();
}
