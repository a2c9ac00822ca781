/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pollcatch.c - ember_poll_begin/ember_poll_end, the record ring the agent
 * drains, the async-profiler event path, and the poll clock's rate
 * (pollcatch.h).
 *
 * Runs on application threads. The only state is the thread's own block
 * (sample/polltls.h) and, for polls that got a sample, one slot of a
 * static ring: the globals here are those code without an agent pointer
 * must reach, all atomics.
 */
#include "pollcatch/pollcatch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "asprof/asprof_hooks.h"
#include "emberprof.h"
#include "sample/polltls.h"
#include "util/error.h"
#include "util/logfd.h"

/* ---- the record ring: many producers, one consumer ----
 *
 * A bounded queue after Dmitry Vyukov's: each slot has a sequence number;
 * a producer claims position p by CAS on `head` when the slot's sequence
 * says it is free for p, writes the record and publishes it by storing
 * sequence p + 1; the consumer takes position t when the sequence reads
 * t + 1 and frees the slot for t + size. The sequences start at zero
 * (static storage), so a slot's stored value is its sequence minus its
 * index. A full ring drops the record and counts it: never a wait. */
typedef struct ring_slot {
	_Atomic uint64_t seq; /* sequence - index */
	ember__poll_rec rec;
} ring_slot;

static ring_slot g_ring[EMBER__POLL_RING];
static _Atomic uint64_t g_head;
static _Atomic uint64_t g_tail;
static _Atomic uint64_t g_dropped;

static void ring_push(const ember__poll_rec *rec)
{
	uint64_t pos = atomic_load_explicit(&g_head, memory_order_relaxed);
	for (;;) {
		size_t i = (size_t)(pos % EMBER__POLL_RING);
		ring_slot *s = &g_ring[i];
		uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire) + i;
		int64_t diff = (int64_t)(seq - pos);
		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(&g_head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed)) {
				s->rec = *rec;
				atomic_store_explicit(&s->seq, pos + 1 - i, memory_order_release);
				return;
			}
		} else if (diff < 0) {
			atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
			return;
		} else {
			pos = atomic_load_explicit(&g_head, memory_order_relaxed);
		}
	}
}

int ember__poll_records_take(ember__poll_rec *out)
{
	uint64_t pos = atomic_load_explicit(&g_tail, memory_order_relaxed);
	size_t i = (size_t)(pos % EMBER__POLL_RING);
	ring_slot *s = &g_ring[i];
	uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire) + i;
	if (seq != pos + 1)
		return 0;
	*out = s->rec;
	atomic_store_explicit(&s->seq, pos + EMBER__POLL_RING - i, memory_order_release);
	atomic_store_explicit(&g_tail, pos + 1, memory_order_relaxed);
	return 1;
}

uint64_t ember__poll_records_dropped(void)
{
	return atomic_load_explicit(&g_dropped, memory_order_relaxed);
}

/* ---- async-profiler path (src/asprof/asprof_hooks.h) ---- */

static _Atomic int g_asprof_key = -2; /* -2: not registered yet, -1: registration failed */
static _Atomic int g_asprof_logged;
static _Atomic uint64_t g_asprof_events, g_asprof_errors;

uint64_t ember__pollcatch_asprof_events(void)
{
	return atomic_load_explicit(&g_asprof_events, memory_order_relaxed);
}

uint64_t ember__pollcatch_asprof_errors(void)
{
	return atomic_load_explicit(&g_asprof_errors, memory_order_relaxed);
}

/* The calling thread's async-profiler sample counter, its address kept
 * in the thread's block once async-profiler hands it out (it lives as
 * long as the thread, and the library is never unloaded). */
static const volatile uint64_t *asprof_counter(ember__polltls *p)
{
	if (p->asprof_ctr)
		return p->asprof_ctr;
	if (!(ember__asprof_features() & EMBER__ASPROF_HAS_THREAD_DATA))
		return NULL;
	return p->asprof_ctr = ember__asprof_thread_sample_counter_ptr();
}

/* No agent pointer here, so no log callback: the first failure goes to
 * stderr, the others are only counted. */
static void asprof_fail(const char *what)
{
	atomic_fetch_add_explicit(&g_asprof_errors, 1, memory_order_relaxed);
	if (!atomic_exchange_explicit(&g_asprof_logged, 1, memory_order_relaxed)) {
		char line[600];
		int n = snprintf(line, sizeof(line), "emberprof: pollcatch: %s " EMBER__POLLCATCH_EVENT
				 " failed: %s (further failures are only counted)\n", what,
				 ember_last_error());
		if (n > 0) /* only into the program's original stderr (util/logfd.h) */
			ember__logfd_write(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	}
}

/* Cold: a sample of async-profiler's landed in the poll. */
__attribute__((noinline, cold)) static void asprof_emit(uint64_t start, uint64_t end)
{
	int key = atomic_load_explicit(&g_asprof_key, memory_order_acquire);
	if (key == -2) {
		/* Two threads may both register: async-profiler hands back a
		 * valid key each time, and either is fine. */
		key = ember__asprof_register_event(EMBER__POLLCATCH_EVENT);
		atomic_store_explicit(&g_asprof_key, key < 0 ? -1 : key, memory_order_release);
		if (key < 0)
			asprof_fail("registering");
	}
	if (key < 0)
		return;
	uint8_t buf[EMBER__POLLCATCH_PAYLOAD];
	ember__pollcatch_payload(buf, start, end);
	if (ember__asprof_emit(key, buf, sizeof(buf)) != 0)
		asprof_fail("emitting");
	else
		atomic_fetch_add_explicit(&g_asprof_events, 1, memory_order_relaxed);
}

/* ---- the clock's rate ---- */

static double g_ticks_per_sec;
static pthread_once_t g_rate_once = PTHREAD_ONCE_INIT;

static void measure_rate(void)
{
#if defined(__aarch64__)
	uint64_t f = ember__ticks_hz();
	if (f) {
		g_ticks_per_sec = (double)f;
		return;
	}
#elif !defined(__x86_64__)
	g_ticks_per_sec = 1e9;
	return;
#endif
	uint64_t t0, t1;
	int64_t n0, n1;
	ember__ticks_pair(CLOCK_MONOTONIC, &t0, &n0);
	struct timespec d = {0, 20000000};
	while (nanosleep(&d, &d) != 0)
		;
	ember__ticks_pair(CLOCK_MONOTONIC, &t1, &n1);
	g_ticks_per_sec = n1 > n0 ? (double)(t1 - t0) * 1e9 / (double)(n1 - n0) : 1e9;
}

double ember__poll_ticks_per_sec(void)
{
	pthread_once(&g_rate_once, measure_rate);
	return g_ticks_per_sec;
}

/* ---- the public calls ---- */

EMBER_API void ember_poll_begin(void)
{
	ember__polltls *p = &ember__tls_poll;
	if (p->depth) {
		if (p->depth < UINT32_MAX)
			p->depth++; /* nested: the outermost poll is the one measured */
		return;
	}
	p->start = ember__poll_now();
	p->begin_samples = p->samples;
	const volatile uint64_t *ctr = asprof_counter(p);
	p->asprof_armed = ctr != NULL; /* async-profiler attached mid-poll: not this poll */
	p->asprof_before = ctr ? *ctr : 0;
	/* start and the counters are in place before the handler can see
	 * the thread in a poll */
	__atomic_signal_fence(__ATOMIC_RELEASE);
	p->depth = 1;
}

static void poll_end(uint64_t idle_ns)
{
	ember__polltls *p = &ember__tls_poll;
	if (!p->depth)
		return; /* unbalanced: no poll is open */
	if (--p->depth)
		return;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint64_t end = ember__poll_now();
	if (p->samples != p->begin_samples) {
		ember__poll_rec r = {
			.tid = p->tid, .start = p->start, .end = end, .idle_ns = idle_ns};
		ring_push(&r);
	}
	const volatile uint64_t *ctr = p->asprof_armed ? p->asprof_ctr : NULL;
	if (ctr && *ctr != p->asprof_before) {
		uint64_t start = p->start;
		if (idle_ns) {
			/* The loop waited first, then ran callbacks: report the
			 * busy part, [start + idle, end]. */
			uint64_t idle = (uint64_t)((double)idle_ns * ember__poll_ticks_per_sec() / 1e9);
			start = idle < end - start ? start + idle : end;
		}
		asprof_emit(start, end);
	}
}

EMBER_API void ember_poll_end(void)
{
	poll_end(0);
}

EMBER_API void ember_poll_end_idle(uint64_t idle_ns)
{
	poll_end(idle_ns);
}
