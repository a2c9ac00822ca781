/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_agg_events.c - the aggregate's per-window event log behind the JFR
 * recordings: each logged sample names the stack it was merged into, and
 * that index is the sample's index in the window's profile (window.c), so
 * an event's stack is exactly its sample's; the log stops at its cap and
 * counts what it dropped; releasing frees it (ASan checks the leaks).
 */
#include "profile/aggregate.h"
#include "profile/window.h"
#include "check.h"
#include "encode/jfr.h"

static void test_events_name_their_profile_sample(void)
{
	ember__agg a;
	ember__agg_init(&a);
	uint64_t s1[] = {0x1000, 0x2000}, s2[] = {0x3000, 0x2000}, s3[] = {0x4000};
	struct {
		const uint64_t *pcs;
		uint32_t depth;
		int32_t tid;
	} in[] = {{s1, 2, 11}, {s2, 2, 12}, {s1, 2, 13}, {s3, 1, 11}, {s2, 2, 11}, {s1, 2, 11}};
	for (int i = 0; i < 6; i++) {
		CHECK_EQ_INT(ember__agg_add(&a, 0, in[i].pcs, in[i].depth, NULL, 0, 100 + (uint64_t)i), 0);
		CHECK_EQ_INT(ember__agg_log(&a, 100, 1000 + i, in[i].tid, 100 + (uint64_t)i, EMBER_JFR_CPU,
					    EMBER_JFR_STATE_RUNNABLE), 0);
	}
	CHECK_EQ_INT(a.n, 3);
	CHECK_EQ_INT(a.nevents, 6);
	ember__window_cfg cfg = {.hz = 100};
	ember__profile *p = NULL;
	CHECK_EQ_INT(ember__window_profile(&a, NULL, &cfg, EMBER__PROFILE_CPU, 0, 1, &p), 0);
	for (size_t i = 0; p && i < a.nevents; i++) {
		const ember__agg_event *e = &a.events[i];
		CHECK_EQ_INT(e->time_ns, 1000 + (int64_t)i);
		CHECK_EQ_INT(e->tid, in[i].tid);
		CHECK_EQ_INT(e->weight, 100 + i);
		CHECK(e->stack < p->nsamples);
		const ember__sample *s = &p->samples[e->stack];
		CHECK_EQ_INT(s->nlocs, in[i].depth);
		/* the leaf location holds the event's own leaf PC */
		CHECK_EQ_INT(p->locations[s->locs[0] - 1].address, in[i].pcs[0]);
	}
	/* counts per sample == events per stack: the JFR and pprof views agree */
	for (uint32_t k = 0; p && k < p->nsamples; k++) {
		int64_t n = 0;
		for (size_t i = 0; i < a.nevents; i++)
			n += a.events[i].stack == k;
		CHECK_EQ_INT(p->samples[k].values[0], n);
	}
	ember__profile_free(p);
	ember__agg_release(&a);
	CHECK(a.events == NULL);
}

static void test_cap_counts_drops(void)
{
	ember__agg a;
	ember__agg_init(&a);
	uint64_t pc = 0x1000;
	for (int i = 0; i < 5; i++) {
		CHECK_EQ_INT(ember__agg_add(&a, 0, &pc, 1, NULL, 0, 1), 0);
		CHECK_EQ_INT(ember__agg_log(&a, 3, i, 1, 1, EMBER_JFR_WALL, EMBER_JFR_STATE_SLEEPING), 0);
	}
	CHECK_EQ_INT(a.nevents, 3);
	CHECK_EQ_INT(a.events_dropped, 2);
	CHECK_EQ_INT(a.samples, 5); /* the profile keeps them all */
	CHECK_EQ_INT(a.events[2].kind, EMBER_JFR_WALL);
	CHECK_EQ_INT(a.events[2].state, EMBER_JFR_STATE_SLEEPING);
	ember__agg_release(&a);
}

int main(void)
{
	RUN(test_events_name_their_profile_sample);
	RUN(test_cap_counts_drops);
	return CHECK_DONE();
}
