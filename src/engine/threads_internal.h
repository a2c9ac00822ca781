/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threads_internal.h - the parts of the thread registry (threads.h) that
 * live in their own files: threads_blocked.c (threads that really block
 * the sampling signal: their CPU time measured instead),
 * threads_engine.c (which CPU engine a start uses) and threads_arm.c
 * (arming each thread's timer or perf event). Called with the registry's
 * mutex held (or before start publishes the registry), on the agent
 * thread, the caller of start or exec, or an application thread that
 * registers itself or exits; ember__threads_close_perf also in a fork
 * child's atfork handler. None is async-signal-safe.
 */
#ifndef EMBER_ENGINE_THREADS_INTERNAL_H
#define EMBER_ENGINE_THREADS_INTERNAL_H

#include "engine/threads.h"

/* Thread `tid`'s CPU time in ns from its CPU clock, 0 if it is gone. */
uint64_t ember__thread_cpu_ns(int32_t tid);
/* The same into *ns: 0, or -1 when it cannot be read (the thread is
 * gone); a thread that has not run yet reads 0. */
int ember__thread_cpu_read(int32_t tid, uint64_t *ns);
/* Queues a note for the agent's log about a thread that blocks the
 * signal (`gone`: it ended); dropped when the notes are full. */
void ember__threads_note_blocked(ember__threads *t, const ember__thread_rec *r, int gone);
/* At each scan: whether `r` really blocks the sampling signal (its
 * /proc SigBlk, over two scans, and too few samples for its CPU time),
 * and if so the CPU time it used unsampled. */
void ember__threads_check_blocked(ember__threads *t, ember__thread_rec *r);

/* The CPU thread r used since its engine was armed, and how much of it no
 * sample weighs, added to t's tail counters (see ember__threads); with
 * `arm`, starts the measure instead. Lock held; on the thread itself when
 * it exits, else any thread of the process. Not async-signal-safe. */
void ember__threads_measure_tail(ember__threads *t, ember__thread_rec *r, int arm);
/* Arms a CPU timer on thread r->tid (its CPU clock, our signal, a first
 * expiry uniform in the period); 0 or -errno. */
int ember__threads_arm_timer(ember__threads *t, ember__thread_rec *r);
/* Opens, publishes and enables a perf event for thread r->tid (its entry
 * e); 0 or -errno. */
int ember__threads_arm_perf(ember__threads *t, ember__thread_rec *r, ember__thread_ent *e);
/* Arms r's engine once (counted in threads_seen; parked while an exec is
 * under way); a failure is counted and noted. */
void ember__threads_arm_thread(ember__threads *t, ember__thread_rec *r, ember__thread_ent *e);
/* Counts a timer or perf event that could not be made for `tid` (errno
 * `err`) and keeps the first one's message for the log. */
void ember__threads_note_timer_failure(ember__threads *t, int32_t tid, int err);
/* Closes r's perf descriptor if it is still ours (util/ownfd.h). */
void ember__threads_close_perf(ember__threads *t, ember__thread_rec *r);
/* Finds perf events the program closed (with `full`, by their id too) and
 * makes them again. */
void ember__threads_check_perf(ember__threads *t, int full);
/* Unpublishes and closes the perf event of a thread that exits or is gone. */
void ember__threads_drop_perf(ember__threads *t, ember__thread_rec *r);
/* Picks the engine for EMBER_ENGINE_* `engine` (auto: perf events where
 * the kernel's tick would make CPU timers coarse, and they work), sets
 * t->perf / t->process_timer and t->engine_note; 0 or an ember_err. */
int ember__threads_choose_engine(ember__threads *t, int engine, int perf_refuse);

#endif
