/*
 * agent.c - the agent's lifecycle and its thread.
 *
 * One struct ember__core holds all of an agent's state. The public handles
 * ember_agent (ready) and ember_running (sampling) are two small structs
 * embedded in it, so each transition hands out the other view without
 * allocating, and stop can never fail to give the ready agent back.
 *
 * Thread ownership:
 *  - application threads: call the API; run the signal handler
 *    (src/sample/) and the pthread_create hook (thread_hook.c);
 *  - the agent thread ("emberprof"): drains the sample rings every 50 ms
 *    (down to 1 ms while the allocation ring fills fast),
 *    scans for threads, and at each window boundary symbolizes, encodes
 *    and calls the reporters. It blocks every signal, so sampling signals
 *    never interrupt it;
 *  - with wall-clock profiling on, the timer thread "emberprof-wall"
 *    (engine_wall.c), which only sends signals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "agent/aggregate.h"
#include "agent/engine_wall.h"
#include "agent/wall_replay.h"
#include "agent/threads.h"
#include "agent/table_cache.h"
#include "agent/unwind_tables.h"
#include "agent/window.h"
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
#include "symbols/symbolizer.h"
#include "util/error.h"
#include "util/logfd.h"

/* How often the rings are drained: every 50 ms, more often while the
 * allocation ring fills fast (ember__heap_drain_interval). */
#define DRAIN_NS EMBER_HEAP_DRAIN_MAX_NS

enum { STATE_READY = 0, STATE_RUNNING = 1 };

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
	unsigned sym_failures; /* ensure_symbolizer's, for its log */
	ember__agg cur, next;
	ember__agg wcur, wnext; /* wall-clock samples of the same windows */
	ember__wall_replay wreplay; /* stacks of threads left asleep (wall_replay.h) */
	ember__u64map wall_carry;   /* JFR: wall time per thread not yet in whole samples (jfr.h) */
	int32_t starter_tid;        /* the thread that called start, and its TCB */
	uintptr_t starter_self;
	int64_t win_start, win_end;
	uint32_t seq;
	int64_t last_scan;
	int64_t drain_ns; /* the agent thread's wait between drains */

	/* totals over all runs (the sig counters restart with each start) */
	_Atomic uint64_t samples, dropped_full, truncated, no_bounds, foreign, labels_truncated;
	_Atomic uint64_t threads_seen, timer_failures, windows, report_failures;
	_Atomic uint64_t cpu_unsampled_ns; /* threads that really block the signal */
	_Atomic uint64_t perf_events, wall_samples, wall_signals, wall_max_per_tick;
	_Atomic uint64_t fd_reopens; /* /proc/self/task reopened (threads.c) */
	_Atomic uint64_t wall_asleep, wall_unweighed;
	_Atomic uint64_t unwind_pending; /* samples walked by fp: table not built yet */
	int run_reported; /* this run reported a window (close_window) */
	int stopping;     /* final_window: no more table builds */

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

static int64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- build / shutdown ---- */

/* The async-profiler backend's CPU sampling rate, for the reporters. */
static unsigned asprof_hz(const ember__asprof_config *a)
{
	uint64_t ns = a->cpu_interval_ns ? a->cpu_interval_ns : EMBER__ASPROF_DEFAULT_CPU_NS;
	return ns >= 1000000000 ? 1 : (unsigned)(1000000000 / ns);
}

/* Tells each reporter with a bind() callback about the agent it serves. */
static int bind_reporters(ember__config *cfg)
{
	unsigned clamp_depth = 0;
	ember_tag *tags = calloc(cfg->ntags ? cfg->ntags : 1, sizeof(*tags));
	if (!tags)
		return ember__error_oom("tags");
	for (size_t i = 0; i < cfg->ntags; i++)
		tags[i] = (ember_tag){cfg->tags[i].key, cfg->tags[i].value};
	ember_agent_info info = {
		.app_name = cfg->app_name,
		.tags = tags,
		.ntags = cfg->ntags,
		.sample_rate_hz = cfg->backend == EMBER_BACKEND_ASYNC_PROFILER
					  ? asprof_hz(&cfg->asprof)
					  : cfg->hz,
		.interval_ms = cfg->interval_ms,
		.thread_labels = cfg->thread_labels,
		.log_fn = cfg->log_fn,
		.log_userdata = cfg->log_ud,
		.log_level = (ember_log_level)cfg->log_level,
		.wall_ms = cfg->backend == EMBER_BACKEND_ASYNC_PROFILER ? 0 : cfg->wall_ms,
		.alloc = cfg->alloc_mean != 0,
		.max_depth = cfg->max_depth,
	};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < cfg->nreporters; i++) {
		const ember_reporter *r = &cfg->reporters[i];
		/* A reporter whose backend keeps fewer frames (Pyroscope: 1000)
		 * caps the depth for all: stacks are unwound from the leaf, so
		 * the frames kept are the leaf side, as in Pyroscope's own
		 * agents (the server would cut the leaf side instead). */
		unsigned cap = ember__reporter_max_depth(r);
		if (cap && cfg->max_depth > cap)
			clamp_depth = cap;
		/* async-profiler's own depth (2048 by default) obeys the cap too */
		if (cap && (!cfg->asprof.max_depth || cfg->asprof.max_depth > cap))
			cfg->asprof.max_depth = cap;
		if (!r->bind)
			continue;
		ember__error_clear();
		if ((rc = r->bind(r->userdata, &info)) != 0) {
			char why[EMBER_ERROR_MAX];
			snprintf(why, sizeof(why), "%s", ember_last_error()[0] ? ember_last_error()
									     : ember_strerror(rc));
			rc = ember__error(rc < 0 ? rc : EMBER_ERR_REPORTER, "reporter %s: %s", r->name,
					  why);
		}
	}
	free(tags);
	if (rc == 0 && clamp_depth)
		cfg->max_depth = clamp_depth; /* the reporter has logged it */
	return rc;
}

EMBER_API int ember_builder_build(ember_agent **out, ember_builder *b)
{
	*out = NULL;
	if (!b)
		return ember__error(EMBER_ERR_INVALID, "builder is NULL");
	ember__core *c = calloc(1, sizeof(*c));
	if (!c) {
		ember_builder_free(b);
		return ember__error_oom("agent");
	}
	c->cfg = b->cfg; /* the agent takes over everything the builder owned */
	free(b);
	int brc = c->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER
			  ? ember__asprof_check_reporters(&c->cfg)
			  : 0;
	/* Allocation profiling is our sampler's (src/heap/); async-profiler
	 * has its own, configured through its options. */
	if (brc == 0 && c->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER && c->cfg.alloc_mean)
		brc = ember__error(EMBER_ERR_INVALID, "allocation profiling (EMBERPROF_ALLOC, "
				   "ember_builder_set_alloc) needs emberprof's own sampler, not the "
				   "async-profiler backend");
	if (brc == 0)
		brc = bind_reporters(&c->cfg);
	if (brc) {
		ember__config_release(&c->cfg, 1);
		free(c);
		return brc;
	}
	c->ready.core = c;
	c->running.core = c;
	for (size_t i = 0; i < c->cfg.nreporters; i++)
		if (c->cfg.reporters[i].formats & EMBER_FORMAT_JFR)
			c->want_jfr = 1;
	c->pid = getpid();
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	*out = &c->ready;
	return 0;
}

EMBER_API void ember_agent_shutdown(ember_agent *a)
{
	if (!a)
		return;
	ember__core *c = a->core;
	ember__symbolizer_free(c->sym);
	ember__unwind_tables_free(c->utab);
	ember__heapprof_free(c->heap);
	ember__agg_release(&c->cur);
	ember__agg_release(&c->next);
	ember__agg_release(&c->wcur);
	ember__agg_release(&c->wnext);
	ember__config_release(&c->cfg, 1);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}

/* ---- the agent thread ---- */

/*
 * A thread's name for the thread_name label, on the agent thread: its
 * /proc/self/task/TID/comm while it runs (remembered in c->tnames); once
 * it is gone, the name remembered from an earlier look, or the one it had
 * when it exited through the pthread_create hook (threads.c), or, for a
 * thread that lived and died between two drains without the hook,
 * "thread-TID": never a placeholder such as "?".
 */
static void read_thread_name(ember__core *c, int32_t tid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	FILE *f = fopen(path, "re");
	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	size_t slot = (uint32_t)tid % (sizeof(c->tnames) / sizeof(c->tnames[0]));
	if (buf[0]) {
		c->tnames[slot].tid = tid;
		snprintf(c->tnames[slot].name, sizeof(c->tnames[slot].name), "%s", buf);
		return;
	}
	if (c->tnames[slot].tid == tid && tid != 0)
		snprintf(buf, len, "%s", c->tnames[slot].name);
	else if (!ember__threads_gone_name(&c->threads, tid, buf, len))
		snprintf(buf, len, "thread-%d", (int)tid);
}

/* The unwind tables if this run uses them (kept, unused, in mode fp). */
static ember__unwind_tables *active_utab(const ember__core *c)
{
	return c->sig.unwind_mode != EMBER_UNWIND_MODE_FP ? c->utab : NULL;
}

/*
 * A wall-clock sample's labels: the thread's own, then thread_state
 * (running or sleeping) where the handler could tell, packed the same way
 * (sample/labels.h). Returns the length written to buf.
 */
static uint32_t wall_labels(const ember__sampbuf *b, ember__sample_rec *r, uint8_t *buf,
			    size_t cap)
{
	uint32_t n = r->label_len;
	memcpy(buf, ember__sample_labels(b, r), n);
	const char *state = (r->flags & EMBER_SAMPLE_SLEEPING)  ? "sleeping"
			    : (r->flags & EMBER_SAMPLE_RUNNING) ? "running"
								: NULL;
	static const char key[] = "thread_state";
	if (state && n + 2 + sizeof(key) - 1 + strlen(state) <= cap) {
		buf[n++] = (uint8_t)(sizeof(key) - 1);
		memcpy(buf + n, key, sizeof(key) - 1);
		n += (uint32_t)(sizeof(key) - 1);
		buf[n++] = (uint8_t)strlen(state);
		memcpy(buf + n, state, strlen(state));
		n += (uint32_t)strlen(state);
	}
	return n;
}

/* For JFR: the sample just added to `a` as an event of its thread. */
static void log_event(ember__core *c, ember__agg *a, int64_t time_ns, int32_t tid,
		      uint64_t weight, uint32_t flags, int wall)
{
	uint8_t state = !wall || (flags & EMBER_SAMPLE_RUNNING) ? EMBER_JFR_STATE_RUNNABLE
			: (flags & EMBER_SAMPLE_SLEEPING)        ? EMBER_JFR_STATE_SLEEPING
								 : EMBER_JFR_STATE_DEFAULT;
	ember__agg_log(a, EMBER__AGG_MAX_EVENTS, time_ns, tid, weight,
		       wall ? EMBER_JFR_WALL : EMBER_JFR_CPU, state);
	if (!ember__agg_has_name(a, tid)) {
		char name[32];
		read_thread_name(c, tid, name, sizeof(name));
		ember__agg_set_name(a, tid, name);
	}
}

/*
 * How long a window stays open after its end with wall-clock profiling
 * on: a wall sample weighs the time since its thread's previous one, so
 * the samples taken just after a window's end (within a pass of the
 * timer thread, delayed a little under load) carry time of that window,
 * which add_sample() gives it. Two wall intervals and a drain, at most
 * half a window; 0 without wall-clock profiling.
 */
static int64_t wall_grace_ns(const ember__core *c)
{
	if (!c->cfg.wall_ms)
		return 0;
	int64_t g = 2 * (int64_t)c->cfg.wall_ms * 1000000 + 100000000;
	int64_t half = (int64_t)c->cfg.interval_ms * 500000;
	return g < half ? g : half;
}

/* Adds one sample to the aggregate of the window its time falls in (a
 * sample held back by pollcatch past its window's end goes to the current
 * one), and for JFR logs it as an event. `agg_tid` is 0 without thread
 * labels; `tid` is the thread's id. */
static void add_sample(ember__core *c, int32_t agg_tid, int32_t tid, uint32_t flags,
		       int64_t time_ns, const uint64_t *pcs, uint32_t depth, const uint8_t *lb,
		       uint32_t lblen, uint64_t weight)
{
	int wall = (flags & EMBER_SAMPLE_WALL) != 0;
	int later = time_ns >= c->win_end;
	if (wall && later && (int64_t)weight > time_ns - c->win_end) {
		/* a wall sample whose time began before the window's end: the
		 * part before it belongs to the window (still open: see
		 * wall_grace_ns), the rest to the next */
		uint64_t before = weight - (uint64_t)(time_ns - c->win_end);
		add_sample(c, agg_tid, tid, flags, c->win_end - 1, pcs, depth, lb, lblen, before);
		weight -= before;
	}
	ember__agg *a = wall ? (later ? &c->wnext : &c->wcur) : (later ? &c->next : &c->cur);
	if (ember__agg_add(a, agg_tid, pcs, depth, lb, lblen, weight) != 0)
		atomic_fetch_add(&c->dropped_full, 1);
	else if (c->want_jfr)
		log_event(c, a, time_ns, tid, weight, flags, wall);
	if (c->cfg.thread_labels && !ember__agg_has_name(a, agg_tid)) {
		char name[32];
		read_thread_name(c, agg_tid, name, sizeof(name));
		ember__agg_set_name(a, agg_tid, name);
	}
}

/* pollcatch hands back a held sample, with its poll's labels if long;
 * for JFR, the long poll goes to the list of the sample's window. */
static int add_poll_sample(void *ud, const ember__pollres_sample *s,
			   const ember__pollres_long *poll, const uint8_t *labels, uint32_t label_len)
{
	ember__core *c = ud;
	add_sample(c, s->agg_tid, s->tid, s->flags, s->time_ns, s->pcs, s->depth, labels, label_len,
		   s->weight);
	if (poll && c->want_jfr &&
	    ember__pollres_list_note(s->time_ns >= c->win_end ? &c->jpolls_next : &c->jpolls, poll))
		atomic_fetch_add(&c->jfr_events_dropped, 1);
	return 0;
}

/* Releases the samples of polls that ended, and, with `flush_before`,
 * those of windows ending there. */
static void resolve_polls(ember__core *c, int64_t flush_before)
{
	if (ember__pollres_resolve(&c->polls, flush_before, add_poll_sample, c) != 0)
		ember__log(&c->cfg, EMBER_LOG_WARN, "pollcatch: out of memory, long polls may be missed");
}

/*
 * Makes the agent's symbolizer (kept across runs; its caches stay warm) on
 * first need - the first samples, or a window to report - rather than at
 * start: it reads /proc/self/maps and opens the mapped ELF files, which a
 * process that lives a few milliseconds should not pay for. A symbolizer
 * kept from a previous run is refreshed at start instead.
 */
static void ensure_symbolizer(ember__core *c)
{
	if (c->sym)
		return;
	if (ember__symbolizer_new(&c->sym) != 0) {
		/* tried again at the next drain; said once */
		ember__log(&c->cfg, c->sym_failures++ ? EMBER_LOG_DEBUG : EMBER_LOG_WARN,
			   "no symbolizer, profiles will hold addresses only: %s", ember_last_error());
		c->sym = NULL;
		return;
	}
	ember__symbolizer_set_lines(c->sym, c->cfg.lines == EMBER_LINES_ALL    ? EMBER__LINES_ALL
					    : c->cfg.lines == EMBER_LINES_NONE ? EMBER__LINES_NONE
									       : EMBER__LINES_APP);
}

/* Moves every published sample from the rings into the window
 * aggregates, and sets the wait before the next drain. */
static void drain(ember__core *c)
{
	int need_refresh = 0, any = 0;
	ember__unwind_tables *utab = active_utab(c);
	ember__sample_rec *r;
	uint8_t labels[EMBER__LABEL_BYTES + 32];
	while ((r = ember__sampbuf_peek(&c->sig.buf))) {
		int wall = (r->flags & EMBER_SAMPLE_WALL) != 0;
		int32_t tid = c->cfg.thread_labels ? r->tid : 0;
		const uint8_t *lb = ember__sample_labels(&c->sig.buf, r);
		uint32_t lblen = r->label_len;
		const uint64_t *pcs = r->pcs;
		uint32_t depth = r->depth;
		uint64_t poll_start = r->poll_start;
		if (wall && r->weight == 0) /* recorded, but with no time to stand for */
			atomic_fetch_add(&c->wall_unweighed, 1);
		uint32_t flags = r->flags;
		if (wall && (r->flags & EMBER_SAMPLE_REPEAT)) {
			/* a thread left asleep: its last sleeping sample again (in
			 * the same pollcatch poll: it has not run since); or an
			 * exiting thread: its last sample, in that sample's state */
			uint32_t state = 0;
			if (!ember__wall_replay_find(&c->wreplay, r->tid, r->reserved, r->time_ns, &pcs,
						     &depth, &lb, &lblen, &poll_start, &state)) {
				ember__sampbuf_release(&c->sig.buf, r);
				continue;
			}
			flags = (flags & ~(uint32_t)(EMBER_SAMPLE_SLEEPING | EMBER_SAMPLE_RUNNING)) | state;
		} else if (wall) {
			lblen = wall_labels(&c->sig.buf, r, labels, sizeof(labels));
			lb = labels;
			ember__wall_replay_note(&c->wreplay, r->tid, r->reserved,
						r->flags & (EMBER_SAMPLE_SLEEPING | EMBER_SAMPLE_RUNNING),
						r->time_ns, r->pcs, r->depth, lb, lblen, r->poll_start);
		}
		if (!poll_start ||
		    ember__pollres_hold(&c->polls, r->tid, tid, flags, r->time_ns, r->weight,
					poll_start, pcs, depth, lb, lblen) != 0)
			add_sample(c, tid, r->tid, flags, r->time_ns, pcs, depth, lb, lblen, r->weight);
		any = 1;
		/* Lazy unwind tables: the modules this stack passed through. */
		ember__unwind_tables_note(utab, r->pcs, r->depth);
		if (c->sym && !need_refresh)
			for (uint32_t i = 0; i < r->depth; i++)
				if (!ember__symbolizer_covers(c->sym, r->pcs[i])) {
					need_refresh = 1;
					break;
				}
		ember__sampbuf_release(&c->sig.buf, r);
	}
	uint32_t heap_n = ember__heapprof_drain(c->heap, c->win_end);
	c->drain_ns = ember__heapprof_next_drain(c->heap, c->drain_ns, heap_n);
	/* The first samples: now the modules mapped are worth knowing by name
	 * (a process that never takes one never opens its ELF files). */
	if ((any || heap_n) && !c->sym)
		ensure_symbolizer(c);
	/* Tables for the modules samples landed in, before more land there
	 * (within the build budget: the CPU the program's threads used, ours
	 * left out); none once stopping: no sample would use them. */
	if (!c->stopping && ember__unwind_tables_wanted(utab)) {
		int64_t app_cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - now_ns(CLOCK_THREAD_CPUTIME_ID);
		if (ember__unwind_tables_build_wanted(utab, app_cpu) != 0)
			ember__log(&c->cfg, EMBER_LOG_DEBUG, "unwind tables: %s", ember_last_error());
	}
	resolve_polls(c, INT64_MIN);
	/* Code we have not seen mapped (a library dlopen'ed since): learn its
	 * module now, while it is surely still loaded. */
	if (need_refresh && ember__symbolizer_refresh(c->sym) != 0)
		ember__log(&c->cfg, EMBER_LOG_DEBUG, "symbolizer refresh: %s", ember_last_error());
	/* The same for the unwinder: tables for code mapped since. */
	if (need_refresh && active_utab(c) && ember__unwind_tables_refresh(c->utab) != 0)
		ember__log(&c->cfg, EMBER_LOG_DEBUG, "unwind tables refresh: %s", ember_last_error());
}

/* The formats a reporter takes (0 means pprof). */
static unsigned reporter_formats(const ember_reporter *r)
{
	return r->formats ? r->formats : EMBER_FORMAT_PPROF;
}

/* Hands one report to every reporter taking its format. 0, or
 * EMBER_ERR_REPORTER if one failed (logged and counted). */
static int call_reporters(ember__core *c, const ember_report *rep)
{
	int rc = 0;
	for (size_t i = 0; i < c->cfg.nreporters; i++) {
		ember_reporter *r = &c->cfg.reporters[i];
		if (!(reporter_formats(r) & rep->format))
			continue;
		ember__error_clear();
		int rrc = r->report(r->userdata, rep);
		if (rrc != 0) {
			ember__log(&c->cfg, EMBER_LOG_ERROR, "reporter %s failed for window %" PRIu32 ": %s",
				   r->name, rep->seq, ember_last_error()[0] ? ember_last_error() : ember_strerror(rrc));
			atomic_fetch_add(&c->report_failures, 1);
			rc = EMBER_ERR_REPORTER;
		}
	}
	return rc;
}

/*
 * Encodes one profile of the current window (rc: whether building it
 * worked) and hands it to every reporter taking pprof. With `keep`, the
 * profile is handed to the caller (for the JFR recording) instead of
 * freed; *keep is NULL if it could not be built.
 */
static int deliver_profile(ember__core *c, int rc, ember__profile *p, const char *type,
			   uint64_t samples, int64_t end, int final, ember__profile **keep)
{
	uint8_t *pb = NULL;
	size_t pblen = 0;
	int want_pprof = 0;
	for (size_t i = 0; i < c->cfg.nreporters; i++)
		want_pprof |= (reporter_formats(&c->cfg.reporters[i]) & EMBER_FORMAT_PPROF) != 0;
	if (rc == 0 && want_pprof)
		rc = ember__pprof_encode(p, &pb, &pblen);
	if (keep && p && rc == 0)
		*keep = p;
	else
		ember__profile_free(p);
	if (rc) {
		ember__log(&c->cfg, EMBER_LOG_ERROR, "window %" PRIu32 " (%s) could not be encoded, %" PRIu64
			   " samples lost: %s", c->seq, type, samples, ember_last_error());
		atomic_fetch_add(&c->report_failures, 1);
		return rc;
	}
	ember_report rep = {
		.app_name = c->cfg.app_name,
		.profile_type = type,
		.start_ns = c->win_start,
		.end_ns = end,
		.samples = samples,
		.pprof = pb,
		.pprof_len = pblen,
		.seq = c->seq,
		.final = final,
		.format = EMBER_FORMAT_PPROF,
		.interval_ms = c->cfg.interval_ms,
	};
	if (want_pprof)
		rc = call_reporters(c, &rep);
	free(pb);
	return rc;
}

/*
 * Symbolizes, encodes and reports one profile of the current window. With
 * `keep`, the profile is handed to the caller (for the JFR recording)
 * instead of freed; *keep is NULL if it could not be built.
 */
static int report_profile(ember__core *c, const ember__agg *a, int kind, int64_t end, int final,
			  ember__profile **keep)
{
	ember__profile *p = NULL;
	int rc = ember__window_profile(a, c->sym, &c->cfg, kind, c->win_start, end, &p);
	return deliver_profile(c, rc, p, kind == EMBER__PROFILE_WALL ? "wall" : "cpu", a->samples,
			       end, final, keep);
}

/*
 * The allocation profile of the current window (src/heap/), profile_type
 * "memory": reported when it has anything, and always at the final window.
 * Returns 0 or the reporters' error; *any is set when something was sent.
 */
static int report_memory(ember__core *c, int64_t end, int final, int *any, ember__profile **keep)
{
	if (!c->heap)
		return 0;
	ember__profile *p = NULL;
	uint64_t n = 0;
	int rc = ember__heapprof_window(c->heap, c->sym, &c->cfg, c->win_start, end, final, &p, &n);
	if (rc == 0 && p && final && !c->run_reported && p->nsamples == 0) {
		/* the final window of a run that had nothing at all */
		ember__profile_free(p);
		p = NULL;
	}
	if (!p && rc == 0)
		return 0;
	*any = 1;
	return deliver_profile(c, rc, p, "memory", n, end, final, keep);
}

/* The sampled allocations of the window just closed, as JFR events
 * (profiler.Malloc) naming samples of its memory profile. Returns how
 * many were written to ev (room for ember__heapprof_events' count). */
static size_t jfr_malloc_events(const ember__core *c, ember__jfr_event *ev)
{
	const ember__heap_event *x;
	size_t n, m = 0;
	ember__heapprof_events(c->heap, &x, &n);
	for (size_t i = 0; i < n; i++)
		if (x[i].sample >= 0 && x[i].tid > 0)
			ev[m++] = (ember__jfr_event){.time_ns = x[i].time_ns, .weight = x[i].size,
						     .address = x[i].address,
						     .sample = (uint32_t)x[i].sample, .tid = x[i].tid,
						     .kind = EMBER_JFR_MALLOC};
	return m;
}

/* The threads named in the window's aggregates, for the JFR recording. */
static ember__jfr_thread *jfr_threads(const ember__agg *const *aggs, int n, size_t *count)
{
	size_t cap = 0;
	for (int k = 0; k < n; k++)
		cap += aggs[k] ? aggs[k]->names.n : 0;
	ember__jfr_thread *t = calloc(cap ? cap : 1, sizeof(*t));
	*count = 0;
	for (int k = 0; t && k < n; k++)
		for (size_t i = 0; aggs[k] && i < aggs[k]->names.cap; i++)
			if (aggs[k]->names.slots[i].used && aggs[k]->names.slots[i].value)
				t[(*count)++] = (ember__jfr_thread){
					(int32_t)aggs[k]->names.slots[i].key,
					(const char *)(uintptr_t)aggs[k]->names.slots[i].value};
	return t;
}

/*
 * Encodes the window as one JFR recording - every logged sample of each
 * profile built (profiles[EMBER_JFR_*], NULL where none) an event - and
 * hands it to the reporters that take JFR. A new kind of profile adds its
 * aggregate to aggs[] below.
 */
static int report_jfr(ember__core *c, ember__profile *const *profiles, int64_t end, int final)
{
	enum { N = EMBER_JFR_NKINDS };
	const ember__agg *aggs[N] = {[EMBER_JFR_CPU] = &c->cur, [EMBER_JFR_WALL] = &c->wcur};
	size_t n = 0;
	uint64_t samples = 0, dropped = 0;
	for (int k = 0; k < N; k++) {
		if (!aggs[k])
			continue;
		if (profiles[k])
			n += aggs[k]->nevents;
		samples += aggs[k]->samples;
		dropped += aggs[k]->events_dropped;
	}
	/* Allocations (src/heap/): events of the memory profile's samples. */
	const ember__heap_event *hev;
	size_t nheap = 0;
	ember__heapprof_events(c->heap, &hev, &nheap);
	if (!profiles[EMBER_JFR_MALLOC])
		nheap = 0;
	n += nheap;
	samples += nheap;
	if (dropped) {
		atomic_fetch_add(&c->jfr_events_dropped, dropped);
		ember__log(&c->cfg, EMBER_LOG_WARN, "window %" PRIu32 ": the JFR recording lacks %" PRIu64
			   " of %" PRIu64 " samples (event log full at %zu per profile, or out of memory)",
			   c->seq, dropped, samples, EMBER__AGG_MAX_EVENTS);
	}
	ember__jfr_event *ev = malloc((n ? n : 1) * sizeof(*ev));
	size_t nthreads = 0;
	ember__jfr_thread *threads = jfr_threads(aggs, N, &nthreads);
	/* pollcatch's long polls (emberprof.LongPoll) */
	ember__jfr_poll *polls = malloc((c->jpolls.n ? c->jpolls.n : 1) * sizeof(*polls));
	for (size_t i = 0; polls && i < c->jpolls.n; i++) {
		const ember__pollres_long *p = &c->jpolls.v[i];
		polls[i] = (ember__jfr_poll){.start_ns = p->start_ns,
					     .duration_ns = p->duration_ns > 0 ? p->duration_ns : 0,
					     .id = p->id, .tid = p->tid, .open = (uint8_t)p->open};
	}
	uint8_t *jfr = NULL;
	size_t len = 0;
	int rc = ev && threads && polls ? 0 : ember__error_oom("JFR events");
	size_t m = 0;
	for (int k = 0; rc == 0 && k < N; k++)
		for (size_t i = 0; aggs[k] && profiles[k] && i < aggs[k]->nevents; i++) {
			const ember__agg_event *x = &aggs[k]->events[i];
			ev[m++] = (ember__jfr_event){.time_ns = x->time_ns, .weight = x->weight,
						     .sample = x->stack, .tid = x->tid,
						     .kind = x->kind, .state = x->state};
		}
	if (rc == 0 && nheap)
		m += jfr_malloc_events(c, ev + m);
	ember__jfr_window w = {
		.start_ns = c->win_start, .end_ns = end,
		.profiles = {profiles[0], profiles[1], profiles[2]},
		.events = ev, .nevents = m, .threads = threads, .nthreads = nthreads,
		.polls = polls, .npolls = c->jpolls.n,
		.wall_interval_ns = (int64_t)c->cfg.wall_ms * 1000000,
		.cpu_interval_ns = c->cfg.hz ? 1000000000 / c->cfg.hz : 0,
		.alloc_interval = c->cfg.alloc_mean,
		.max_depth = c->cfg.max_depth,
		.wall_carry = &c->wall_carry,
	};
	if (rc == 0)
		rc = ember__jfr_encode(&w, &jfr, &len);
	free(ev);
	free(threads);
	free(polls);
	if (rc) {
		ember__log(&c->cfg, EMBER_LOG_ERROR, "window %" PRIu32 " could not be encoded as JFR, %"
			   PRIu64 " samples lost: %s", c->seq, samples, ember_last_error());
		atomic_fetch_add(&c->report_failures, 1);
		return rc;
	}
	ember_report rep = {
		.app_name = c->cfg.app_name,
		.profile_type = "jfr",
		.start_ns = c->win_start,
		.end_ns = end,
		.samples = samples,
		.seq = c->seq,
		.final = final,
		.format = EMBER_FORMAT_JFR,
		.jfr = jfr,
		.jfr_len = len,
		.interval_ms = c->cfg.interval_ms,
	};
	rc = call_reporters(c, &rep);
	free(jfr);
	return rc;
}

/*
 * Reports the current window - its CPU profile, then with wall-clock
 * profiling on its wall profile, both with the same seq - then starts the
 * next. Empty profiles are skipped, except at the final window of a run
 * that reported something before (stop reports then, so that reporters
 * see the final window and flush); the final window of a run that never
 * had a sample reports nothing at all: a process that lives a few
 * milliseconds leaves no empty profile behind.
 */
static int close_window(ember__core *c, int64_t end, int final)
{
	int rc = 0, any = 0;
	/* the profiles kept for the JFR recording, by EMBER_JFR_* kind */
	ember__profile *jfr[EMBER_JFR_NKINDS] = {NULL};
	resolve_polls(c, end);
	if (final && !c->run_reported && !c->cur.samples && !c->wcur.samples)
		final = 0; /* nothing this run: empty profiles are skipped */
	if (c->cur.samples || c->wcur.samples || c->heap)
		ensure_symbolizer(c);
	if (c->cur.samples || final) {
		rc = report_profile(c, &c->cur, EMBER__PROFILE_CPU, end, final,
				    c->want_jfr ? &jfr[EMBER_JFR_CPU] : NULL);
		any = 1;
	}
	if (c->cfg.wall_ms && (c->wcur.samples || final)) {
		int wrc = report_profile(c, &c->wcur, EMBER__PROFILE_WALL, end, final,
					 c->want_jfr ? &jfr[EMBER_JFR_WALL] : NULL);
		if (!rc)
			rc = wrc;
		any = 1;
	}
	int mrc = report_memory(c, end, final, &any, c->want_jfr ? &jfr[EMBER_JFR_MALLOC] : NULL);
	if (!rc)
		rc = mrc;
	if (any && c->want_jfr) {
		int jrc = report_jfr(c, jfr, end, final);
		if (!rc)
			rc = jrc;
	}
	for (int k = 0; k < EMBER_JFR_NKINDS; k++)
		ember__profile_free(jfr[k]);
	if (any) {
		atomic_fetch_add(&c->windows, 1);
		c->run_reported = 1;
	} else
		ember__log(&c->cfg, EMBER_LOG_DEBUG, "window %" PRIu32 " empty, not reported", c->seq);
	c->seq++;
	ember__agg_release(&c->cur);
	c->cur = c->next;
	ember__agg_init(&c->next);
	ember__agg_release(&c->wcur);
	c->wcur = c->wnext;
	ember__agg_init(&c->wnext);
	ember__pollres_list_free(&c->jpolls);
	c->jpolls = c->jpolls_next;
	memset(&c->jpolls_next, 0, sizeof(c->jpolls_next));
	c->win_start = end;
	return rc;
}

/*
 * Runs on the agent thread once stop() has silenced the handler: the last
 * drain, any window that ended meanwhile, then the final partial window.
 */
static void final_window(ember__core *c)
{
	c->stopping = 1;
	drain(c);
	int64_t end = now_ns(CLOCK_REALTIME);
	int64_t interval = (int64_t)c->cfg.interval_ms * 1000000;
	while (end >= c->win_end) {
		close_window(c, c->win_end, 0);
		c->win_end += interval;
	}
	c->final_rc = close_window(c, end, 1);
}

/*
 * Starts allocation profiling from the source EMBERPROF_ALLOC_BACKEND
 * chose (src/heap/jemalloc.c): jemalloc's profiler is an exclusive heap
 * source, so with it emberprof's malloc hook stays detached.
 */
static void start_alloc_profiling(ember__core *c)
{
	if (ember__alloc_backend_setup(&c->heap, &c->cfg, &c->jemalloc_source) != 0) {
		ember__log(&c->cfg, EMBER_LOG_ERROR, "allocation profiling off: %s", ember_last_error());
		return;
	}
	if (ember__heapprof_start(&c->heap, &c->cfg, c->want_jfr) != 0) {
		ember__log(&c->cfg, EMBER_LOG_ERROR, "allocation profiling off: %s", ember_last_error());
		ember__heapprof_stop(c->heap);
	}
}

static void use_table_cache(ember__core *c);

/*
 * Threads that really block the sampling signal cannot be sampled (the
 * program's blocking through emberprof's wrappers is virtual and does not
 * count: sigvirt.h); their CPU time is measured instead. Says so, once per
 * thread, and at its end (or, with `at_stop`, for every such thread still
 * alive) how much CPU time went unsampled.
 */
static void log_blocked_threads(ember__core *c, int at_stop)
{
	ember__blocked_note notes[8];
	size_t n = ember__threads_take_blocked(&c->threads, notes, 8, at_stop);
	for (size_t i = 0; i < n; i++) {
		if (!notes[i].gone)
			ember__log(&c->cfg, EMBER_LOG_WARN,
				   "thread %d '%s' blocks the sampling signal %d (%s): its CPU time "
				   "cannot be sampled and is counted instead",
				   (int)notes[i].tid, notes[i].comm, c->cfg.signo,
				   strsignal(c->cfg.signo));
		else
			ember__log(&c->cfg, EMBER_LOG_WARN,
				   "thread %d '%s' blocks the sampling signal: %.2f s of CPU not sampled",
				   (int)notes[i].tid, notes[i].comm,
				   (double)notes[i].unsampled_ns / 1e9);
	}
}

static void *agent_main(void *arg)
{
	ember__core *c = arg;
	sigset_t all;
	sigfillset(&all);
	ember__sigmask_kernel(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), "emberprof");
	/* On jemalloc with profiling, the agent's own allocations stay out of
	 * the program's heap profile. */
	if (c->cfg.alloc_mean)
		ember__jemalloc_exclude_current_thread();

	/* DWARF tables are built lazily (unwind_tables.h): here, while the
	 * thread calling start waits, only the modules mapped are listed, as
	 * pending; drain() builds a module's table once a sample lands in it
	 * (eagerly, all of them here, with wall-clock profiling on).
	 * Kept across restarts: a restart lists only new modules. */
	if (c->sig.unwind_mode != EMBER_UNWIND_MODE_FP) {
		int urc = 0;
		if (c->utab)
			ember__unwind_tables_attach(c->utab, &c->sig.unwind_snap);
		else if ((urc = ember__unwind_tables_new(&c->utab, &c->sig.unwind_snap, &c->cfg)) == 0)
			use_table_cache(c);
		/* Not with wall-clock profiling: a thread asleep since start
		 * would have its one sleeping stack, taken before any table,
		 * repeated for as long as it sleeps (wall_replay.h). Nor with
		 * allocation profiling: its stacks do not reach drain(), and
		 * blocks allocated at start stay in the in-use profile. */
		if (urc == 0)
			ember__unwind_tables_set_lazy(c->utab, !c->cfg.wall_ms && !c->cfg.alloc_mean);
		if (urc != 0 || ember__unwind_tables_refresh(c->utab) != 0)
			ember__log(&c->cfg, EMBER_LOG_WARN,
				   "no DWARF unwind tables, frame pointers only: %s", ember_last_error());
	}
	/* One symbolizer per agent, kept across restarts (its caches stay
	 * warm), made on first need (ensure_symbolizer): a process that takes
	 * no sample never opens its ELF files. A kept one is refreshed here. */
	if (c->sym)
		ember__symbolizer_refresh(c->sym);
	int rc = ember__threads_start(&c->threads, &c->sig, c->cfg.signo, c->period_ns,
				      c->cfg.engine, c->cfg.perf_refuse, (int32_t)gettid());
	if (rc == 0)
		ember__threads_set_tcb(&c->threads, c->starter_tid, c->starter_self);
	if (rc == 0 && c->cfg.wall_ms) {
		rc = ember__wall_start(&c->wall, &c->threads, c->cfg.signo, c->cfg.wall_ms);
		if (rc)
			ember__threads_stop(&c->threads);
	}
	/* Allocation profiling: not fatal when it cannot start (logged). */
	if (rc == 0 && c->cfg.alloc_mean)
		start_alloc_profiling(c);
	pthread_mutex_lock(&c->mu);
	c->start_rc = rc;
	if (rc)
		snprintf(c->start_err, sizeof(c->start_err), "%s", ember_last_error());
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (rc)
		return NULL;

	if (c->threads.engine_note[0])
		ember__log(&c->cfg, EMBER_LOG_INFO, "perf_events not used: %s", c->threads.engine_note);
	char wall[64] = "";
	if (c->cfg.wall_ms)
		snprintf(wall, sizeof(wall), "; wall clock every %u ms", c->cfg.wall_ms);
	ember__log(&c->cfg, EMBER_LOG_INFO,
		   "sampling %u Hz with %s, %u threads, new threads via %s; windows of %u ms%s",
		   c->cfg.hz, ember__threads_engine_name(&c->threads),
		   (unsigned)ember__threads_count(&c->threads),
		   ember__threads_hooked(&c->threads) ? "pthread_create hook" : "/proc scan",
		   c->cfg.interval_ms, wall);

	int64_t interval = (int64_t)c->cfg.interval_ms * 1000000;
	/* A new thread should be covered within a sampling period; with the
	 * hook in effect the scan is a safety net for threads started behind
	 * its back (libc's pthread_create called directly, raw clone): 250 ms,
	 * so that one living under a second is still seen (a scan is one
	 * readdir of /proc/self/task). */
	int64_t scan_every = ember__threads_hooked(&c->threads) ? 250000000LL : c->period_ns;
	if (scan_every < 10000000)
		scan_every = 10000000;
	pthread_mutex_lock(&c->mu);
	while (!c->stop_req && !atomic_load(&c->exit_req)) {
		int64_t rt = now_ns(CLOCK_REALTIME);
		int64_t wait = c->win_end + wall_grace_ns(c) - rt;
		if (wait > c->drain_ns)
			wait = c->drain_ns;
		if (wait > scan_every)
			wait = scan_every;
		if (wait > 0) {
			int64_t dl = now_ns(CLOCK_MONOTONIC) + wait;
			struct timespec ts = {dl / 1000000000, dl % 1000000000};
			pthread_cond_timedwait(&c->cv, &c->mu, &ts);
			if (c->stop_req)
				break;
		}
		pthread_mutex_unlock(&c->mu);
		int64_t mono = now_ns(CLOCK_MONOTONIC);
		int scan = mono - c->last_scan >= scan_every;
		if (scan)
			c->last_scan = mono;
		ember__threads_poll(&c->threads, scan);
		if (scan)
			log_blocked_threads(c, 0);
		drain(c);
		/* Libraries loaded or unloaded since the last look get or lose
		 * their tables now, before a sample lands in them. */
		if (active_utab(c) && ember__unwind_tables_poll(c->utab) != 0)
			ember__log(&c->cfg, EMBER_LOG_DEBUG, "unwind tables refresh: %s", ember_last_error());
		rt = now_ns(CLOCK_REALTIME);
		while (rt >= c->win_end + wall_grace_ns(c)) {
			close_window(c, c->win_end, 0);
			c->win_end += interval;
		}
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	final_window(c);
	if (atomic_load(&c->exit_req))
		atomic_store(&c->exit_done, 1);
	return NULL;
}

int ember__running_exit_flush(ember_running *r, unsigned timeout_ms)
{
	ember__core *c = r ? r->core : NULL;
	if (!c || c->pid != getpid() || c->asprof || c->state != STATE_RUNNING)
		return -1;
	/* The agent thread looks at exit_req at least every drain period
	 * (50 ms); no condition variable here, which a signal handler could
	 * not use. */
	atomic_store(&c->exit_req, 1);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (atomic_load(&c->exit_done))
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		int64_t ms = (int64_t)(t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= (int64_t)timeout_ms)
			return 1;
		struct timespec nap = {0, 2000000};
		nanosleep(&nap, NULL);
	}
}

/* ---- start / stop ---- */

static void add_sig_totals(ember__core *c)
{
	atomic_fetch_add(&c->samples, atomic_load(&c->sig.samples));
	atomic_fetch_add(&c->dropped_full, atomic_load(&c->sig.dropped_full));
	atomic_fetch_add(&c->truncated, atomic_load(&c->sig.truncated));
	atomic_fetch_add(&c->no_bounds, atomic_load(&c->sig.no_bounds));
	atomic_fetch_add(&c->unwind_pending, atomic_load(&c->sig.unwind_pending));
	atomic_fetch_add(&c->foreign, atomic_load(&c->sig.foreign));
	atomic_fetch_add(&c->labels_truncated, atomic_load(&c->sig.labels_truncated));
	atomic_fetch_add(&c->threads_seen, c->threads.threads_seen);
	atomic_fetch_add(&c->fd_reopens, c->threads.fd_reopens);
	atomic_fetch_add(&c->timer_failures, c->threads.timer_failures);
	atomic_fetch_add(&c->cpu_unsampled_ns, c->threads.unsampled_cpu_ns);
	atomic_fetch_add(&c->perf_events, c->threads.perf_events);
	atomic_fetch_add(&c->wall_samples, atomic_load(&c->sig.wall_samples));
	atomic_fetch_add(&c->wall_signals, atomic_load(&c->wall.signals));
	atomic_fetch_add(&c->wall_asleep, atomic_load(&c->wall.remote_samples));
	uint64_t m = atomic_load(&c->wall.max_per_tick);
	if (m > atomic_load(&c->wall_max_per_tick))
		atomic_store(&c->wall_max_per_tick, m);
}

/* Unpublishes the run's unwind tables; they are kept for the next run. */
static void release_unwind_tables(ember__core *c)
{
	if (c->utab)
		ember__unwind_tables_detach(c->utab);
}

/* The persistent unwind-table cache the environment asks for
 * (EMBERPROF_UNWIND_CACHE; table_cache.h), once per agent. */
static void use_table_cache(ember__core *c)
{
	char dir[4096];
	int on = ember__table_cache_dir_from_env(dir, sizeof(dir));
	if (on < 0)
		ember__log(&c->cfg, EMBER_LOG_WARN, "no unwind table cache: %s", ember_last_error());
	if (on > 0 && ember__unwind_tables_use_cache(c->utab, dir) == 0)
		ember__log(&c->cfg, EMBER_LOG_DEBUG, "unwind table cache: %s", dir);
}

/* At stop: what the lazy unwind tables cost, and how many samples came
 * before their module's table (walked by frame pointers there). */
static void log_unwind_stats(ember__core *c)
{
	if (!c->utab)
		return;
	ember__unwind_tables_stats us;
	ember__unwind_tables_get_stats(c->utab, &us);
	if (!us.lazy)
		return; /* built at start: logged then */
	ember__log(&c->cfg, EMBER_LOG_INFO,
		   "DWARF unwind tables, built lazily: %" PRIu64 " modules built as samples landed "
		   "in them (%" PRIu64 " rows, %.1f KiB, %.1f ms), %" PRIu64 " never built (%" PRIu64
		   " of them sampled but left for later by the build budget, %d %% of the program's "
		   "CPU); %" PRIu64 " samples used frame pointers in a module whose table was not built",
		   us.lazy_built, us.rows, (double)us.bytes / 1024.0, (double)us.build_ns / 1e6,
		   us.pending, us.deferred, EMBER_UNWIND_BUILD_BUDGET_PCT,
		   atomic_load(&c->unwind_pending));
	if (us.cache_loaded || us.cache_stored || us.cache_failed || us.cache_rejected)
		ember__log(&c->cfg, EMBER_LOG_INFO,
			   "unwind table cache: %" PRIu64 " tables loaded, %" PRIu64 " stored, %" PRIu64
			   " stores failed, %" PRIu64 " files rejected", us.cache_loaded,
			   us.cache_stored, us.cache_failed, us.cache_rejected);
}

void ember__agent_unwind_stats(const ember_agent *a, ember__unwind_tables_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (a->core->utab)
		ember__unwind_tables_get_stats(a->core->utab, out);
	out->samples_pending = atomic_load(&a->core->unwind_pending);
}

static uint32_t ring_slots(unsigned hz, unsigned wall_ms)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1)
		cpus = 1;
	/* Half a second of samples at full CPU use; the ring is drained
	 * every 50 ms, so this leaves a wide margin. The wall-clock engine
	 * adds at most 8 samples per millisecond (engine_wall.h). */
	uint64_t want = (uint64_t)hz * (uint64_t)cpus / 2;
	if (wall_ms)
		want += (uint64_t)(EMBER__WALL_MAX_PER_TICK * 1000000000LL / EMBER__WALL_MIN_TICK_NS) / 2;
	uint32_t n = 256;
	while (n < want && n < 16384)
		n <<= 1;
	return n;
}

/* The async-profiler backend instead of our sampler (below). */
static int asprof_agent_start(ember_running **out, ember__core *c);

EMBER_API int ember_agent_start(ember_running **out, ember_agent *a)
{
	*out = NULL;
	ember__core *c = a->core;
	if (c->pid != getpid())
		return ember__error(EMBER_ERR_INVALID, "this agent was built in process %d; after fork() "
				    "build a new one in the child", (int)c->pid);
	if (c->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER)
		return asprof_agent_start(out, c);
	memset(&c->sig, 0, sizeof(c->sig));
	c->sig.max_depth = (int)c->cfg.max_depth;
	c->sig.unwind_mode = c->cfg.unwind; /* ember_unwind_mode = EMBER_UNWIND_MODE_* */
	/* the thread calling start waits for the agent thread (blocked, not
	 * probed): its TCB, for the wall clock (wall_remote.h) */
	c->starter_tid = (int32_t)gettid();
	c->starter_self = (uintptr_t)pthread_self();
	c->period_ns = 1000000000LL / c->cfg.hz;
	int rc = ember__sampbuf_init(&c->sig.buf, ring_slots(c->cfg.hz, c->cfg.wall_ms),
				     c->cfg.max_depth);
	if (rc)
		return ember__error(rc, "cannot map the sample buffer");
	rc = ember__sigpath_install(&c->sig, c->cfg.signo, &c->old_action);
	if (rc) {
		ember__sampbuf_destroy(&c->sig.buf);
		return rc;
	}
	ember__agg_init(&c->cur);
	ember__agg_init(&c->next);
	ember__agg_init(&c->wcur);
	ember__agg_init(&c->wnext);
	ember__pollres_init(&c->polls, c->cfg.poll_threshold_ms);
	ember__pollres_discard_records();
	memset(&c->wall, 0, sizeof(c->wall));
	int64_t interval = (int64_t)c->cfg.interval_ms * 1000000;
	c->win_start = now_ns(CLOCK_REALTIME);
	c->win_end = (c->win_start / interval + 1) * interval; /* wall-clock aligned */
	c->stop_req = 0;
	c->run_reported = 0;
	c->stopping = 0;
	c->start_rc = 1;
	c->last_scan = now_ns(CLOCK_MONOTONIC);
	c->drain_ns = DRAIN_NS;

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1u << 20);
	rc = ember__real_pthread_create(&c->thread, &attr, agent_main, c);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		ember__sigpath_uninstall(c->cfg.signo, &c->old_action);
		ember__sampbuf_destroy(&c->sig.buf);
		return ember__error_errno(EMBER_ERR_SYS, rc, "cannot start the agent thread");
	}
	pthread_mutex_lock(&c->mu);
	while (c->start_rc == 1)
		pthread_cond_wait(&c->cv, &c->mu);
	rc = c->start_rc;
	pthread_mutex_unlock(&c->mu);
	if (rc) {
		pthread_join(c->thread, NULL);
		ember__sigpath_uninstall(c->cfg.signo, &c->old_action);
		release_unwind_tables(c);
		ember__threads_release(&c->threads);
		ember__sampbuf_destroy(&c->sig.buf);
		return ember__error(rc, "%s", c->start_err);
	}
	c->state = STATE_RUNNING;
	*out = &c->running;
	return 0;
}

/* The network reporters' counters, added by their stats() callbacks. */
static void add_reporter_stats(const ember__core *c, ember_stats *s)
{
	for (size_t i = 0; i < c->cfg.nreporters; i++)
		if (c->cfg.reporters[i].stats)
			c->cfg.reporters[i].stats(c->cfg.reporters[i].userdata, s);
}

static void log_upload_stats(const ember__core *c)
{
	int any = 0;
	for (size_t i = 0; i < c->cfg.nreporters; i++)
		any |= c->cfg.reporters[i].stats != NULL;
	if (!any)
		return;
	ember_stats s;
	memset(&s, 0, sizeof(s));
	add_reporter_stats(c, &s);
	ember__log(&c->cfg, EMBER_LOG_INFO,
		   "uploads: %" PRIu64 " ok, %" PRIu64 " retried, %" PRIu64 " failed, %" PRIu64
		   " spooled, %" PRIu64 " dropped, %" PRIu64 " expired (too old for the server), %"
		   PRIu64 " bytes sent",
		   s.uploads_ok, s.uploads_retried, s.uploads_failed, s.uploads_spooled,
		   s.uploads_dropped, s.uploads_expired, s.bytes_sent);
}

/* Log lines the default destination could not write (util/logfd.h), since
 * the library was loaded: said once at stop, when the line may get through
 * again (a full disk that has room again, descriptor 2 back). */
static void log_lost_lines(const ember__core *c)
{
	int e = 0;
	uint64_t failed = ember__logfd_failed(&e), lost = ember__logfd_lost();
	if (c->cfg.log_fn || (!failed && !lost))
		return;
	ember__log(&c->cfg, EMBER_LOG_WARN,
		   "%" PRIu64 " log lines could not be written to standard error: %" PRIu64
		   " because descriptor 2 was closed or reused by the program, %" PRIu64
		   " because the write failed%s%s",
		   failed + lost, lost, failed, failed ? ": " : "", failed ? strerror(e) : "");
}

/* JIT symbols read from a perf map (issue 15), if the runtime wrote one. */
static void log_perfmap_stats(const ember__core *c)
{
	const char *last;
	uint64_t unreadable = ember__symbolizer_unreadable(c->sym, &last);
	if (unreadable)
		ember__log(&c->cfg, EMBER_LOG_INFO,
			   "%" PRIu64 " mapped files could not be read for symbols, their frames have "
			   "no names (last: %s)", unreadable, last);
	uint64_t elf_failures = ember__symbolizer_elf_failures(c->sym, &last);
	if (elf_failures)
		ember__log(&c->cfg, EMBER_LOG_WARN,
			   "elfutils gave up %" PRIu64 " times while reading debug information; "
			   "each time one module's frames were left without names (last: %s)",
			   elf_failures, last);
	ember__jit_stats j;
	ember__symbolizer_jit_stats(c->sym, &j);
	if (j.path)
		ember__log(&c->cfg, j.bad_lines || j.dropped || j.capped ? EMBER_LOG_WARN : EMBER_LOG_INFO,
			   "perf map %s: %zu JIT symbols from %" PRIu64 " bytes, %" PRIu64
			   " malformed lines skipped, %" PRIu64 " lines dropped (table full)%s",
			   j.path, j.symbols, j.bytes, j.bad_lines, j.dropped,
			   j.capped ? ", read up to its size limit" : "");
	else if (j.refused)
		ember__log(&c->cfg, EMBER_LOG_WARN,
			   "perf map of this process ignored: not a regular file owned by us or root");
}

static void log_heap_stats(const ember__core *c)
{
	if (!c->heap)
		return;
	ember__heap_stats h;
	ember__heapprof_stats(c->heap, &h);
	ember__log(&c->cfg, h.dropped_full || h.live_overflow ? EMBER_LOG_WARN : EMBER_LOG_INFO,
		   "allocations: %" PRIu64 " sampled, %" PRIu64 " lost (buffer full), %" PRIu64
		   " without stack (bounds unknown), %" PRIu64 " not tracked live (table full)",
		   h.sampled, h.dropped_full, h.no_bounds, h.live_overflow);
}

/* ---- the async-profiler backend (src/asprof/) ---- */

/* Hands a JFR window to the reporters (all take JFR: checked at build). */
static int asprof_deliver(void *ctx, const ember_report *rep)
{
	ember__core *c = ctx;
	int rc = call_reporters(c, rep);
	atomic_fetch_add(&c->windows, 1);
	return rc;
}

/* Starts async-profiler instead of our sampler: no handler, no timers. */
static int asprof_agent_start(ember_running **out, ember__core *c)
{
	int rc = ember__asprof_run_start(&c->asprof, &c->cfg, c->seq, asprof_deliver, c);
	if (rc)
		return rc;
	c->state = STATE_RUNNING;
	*out = &c->running;
	return 0;
}

static int asprof_agent_stop(ember__core *c)
{
	uint64_t errors = 0;
	int rc = ember__asprof_run_stop(c->asprof, &c->seq, &errors);
	c->asprof = NULL;
	atomic_fetch_add(&c->asprof_errors, errors);
	ember__log(&c->cfg, EMBER_LOG_INFO,
		   "stopped async-profiler: %" PRIu64 " windows, %" PRIu64 " report failures, %" PRIu64
		   " async-profiler errors", atomic_load(&c->windows), atomic_load(&c->report_failures),
		   atomic_load(&c->asprof_errors));
	log_upload_stats(c);
	c->state = STATE_READY;
	return rc;
}

EMBER_API int ember_running_stop(ember_agent **out, ember_running *r)
{
	ember__core *c = r->core;
	ember__wall_announce_stop(&c->wall); /* first: no wall sample of this code */
	*out = &c->ready;
	if (c->pid != getpid()) {
		/* A fork child: no agent thread and no timers exist here. */
		c->state = STATE_READY;
		return ember__error(EMBER_ERR_INVALID, "agent stopped in a fork child: nothing to report");
	}
	if (c->asprof)
		return asprof_agent_stop(c);
	/* A last scan measures the CPU time of threads that block the signal
	 * up to now. Then no new signals, none pending or running, the last
	 * drain. A wall signal reaching this thread meanwhile is not sampled
	 * (it would show this code; the wall thread's last pass records this
	 * thread's time as its last sample again, engine_wall.c). */
	int was_exiting = ember__tls_exiting;
	ember__tls_exiting = 1;
	ember__threads_poll(&c->threads, 1);
	log_blocked_threads(c, 1);
	ember__wall_stop(&c->wall);
	ember__threads_stop(&c->threads);
	ember__heapprof_detach(c->heap); /* the uninstall's quiesce waits for the hook too */
	ember__sigpath_uninstall(c->cfg.signo, &c->old_action);
	ember__tls_exiting = was_exiting;
	pthread_mutex_lock(&c->mu);
	c->stop_req = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);

	int rc = c->final_rc;
	add_sig_totals(c);
	release_unwind_tables(c); /* no handler runs: uninstall waited for them */
	ember__log(&c->cfg, EMBER_LOG_INFO,
		   "stopped: %" PRIu64 " samples, %" PRIu64 " dropped (buffer full), %" PRIu64
		   " truncated, %" PRIu64 " leaf-only, %" PRIu64 " windows, %" PRIu64 " report failures",
		   atomic_load(&c->samples), atomic_load(&c->dropped_full), atomic_load(&c->truncated),
		   atomic_load(&c->no_bounds), atomic_load(&c->windows), atomic_load(&c->report_failures));
	log_unwind_stats(c);
	if (atomic_load(&c->jfr_events_dropped))
		ember__log(&c->cfg, EMBER_LOG_WARN, "%" PRIu64 " samples left out of JFR recordings",
			   atomic_load(&c->jfr_events_dropped));
	log_upload_stats(c);
	log_heap_stats(c);
	log_perfmap_stats(c);
	log_lost_lines(c);
	ember__heapprof_stop(c->heap);
	if (c->polls.samples_labelled || ember__poll_records_dropped())
		ember__log(&c->cfg, EMBER_LOG_INFO,
			   "pollcatch: %" PRIu64 " long polls, %" PRIu64 " samples labelled, %" PRIu64
			   " left unlabelled because their poll's record was dropped (%" PRIu64
			   " records dropped, ring full, since the process started)",
			   c->polls.long_polls, c->polls.samples_labelled, c->polls.samples_lost_record,
			   ember__poll_records_dropped());
	ember__pollres_free(&c->polls);
	ember__pollres_list_free(&c->jpolls);
	ember__pollres_list_free(&c->jpolls_next);
	if (c->cfg.wall_ms)
		ember__log(&c->cfg, EMBER_LOG_INFO,
			   "wall clock: %" PRIu64 " samples, %" PRIu64 " signals, %" PRIu64
			   " threads left asleep recorded without a signal, %" PRIu64
			   " of them lost, %" PRIu64 " blocked threads sampled without waking them, %" PRIu64
			   " samples that could not be weighed",
			   atomic_load(&c->wall_samples), atomic_load(&c->wall_signals),
			   atomic_load(&c->wreplay.repeated), atomic_load(&c->wreplay.lost),
			   atomic_load(&c->wall_asleep), atomic_load(&c->wall_unweighed));
	ember__threads_release(&c->threads);
	ember__sampbuf_destroy(&c->sig.buf);
	ember__agg_release(&c->cur);
	ember__agg_release(&c->next);
	ember__agg_release(&c->wcur);
	ember__agg_release(&c->wnext);
	ember__wall_replay_free(&c->wreplay);
	ember__u64map_free(&c->wall_carry);
	c->state = STATE_READY;
	return rc;
}

static void fill_stats(const ember__core *c, ember_stats *s, int running)
{
	memset(s, 0, sizeof(*s));
	s->samples = atomic_load(&c->samples);
	s->samples_dropped_full = atomic_load(&c->dropped_full);
	s->samples_truncated = atomic_load(&c->truncated);
	s->samples_no_bounds = atomic_load(&c->no_bounds);
	s->signals_foreign = atomic_load(&c->foreign);
	s->labels_truncated = atomic_load(&c->labels_truncated);
	s->threads_seen = atomic_load(&c->threads_seen);
	s->timer_failures = atomic_load(&c->timer_failures);
	s->windows_reported = atomic_load(&c->windows);
	s->report_failures = atomic_load(&c->report_failures);
	s->perf_events = atomic_load(&c->perf_events);
	s->wall_samples = atomic_load(&c->wall_samples);
	s->wall_signals = atomic_load(&c->wall_signals);
	s->wall_max_per_tick = atomic_load(&c->wall_max_per_tick);
	s->wall_unsignalled = atomic_load(&c->wreplay.repeated);
	s->wall_repeats_lost = atomic_load(&c->wreplay.lost);
	s->fds_reopened = atomic_load(&c->fd_reopens);
	s->wall_asleep = atomic_load(&c->wall_asleep);
	s->wall_unweighed = atomic_load(&c->wall_unweighed);
	if (running) {
		s->fds_reopened += atomic_load_explicit(&c->threads.fd_reopens, memory_order_relaxed);
		s->samples += atomic_load(&c->sig.samples);
		s->samples_dropped_full += atomic_load(&c->sig.dropped_full);
		s->samples_truncated += atomic_load(&c->sig.truncated);
		s->samples_no_bounds += atomic_load(&c->sig.no_bounds);
		s->signals_foreign += atomic_load(&c->sig.foreign);
		s->labels_truncated += atomic_load(&c->sig.labels_truncated);
		/* the registry's counters of the current run: relaxed atomics,
		 * each read on its own (threads.h) */
		s->threads_seen += atomic_load_explicit(&c->threads.threads_seen, memory_order_relaxed);
		s->timer_failures += atomic_load_explicit(&c->threads.timer_failures, memory_order_relaxed);
		s->perf_events += atomic_load_explicit(&c->threads.perf_events, memory_order_relaxed);
		s->wall_samples += atomic_load(&c->sig.wall_samples);
		s->wall_signals += atomic_load(&c->wall.signals);
		s->wall_asleep += atomic_load(&c->wall.remote_samples);
		if (atomic_load(&c->wall.max_per_tick) > s->wall_max_per_tick)
			s->wall_max_per_tick = atomic_load(&c->wall.max_per_tick);
	}
	ember__heap_stats h;
	ember__heapprof_stats(c->heap, &h);
	s->alloc_samples = h.sampled;
	s->alloc_dropped = h.dropped_full;
	s->alloc_live_overflow = h.live_overflow;
	s->asprof_errors = atomic_load(&c->asprof_errors);
	s->cpu_unsampled_ns = atomic_load(&c->cpu_unsampled_ns);
	if (running)
		s->cpu_unsampled_ns += atomic_load_explicit(&c->threads.unsampled_cpu_ns, memory_order_relaxed);
	s->signals_forwarded = s->signals_foreign;
	if (running && c->asprof)
		s->asprof_errors += ember__asprof_run_errors(c->asprof);
	add_reporter_stats(c, s);
}

EMBER_API void ember_agent_stats(const ember_agent *a, ember_stats *out)
{
	fill_stats(a->core, out, 0);
}

EMBER_API void ember_running_stats(const ember_running *r, ember_stats *out)
{
	fill_stats(r->core, out, 1);
}
