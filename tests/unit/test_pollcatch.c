/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pollcatch.c - the long-poll API and the agent's side of it:
 * records only for polls that got a sample, nesting and unbalanced calls,
 * the record ring (order, overflow, concurrent producers), the
 * PollcatchV1 payload, the threshold setting, and the resolver's labelling of held
 * samples (long, short, idle part, still open).
 *
 * The handler's part is simulated with ember__poll_on_sample(), which is
 * exactly what the handler calls for each sample.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "emberprof.h"
#include "pollcatch/pollcatch.h"
#include "pollcatch/resolve.h"
#include "sample/polltls.h"

static void drain_ring(void)
{
	ember__poll_rec r;
	while (ember__poll_records_take(&r))
		;
}

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void spin_ms(double ms)
{
	double t0 = mono_ms();
	while (mono_ms() - t0 < ms)
		;
}

static void test_record_only_with_sample(void)
{
	drain_ring();
	ember__poll_rec r;
	CHECK_EQ_INT(ember__poll_on_sample(7), 0); /* not in a poll */
	ember_poll_begin();
	ember_poll_end();
	CHECK_EQ_INT(ember__poll_records_take(&r), 0); /* no sample: no record */

	ember_poll_begin();
	uint64_t start = ember__poll_on_sample(77);
	CHECK(start != 0);
	CHECK_EQ_INT(ember__poll_on_sample(77), start); /* same poll, same key */
	ember_poll_end();
	CHECK_EQ_INT(ember__poll_records_take(&r), 1);
	CHECK_EQ_INT(r.tid, 77);
	CHECK_EQ_INT(r.start, start);
	CHECK(r.end >= r.start);
	CHECK_EQ_INT(r.idle_ns, 0);
	CHECK_EQ_INT(ember__poll_records_take(&r), 0);
	CHECK_EQ_INT(ember__poll_on_sample(77), 0);
}

static void test_nesting_and_unbalanced(void)
{
	drain_ring();
	ember__poll_rec r;
	ember_poll_end(); /* unbalanced: ignored */
	ember_poll_end_idle(5);
	CHECK_EQ_INT(ember__poll_on_sample(1), 0);
	CHECK_EQ_INT(ember__poll_records_take(&r), 0);

	ember_poll_begin();
	uint64_t outer = ember__poll_on_sample(3);
	ember_poll_begin(); /* nested: the outer poll goes on */
	CHECK_EQ_INT(ember__poll_on_sample(3), outer);
	ember_poll_end();
	CHECK_EQ_INT(ember__poll_records_take(&r), 0); /* the inner end closes nothing */
	CHECK_EQ_INT(ember__poll_on_sample(3), outer);
	ember_poll_end();
	CHECK_EQ_INT(ember__poll_records_take(&r), 1);
	CHECK_EQ_INT(r.start, outer);
	ember_poll_end(); /* one too many */
	CHECK_EQ_INT(ember__poll_records_take(&r), 0);
	CHECK_EQ_INT(ember__tls_poll.depth, 0);
}

static void test_ring_order_and_overflow(void)
{
	drain_ring();
	uint64_t dropped0 = ember__poll_records_dropped();
	uint64_t prev = 0;
	for (int i = 0; i < EMBER__POLL_RING + 10; i++) {
		ember_poll_begin();
		ember__poll_on_sample(i + 1);
		ember_poll_end();
	}
	CHECK_EQ_INT(ember__poll_records_dropped() - dropped0, 10);
	ember__poll_rec r;
	int n = 0, ordered = 1;
	while (ember__poll_records_take(&r)) {
		if (r.tid != n + 1 || r.start < prev)
			ordered = 0;
		prev = r.start;
		n++;
	}
	CHECK_EQ_INT(n, EMBER__POLL_RING);
	CHECK(ordered);
	/* and the ring works again after a full round */
	ember_poll_begin();
	ember__poll_on_sample(5);
	ember_poll_end();
	CHECK_EQ_INT(ember__poll_records_take(&r), 1);
}

#define PRODUCERS 4
#define PER_PRODUCER 20000
static _Atomic int producers_done;

static void *producer(void *arg)
{
	int tid = (int)(intptr_t)arg;
	for (int i = 0; i < PER_PRODUCER; i++) {
		ember_poll_begin();
		ember__poll_on_sample(tid);
		ember_poll_end();
	}
	atomic_fetch_add(&producers_done, 1);
	return NULL;
}

static void test_concurrent_producers(void)
{
	drain_ring();
	uint64_t dropped0 = ember__poll_records_dropped();
	pthread_t th[PRODUCERS];
	for (int i = 0; i < PRODUCERS; i++)
		pthread_create(&th[i], NULL, producer, (void *)(intptr_t)(i + 1));
	uint64_t got[PRODUCERS + 1] = {0};
	uint64_t last[PRODUCERS + 1] = {0};
	int monotonic = 1, bad_tid = 0;
	ember__poll_rec r;
	for (;;) {
		int done = atomic_load(&producers_done) == PRODUCERS;
		while (ember__poll_records_take(&r)) {
			if (r.tid < 1 || r.tid > PRODUCERS) {
				bad_tid = 1;
				continue;
			}
			if (r.start < last[r.tid])
				monotonic = 0; /* one thread's polls come out in order */
			last[r.tid] = r.start;
			got[r.tid]++;
		}
		if (done)
			break;
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(th[i], NULL);
	while (ember__poll_records_take(&r))
		if (r.tid >= 1 && r.tid <= PRODUCERS)
			got[r.tid]++;
	uint64_t total = 0;
	for (int i = 1; i <= PRODUCERS; i++)
		total += got[i];
	CHECK(!bad_tid);
	CHECK(monotonic);
	/* nothing lost silently: every record was taken or counted as dropped */
	CHECK_EQ_INT(total + (ember__poll_records_dropped() - dropped0), PRODUCERS * PER_PRODUCER);
}

static void test_payload(void)
{
	uint8_t b[16];
	ember__pollcatch_payload(b, 0x0102030405060708ull, 0x1112131415161718ull);
	CHECK_EQ_INT(b[0], 0x08); /* little-endian */
	CHECK_EQ_INT(b[7], 0x01);
	CHECK_EQ_INT(b[8], 0x18);
	uint64_t s, e;
	CHECK_EQ_INT(ember__pollcatch_payload_decode(b, 16, &s, &e), 0);
	CHECK_EQ_INT(s, 0x0102030405060708ull);
	CHECK_EQ_INT(e, 0x1112131415161718ull);
	CHECK_EQ_INT(ember__pollcatch_payload_decode(b, 15, &s, &e), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "15 bytes") != NULL);
}

static void test_threshold_setting(void)
{
	ember_builder *b;
	CHECK_EQ_INT(ember_builder_new(&b, "t"), 0);
	CHECK_EQ_INT(ember_builder_set_poll_threshold(b, 0), 0);
	CHECK_EQ_INT(ember_builder_set_poll_threshold(b, 3600001), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "threshold") != NULL);
	setenv("EMBERPROF_POLLCATCH_THRESHOLD", "fast", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "EMBERPROF_POLLCATCH_THRESHOLD") != NULL);
	setenv("EMBERPROF_POLLCATCH_THRESHOLD", "25ms", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), 0);
	setenv("EMBERPROF_POLLCATCH_THRESHOLD", "0", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), 0);
	unsetenv("EMBERPROF_POLLCATCH_THRESHOLD");
	ember_builder_free(b);
}

/* ---- the resolver ---- */

typedef struct emitted {
	int n;
	char id[16][24], dur[16][24], open[16][4];
	int64_t time[16];
	int has_poll[16];
	ember__pollres_long poll[16]; /* the long poll handed with the sample */
} emitted;

static int collect(void *ud, const ember__pollres_sample *s, const ember__pollres_long *poll,
		   const uint8_t *lb, uint32_t len)
{
	emitted *e = ud;
	if (e->n >= 16)
		return 0;
	int k = e->n++;
	e->id[k][0] = e->dur[k][0] = e->open[k][0] = '\0';
	e->time[k] = s->time_ns;
	e->has_poll[k] = poll != NULL;
	if (poll)
		e->poll[k] = *poll;
	for (uint32_t p = 0; p + 2 <= len;) {
		uint8_t kl = lb[p], vl = lb[p + 1 + kl];
		const char *key = (const char *)lb + p + 1, *val = (const char *)lb + p + 2 + kl;
		char *dst = kl == 7 && !memcmp(key, "poll_id", 7)		? e->id[k]
			    : kl == 16 && !memcmp(key, "poll_duration_ms", 16) ? e->dur[k]
			    : kl == 9 && !memcmp(key, "poll_open", 9)	      ? e->open[k]
									      : NULL;
		if (dst && vl < 23) {
			memcpy(dst, val, vl);
			dst[vl] = '\0';
		}
		p += 2u + kl + vl;
	}
	return 0;
}

static int64_t rt_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void hold(ember__pollres *r, int32_t tid, uint64_t start, int64_t t)
{
	uint64_t pcs[2] = {0x1000, 0x2000};
	static const uint8_t own[] = {1, 'k', 1, 'v'}; /* the thread's own label k=v */
	CHECK_EQ_INT(ember__pollres_hold(r, tid, tid, 0, t, 1000, start, pcs, 2, own, sizeof(own)), 0);
}

static void test_resolve(void)
{
	drain_ring();
	ember__pollres r;
	ember__pollres_init(&r, 10);
	emitted e = {0};

	/* a long poll: 15 ms of spinning, threshold 10 ms */
	ember_poll_begin();
	uint64_t s1 = ember__poll_on_sample(101);
	hold(&r, 101, s1, rt_ns());
	spin_ms(15);
	ember_poll_end();
	/* a second sample of the same poll not drained yet, then one in a short poll */
	CHECK_EQ_INT(ember__pollres_resolve(&r, INT64_MIN, collect, &e), 0);
	CHECK_EQ_INT(e.n, 1);
	CHECK_EQ_STR(e.id[0], "1");
	CHECK(atof(e.dur[0]) >= 14.5); /* the poll lasted at least the 15 ms spun */
	CHECK_EQ_STR(e.open[0], "");
	/* the poll itself, for JFR: its id, thread, duration (the label's)
	 * and a start at its begin (1 ms of slack for the clock conversion) */
	CHECK(e.has_poll[0]);
	CHECK_EQ_INT(e.poll[0].id, 1);
	CHECK_EQ_INT(e.poll[0].tid, 101);
	CHECK_EQ_INT(e.poll[0].open, 0);
	CHECK(llabs(e.poll[0].duration_ns - (int64_t)(atof(e.dur[0]) * 1e6)) <= 1000);
	CHECK(e.poll[0].start_ns <= e.time[0] + 1000000);
	CHECK(e.poll[0].start_ns + e.poll[0].duration_ns > e.time[0]);
	hold(&r, 101, s1, rt_ns()); /* late from the ring: the record is kept */
	CHECK_EQ_INT(ember__pollres_resolve(&r, INT64_MIN, collect, &e), 0);
	CHECK_EQ_INT(e.n, 2);
	CHECK_EQ_STR(e.id[1], "1"); /* the same poll, the same id */
	CHECK_EQ_INT(r.long_polls, 1);

	/* a short poll (threshold 1 h) keeps its sample unlabelled */
	ember__pollres_free(&r);
	ember__pollres_init(&r, 3600000);
	ember_poll_begin();
	uint64_t s2 = ember__poll_on_sample(102);
	hold(&r, 102, s2, rt_ns());
	ember_poll_end();
	CHECK_EQ_INT(ember__pollres_resolve(&r, INT64_MIN, collect, &e), 0);
	CHECK_EQ_INT(e.n, 3);
	CHECK_EQ_STR(e.id[2], "");
	CHECK(!e.has_poll[2]);

	/* the waiting part of a poll (ember_poll_end_idle) is not labelled */
	ember__pollres_free(&r);
	ember__pollres_init(&r, 5);
	ember_poll_begin();
	double t0 = mono_ms();
	uint64_t s3 = ember__poll_on_sample(103);
	hold(&r, 103, s3, rt_ns()); /* taken while "waiting" */
	spin_ms(20);
	double t_busy = mono_ms();
	spin_ms(10);
	hold(&r, 103, s3, rt_ns()); /* in the busy part */
	uint64_t idle_ns = (uint64_t)((t_busy - t0) * 1e6);
	ember_poll_end_idle(idle_ns);
	double wall = mono_ms() - t0;
	CHECK_EQ_INT(ember__pollres_resolve(&r, INT64_MIN, collect, &e), 0);
	CHECK_EQ_INT(e.n, 5);
	CHECK_EQ_STR(e.id[3], "");	/* waiting: unlabelled */
	CHECK(e.id[4][0] != '\0'); /* busy: labelled */
	double d = atof(e.dur[4]);
	/* wall - idle: at least the 10 ms spun, less than the whole poll */
	CHECK(d >= 9.5 && d <= wall - (t_busy - t0) + 0.5);
	/* for JFR the poll starts where its busy part does: after the
	 * waiting sample (20 ms of waiting; 1 ms of slack), and lasts d */
	CHECK(!e.has_poll[3] && e.has_poll[4]);
	CHECK(e.poll[4].start_ns > e.time[3] + 10000000);
	CHECK(e.poll[4].start_ns <= e.time[4] + 1000000);
	CHECK(llabs(e.poll[4].duration_ns - (int64_t)(d * 1e6)) <= 1000);

	/* a poll still open when its window closes */
	ember__pollres_free(&r);
	ember__pollres_init(&r, 10);
	ember_poll_begin();
	uint64_t s4 = ember__poll_on_sample(104);
	hold(&r, 104, s4, rt_ns());
	spin_ms(12);
	CHECK_EQ_INT(ember__pollres_resolve(&r, INT64_MIN, collect, &e), 0);
	CHECK_EQ_INT(e.n, 5); /* held: the poll has not ended */
	CHECK_EQ_INT(r.nheld, 1);
	CHECK_EQ_INT(ember__pollres_resolve(&r, INT64_MAX, collect, &e), 0); /* the window closes */
	CHECK_EQ_INT(e.n, 6);
	CHECK_EQ_STR(e.open[5], "1");
	CHECK(atof(e.dur[5]) >= 11.5);
	char open_id[24];
	snprintf(open_id, sizeof(open_id), "%s", e.id[5]);
	hold(&r, 104, s4, rt_ns());
	ember_poll_end();
	CHECK_EQ_INT(ember__pollres_resolve(&r, INT64_MIN, collect, &e), 0);
	CHECK_EQ_INT(e.n, 7);
	CHECK_EQ_STR(e.id[6], open_id); /* once ended: the same id, the final duration */
	CHECK_EQ_STR(e.open[6], "");
	CHECK_EQ_INT(r.nheld, 0);
	CHECK(e.has_poll[5] && e.poll[5].open && e.has_poll[6] && !e.poll[6].open);
	CHECK_EQ_INT(e.poll[5].id, e.poll[6].id);
	CHECK(e.poll[6].duration_ns >= e.poll[5].duration_ns);

	/* a window's list of long polls: one entry per id; the ended view
	 * replaces the open one and is not replaced by it */
	ember__pollres_list l = {0};
	ember__pollres_long other = e.poll[0];
	other.id = 42; /* each resolver above started its ids at 1 */
	CHECK_EQ_INT(ember__pollres_list_note(&l, &e.poll[5]), 0);
	CHECK_EQ_INT(ember__pollres_list_note(&l, &other), 0);
	CHECK_EQ_INT(ember__pollres_list_note(&l, &e.poll[6]), 0);
	CHECK_EQ_INT(ember__pollres_list_note(&l, &e.poll[5]), 0);
	CHECK_EQ_INT(l.n, 2);
	CHECK_EQ_INT(l.v[0].id, e.poll[6].id);
	CHECK_EQ_INT(l.v[0].open, 0);
	CHECK_EQ_INT(l.v[0].duration_ns, e.poll[6].duration_ns);
	CHECK_EQ_INT(l.v[1].id, 42);
	ember__pollres_long longer = e.poll[5];
	longer.id = 99;
	CHECK_EQ_INT(ember__pollres_list_note(&l, &longer), 0);
	longer.duration_ns += 5;
	CHECK_EQ_INT(ember__pollres_list_note(&l, &longer), 0); /* an open one grows */
	CHECK_EQ_INT(l.n, 3);
	CHECK_EQ_INT(l.v[2].duration_ns, e.poll[5].duration_ns + 5);
	ember__pollres_list_free(&l);
	CHECK_EQ_INT(l.n, 0);

	/* a record lost (ring full): once the thread is in a later poll, the
	 * sample is released unlabelled, not as a poll still running */
	ember__pollres_free(&r);
	ember__pollres_init(&r, 0); /* 0: every sampled poll is long */
	drain_ring();
	ember_poll_begin();
	uint64_t s5 = ember__poll_on_sample(105);
	hold(&r, 105, s5, rt_ns());
	ember_poll_end();
	drain_ring(); /* its record is lost */
	ember_poll_begin();
	uint64_t s6 = ember__poll_on_sample(105);
	hold(&r, 105, s6, rt_ns());
	ember_poll_end();
	CHECK_EQ_INT(ember__pollres_resolve(&r, INT64_MAX, collect, &e), 0);
	CHECK_EQ_INT(e.n, 9);
	CHECK_EQ_STR(e.id[7], "");	   /* the poll whose record was lost */
	CHECK_EQ_STR(e.open[7], "");
	CHECK(e.id[8][0] != '\0'); /* the later poll, with its record */
	CHECK_EQ_INT(r.samples_lost_record, 1);
	CHECK_EQ_INT(r.samples_unresolved, 0);
	CHECK_EQ_INT(r.nheld, 0);
	ember__pollres_free(&r);
}

int main(void)
{
	RUN(test_record_only_with_sample);
	RUN(test_nesting_and_unbalanced);
	RUN(test_ring_order_and_overflow);
	RUN(test_concurrent_producers);
	RUN(test_payload);
	RUN(test_threshold_setting);
	RUN(test_resolve);
	return CHECK_DONE();
}
