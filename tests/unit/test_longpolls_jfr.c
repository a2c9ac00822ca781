/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_longpolls_jfr.c - `emberprof longpolls` on emberprof's own JFR
 * (tools/longpolls/decode_jfr.c reading what src/encode/jfr.c writes): two
 * synthetic windows with emberprof.LongPoll events and samples on two
 * threads, decoded as one file of two chunks and as two files. Checks
 * which samples a poll gets (its thread, strictly inside its time, in
 * either chunk: each chunk counts its ticks from its own start), a poll
 * open at the end of one window and ended in the next (one poll, the
 * final duration), a poll without samples (listed), and a malformed poll.
 */
#include <stdlib.h>

#include "check.h"
#include "emberprof.h"
#include "encode/jfr.h"
#include "longpolls/decode.h"

#define T0 1764515000000000000LL /* the first window's start */
#define MS 1000000LL

/* A profile with one sample per stack, each stack one function deep
 * above "main" (leaf first). */
static ember__profile *stacks_profile(const char *const *leaves, int n)
{
	ember__profile *p = ember__profile_new();
	ember__mapping m = {.start = 0x400000, .limit = 0x500000, .file = "/opt/app/loop",
			    .build_id = ""};
	uint32_t map = ember__profile_add_mapping(p, &m);
	ember__function fm = {"main", "main", "", 0};
	uint32_t f_main = ember__profile_add_function(p, &fm);
	ember__location lm = {.address = 0x401000, .mapping = map, .nlines = 1,
			      .lines = ember__arena_alloc(&p->arena, sizeof(ember__line))};
	lm.lines[0] = (ember__line){f_main, 0};
	uint32_t l_main = ember__profile_add_location(p, &lm);
	for (int i = 0; i < n; i++) {
		ember__function f = {leaves[i], leaves[i], "", 0};
		ember__location l = {.address = 0x402000 + 0x100 * (uint64_t)i, .mapping = map,
				     .nlines = 1,
				     .lines = ember__arena_alloc(&p->arena, sizeof(ember__line))};
		l.lines[0] = (ember__line){ember__profile_add_function(p, &f), 0};
		ember__sample s = {.nlocs = 2, .locs = ember__arena_alloc(&p->arena, 2 * sizeof(uint32_t))};
		s.locs[0] = ember__profile_add_location(p, &l);
		s.locs[1] = l_main;
		s.values[0] = 1;
		ember__profile_add_sample(p, &s);
	}
	return p;
}

enum { SLOW, SLOW_INNER, FAST, OTHER }; /* sample (stack) indices */
static const char *const leaves[] = {"slow_cb", "slow_inner", "fast_cb", "other_thread_work"};

static uint8_t *encode(const ember__jfr_window *w, size_t *len)
{
	uint8_t *out = NULL;
	CHECK_EQ_INT(ember__jfr_encode(w, &out, len), 0);
	return out;
}

/* Window 1 [T0, T0 + 1 s) and window 2 [T0 + 1 s, T0 + 2 s). */
static void make_windows(ember__profile *p, uint8_t **w1, size_t *n1, uint8_t **w2, size_t *n2)
{
	ember__jfr_thread th[] = {{101, "loop"}, {102, "worker"}};
	ember__jfr_event ev1[] = {
		{T0 + 90 * MS, MS, 0, FAST, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 110 * MS, MS, 0, SLOW, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 120 * MS, MS, 0, OTHER, 102, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 130 * MS, MS, 0, SLOW, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 149 * MS, MS, 0, SLOW_INNER, 101, EMBER_JFR_WALL, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 160 * MS, MS, 0, FAST, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 950 * MS, MS, 0, SLOW, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
	};
	ember__jfr_poll polls1[] = {
		{T0 + 100 * MS, 50 * MS, 7, 101, 0},
		{T0 + 900 * MS, 100 * MS, 9, 101, 1}, /* still running at the window's end */
	};
	ember__jfr_window w = {
		.start_ns = T0, .end_ns = T0 + 1000 * MS, .profiles = {p, p},
		.events = ev1, .nevents = 7, .threads = th, .nthreads = 2,
		.polls = polls1, .npolls = 2, .wall_interval_ns = MS,
	};
	*w1 = encode(&w, n1);
	ember__jfr_event ev2[] = {
		{T0 + 1100 * MS, MS, 0, SLOW_INNER, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 1200 * MS, MS, 0, FAST, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
	};
	ember__jfr_poll polls2[] = {
		{T0 + 900 * MS, 250 * MS, 9, 101, 0}, /* ended: it began in window 1 */
		{T0 + 1500 * MS, 30 * MS, 11, 102, 0}, /* no sample inside */
	};
	w.start_ns = T0 + 1000 * MS;
	w.end_ns = T0 + 2000 * MS;
	w.events = ev2;
	w.nevents = 2;
	w.polls = polls2;
	w.npolls = 2;
	*w2 = encode(&w, n2);
}

static const ember__lp_poll *find(const ember__longpolls *lp, uint64_t id)
{
	for (size_t i = 0; i < lp->n; i++)
		if (lp->polls[i].id == id)
			return &lp->polls[i];
	return NULL;
}

static void check_polls(const ember__longpolls *lp)
{
	CHECK_EQ_INT(lp->n, 3);
	const ember__lp_poll *p7 = find(lp, 7), *p9 = find(lp, 9), *p11 = find(lp, 11);
	CHECK(p7 && p9 && p11);
	if (!p7 || !p9 || !p11)
		return;
	/* sorted longest first */
	CHECK(lp->polls[0].id == 9 && lp->polls[1].id == 7 && lp->polls[2].id == 11);
	/* poll 7: its three samples on thread 101 (one a wall sample), not
	 * the other thread's at the same time, not those around it */
	CHECK(p7->duration_ms > 49.999 && p7->duration_ms < 50.001);
	CHECK_EQ_INT(p7->open, 0);
	CHECK_EQ_INT(p7->tid, 101);
	CHECK_EQ_STR(p7->thread, "loop");
	CHECK_EQ_INT(p7->samples, 3);
	CHECK_EQ_INT(p7->nstacks, 2);
	if (p7->nstacks == 2) {
		CHECK_EQ_INT(p7->stacks[0].samples, 2);
		CHECK_EQ_INT(p7->stacks[0].nframes, 2);
		CHECK_EQ_STR(p7->stacks[0].frames[0], "loop.slow_cb");
		CHECK_EQ_STR(p7->stacks[0].frames[1], "loop.main");
		CHECK_EQ_STR(p7->stacks[1].frames[0], "loop.slow_inner");
	}
	/* poll 9: open in window 1, ended in window 2 - one poll, the final
	 * duration, a sample from each chunk */
	CHECK(p9->duration_ms > 249.999 && p9->duration_ms < 250.001);
	CHECK_EQ_INT(p9->open, 0);
	CHECK_EQ_INT(p9->samples, 2);
	CHECK_EQ_INT(p9->nstacks, 2);
	/* poll 11: listed though no sample fell in it */
	CHECK(p11->duration_ms > 29.999 && p11->duration_ms < 30.001);
	CHECK_EQ_INT(p11->samples, 0);
	CHECK_EQ_INT(p11->nstacks, 0);
	CHECK_EQ_INT(p11->tid, 102);
	CHECK_EQ_STR(p11->thread, "worker");
	for (size_t i = 0; i < lp->n; i++)
		for (size_t s = 0; s < lp->polls[i].nstacks; s++)
			CHECK(strcmp(lp->polls[i].stacks[s].frames[0], "loop.fast_cb") &&
			      strcmp(lp->polls[i].stacks[s].frames[0], "loop.other_thread_work"));
}

static void test_own_recordings(void)
{
	ember__profile *p = stacks_profile(leaves, 4);
	uint8_t *w1, *w2;
	size_t n1, n2;
	make_windows(p, &w1, &n1, &w2, &n2);

	/* two files */
	ember__longpolls lp;
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_data(&lp, w1, n1, "w1.jfr"), 0);
	CHECK_EQ_INT(ember__longpolls_add_data(&lp, w2, n2, "w2.jfr"), 0);
	ember__longpolls_sort(&lp);
	check_polls(&lp);
	ember__longpolls_free(&lp);

	/* window 1 alone: poll 9 is still running there */
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_data(&lp, w1, n1, "w1.jfr"), 0);
	const ember__lp_poll *p9 = find(&lp, 9);
	CHECK(p9 && p9->open && p9->duration_ms > 99.999 && p9->duration_ms < 100.001);
	ember__longpolls_free(&lp);

	/* one file of two chunks, in the other order */
	uint8_t *both = malloc(n1 + n2);
	memcpy(both, w2, n2);
	memcpy(both + n2, w1, n1);
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_data(&lp, both, n1 + n2, "both.jfr"), 0);
	ember__longpolls_sort(&lp);
	check_polls(&lp);
	ember__longpolls_free(&lp);
	free(both);
	free(w1);
	free(w2);
	ember__profile_free(p);
}

static void test_malformed_poll(void)
{
	ember__jfr_poll bad = {T0, 5 * MS, 0, 101, 0}; /* pollId 0: no poll of ours */
	ember__jfr_window w = {.start_ns = T0, .end_ns = T0 + 1000 * MS, .polls = &bad, .npolls = 1};
	size_t n;
	uint8_t *d = encode(&w, &n);
	ember__longpolls lp;
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_data(&lp, d, n, "bad.jfr"), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "bad.jfr: emberprof.LongPoll event") != NULL);
	CHECK(strstr(ember_last_error(), "pollId 0") != NULL);
	ember__longpolls_free(&lp);
	free(d);
}

int main(void)
{
	RUN(test_own_recordings);
	RUN(test_malformed_poll);
	return CHECK_DONE();
}
