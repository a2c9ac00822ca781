/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threads.h - the set of sampled threads: one CPU-time timer or one
 * perf_events task-clock event (engine_perf.h) per thread,
 * each thread's stack bounds published for the handler, and the hooks
 * that cover threads created after start.
 *
 * Threads are found three ways: a scan of /proc/self/task at start and
 * periodically on the agent thread (safety net, and the only way when the
 * pthread_create hook is not in effect); the pthread_create wrapper
 * (thread_hook.c), which registers a new thread from inside itself before
 * its start routine runs; and exits, seen by a thread-specific-data
 * destructor or by the next scan.
 *
 * Stack bounds come from pthread_getattr_np() in hooked threads. For other
 * threads the agent asks the thread itself, with a queued signal, for its
 * stack pointer and pthread_self(), and derives the bounds from the mapping
 * that holds the stack pointer (see resolve_probe in threads.c).
 *
 * All functions here run on the agent thread or on application threads
 * outside signal handlers, under the registry's mutex. None is
 * async-signal-safe.
 */
#ifndef EMBER_THREADS_H
#define EMBER_THREADS_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sample/handler.h"

typedef struct ember__thread_rec {
	int32_t tid; /* first: the wall-clock rotation reads it by stride */
	int has_timer;
	timer_t timer;
	int perf_fd1;      /* perf event descriptor + 1; 0: none */
	void *perf_ring;   /* its mapped ring (kernel frames), NULL: none */
	uint64_t perf_id;  /* its PERF_EVENT_IOC_ID, to tell it from a reused number */
	int armed;         /* counted in threads_seen, engine armed (or tried) */
	int parked;        /* engine left unarmed while an exec is under way */
	/* Scans in a row (0, 1, 2 = two or more) that saw the sampling signal
	 * really blocked in its SigBlk. One sighting is not enough: a thread
	 * is blocked for a moment inside a handler, in glibc's raise() and
	 * while the agent starts its threads. From two on, its CPU time is
	 * not sampled, is counted, and the agent is told. */
	int blocks_signal;
	int own;                 /* one of emberprof's threads (name "emberprof*") */
	char comm[16];           /* its name when first seen blocking */
	uint64_t blocked_cpu_at; /* its CPU clock at the last scan, while blocking */
	uint64_t scan_cpu;       /* its CPU clock at the last blocked-signal scan */
	uint64_t scan_signal_ns; /* its entry's cpu_signal_ns then */
	uint64_t scan_debt;      /* CPU its signals have not covered, while it blocks */
	uint64_t unsampled_ns;   /* CPU time it used while blocking */
	uint64_t cpu_base_ns;    /* its CPU clock when its engine was armed (+1; 0: not) */
	int64_t wall_last; /* CLOCK_MONOTONIC of its last wall-clock sample (or adoption) */
	int bounds; /* BOUNDS_* in threads.c */
	unsigned probe_tries;
	uint64_t seen_gen;
} ember__thread_rec;

/* CPU a thread used before sampling began (a lazily started process:
 * ember__threads_catch_up_from), in no sample. */
typedef struct ember__early_cpu {
	int32_t tid;
	uint64_t ns;
} ember__early_cpu;
/* Threads recorded one by one; the CPU of any more is added to the
 * image's first thread's (tid == pid) entry, or the first entry. */
#define EMBER__EARLY_MAX 8

/* A thread that really blocks the sampling signal (threads.c). */
typedef struct ember__blocked_note {
	int32_t tid;
	int gone;          /* 0: just found blocking; 1: exited */
	char comm[16];
	uint64_t unsampled_ns; /* with gone: its CPU time not sampled */
} ember__blocked_note;

typedef struct ember__threads {
	pthread_mutex_t mu;
	ember__sigstate *sig;
	ember__threadtab *tab;
	ember__threadtab *retired[16];
	unsigned nretired;
	void *tasks;             /* DIR * of /proc/self/task, rewound per scan */
	/* Counters: written by the agent (and application threads at start
	 * and exit) under `mu`, read without it by ember_running_stats():
	 * atomics, relaxed - each is a statistic on its own. */
	_Atomic uint64_t fd_reopens; /* times the program closed it and it was reopened */
	ember__thread_rec *recs; /* sorted by tid */
	size_t nrecs, caprecs;
	int signo;
	int64_t period_ns;
	int process_timer; /* setitimer mode */
	int perf;          /* perf_events mode */
	int perf_exclude_kernel;
	/* kernel frames (EMBERPROF_KERNEL): asked for, and still on (a ring
	 * that could not be mapped turns them off: ring_error says why) */
	int kernel_frames;
	char ring_error[200];
	char engine_note[320]; /* why auto did not pick perf_events, for the log */
	int32_t agent_tid;
	int32_t excluded_tid; /* the wall-clock timer thread: never sampled */
	/* other threads of emberprof found by a scan (named "emberprof*":
	 * engine/thread_start.h; an uploader, the attach watch, another
	 * agent's), never sampled; kept while a scan still sees them */
	struct {
		int32_t tid;
		uint64_t seen_gen;
	} ours[8];
	int32_t wall_cursor;  /* tid of the last thread the wall-clock engine signalled */
	pid_t pid;
	uint64_t rng;
	uint64_t gen;
	int hook_active;
	int stopped; /* set by ember__threads_stop: no timer, probe or scan after it */
	/* An exec is under way (ember__threads_exec_begin): every engine is
	 * disarmed and no signal of ours may be sent until it fails. `gate` is
	 * held by the wall-clock thread while it picks and signals threads, and
	 * by the exec'ing thread from the suspension until the exec fails. */
	_Atomic int suspended;
	pthread_mutex_t gate;
	int wall_final; /* the wall-clock engine runs: an exiting thread records its last wall time */
	/* counters */
	_Atomic uint64_t threads_seen, timer_failures, probe_failures, table_full, perf_events;
	/* CPU time of threads that really block the sampling signal (through
	 * a path emberprof's wrappers do not see: raw system calls, or masks
	 * set before the agent started), measured at each scan */
	_Atomic uint64_t unsampled_cpu_ns;
	/* Threads sampled by a timer or perf event of their own, measured when
	 * each leaves (exit hook) or sampling stops: the CPU they used since
	 * armed, and what their samples weigh. The difference is CPU in no
	 * sample: expirations the kernel had not checked yet when a thread
	 * left, many under heavy CPU contention (docs/design/limits.md). */
	_Atomic uint64_t tail_cpu_ns, tail_weight_ns;
	/* A lazily started process's first start (ember__threads_catch_up_from):
	 * while catch_up is set (the start's first scan), each thread armed
	 * records the CPU it used in this image before it was armed, which no
	 * sample covers, in early[] (the agent takes it: ember__threads_take_early).
	 * catch_cpu0_ns: the image's one thread's (tid == pid) CPU clock when
	 * the image began; every other thread began after. */
	int catch_up;
	uint64_t catch_cpu0_ns;
	ember__early_cpu early[EMBER__EARLY_MAX];
	unsigned nearly;
	/* For the agent's log (ember__threads_take_blocked): threads found
	 * blocking, and blocking threads gone with CPU time unsampled. */
	ember__blocked_note notes[8];
	unsigned nnotes;
	char first_error[256]; /* first timer failure, for the log */
	/* names of the last threads that exited through the pthread_create
	 * hook (prctl PR_GET_NAME in the exiting thread), a ring: the agent
	 * labels their samples after /proc/self/task/TID/comm is gone */
	struct {
		int32_t tid;
		char name[16];
	} gone[64];
	unsigned ngone;
} ember__threads;

/*
 * The name a thread had when it exited through the pthread_create hook,
 * copied into buf (NUL-terminated); 1 if known, else 0 (buf = ""). Takes
 * t->mu. Agent thread; not async-signal-safe.
 */
int ember__threads_gone_name(ember__threads *t, int32_t tid, char *buf, size_t len);

/*
 * Starts sampling every thread of the process except `agent_tid`: builds
 * the table, arms a perf event or a timer per thread (or the process
 * timer), probes stack bounds. `engine` is an ember_engine: AUTO uses perf
 * events where the kernel permits them (with `perf_refuse`, the test knob,
 * as if it did not), else per-thread timers, else the process timer, and
 * leaves the reason for not using perf events in t->engine_note; PERF
 * fails with EMBER_ERR_UNSUPPORTED where the kernel refuses. `kernel`: perf
 * events that sample the kernel also record its frames (t->kernel_frames).
 * On success the
 * registry is reachable by the pthread_create hook. 0 or ember_err.
 */
/*
 * Registers the registry's atfork handlers now (once per program image;
 * ember__threads_start does it too). For the lazy start (fork_child.c):
 * its own handlers must come after these, and no start may call
 * pthread_atfork while a fork waits for it. Not async-signal-safe.
 */
void ember__threads_atfork_init(void);

int ember__threads_start(ember__threads *t, ember__sigstate *sig, int signo, int64_t period_ns,
			 int engine, int perf_refuse, int kernel, int32_t agent_tid);

/*
 * This process image, `pid`, began (a fork child, an image exec'd in the
 * profiled tree) with one thread (its tid is the pid), whose CPU clock then
 * read `cpu0_ns`, and its agent starts lazily, later. The next
 * ember__threads_start in this process (only that one) records the CPU each
 * thread it adopts used since then: what no sample covers, which the agent
 * reports on a stack of its own ("[before sampling]") instead of leaving it
 * out. Async-signal-safe (atomic stores: fork_child.c calls it in its
 * atfork child handler).
 */
void ember__threads_catch_up_from(pid_t pid, uint64_t cpu0_ns);

/*
 * Copies the CPU recorded by the start's catch-up (see above) into out
 * (room for EMBER__EARLY_MAX) and forgets it: a second call gives 0.
 * Returns how many entries were written. Agent thread; takes `mu`.
 */
size_t ember__threads_take_early(ember__threads *t, ember__early_cpu *out);

/* The engine in use: "perf_events", "per-thread CPU timers" or "setitimer(ITIMER_PROF)". */
const char *ember__threads_engine_name(const ember__threads *t);

/* Why kernel frames stopped (a perf ring could not be mapped): 1 and the
 * reason in why (n bytes), else 0. Takes `mu`. */
int ember__threads_ring_error(ember__threads *t, char *why, size_t n);

/* The number of threads known now. Takes `mu`: application threads add
 * and remove themselves (on_start, on_exit) while the agent runs. */
size_t ember__threads_count(ember__threads *t);

/*
 * Queues `signo` to thread `tid` of process `pid` from ourselves
 * (SI_QUEUE, our pid: what the handler accepts for probes and wall
 * samples) with `value`. 0 or -1 (errno).
 */
int ember__queue_signal(pid_t pid, int32_t tid, int signo, union sigval value);

/* Records thread tid's TCB (pthread_self()) in its entry unless known:
 * for the thread that started the agent, which is not probed. */
void ember__threads_set_tcb(ember__threads *t, int32_t tid, uintptr_t self);

/* Never samples thread `tid` (forgotten now if known): the wall-clock
 * engine's own thread calls this for itself. */
void ember__threads_exclude(ember__threads *t, int32_t tid);

/*
 * The wall-clock engine's next batch: up to `max` thread ids, the ones
 * following the last batch in tid order (wrapping around), each with the
 * wall time since its previous visit (or since it was found) in
 * weights_ns. With `skip_idle`, repeat_seq[i] is nonzero for a thread
 * that was asleep at its last wall sample and has not run since: the
 * number of that sample, to be recorded again rather than the thread
 * signalled (engine_wall.h); else 0. cpu_signals[i] is 1 if the thread
 * gets CPU sampling signals of its own (a per-thread timer or perf event,
 * the signal not blocked by it), which can carry its wall sample when it
 * runs (engine_wall.h), else 0. `now_ns` is CLOCK_MONOTONIC;
 * *nthreads gets how many threads are known. Returns the batch size.
 */
size_t ember__threads_wall_pick(ember__threads *t, int64_t now_ns, int skip_idle, int32_t *tids,
				int64_t *weights_ns, uint32_t *repeat_seq, uint8_t *cpu_signals,
				size_t max, size_t *nthreads);

/*
 * Agent-thread housekeeping: resolves answered probes; with `scan`, also
 * re-reads /proc/self/task to arm new threads and forget dead ones.
 */
void ember__threads_poll(ember__threads *t, int scan);

/*
 * What happened to threads that really block the sampling signal since
 * the last call (found blocking; gone with CPU time unsampled): up to
 * `max` notes; returns how many. With `live`, also a "gone" note for each
 * live thread with unsampled CPU time (at stop). Agent thread.
 */
size_t ember__threads_take_blocked(ember__threads *t, ember__blocked_note *out, size_t max,
				   int live);

/* Whether threads created later register themselves (hook in effect). */
int ember__threads_hooked(const ember__threads *t);

/*
 * Disarms and deletes every timer, stops and closes every perf event
 * (waiting for handlers that may still use one to finish first), and
 * detaches the registry from the hook. The table stays published to the
 * handler until the caller uninstalls the signal handler; then
 * ember__threads_release() frees it.
 */
void ember__threads_stop(ember__threads *t);
void ember__threads_release(ember__threads *t);

/*
 * exec of this process (src/preload/signal_wrap.c calls these around the
 * real exec): begin disarms every thread's timer or perf event and the
 * process timer, stops the wall-clock engine's signals, waits until no
 * handler runs, and sets the calling thread's signal state to the
 * program's (sigvirt.h), so that no sampling signal can be pending or
 * armed when the new program starts with the default disposition. end,
 * called only when the exec failed, re-arms everything. A vfork or fork
 * child (another pid) is left alone. Locks are taken with bounded waits,
 * so an exec from a signal handler cannot hang. Returns a state for end.
 */
int ember__threads_exec_begin(void);
void ember__threads_exec_end(int state);

/* The wall-clock thread's batch: 0 (nothing to send) while an exec is
 * under way; else the gate is held until ember__threads_gate_leave(). */
int ember__threads_gate_enter(ember__threads *t);
void ember__threads_gate_leave(ember__threads *t);

/* Called by thread_hook.c in a new thread / at its exit (`start_pc`: the
 * thread's start routine, 0 if not known). */
void ember__threads_on_start(void);
void ember__threads_on_exit(uintptr_t start_pc);

/* The wrapper every pthread_create entry point calls (thread_hook.c). */
int ember__hooked_pthread_create(pthread_t *th, const pthread_attr_t *attr,
				 void *(*fn)(void *), void *arg);
/* The address of this build's exported pthread_create entry point, or NULL
 * when the build has none (defined next to the entry point). */
void *ember__pthread_create_entry(void);

/* The real pthread_create (resolved once by thread_hook.c), for the
 * agent's own threads (engine/thread_start.h): the new thread names
 * itself `name` (static; NULL: not named) before fn runs. ENOMEM if the
 * trampoline cannot be allocated. */
int ember__real_pthread_create(pthread_t *th, const pthread_attr_t *attr,
			       void *(*fn)(void *), void *arg, const char *name);

#endif
