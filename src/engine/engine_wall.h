/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_wall.h - the wall-clock engine: a timer thread of emberprof's own
 * ("emberprof-wall") signals every sampled thread at a fixed wall-clock
 * interval, whatever the thread is doing, so that time spent blocked
 * (system calls, locks, sleeps) shows up as well as time on the CPU.
 *
 * Cost is bounded: each tick signals at most EMBER__WALL_MAX_PER_TICK
 * threads, rotating through them in tid order, and ticks are spread so
 * that a full pass over N threads takes the interval - but ticks are never
 * closer than EMBER__WALL_MIN_TICK_NS, so with many threads a pass takes
 * longer and each sample weighs more (its weight is the wall time since
 * its thread's previous sample, which the handler measures itself from the
 * thread's table entry, so a signal lost by merging into another pending
 * one loses no time). The signal is the sampling signal, queued
 * with rt_tgsigqueueinfo and a value the handler recognizes (handler.h).
 * By default (not EMBERPROF_WALL_SIGNAL_IDLE) few threads get it: one
 * blocked in a system call is sampled from outside (wall_remote.h), one
 * running that gets CPU sampling signals of its own has its wall time
 * left in its table entry for its next CPU sample's handler to record
 * (wall_want_ns in sample/threadtab.h): a signal sent to a thread seen
 * running can land as it enters a call, which then returns EINTR.
 *
 * The timer thread is not the agent thread: the agent thread spends tens
 * of milliseconds symbolizing and encoding at each window boundary, which
 * would stall the ticks. Agent-side code; nothing here is
 * async-signal-safe.
 */
#ifndef EMBER_ENGINE_WALL_H
#define EMBER_ENGINE_WALL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/wall_remote.h"

#define EMBER__WALL_MAX_PER_TICK 8
#define EMBER__WALL_MIN_TICK_NS 1000000LL /* at most 8000 wall signals per second */

/*
 * Threads left asleep. A thread whose last wall sample found it blocked in
 * a system call, and whose CPU time has since moved by at most
 * EMBER__WALL_IDLE_CPU_NS, has not run: its stack is the one of that
 * sample. The timer thread then does not signal it (a signal would wake
 * it, and make poll(), epoll_wait(), nanosleep() and the like return EINTR
 * early) but records that sample again, weighing the time since the
 * thread's previous wall sample, as an EMBER_SAMPLE_REPEAT record in the
 * ring that the agent resolves (wall_replay.h). The margin covers what the thread runs after the
 * handler read its CPU time: the return from the signal and the restart
 * of the call, or the EINTR return and the call made again; it bounds
 * what a repeated stack can miss at 20 us of CPU, in total, since the
 * sample it repeats. EMBERPROF_WALL_SIGNAL_IDLE=1 signals every thread
 * anyway (a diagnostic, and the tests' control).
 */
#define EMBER__WALL_IDLE_CPU_NS 20000u

struct ember__threads;

typedef struct ember__wall {
	struct ember__threads *threads;
	int signo;
	pid_t pid;
	int64_t interval_ns;
	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	/* the thread stopping the agent, announced before any stop code runs
	 * (ember__wall_announce_stop), else by ember__wall_stop: never sampled
	 * from then on */
	_Atomic int32_t stopping;
	int skip_idle; /* record threads left asleep without a signal (default) */
	_Atomic uint64_t signals, ticks, max_per_tick;
	/* blocked threads sampled without a signal (wall_remote.h), and the
	 * timer thread's buffers for it */
	_Atomic uint64_t remote_samples;
	/* ticks that found a thread running and, rather than signal it, left
	 * its time to its next CPU sample (wall_want_ns in sample/threadtab.h;
	 * the handler counts the samples it took in ember__sigstate) */
	_Atomic uint64_t cpu_asked;
	ember__wall_remote remote;
} ember__wall;

/*
 * Starts the timer thread sampling the threads of `t` every `interval_ms`
 * with signal `signo` (threads left asleep recorded without one unless
 * `signal_idle`, the builder's EMBERPROF_WALL_SIGNAL_IDLE=1, read on the
 * builder's thread: ours read only the start-up environment). The thread
 * blocks every signal and
 * excludes itself from `t`. 0 or ember_err.
 */
int ember__wall_start(ember__wall *w, struct ember__threads *t, int signo, unsigned interval_ms,
		      int signal_idle);

/*
 * Records, without a signal, another sample of thread `tid` still asleep
 * since its sleeping sample `seq`, weighing `weight_ns`: a stackless
 * EMBER_SAMPLE_REPEAT record in st's ring that the agent resolves to that
 * sample's stack (wall_replay.h). Counted as dropped if the ring is full.
 * Any thread; async-signal-safe (a ring claim and clock_gettime).
 */
struct ember__sigstate;
void ember__wall_record_repeat(struct ember__sigstate *st, int32_t tid, int64_t weight_ns,
			       uint32_t seq);

/*
 * Records, without a signal, the time of thread `tid` (entry `e`) since
 * its last wall sample, plus the time ticks found it running for that no
 * CPU sample took (its entry's wall_want_ns), as that sample again (a
 * repeat, in its state), or, if it has none, as a one-frame sample of
 * `start_pc` (its start routine; 0: unknown). For a thread whose time must not be sampled where it is
 * now: in its exit hook, or stopping the agent. Returns 0 if neither was
 * known (nothing recorded), else 1. Any thread; async-signal-safe.
 */
struct ember__thread_ent;
int ember__wall_record_last(struct ember__sigstate *st, struct ember__thread_ent *e, int32_t tid,
			    uint64_t start_pc);

/*
 * Announces that the calling thread is about to stop the agent: from then
 * on the timer thread neither signals nor remotely samples it (its stack
 * would show emberprof's stop code); its time is recorded at stop as a
 * repeat of its last sample. Call first thing in the stop. Harmless if
 * never started. Async-signal-safe (an atomic store).
 */
void ember__wall_announce_stop(ember__wall *w);

/* Stops and joins the timer thread (no more wall signals are sent after
 * it returns). Harmless if never started. */
void ember__wall_stop(ember__wall *w);

/*
 * The rotation: picks up to `max` (<= n) of the `n` records at `base`
 * (`stride` bytes apart, each starting with its int32_t tid, sorted by
 * tid), the ones whose tids follow *cursor, wrapping around to the
 * smallest; their indexes go to idx[] and *cursor becomes the last tid
 * picked. Records added or removed between calls do not disturb it: the
 * cursor is a tid, not a position. Returns how many were picked.
 */
size_t ember__wall_pick(const void *base, size_t stride, size_t n, int32_t *cursor, size_t max,
			size_t *idx);

/*
 * The pause between ticks so that a pass over `nthreads` threads, at most
 * `per_tick` a tick, takes `interval_ns` - never below `min_tick_ns`.
 */
int64_t ember__wall_tick_ns(int64_t interval_ns, size_t nthreads, size_t per_tick,
			    int64_t min_tick_ns);

#endif
