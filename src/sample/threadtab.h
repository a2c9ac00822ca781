/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threadtab.h - per-thread stack bounds the signal handler can look up by
 * thread id without locks.
 *
 * An open-addressing table of fixed capacity, mmap'd once. Readers (the
 * handler) find a thread's entry by linear probing and read its bounds
 * under a sequence counter, so a concurrent update is seen either whole or
 * not at all (then the sample keeps only its leaf). Keys are never removed:
 * an exited thread's entry is invalidated and reused if the id comes back,
 * so probe chains stay intact. When the table is too full the writer builds
 * a bigger one and publishes it with one atomic store (see threads.c).
 *
 * Writers must hold the agent's thread-table lock; they are not
 * async-signal-safe only in that sense (they never block or allocate).
 */
#ifndef EMBER_THREADTAB_H
#define EMBER_THREADTAB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"

typedef struct ember__thread_ent {
	_Atomic int32_t tid;  /* 0 = empty */
	_Atomic uint32_t seq; /* odd while being written */
	_Atomic uintptr_t lo, hi;
	/* Written by the handler when it answers a probe (threads.c). */
	_Atomic uintptr_t probe_sp, probe_self;
	/* perf_events engine (engine_perf.c): the thread's event descriptor
	 * plus one (0: none), written by the agent; and the event's task-clock
	 * count at the end of the thread's previous sample, written only by
	 * handlers running on this thread (reset to 0 with a new descriptor). */
	_Atomic int32_t perf_fd1;
	_Atomic uint64_t perf_last;
	/* The event's mapped ring (kernel frames, sample/kring.h), 0: none.
	 * Written by the agent before perf_fd1, cleared with it; unmapped
	 * only when no handler can read it (engine/threads_arm.c). */
	_Atomic uintptr_t perf_ring;
	/* wall-clock engine (engine_wall.h): the sequence number of the
	 * thread's last wall sample if it was asleep (0: running, unknown or
	 * not recorded), and the thread's CPU time when that sample ended.
	 * Written by the handler on this thread (wall_cpu_ns first, then
	 * wall_seq with release), read by the wall-clock thread. */
	_Atomic uint32_t wall_seq;
	_Atomic uint64_t wall_cpu_ns;
	/* The sequence number of the thread's last wall sample with a stack,
	 * whatever its state (0: none), written by whoever took it after the
	 * commit: the thread's exit hook repeats that sample for the time
	 * since, rather than sampling its own exit-hook code. */
	_Atomic uint32_t wall_last_seq;
	/* CLOCK_MONOTONIC end of the thread's last wall sample (or of its
	 * adoption): each wall sample, taken by the handler or repeated by the
	 * timer thread, swaps in its own time and weighs the difference, so
	 * the samples' weights tile the thread's time even when a signal is
	 * lost (merged into another pending SIGPROF) or delayed. */
	_Atomic int64_t wall_last_ns;
	/* The wall time (ns) the wall-clock thread found this thread running
	 * for and wants recorded without a signal of its own (0: none;
	 * engine_wall.h): the ticks that saw it running add the time since its
	 * previous wall sample (swapping their own time into wall_last_ns, as
	 * a sample does); the handler of the thread's next CPU sample takes it
	 * (exchange to 0) and records it as a wall sample of that stack; what
	 * is left when the thread exits or sampling stops goes to its last
	 * sample's repeat (ember__wall_record_last). */
	_Atomic int64_t wall_want_ns;
	/* The CPU time (ns, wraps) that the CPU sampling signals delivered to
	 * this thread stand for, recorded or dropped (a full buffer), merged
	 * expirations included: read by the blocked-signal scan. A thread
	 * whose mask shows the signal blocked at two scans but whose signals
	 * keep coming blocks it only for moments (glibc's raise() and
	 * pthread_create block every signal for a while). */
	_Atomic uint64_t cpu_signal_ns;
	/* The weight of those samples, in ns (reset by the agent when it arms
	 * the thread), against the thread's CPU clock when the thread leaves
	 * or sampling stops: the CPU in no sample (threads_blocked.c). */
	_Atomic uint64_t cpu_weight_ns;
} ember__thread_ent;

typedef struct ember__threadtab {
	uint32_t cap; /* power of two */
	_Atomic uint32_t used;
	size_t map_size;
	ember__thread_ent ents[];
} ember__threadtab;

/* Maps a table with room for `cap` (rounded up to a power of two) ids. */
ember__threadtab *ember__threadtab_new(uint32_t cap);
void ember__threadtab_free(ember__threadtab *t);

/*
 * Reader: copies tid's bounds into *out; returns 1 if found and valid.
 * Async-signal-safe, lock-free.
 */
int ember__threadtab_bounds(const ember__threadtab *t, int32_t tid, ember__stack_bounds *out);

/* The same for an entry already found (ember__threadtab_find).
 * Async-signal-safe, lock-free. */
int ember__threadtab_ent_bounds(ember__thread_ent *e, ember__stack_bounds *out);

/* Reader: the entry for tid or NULL. Async-signal-safe, lock-free. */
ember__thread_ent *ember__threadtab_find(ember__threadtab *t, int32_t tid);

/*
 * Writer (lock held): the entry for tid, inserted if absent. NULL when the
 * table is more than 3/4 full and tid is absent (the caller grows it).
 */
ember__thread_ent *ember__threadtab_insert(ember__threadtab *t, int32_t tid);

/* Writer (lock held): sets or clears (0, 0) the bounds of an entry. */
void ember__threadtab_set_bounds(ember__thread_ent *e, uintptr_t lo, uintptr_t hi);

#endif
