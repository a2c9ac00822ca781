/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handler.h - the sampling signal handler and the little global state it
 * needs.
 *
 * The handler reaches the running sampler through one atomic pointer
 * (g_state in handler.c): it is the only mutable global of emberprof,
 * besides an in-flight counter that lets the agent wait until no handler
 * runs before it frees what handlers read.
 */
#ifndef EMBER_HANDLER_H
#define EMBER_HANDLER_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "sample/sampbuf.h"
#include "sample/threadtab.h"
#include "unwind/unwind.h"

/* sigqueue() value asking a thread to report its sp and pthread_self(). */
#define EMBER_PROBE_MAGIC 0x656d6272 /* "embr" */

/* sigev_value of emberprof's CPU timers ("embt"): a timer signal without
 * it is the program's own (sigvirt.h). */
#define EMBER_TIMER_VALUE ((uintptr_t)0x656d6274u << 16)
/* sival_ptr of the queued signal that asks a thread to deliver the
 * program's own signal kept for it ("embd", sigvirt.c). */
#define EMBER_REDELIVER_VALUE ((uintptr_t)0x656d6264u << 16)

/*
 * Wall-clock samples (src/engine/engine_wall.c) are queued signals whose
 * sival_ptr holds EMBER_WALL_TAG in its top 16 bits and, below, the wall
 * time in nanoseconds since the thread's previous visit (< 2^48 ns, 78
 * hours): the weight only if the handler cannot find the thread's table
 * entry, whose wall_last_ns otherwise gives it (threadtab.h).
 */
#define EMBER_WALL_TAG 0xe3a1ull
#define EMBER_WALL_SHIFT 48
#define EMBER_WALL_VALUE(ns) ((EMBER_WALL_TAG << EMBER_WALL_SHIFT) | ((uint64_t)(ns) & ((1ull << EMBER_WALL_SHIFT) - 1)))

/* Sample kinds and states, in ember__sample_rec.flags next to the
 * EMBER_UNWIND_* bits (unwind.h uses the low bits). */
enum {
	EMBER_SAMPLE_WALL = 1u << 8,     /* wall-clock sample (else CPU) */
	EMBER_SAMPLE_SLEEPING = 1u << 9, /* wall: interrupted in a system call */
	EMBER_SAMPLE_RUNNING = 1u << 10, /* wall: interrupted in user code */
	/* wall: recorded by the wall-clock thread without a signal, for a
	 * thread still asleep since its sample `reserved` (a sequence number):
	 * no stack of its own, the agent repeats that sample's (wall_replay.h),
	 * in that sample's state. Every wall sample with a stack has a
	 * sequence number in `reserved`, running ones too (the exit hook
	 * repeats a thread's last sample, threads.c). */
	EMBER_SAMPLE_REPEAT = 1u << 11
};

typedef struct ember__sigstate {
	ember__sampbuf buf;
	_Atomic(ember__threadtab *) tab;
	/* DWARF unwind tables (src/cfi/unwind_tables.c); NULL: frame pointers.
	 * Loaded sequentially consistent after the in-flight count is raised,
	 * so the agent can tell when no handler still holds an old snapshot. */
	_Atomic(const ember__unwind_snapshot *) unwind_snap;
	int unwind_mode; /* EMBER_UNWIND_MODE_* */
	int max_depth;
	/* The next three are set by the agent thread as it starts the engine,
	 * while the handler may already run (atomics: the order that matters
	 * goes through the kernel, arming a timer after the store, which
	 * ThreadSanitizer cannot see). */
	_Atomic int accept_itimer; /* process-wide ITIMER_PROF fallback: SI_KERNEL signals count */
	_Atomic int accept_perf;   /* perf_events engine: POLL_* signals from our descriptors count */
	_Atomic int64_t period_ns; /* the CPU sampling period: a timer expiry stands for this */
	_Atomic uint64_t samples;
	_Atomic uint64_t dropped_full;
	_Atomic uint64_t truncated;
	_Atomic uint64_t no_bounds;
	_Atomic uint64_t foreign;
	_Atomic uint64_t probes;
	_Atomic uint64_t labels_truncated;
	_Atomic uint64_t wall_samples;
	/* ... of which recorded by a CPU sample's handler for the time the
	 * wall-clock thread found its thread running (threadtab.h,
	 * wall_want_ns); such time no CPU sample took before the thread
	 * exited or sampling stopped, given to a repeat of the thread's last
	 * wall sample (left), or lost when it had none (lost) */
	_Atomic uint64_t wall_at_cpu, wall_want_left, wall_want_lost;
	_Atomic uint64_t perf_stale; /* perf signals for a descriptor no longer ours */
	_Atomic uint64_t kernel_samples; /* perf samples with kernel frames (sample/kring.h) */
	_Atomic uint64_t kernel_missing; /* ... whose ring held no record: none taken */
	_Atomic uint32_t wall_seq;   /* numbers sleeping wall samples (engine_wall.h) */
	_Atomic uint64_t unwind_pending; /* samples with EMBER_UNWIND_PENDING (lazy tables) */
	/* Our signals that found the thread returning EINTR from a system
	 * call: the call began as the signal was sent, and the program sees
	 * the EINTR (docs/design/limits.md). */
	_Atomic uint64_t interrupted_calls;
} ember__sigstate;

/*
 * Makes `st` the state handlers use; -1 if another state is attached.
 * Async-signal-safe (one compare-and-swap).
 */
int ember__sigpath_attach(ember__sigstate *st);
/* Detaches the state: handlers that start afterwards do nothing. */
void ember__sigpath_detach(void);
/* Number of handlers running right now, on any thread. */
int ember__sigpath_inflight(void);
/* Forgets the calling thread's cached id: for a fork child, whose only
 * thread has a new id. Async-signal-safe. */
void ember__sigpath_forget_tid(void);

/*
 * For code that reads what handlers read (the unwind snapshot, the thread
 * table) outside a signal handler - the malloc hook's sampled path
 * (src/heap/hook.c): raises the in-flight count, so that the agent frees
 * nothing such code may still hold, and returns the active state or
 * NULL. Every enter is paired with a leave on the same thread.
 * Async-signal-safe.
 */
ember__sigstate *ember__sigpath_enter(void);
void ember__sigpath_leave(void);

/* Forgets the active state without touching signals: for a fork child. */
void ember__sigpath_forget(void);

/* The handler itself, exposed for tests and for the disposition check. */
void ember__sigpath_handler(int sig, siginfo_t *si, void *uc);

/* Handler nesting depth on this thread (tests: "no malloc in handler"). */
extern __thread int ember__sig_depth __attribute__((tls_model("initial-exec")));

/* Set by the thread's exit hook (thread_hook.c) as its first act, and by
 * ember_running_stop on the stopping thread while it stops the sampling: a
 * wall signal that reaches the thread there is not sampled (its stack
 * would be emberprof's, which the program did not run; that time is
 * recorded as a repeat of the thread's last wall sample instead). */
extern __thread volatile int ember__tls_exiting __attribute__((tls_model("initial-exec")));

#endif
