/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core.h - struct ember__core, all of one agent's state, for the files of
 * the agent's lifecycle: agent.c (the API, start, stop, the agent thread's
 * loop), agent_drain.c (rings into window aggregates) and agent_report.c
 * (windows into profiles, to the reporters). Internal to src/agent/.
 *
 * Everything here runs on the agent thread or, for start and stop, on the
 * caller's; nothing is async-signal-safe except where a comment says so.
 */
#ifndef EMBER_AGENT_CORE_H
#define EMBER_AGENT_CORE_H

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "profile/aggregate.h"
#include "engine/engine_wall.h"
#include "engine/wall_replay.h"
#include "engine/thread_start.h"
#include "engine/threads.h"
#include "cfi/table_cache.h"
#include "cfi/unwind_tables.h"
#include "profile/window.h"
#include "asprof/asprof_run.h"
#include "encode/jfr.h"
#include "encode/pprof.h"
#include "heap/heapprof.h"
#include "report/pyroscope.h"
#include "heap/jemalloc.h"
#include "pollcatch/resolve.h"
#include "sample/handler.h"
#include "sample/sigvirt.h"
#include "sample/labels.h"
#include "symbols/kallsyms.h"
#include "symbols/symbolizer.h"
#include "util/error.h"
#include "util/logfd.h"

/* How often the rings are drained: every 50 ms, more often while the
 * allocation ring fills fast (ember__heap_drain_interval). */
#define DRAIN_NS EMBER_HEAP_DRAIN_MAX_NS

enum { STATE_READY = 0, STATE_RUNNING = 1 };

/* The stack, one frame called from the program's name, of a lazily
 * started process's CPU before its threads were armed (early[] below). */
#define EMBER__EARLY_FRAME "[before sampling]"

typedef struct ember__core {
	struct ember_agent ready;
	struct ember_running running;
	ember__config cfg;
	int state;
	pid_t pid;

	ember__sigstate sig;
	struct sigaction old_action;
	ember__threads threads;
	struct {
		int32_t tid;
		char name[16];
	} tnames[256]; /* thread names seen, by tid modulo 256 (read_thread_name) */
	ember__wall wall;
	int64_t period_ns;

	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop_req;
	_Atomic int exit_req;  /* _exit hook: report the final window now */
	_Atomic int exit_done; /* ...done (ember__running_exit_flush) */
	int start_rc; /* agent thread's startup result, 1 while pending */
	char start_err[EMBER_ERROR_MAX];
	int final_rc;

	ember__symbolizer *sym;
	unsigned sym_failures; /* ember__core_ensure_symbolizer's, for its log */
	int gzip_noted; /* said that profiles are not compressed (no zlib) */
	/* kernel frames' names (symbols/kallsyms.h), read at the first window
	 * with kernel frames; kallsyms_noted: why they are unnamed was said;
	 * ring_noted: why the perf engine stopped taking them was said */
	ember__kallsyms *kallsyms;
	int kallsyms_noted, ring_noted;
	ember__agg cur, next;
	ember__agg wcur, wnext; /* wall-clock samples of the same windows */
	ember__wall_replay wreplay; /* stacks of threads left asleep (wall_replay.h) */
	ember__u64map wall_carry;   /* JFR: wall time per thread not yet in whole samples (jfr.h) */
	int32_t starter_tid;        /* the thread that called start, and its TCB */
	uintptr_t starter_self;
	int64_t win_start, win_end;
	/* CLOCK_REALTIME less CLOCK_MONOTONIC when last looked at: a jump
	 * in it is the wall clock being set (ember__core_follow_clock). */
	int64_t clock_off;
	/* CLOCK_REALTIME when stop() ended the sampling (0: not stopped that
	 * way): the final window's end, rather than the time its last drain
	 * finished. Written before the agent thread is told to stop. */
	int64_t sampling_end;
	uint32_t seq;
	int64_t last_scan;
	int64_t drain_ns; /* the agent thread's wait between drains */

	/* totals over all runs (the sig counters restart with each start) */
	_Atomic uint64_t samples, dropped_full, truncated, no_bounds, foreign, labels_truncated;
	_Atomic uint64_t threads_seen, timer_failures, windows, report_failures;
	_Atomic uint64_t cpu_unsampled_ns; /* threads that really block the signal */
	/* sampled threads measured as they left or sampling stopped: their CPU,
	 * and what their samples weigh (engine/threads.h) */
	_Atomic uint64_t tail_cpu_ns, tail_weight_ns;
	/* A lazily started process's CPU before its threads were armed
	 * (engine/threads.h, catch-up): taken at start, reported on a
	 * "[before sampling]" stack in the next CPU profile the agent sends
	 * (agent_report.c), then cleared. */
	ember__early_cpu early[EMBER__EARLY_MAX];
	unsigned nearly;
	int uploads_logged; /* the uploads' summary was said (agent.c) */
	_Atomic uint64_t perf_events, wall_samples, wall_signals, wall_max_per_tick;
	_Atomic uint64_t fd_reopens; /* /proc/self/task reopened (threads.c) */
	_Atomic uint64_t wall_asleep, wall_unweighed;
	/* running threads' wall time left to their CPU samples: ticks that
	 * did so, samples that took it, and what was left at exit or stop
	 * (given to a repeat, or lost): engine/engine_wall.h */
	_Atomic uint64_t wall_cpu_asked, wall_at_cpu, wall_want_left, wall_want_lost;
	_Atomic uint64_t unwind_pending; /* samples walked by fp: table not built yet */
	_Atomic uint64_t interrupted_calls; /* the program's calls our signals made return EINTR */
	int run_reported; /* this run reported a window (ember__core_close_window) */
	uint64_t heap_sampled0; /* allocations sampled before this run (ember__core_heap_sampled) */
	int stopping;     /* ember__core_final_window: no more table builds */

	/* pollcatch: samples taken in a poll wait here until the poll ends */
	ember__pollres polls;

	/* JFR (a reporter asked for EMBER_FORMAT_JFR): samples are also
	 * logged as events per window; events the log had no room for */
	int want_jfr;
	_Atomic uint64_t jfr_events_dropped;
	/* pollcatch's long polls the samples of the current and the next
	 * window were in (JFR only): emberprof.LongPoll events */
	ember__pollres_list jpolls, jpolls_next;

	/* DWARF unwind tables (modes auto and dwarf): used by the agent
	 * thread while running, kept across runs like the symbolizer */
	ember__unwind_tables *utab;

	/* allocation profiling (src/heap/), NULL until first started; kept
	 * across runs */
	ember__heapprof *heap;
	/* The async-profiler backend's run while running with it, else NULL
	 * (src/asprof/asprof_run.c); its error total over past runs. */
	ember__asprof_run *asprof;
	_Atomic uint64_t asprof_errors;
	int jemalloc_source; /* the jemalloc backend was added to heap */
} ember__core;

/* The allocation profiler's settings (heap/heapprof.h), borrowed from
 * the agent's configuration. */
static inline ember__heap_cfg ember__config_heap(const ember__config *c)
{
	return (ember__heap_cfg){c->alloc_mean, c->max_depth, c->alloc_backend,
				 ember__config_window(c), &c->log};
}

static inline int64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}


/* ---- agent_drain.c: the samples of the rings into the windows ---- */

/* The unwind tables if this run uses them (kept, unused, in mode fp). */
ember__unwind_tables *ember__core_active_utab(const ember__core *c);
/* Thread tid's name for the thread_name label (its comm while it runs,
 * else one remembered, else "thread-TID"), into buf (len bytes). */
void ember__core_thread_name(ember__core *c, int32_t tid, char *buf, size_t len);
/* How long a window stays open after its end (wall-clock samples). */
int64_t ember__core_wall_grace_ns(const ember__core *c);
/* Releases the samples of polls that ended, and, with `flush_before`,
 * those of windows ending there (INT64_MIN: none). */
void ember__core_resolve_polls(ember__core *c, int64_t flush_before);
/* Makes the agent's symbolizer on first need; logs if it cannot. */
void ember__core_ensure_symbolizer(ember__core *c);
/* Moves every published sample from the rings into the window
 * aggregates, and sets the wait before the next drain. */
void ember__core_drain(ember__core *c);

/* ---- agent_report.c: closed windows to the reporters ---- */

/* Allocations sampled since the allocation profiler was made (kept
 * across runs); 0 without one. */
static inline uint64_t ember__core_heap_sampled(const ember__core *c)
{
	ember__heap_stats hs = {0};
	if (c->heap)
		ember__heapprof_stats(c->heap, &hs);
	return hs.sampled;
}

/* Hands one report to every reporter taking its format: 0 or the first
 * failure. The report is borrowed for the call. */
int ember__core_call_reporters(ember__core *c, const ember_report *rep);
/* Reports the window ending at `end` (wall-clock ns), `final` for a run's
 * last, and moves the next window's samples into the current one. */
int ember__core_close_window(ember__core *c, int64_t end, int final);
/* After stop silenced sampling: the last drain, the windows that ended
 * meanwhile, then the final partial window (its result in final_rc). */
void ember__core_final_window(ember__core *c);
/* Reports every window that ended by `t` (wall-clock ns): the current one
 * and each interval after it whose end is <= t. */
void ember__core_close_until(ember__core *c, int64_t t);
/*
 * Whether the wall clock was set (stepped, by more than a second: not
 * NTP's slewing) since the last look, given the clocks read now (rt, mono);
 * if so the window in progress ends now as the old clock reads it, and
 * windows start again from now on the new clock, aligned to the interval
 * again. Without it a clock set back would hold every profile until the
 * clock came back to the window's end (an hour set back: an hour without
 * profiles), and the run's last window would end before it began.
 * Returns 1 if it was set. Agent thread, after a drain.
 */
int ember__core_follow_clock(ember__core *c, int64_t rt, int64_t mono);

#endif
