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
 *  - the agent thread ("emberprof"): drains the sample ring every 50 ms,
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
#include "agent/unwind_tables.h"
#include "agent/window.h"
#include "encode/pprof.h"
#include "sample/labels.h"
#include "symbols/symbolizer.h"
#include "util/error.h"

#define DRAIN_NS 50000000LL /* how often the ring is drained */

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
	ember__wall wall;
	int64_t period_ns;

	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop_req;
	int start_rc; /* agent thread's startup result, 1 while pending */
	char start_err[EMBER_ERROR_MAX];
	int final_rc;

	ember__symbolizer *sym;
	ember__agg cur, next;
	ember__agg wcur, wnext; /* wall-clock samples of the same windows */
	ember__wall_replay wreplay; /* stacks of threads left asleep (wall_replay.h) */
	int64_t win_start, win_end;
	uint32_t seq;
	int64_t last_scan;

	/* totals over all runs (the sig counters restart with each start) */
	_Atomic uint64_t samples, dropped_full, truncated, no_bounds, foreign, labels_truncated;
	_Atomic uint64_t threads_seen, timer_failures, windows, report_failures;
	_Atomic uint64_t perf_events, wall_samples, wall_signals, wall_max_per_tick;

	/* DWARF unwind tables (modes auto and dwarf): used by the agent
	 * thread while running, kept across runs like the symbolizer */
	ember__unwind_tables *utab;
} ember__core;

static int64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- build / shutdown ---- */

/* Tells each reporter with a bind() callback about the agent it serves. */
static int bind_reporters(const ember__config *cfg)
{
	ember_tag *tags = calloc(cfg->ntags ? cfg->ntags : 1, sizeof(*tags));
	if (!tags)
		return ember__error_oom("tags");
	for (size_t i = 0; i < cfg->ntags; i++)
		tags[i] = (ember_tag){cfg->tags[i].key, cfg->tags[i].value};
	ember_agent_info info = {
		.app_name = cfg->app_name,
		.tags = tags,
		.ntags = cfg->ntags,
		.sample_rate_hz = cfg->hz,
		.interval_ms = cfg->interval_ms,
		.thread_labels = cfg->thread_labels,
		.log_fn = cfg->log_fn,
		.log_userdata = cfg->log_ud,
		.log_level = (ember_log_level)cfg->log_level,
	};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < cfg->nreporters; i++) {
		const ember_reporter *r = &cfg->reporters[i];
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
	int brc = bind_reporters(&c->cfg);
	if (brc) {
		ember__config_release(&c->cfg, 1);
		free(c);
		return brc;
	}
	c->ready.core = c;
	c->running.core = c;
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

static void read_thread_name(int32_t tid, char *buf, size_t len)
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

/* Moves every published sample from the ring into the window aggregates. */
static void drain(ember__core *c)
{
	int need_refresh = 0;
	ember__sample_rec *r;
	uint8_t labels[EMBER__LABEL_BYTES + 32];
	while ((r = ember__sampbuf_peek(&c->sig.buf))) {
		int wall = (r->flags & EMBER_SAMPLE_WALL) != 0;
		int later = r->time_ns >= c->win_end;
		ember__agg *a = wall ? (later ? &c->wnext : &c->wcur) : (later ? &c->next : &c->cur);
		int32_t tid = c->cfg.thread_labels ? r->tid : 0;
		const uint8_t *lb = ember__sample_labels(&c->sig.buf, r);
		uint32_t lblen = r->label_len;
		const uint64_t *pcs = r->pcs;
		uint32_t depth = r->depth;
		if (wall && (r->flags & EMBER_SAMPLE_REPEAT)) {
			/* a thread left asleep: its last sleeping sample again */
			if (!ember__wall_replay_find(&c->wreplay, r->tid, r->reserved, r->time_ns, &pcs,
						     &depth, &lb, &lblen)) {
				ember__sampbuf_release(&c->sig.buf, r);
				continue;
			}
		} else if (wall) {
			lblen = wall_labels(&c->sig.buf, r, labels, sizeof(labels));
			lb = labels;
			ember__wall_replay_note(&c->wreplay, r->tid, r->reserved, r->time_ns, r->pcs,
						r->depth, lb, lblen);
		}
		if (ember__agg_add(a, tid, pcs, depth, lb, lblen, r->weight) != 0)
			atomic_fetch_add(&c->dropped_full, 1);
		if (c->cfg.thread_labels && !ember__agg_has_name(a, tid)) {
			char name[32];
			read_thread_name(tid, name, sizeof(name));
			ember__agg_set_name(a, tid, name[0] ? name : "?");
		}
		if (c->sym && !need_refresh)
			for (uint32_t i = 0; i < r->depth; i++)
				if (!ember__symbolizer_covers(c->sym, r->pcs[i])) {
					need_refresh = 1;
					break;
				}
		ember__sampbuf_release(&c->sig.buf, r);
	}
	/* Code we have not seen mapped (a library dlopen'ed since): learn its
	 * module now, while it is surely still loaded. */
	if (need_refresh && ember__symbolizer_refresh(c->sym) != 0)
		ember__log(&c->cfg, EMBER_LOG_DEBUG, "symbolizer refresh: %s", ember_last_error());
	/* The same for the unwinder: tables for code mapped since. */
	if (need_refresh && active_utab(c) && ember__unwind_tables_refresh(c->utab) != 0)
		ember__log(&c->cfg, EMBER_LOG_DEBUG, "unwind tables refresh: %s", ember_last_error());
}

/* Symbolizes, encodes and reports one profile of the current window. */
static int report_profile(ember__core *c, const ember__agg *a, int kind, int64_t end, int final)
{
	ember__profile *p = NULL;
	int rc = ember__window_profile(a, c->sym, &c->cfg, kind, c->win_start, end, &p);
	uint8_t *pb = NULL;
	size_t pblen = 0;
	const char *type = kind == EMBER__PROFILE_WALL ? "wall" : "cpu";
	if (rc == 0)
		rc = ember__pprof_encode(p, &pb, &pblen);
	ember__profile_free(p);
	if (rc) {
		ember__log(&c->cfg, EMBER_LOG_ERROR, "window %" PRIu32 " (%s) could not be encoded, %" PRIu64
			   " samples lost: %s", c->seq, type, a->samples, ember_last_error());
		atomic_fetch_add(&c->report_failures, 1);
		return rc;
	}
	ember_report rep = {
		.app_name = c->cfg.app_name,
		.profile_type = type,
		.start_ns = c->win_start,
		.end_ns = end,
		.samples = a->samples,
		.pprof = pb,
		.pprof_len = pblen,
		.seq = c->seq,
		.final = final,
		.format = EMBER_FORMAT_PPROF,
		.interval_ms = c->cfg.interval_ms,
	};
	for (size_t i = 0; i < c->cfg.nreporters; i++) {
		ember_reporter *r = &c->cfg.reporters[i];
		if (r->formats && !(r->formats & EMBER_FORMAT_PPROF))
			continue;
		ember__error_clear();
		int rrc = r->report(r->userdata, &rep);
		if (rrc != 0) {
			ember__log(&c->cfg, EMBER_LOG_ERROR, "reporter %s failed for window %" PRIu32 ": %s",
				   r->name, c->seq, ember_last_error()[0] ? ember_last_error() : ember_strerror(rrc));
			atomic_fetch_add(&c->report_failures, 1);
			rc = EMBER_ERR_REPORTER;
		}
	}
	free(pb);
	return rc;
}

/*
 * Reports the current window - its CPU profile, then with wall-clock
 * profiling on its wall profile, both with the same seq - then starts the
 * next. Empty profiles are skipped, except at the final window: stop
 * always reports, so a run always leaves at least one profile of each kind.
 */
static int close_window(ember__core *c, int64_t end, int final)
{
	int rc = 0, any = 0;
	if (c->cur.samples || final) {
		rc = report_profile(c, &c->cur, EMBER__PROFILE_CPU, end, final);
		any = 1;
	}
	if (c->cfg.wall_ms && (c->wcur.samples || final)) {
		int wrc = report_profile(c, &c->wcur, EMBER__PROFILE_WALL, end, final);
		if (!rc)
			rc = wrc;
		any = 1;
	}
	if (any)
		atomic_fetch_add(&c->windows, 1);
	else
		ember__log(&c->cfg, EMBER_LOG_DEBUG, "window %" PRIu32 " empty, not reported", c->seq);
	c->seq++;
	ember__agg_release(&c->cur);
	c->cur = c->next;
	ember__agg_init(&c->next);
	ember__agg_release(&c->wcur);
	c->wcur = c->wnext;
	ember__agg_init(&c->wnext);
	c->win_start = end;
	return rc;
}

/*
 * Runs on the agent thread once stop() has silenced the handler: the last
 * drain, any window that ended meanwhile, then the final partial window.
 */
static void final_window(ember__core *c)
{
	drain(c);
	int64_t end = now_ns(CLOCK_REALTIME);
	int64_t interval = (int64_t)c->cfg.interval_ms * 1000000;
	while (end >= c->win_end) {
		close_window(c, c->win_end, 0);
		c->win_end += interval;
	}
	c->final_rc = close_window(c, end, 1);
}

static void *agent_main(void *arg)
{
	ember__core *c = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), "emberprof");

	/* DWARF tables before the first timer fires, so that the first
	 * samples already have them, and while the thread calling start waits
	 * (they open every mapped ELF file; see the symbolizer below). Kept
	 * across restarts: a restart builds tables only for new modules. */
	if (c->sig.unwind_mode != EMBER_UNWIND_MODE_FP) {
		int urc = 0;
		if (c->utab)
			ember__unwind_tables_attach(c->utab, &c->sig.unwind_snap);
		else
			urc = ember__unwind_tables_new(&c->utab, &c->sig.unwind_snap, &c->cfg);
		if (urc != 0 || ember__unwind_tables_refresh(c->utab) != 0)
			ember__log(&c->cfg, EMBER_LOG_WARN,
				   "no DWARF unwind tables, frame pointers only: %s", ember_last_error());
	}
	/* One symbolizer per agent, kept across restarts (its caches stay
	 * warm). Made here, while the thread calling start waits for us: it
	 * opens every mapped ELF file, and a single-threaded program that
	 * closes and re-dups a low descriptor (a shell's redirection) must
	 * not race with those opens while it runs. */
	if (c->sym)
		ember__symbolizer_refresh(c->sym);
	else if (ember__symbolizer_new(&c->sym) != 0)
		ember__log(&c->cfg, EMBER_LOG_WARN, "no symbolizer, profiles will hold addresses only: %s",
			   ember_last_error());
	if (c->sym)
		ember__symbolizer_set_lines(c->sym, c->cfg.lines == EMBER_LINES_ALL    ? EMBER__LINES_ALL
						    : c->cfg.lines == EMBER_LINES_NONE ? EMBER__LINES_NONE
										       : EMBER__LINES_APP);
	int rc = ember__threads_start(&c->threads, &c->sig, c->cfg.signo, c->period_ns,
				      c->cfg.engine, c->cfg.perf_refuse, (int32_t)gettid());
	if (rc == 0 && c->cfg.wall_ms) {
		rc = ember__wall_start(&c->wall, &c->threads, c->cfg.signo, c->cfg.wall_ms);
		if (rc)
			ember__threads_stop(&c->threads);
	}
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
		   c->cfg.hz, ember__threads_engine_name(&c->threads), (unsigned)c->threads.nrecs,
		   ember__threads_hooked(&c->threads) ? "pthread_create hook" : "/proc scan",
		   c->cfg.interval_ms, wall);

	int64_t interval = (int64_t)c->cfg.interval_ms * 1000000;
	/* A new thread should be covered within a sampling period; with the
	 * hook in effect the scan is only a safety net. */
	int64_t scan_every = ember__threads_hooked(&c->threads) ? 1000000000LL : c->period_ns;
	if (scan_every < 10000000)
		scan_every = 10000000;
	pthread_mutex_lock(&c->mu);
	while (!c->stop_req) {
		int64_t rt = now_ns(CLOCK_REALTIME);
		int64_t wait = c->win_end - rt;
		if (wait > DRAIN_NS)
			wait = DRAIN_NS;
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
		drain(c);
		/* Libraries loaded or unloaded since the last look get or lose
		 * their tables now, before a sample lands in them. */
		if (active_utab(c) && ember__unwind_tables_poll(c->utab) != 0)
			ember__log(&c->cfg, EMBER_LOG_DEBUG, "unwind tables refresh: %s", ember_last_error());
		rt = now_ns(CLOCK_REALTIME);
		while (rt >= c->win_end) {
			close_window(c, c->win_end, 0);
			c->win_end += interval;
		}
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	final_window(c);
	return NULL;
}

/* ---- start / stop ---- */

static void add_sig_totals(ember__core *c)
{
	atomic_fetch_add(&c->samples, atomic_load(&c->sig.samples));
	atomic_fetch_add(&c->dropped_full, atomic_load(&c->sig.dropped_full));
	atomic_fetch_add(&c->truncated, atomic_load(&c->sig.truncated));
	atomic_fetch_add(&c->no_bounds, atomic_load(&c->sig.no_bounds));
	atomic_fetch_add(&c->foreign, atomic_load(&c->sig.foreign));
	atomic_fetch_add(&c->labels_truncated, atomic_load(&c->sig.labels_truncated));
	atomic_fetch_add(&c->threads_seen, c->threads.threads_seen);
	atomic_fetch_add(&c->timer_failures, c->threads.timer_failures);
	atomic_fetch_add(&c->perf_events, c->threads.perf_events);
	atomic_fetch_add(&c->wall_samples, atomic_load(&c->sig.wall_samples));
	atomic_fetch_add(&c->wall_signals, atomic_load(&c->wall.signals));
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

void ember__agent_unwind_stats(const ember_agent *a, ember__unwind_tables_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (a->core->utab)
		ember__unwind_tables_get_stats(a->core->utab, out);
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

EMBER_API int ember_agent_start(ember_running **out, ember_agent *a)
{
	*out = NULL;
	ember__core *c = a->core;
	if (c->pid != getpid())
		return ember__error(EMBER_ERR_INVALID, "this agent was built in process %d; after fork() "
				    "build a new one in the child", (int)c->pid);
	memset(&c->sig, 0, sizeof(c->sig));
	c->sig.max_depth = (int)c->cfg.max_depth;
	c->sig.unwind_mode = c->cfg.unwind; /* ember_unwind_mode = EMBER_UNWIND_MODE_* */
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
	memset(&c->wall, 0, sizeof(c->wall));
	int64_t interval = (int64_t)c->cfg.interval_ms * 1000000;
	c->win_start = now_ns(CLOCK_REALTIME);
	c->win_end = (c->win_start / interval + 1) * interval; /* wall-clock aligned */
	c->stop_req = 0;
	c->start_rc = 1;
	c->last_scan = now_ns(CLOCK_MONOTONIC);

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
		   " spooled, %" PRIu64 " dropped, %" PRIu64 " bytes sent",
		   s.uploads_ok, s.uploads_retried, s.uploads_failed, s.uploads_spooled,
		   s.uploads_dropped, s.bytes_sent);
}

EMBER_API int ember_running_stop(ember_agent **out, ember_running *r)
{
	ember__core *c = r->core;
	*out = &c->ready;
	if (c->pid != getpid()) {
		/* A fork child: no agent thread and no timers exist here. */
		c->state = STATE_READY;
		return ember__error(EMBER_ERR_INVALID, "agent stopped in a fork child: nothing to report");
	}
	/* No new signals, then none pending or running, then the last drain. */
	ember__wall_stop(&c->wall);
	ember__threads_stop(&c->threads);
	ember__sigpath_uninstall(c->cfg.signo, &c->old_action);
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
	log_upload_stats(c);
	if (c->cfg.wall_ms)
		ember__log(&c->cfg, EMBER_LOG_INFO,
			   "wall clock: %" PRIu64 " samples, %" PRIu64 " signals, %" PRIu64
			   " threads left asleep recorded without a signal, %" PRIu64 " of them lost",
			   atomic_load(&c->wall_samples), atomic_load(&c->wall_signals),
			   atomic_load(&c->wreplay.repeated), atomic_load(&c->wreplay.lost));
	ember__threads_release(&c->threads);
	ember__sampbuf_destroy(&c->sig.buf);
	ember__agg_release(&c->cur);
	ember__agg_release(&c->next);
	ember__agg_release(&c->wcur);
	ember__agg_release(&c->wnext);
	ember__wall_replay_free(&c->wreplay);
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
	if (running) {
		s->samples += atomic_load(&c->sig.samples);
		s->samples_dropped_full += atomic_load(&c->sig.dropped_full);
		s->samples_truncated += atomic_load(&c->sig.truncated);
		s->samples_no_bounds += atomic_load(&c->sig.no_bounds);
		s->signals_foreign += atomic_load(&c->sig.foreign);
		s->labels_truncated += atomic_load(&c->sig.labels_truncated);
		/* threads_seen/timer_failures of the current run are read racily
		 * from the registry: good enough for a statistic. */
		s->threads_seen += c->threads.threads_seen;
		s->timer_failures += c->threads.timer_failures;
		s->perf_events += c->threads.perf_events;
		s->wall_samples += atomic_load(&c->sig.wall_samples);
		s->wall_signals += atomic_load(&c->wall.signals);
		if (atomic_load(&c->wall.max_per_tick) > s->wall_max_per_tick)
			s->wall_max_per_tick = atomic_load(&c->wall.max_per_tick);
	}
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
