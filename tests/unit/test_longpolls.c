/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_longpolls.c - the pprof side of the long-poll decoder
 * (tools/longpolls/decode.c): samples labelled poll_id/poll_duration_ms
 * become polls with their stacks (inlined lines expanded, addresses for
 * unsymbolized locations), polls merge across profiles by id with the
 * longest duration and the open flag of the final report, unlabelled
 * samples are ignored, malformed labels fail with a message; and the sort.
 */
#include <stdlib.h>

#include "check.h"
#include "emberprof.h"
#include "encode/pprof.h"
#include "longpolls/decode.h"

/* A profile with one function per name and one location per function. */
static ember__profile *make_profile(void)
{
	ember__profile *p = ember__profile_new();
	const char *names[] = {"leaf", "cb", "main"};
	for (int i = 0; i < 3; i++) {
		ember__function f = {.name = ember__profile_strdup(p, names[i])};
		ember__profile_add_function(p, &f);
		ember__location l = {.address = 0x1000u + (unsigned)i};
		l.lines = ember__arena_alloc(&p->arena, sizeof(*l.lines));
		l.lines[0].function = (uint32_t)i + 1;
		l.nlines = 1;
		ember__profile_add_location(p, &l);
	}
	ember__location bare = {.address = 0xabc}; /* no symbol */
	ember__profile_add_location(p, &bare);
	return p;
}

static void add_sample(ember__profile *p, int64_t count, const char *const *kv, int nkv, int bare)
{
	ember__sample s = {0};
	s.nlocs = bare ? 1 : 3;
	s.locs = ember__arena_alloc(&p->arena, 3 * sizeof(*s.locs));
	if (bare) {
		s.locs[0] = 4;
	} else {
		s.locs[0] = 1;
		s.locs[1] = 2;
		s.locs[2] = 3;
	}
	s.values[0] = count;
	s.labels = ember__arena_alloc(&p->arena, (size_t)(nkv ? nkv : 1) * sizeof(*s.labels));
	for (int i = 0; i < nkv; i++) {
		s.labels[i].key = ember__profile_strdup(p, kv[2 * i]);
		s.labels[i].str = ember__profile_strdup(p, kv[2 * i + 1]);
	}
	s.nlabels = (uint32_t)nkv;
	ember__profile_add_sample(p, &s);
}

static void test_pprof(void)
{
	ember__profile *p = make_profile();
	const char *a[] = {"poll_id", "7", "poll_duration_ms", "12.5", "poll_open", "1",
			   "thread_id", "42", "thread_name", "loop"};
	add_sample(p, 3, a, 5, 0);
	const char *b[] = {"poll_id", "9", "poll_duration_ms", "80.250"};
	add_sample(p, 2, b, 2, 1);
	const char *none[] = {"endpoint", "/x"};
	add_sample(p, 5, none, 1, 0); /* not in a long poll */
	/* the wall profile of the same window: more of poll 7, now ended */
	ember__profile *w = make_profile();
	const char *c[] = {"poll_id", "7", "poll_duration_ms", "30.000"};
	add_sample(w, 4, c, 2, 0);

	ember__longpolls lp;
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_pprof(&lp, p), 0);
	CHECK_EQ_INT(ember__longpolls_add_pprof(&lp, w), 0);
	ember__longpolls_sort(&lp);
	CHECK_EQ_INT(lp.n, 2);
	if (lp.n == 2) {
		CHECK_EQ_INT(lp.polls[0].id, 9); /* longest first */
		CHECK(lp.polls[0].duration_ms == 80.25);
		CHECK_EQ_STR(lp.polls[0].stacks[0].frames[0], "0xabc");
		CHECK_EQ_INT(lp.polls[0].tid, -1);
		const ember__lp_poll *q = &lp.polls[1];
		CHECK_EQ_INT(q->id, 7);
		CHECK(q->duration_ms == 30.0); /* the longest report wins */
		CHECK_EQ_INT(q->open, 0);      /* ... and it had ended */
		CHECK_EQ_INT(q->samples, 7);
		CHECK_EQ_INT(q->nstacks, 1);   /* the same stack from both profiles */
		CHECK_EQ_INT(q->tid, 42);
		CHECK_EQ_STR(q->thread, "loop");
		CHECK_EQ_INT(q->stacks[0].nframes, 3);
		CHECK_EQ_STR(q->stacks[0].frames[1], "cb");
	}
	ember__longpolls_free(&lp);
	ember__profile_free(w);

	/* a malformed duration: an error naming it */
	const char *bad[] = {"poll_id", "3", "poll_duration_ms", "soon"};
	add_sample(p, 1, bad, 2, 0);
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_pprof(&lp, p), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "soon") != NULL);
	ember__longpolls_free(&lp);

	/* and through the file-format detection: pprof bytes are read as pprof */
	ember__profile *ok = make_profile();
	add_sample(ok, 1, b, 2, 0);
	uint8_t *buf;
	size_t len;
	CHECK_EQ_INT(ember__pprof_encode(ok, &buf, &len), 0);
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_data(&lp, buf, len, "x.pb.gz"), 0);
	CHECK_EQ_INT(lp.n, 1);
	ember__longpolls_free(&lp);
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_data(&lp, (const uint8_t *)"garbage!", 8, "g.bin"), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "g.bin") != NULL);
	ember__longpolls_free(&lp);
	free(buf);
	ember__profile_free(ok);
	ember__profile_free(p);
}

int main(void)
{
	RUN(test_pprof);
	return CHECK_DONE();
}
