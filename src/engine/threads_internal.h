/*
 * threads_internal.h - the parts of the thread registry (threads.h) that
 * live in their own files: threads_blocked.c (threads that really block
 * the sampling signal: their CPU time measured instead) and
 * threads_engine.c (which CPU engine a start uses). Called with the
 * registry's mutex held, on the agent thread or the caller of start;
 * none is async-signal-safe.
 */
#ifndef EMBER_ENGINE_THREADS_INTERNAL_H
#define EMBER_ENGINE_THREADS_INTERNAL_H

#include "engine/threads.h"

/* Thread `tid`'s CPU time in ns from its CPU clock, 0 if it is gone. */
uint64_t ember__thread_cpu_ns(int32_t tid);
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
/* Picks the engine for EMBER_ENGINE_* `engine` (auto: perf events where
 * the kernel's tick would make CPU timers coarse, and they work), sets
 * t->perf / t->process_timer and t->engine_note; 0 or an ember_err. */
int ember__threads_choose_engine(ember__threads *t, int engine, int perf_refuse);

#endif
