/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_wall.c - the wall-clock timer thread and its rotation
 * (engine_wall.h).
 */
#include "engine/engine_wall.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/thread_start.h"
#include "engine/threads.h"
#include "engine/wall_remote.h"
#include "emberprof.h"
#include "sample/handler.h"
#include "sample/sigvirt.h"
#include "util/error.h"

static int32_t tid_at(const void *base, size_t stride, size_t i)
{
	int32_t tid;
	memcpy(&tid, (const char *)base + i * stride, sizeof(tid));
	return tid;
}

size_t ember__wall_pick(const void *base, size_t stride, size_t n, int32_t *cursor, size_t max,
			size_t *idx)
{
	if (n == 0 || max == 0)
		return 0;
	if (max > n)
		max = n;
	/* The first record whose tid follows the cursor (binary search). */
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (tid_at(base, stride, mid) <= *cursor)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = 0; k < max; k++)
		idx[k] = (lo + k) % n;
	*cursor = tid_at(base, stride, idx[max - 1]);
	return max;
}

int64_t ember__wall_tick_ns(int64_t interval_ns, size_t nthreads, size_t per_tick,
			    int64_t min_tick_ns)
{
	int64_t tick = interval_ns;
	if (per_tick && nthreads > per_tick) {
		/* ceil(nthreads / per_tick) ticks per pass */
		int64_t ticks = (int64_t)((nthreads + per_tick - 1) / per_tick);
		tick = interval_ns / ticks;
	}
	return tick < min_tick_ns ? min_tick_ns : tick;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int send_wall(ember__wall *w, int32_t tid, int64_t weight_ns)
{
	union sigval v = {.sival_ptr = (void *)(uintptr_t)EMBER_WALL_VALUE(weight_ns)};
	return ember__queue_signal(w->pid, tid, w->signo, v);
}

/*
 * Records, without a signal, another sample for thread `tid` still asleep
 * since its sleeping sample `seq`: a stackless EMBER_SAMPLE_REPEAT record
 * in the ring, after that sample (whose number the handler published only
 * once it was committed), which the agent resolves to its stack. Counted
 * as dropped if the ring is full, like a handler's sample.
 */
/* A wall record claimed and filled off the signal path: `depth` (0 or 1)
 * frames from `pc`. Counted as dropped if the ring is full. */
static void record_stackless(ember__sigstate *st, int32_t tid, int64_t weight_ns, uint32_t flags,
			     uint32_t seq, uint64_t pc, uint32_t depth)
{
	ember__sample_rec *r = ember__sampbuf_claim(&st->buf);
	if (!r) {
		atomic_fetch_add_explicit(&st->dropped_full, 1, memory_order_relaxed);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (depth)
		r->pcs[0] = pc;
	r->depth = depth;
	r->tid = tid;
	r->flags = flags;
	r->label_len = 0;
	r->reserved = seq;
	r->poll_start = 0;
	r->weight = (uint64_t)weight_ns;
	r->time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	ember__sampbuf_commit(r);
	atomic_fetch_add_explicit(&st->wall_samples, 1, memory_order_relaxed);
}

void ember__wall_record_repeat(ember__sigstate *st, int32_t tid, int64_t weight_ns, uint32_t seq)
{
	record_stackless(st, tid, weight_ns, EMBER_SAMPLE_WALL | EMBER_SAMPLE_SLEEPING | EMBER_SAMPLE_REPEAT,
			 seq, 0, 0);
}

/*
 * Takes the time ticks found thread entry `e` running for and left to a
 * CPU sample that never came (wall_want_ns): when there is some, it is
 * counted in wall_want_left, and in wall_want_lost too unless `kept` (the
 * caller has a sample to record it in). Returns it, or 0.
 */
static int64_t take_want(ember__sigstate *st, ember__thread_ent *e, int kept)
{
	int64_t want = atomic_exchange(&e->wall_want_ns, 0);
	if (want <= 0)
		return 0;
	atomic_fetch_add_explicit(&st->wall_want_left, 1, memory_order_relaxed);
	if (!kept)
		atomic_fetch_add_explicit(&st->wall_want_lost, 1, memory_order_relaxed);
	return want;
}

int ember__wall_record_last(ember__sigstate *st, ember__thread_ent *e, int32_t tid,
			    uint64_t start_pc)
{
	uint32_t seq = atomic_load_explicit(&e->wall_last_seq, memory_order_acquire);
	int64_t want = take_want(st, e, seq || start_pc);
	if (!seq && !start_pc)
		return 0;
	int64_t now = mono_ns(), last = atomic_exchange(&e->wall_last_ns, now);
	int64_t d = (last > 0 && now > last ? now - last : 0) + want;
	if (d > 0) {
		if (seq)
			ember__wall_record_repeat(st, tid, d, seq);
		else /* never sampled: it ran its start routine */
			record_stackless(st, tid, d, EMBER_SAMPLE_WALL, 0, start_pc, 1);
	}
	return 1;
}

/* The table entry of thread `tid`, or NULL. */
static ember__thread_ent *entry_of(ember__wall *w, int32_t tid)
{
	ember__sigstate *st = w->threads->sig;
	ember__threadtab *tab = atomic_load(&st->tab);
	return tab ? ember__threadtab_find(tab, tid) : NULL;
}

/*
 * At stop, the time ticks found thread `tid` (entry `e`) running for and
 * left to a CPU sample that never came (wall_want_ns): a repeat of the
 * thread's last wall sample, or lost (counted) if it has none.
 */
static void settle_want(ember__sigstate *st, ember__thread_ent *e, int32_t tid)
{
	uint32_t seq = atomic_load_explicit(&e->wall_last_seq, memory_order_acquire);
	int64_t want = take_want(st, e, seq != 0);
	if (want > 0 && seq)
		ember__wall_record_repeat(st, tid, want, seq);
}

/*
 * At stop, a thread's time since its last wall sample repeats that
 * sample (in its state), as a thread's exit hook does (threads.c):
 * - the thread stopping the agent runs emberprof's stop code (it waits
 *   for this thread), which the program did not run, so it is not sampled
 *   there;
 * - a running thread cannot be signalled any more (no signal may arrive
 *   after the handler is gone): without this its time since its last
 *   sample, a tick or more when the machine is loaded, would be in no
 *   sample.
 * Nothing if the thread has no sample.
 */
static void record_tail(ember__wall *w, int32_t tid)
{
	ember__thread_ent *e = entry_of(w, tid);
	if (e)
		ember__wall_record_last(w->threads->sig, e, tid, 0);
}

/*
 * One tick: the next threads of the rotation, each recorded again (left
 * asleep), sampled without a signal (blocked in a system call), asked
 * for a wall sample at its next CPU sample (running, and getting CPU
 * sampling signals of its own: wall_want_ns in sample/threadtab.h) or
 * signalled (running otherwise, or labelled or in a poll). With `final`
 * (at stop) nothing is signalled or left to CPU samples any more (no
 * signal may arrive after the handler is gone): time still left to one
 * goes to a repeat of the thread's last sample (settle_want), and a
 * running thread's last sample is repeated for the time since
 * (record_tail). Returns how many threads were picked; *nthreads is how
 * many there are.
 */
static size_t tick(ember__wall *w, int64_t now, int final, size_t *nthreads)
{
	int32_t tids[EMBER__WALL_MAX_PER_TICK];
	int64_t weights[EMBER__WALL_MAX_PER_TICK];
	uint32_t repeat[EMBER__WALL_MAX_PER_TICK];
	uint8_t cpu_signals[EMBER__WALL_MAX_PER_TICK];
	size_t n = ember__threads_wall_pick(w->threads, now, w->skip_idle, tids, weights, repeat,
					    cpu_signals, EMBER__WALL_MAX_PER_TICK, nthreads);
	uint64_t sent = 0;
	for (size_t i = 0; i < n; i++) {
		if (weights[i] < 0) /* none: the agent counts it as unweighed */
			weights[i] = 0;
		ember__thread_ent *e = entry_of(w, tids[i]);
		if (final && e)
			settle_want(w->threads->sig, e, tids[i]);
		if (repeat[i]) { /* counted by the agent as it resolves them */
			ember__wall_record_repeat(w->threads->sig, tids[i], weights[i], repeat[i]);
			continue;
		}
		if (tids[i] == atomic_load(&w->stopping)) {
			if (final) /* else: stopping the agent, the last pass records it */
				record_tail(w, tids[i]);
			continue;
		}
		if (w->skip_idle) { /* blocked: sampled without waking it */
			ember__sigstate *st = w->threads->sig;
			int rr = e ? ember__wall_remote_sample(&w->remote, st, e, tids[i],
							       &w->stopping)
				   : EMBER_WALL_REMOTE_SIGNAL;
			if (rr == EMBER_WALL_REMOTE_TAKEN)
				atomic_fetch_add(&w->remote_samples, 1);
			if (rr == EMBER_WALL_REMOTE_TAKEN || rr == EMBER_WALL_REMOTE_SKIP)
				continue;
			if (rr == EMBER_WALL_REMOTE_RUNNING && cpu_signals[i] && !final) {
				/* no signal of its own (one could land as it enters
				 * a call, which would return EINTR): the time since
				 * its previous wall sample, weighed now as a sample
				 * would be, goes to its next CPU sample's handler */
				int64_t t = mono_ns(), last = atomic_exchange(&e->wall_last_ns, t);
				if (last > 0 && t > last)
					atomic_fetch_add(&e->wall_want_ns, t - last);
				atomic_fetch_add(&w->cpu_asked, 1);
				continue;
			}
		}
		if (final)
			record_tail(w, tids[i]);
		else if (send_wall(w, tids[i], weights[i]) == 0)
			sent++;
	}
	atomic_fetch_add(&w->signals, sent);
	if (!final)
		atomic_fetch_add(&w->ticks, 1);
	if (n > atomic_load(&w->max_per_tick))
		atomic_store(&w->max_per_tick, n);
	return n;
}

static void *wall_main(void *arg)
{
	ember__wall *w = arg;
	ember__threads_exclude(w->threads, (int32_t)gettid());

	int64_t next = mono_ns() + w->interval_ns;
	size_t nthreads = 0;
	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		struct timespec dl = {next / 1000000000, next % 1000000000};
		pthread_cond_timedwait(&w->cv, &w->mu, &dl);
		if (w->stop)
			break;
		int64_t now = mono_ns();
		if (now < next)
			continue; /* woken early */
		pthread_mutex_unlock(&w->mu);
		/* No signal while the process execs (threads.h): a tick picks and
		 * signals threads inside the gate. */
		if (ember__threads_gate_enter(w->threads)) {
			tick(w, now, 0, &nthreads);
			ember__threads_gate_leave(w->threads);
		}
		/* The next tick from the schedule, not from now, so the pace
		 * holds; after a stall, start again from now rather than burst. */
		next += ember__wall_tick_ns(w->interval_ns, nthreads, EMBER__WALL_MAX_PER_TICK,
					    EMBER__WALL_MIN_TICK_NS);
		if (next < now)
			next = now;
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	/* At stop, the time of threads asleep since their last sample: one
	 * pass over every thread, without signals. */
	size_t passes = (nthreads + EMBER__WALL_MAX_PER_TICK - 1) / EMBER__WALL_MAX_PER_TICK;
	for (size_t p = 0; p < passes && p < 100000; p++)
		tick(w, mono_ns(), 1, &nthreads);
	ember__wall_remote_free(&w->remote);
	return NULL;
}

int ember__wall_start(ember__wall *w, struct ember__threads *t, int signo, unsigned interval_ms,
		      int signal_idle)
{
	memset(w, 0, sizeof(*w));
	w->threads = t;
	w->signo = signo;
	w->pid = getpid();
	w->interval_ns = (int64_t)interval_ms * 1000000;
	w->skip_idle = !signal_idle;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	int rc = ember__thread_start(&w->thread, 256u << 10, wall_main, w, "emberprof-wall");
	if (rc != 0) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		return ember__error_errno(EMBER_ERR_SYS, rc, "cannot start the wall-clock thread");
	}
	w->started = 1;
	pthread_mutex_lock(&t->mu);
	t->wall_final = 1;
	pthread_mutex_unlock(&t->mu);
	return 0;
}

void ember__wall_announce_stop(ember__wall *w)
{
	if (w->started)
		atomic_store(&w->stopping, (int32_t)gettid());
}

void ember__wall_stop(ember__wall *w)
{
	if (!w->started)
		return;
	pthread_mutex_lock(&w->threads->mu);
	w->threads->wall_final = 0;
	pthread_mutex_unlock(&w->threads->mu);
	pthread_mutex_lock(&w->mu);
	atomic_store(&w->stopping, (int32_t)gettid()); /* if not announced already */
	w->stop = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	w->started = 0;
}
