/* SPDX-License-Identifier: Apache-2.0 */
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
#include "agent/core.h"
#include "symbols/dlclosed.h"
#include "util/envsnap.h"

/* ---- build / shutdown ---- */

/* The async-profiler backend's CPU sampling rate, for the reporters. */
static unsigned asprof_hz(const ember__asprof_config *a)
{
	uint64_t ns = a->cpu_interval_ns ? a->cpu_interval_ns : EMBER__ASPROF_DEFAULT_CPU_NS;
	return ns >= 1000000000 ? 1 : (unsigned)(1000000000 / ns);
}

int ember__config_bind_reporters(ember__config *cfg)
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
		.log_fn = cfg->log.fn,
		.log_userdata = cfg->log.ud,
		.log_level = (ember_log_level)cfg->log.level,
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
			  ? ember__asprof_check_reporters(c->cfg.reporters, c->cfg.nreporters)
			  : 0;
	/* Allocation profiling is our sampler's (src/heap/); async-profiler
	 * has its own, configured through its options. */
	if (brc == 0 && c->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER && c->cfg.alloc_mean)
		brc = ember__error(EMBER_ERR_INVALID, "allocation profiling (EMBERPROF_ALLOC, "
				   "ember_builder_set_alloc) needs emberprof's own sampler, not the "
				   "async-profiler backend");
	if (brc == 0 && c->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER && c->cfg.fork_fn)
		brc = ember__error(EMBER_ERR_UNSUPPORTED, "following fork children "
				   "(ember_builder_follow_forks) needs emberprof's own sampler, not the "
				   "async-profiler backend");
	if (brc == 0)
		brc = ember__config_bind_reporters(&c->cfg);
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
	ember__kallsyms_free(c->kallsyms);
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
 * Starts allocation profiling from the source EMBERPROF_ALLOC_BACKEND
 * chose (src/heap/jemalloc.c): jemalloc's profiler is an exclusive heap
 * source, so with it emberprof's malloc hook stays detached.
 */
static void start_alloc_profiling(ember__core *c)
{
	ember__heap_cfg hcfg = ember__config_heap(&c->cfg);
	if (ember__alloc_backend_setup(&c->heap, &hcfg, &c->jemalloc_source) != 0) {
		ember__log(&c->cfg, EMBER_LOG_ERROR, "allocation profiling off: %s", ember_last_error());
		return;
	}
	if (ember__heapprof_start(&c->heap, &hcfg, c->want_jfr) != 0) {
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

/* The CPU this process used before its agent armed its threads (a fork
 * child or an image exec'd in the profiled tree starts its agent lazily:
 * engine/threads.h, catch-up), kept for the next CPU profile. */
static void take_early(ember__core *c)
{
	c->nearly = (unsigned)ember__threads_take_early(&c->threads, c->early);
	uint64_t ns = 0;
	for (unsigned i = 0; i < c->nearly; i++)
		ns += c->early[i].ns;
	if (ns)
		ember__log(&c->cfg, EMBER_LOG_INFO,
			   "CPU before sampling began: %.1f ms, used by %u thread%s while this "
			   "process's agent started (a fork child or an image exec'd in the profiled "
			   "tree); in the next CPU profile as " EMBER__EARLY_FRAME,
			   (double)ns / 1e6, c->nearly, c->nearly == 1 ? "" : "s");
}

/* The network reporters' summary at the end of a run (defined below). */
static void log_upload_stats(ember__core *c);

/* The current window starts now; it ends at the next multiple of the
 * window interval (windows are wall-clock aligned). Agent state: the
 * thread calling start before the agent thread runs, then that thread. */
static void set_window_start(ember__core *c)
{
	int64_t interval = (int64_t)c->cfg.interval_ms * 1000000;
	c->win_start = now_ns(CLOCK_REALTIME);
	c->win_end = (c->win_start / interval + 1) * interval;
	c->clock_off = c->win_start - now_ns(CLOCK_MONOTONIC);
}

static void *agent_main(void *arg)
{
	ember__core *c = arg;
	/* On jemalloc with profiling, the agent's own allocations stay out of
	 * the program's heap profile. */
	if (c->cfg.alloc_mean)
		ember__jemalloc_exclude_current_thread();

	/* DWARF tables are built lazily (unwind_tables.h): here, while the
	 * thread calling start waits, only the modules mapped are listed, as
	 * pending; ember__core_drain() builds a module's table once a sample lands in it
	 * (eagerly, all of them here, with wall-clock profiling on).
	 * Kept across restarts: a restart lists only new modules. */
	if (c->sig.unwind_mode != EMBER_UNWIND_MODE_FP) {
		int urc = 0;
		if (c->utab)
			ember__unwind_tables_attach(c->utab, &c->sig.unwind_snap);
		else if ((urc = ember__unwind_tables_new(&c->utab, &c->sig.unwind_snap, &c->cfg.log)) == 0)
			use_table_cache(c);
		/* Not with wall-clock profiling: a thread asleep since start
		 * would have its one sleeping stack, taken before any table,
		 * repeated for as long as it sleeps (wall_replay.h). Nor with
		 * allocation profiling: its stacks do not reach ember__core_drain(), and
		 * blocks allocated at start stay in the in-use profile. */
		if (urc == 0)
			ember__unwind_tables_set_lazy(c->utab, !c->cfg.wall_ms && !c->cfg.alloc_mean);
		if (urc != 0 || ember__unwind_tables_refresh(c->utab) != 0)
			ember__log(&c->cfg, EMBER_LOG_WARN,
				   "no DWARF unwind tables, frame pointers only: %s", ember_last_error());
	}
	/* One symbolizer per agent, kept across restarts (its caches stay
	 * warm), made on first need (ember__core_ensure_symbolizer): a process that takes
	 * no sample never opens its ELF files. A kept one is refreshed here. */
	if (c->sym)
		ember__symbolizer_refresh(c->sym);
	/* The first window starts with the sampling, not with the call to
	 * start: the tables above may take a while (seconds for a big
	 * program), during which nothing is sampled. */
	set_window_start(c);
	int rc = ember__threads_start(&c->threads, &c->sig, c->cfg.signo, c->period_ns,
				      c->cfg.engine, c->cfg.perf_refuse, c->cfg.kernel, (int32_t)gettid());
	if (rc == 0)
		ember__threads_set_tcb(&c->threads, c->starter_tid, c->starter_self);
	if (rc == 0 && c->cfg.wall_ms) {
		rc = ember__wall_start(&c->wall, &c->threads, c->cfg.signo, c->cfg.wall_ms,
				       c->cfg.wall_signal_idle);
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
	take_early(c);
	char wall[64] = "";
	if (c->cfg.wall_ms)
		snprintf(wall, sizeof(wall), "; wall clock every %u ms", c->cfg.wall_ms);
	ember__log(&c->cfg, EMBER_LOG_INFO,
		   "sampling %u Hz with %s, %u threads, new threads via %s; windows of %u ms%s",
		   c->cfg.hz, ember__threads_engine_name(&c->threads),
		   (unsigned)ember__threads_count(&c->threads),
		   ember__threads_hooked(&c->threads) ? "pthread_create hook" : "/proc scan",
		   c->cfg.interval_ms, wall);
	if (c->threads.perf && c->cfg.kernel)
		ember__log(&c->cfg, EMBER_LOG_INFO, "%s",
			   c->threads.perf_exclude_kernel
				   ? "no kernel frames: perf events sample user mode only here "
				     "(perf_event_paranoid >= 2 without CAP_PERFMON)"
				   : "kernel frames from the perf events' callchains");

	/* A new thread should be covered within a sampling period; with the
	 * hook in effect the scan is a safety net for threads started behind
	 * its back (libc's pthread_create called directly, raw clone): 250 ms,
	 * so that one living under a second is still seen (a scan is one
	 * readdir of /proc/self/task). */
	int64_t scan_every = ember__threads_hooked(&c->threads) ? 250000000LL : c->period_ns;
	if (scan_every < 10000000)
		scan_every = 10000000;
	/* The test knob EMBERPROF_DRAIN_INTERVAL: drains (and scans) only
	 * this often, window ends aside. */
	int64_t drain_fixed = (int64_t)c->cfg.drain_ms * 1000000;
	if (drain_fixed > scan_every)
		scan_every = drain_fixed;
	pthread_mutex_lock(&c->mu);
	while (!c->stop_req && !atomic_load(&c->exit_req)) {
		int64_t rt = now_ns(CLOCK_REALTIME);
		int64_t wait = c->win_end + ember__core_wall_grace_ns(c) - rt;
		int64_t drain = drain_fixed ? drain_fixed : c->drain_ns;
		if (wait > drain)
			wait = drain;
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
		if (!c->ring_noted && c->cfg.kernel) {
			char why[256];
			if (ember__threads_ring_error(&c->threads, why, sizeof(why))) {
				c->ring_noted = 1;
				ember__log(&c->cfg, EMBER_LOG_WARN,
					   "note: no more kernel frames from here on: %s", why);
			}
		}
		if (scan)
			log_blocked_threads(c, 0);
		ember__core_drain(c);
		/* Libraries loaded or unloaded since the last look get or lose
		 * their tables now, before a sample lands in them. */
		if (ember__core_active_utab(c) && ember__unwind_tables_poll(c->utab) != 0)
			ember__log(&c->cfg, EMBER_LOG_DEBUG, "unwind tables refresh: %s", ember_last_error());
		/* The same for names, before the window below is built: a
		 * library mapped where a dlclose'd one was is otherwise named
		 * after the old one (symbolizer.h). */
		if (c->sym && ember__symbolizer_poll(c->sym) < 0)
			ember__log(&c->cfg, EMBER_LOG_DEBUG, "symbolizer refresh: %s", ember_last_error());
		rt = now_ns(CLOCK_REALTIME);
		ember__core_follow_clock(c, rt, now_ns(CLOCK_MONOTONIC));
		ember__core_close_until(c, rt - ember__core_wall_grace_ns(c));
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	if (c->threads.perf && c->cfg.kernel && !c->threads.perf_exclude_kernel &&
	    atomic_load(&c->sig.samples))
		ember__log(&c->cfg, EMBER_LOG_INFO,
			   "kernel frames: %llu samples carry them, %llu found no callchain record "
			   "(taken without)",
			   (unsigned long long)atomic_load(&c->sig.kernel_samples),
			   (unsigned long long)atomic_load(&c->sig.kernel_missing));
	ember__core_final_window(c);
	if (atomic_load(&c->exit_req)) {
		/* The process ends without a stop (_exit, exec): its uploads'
		 * summary is said here, once, or never (a shell ends so). */
		log_upload_stats(c);
		atomic_store(&c->exit_done, 1);
	}
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
	atomic_fetch_add(&c->tail_cpu_ns, c->threads.tail_cpu_ns);
	atomic_fetch_add(&c->tail_weight_ns, c->threads.tail_weight_ns);
	atomic_fetch_add(&c->perf_events, c->threads.perf_events);
	atomic_fetch_add(&c->wall_samples, atomic_load(&c->sig.wall_samples));
	atomic_fetch_add(&c->interrupted_calls, atomic_load(&c->sig.interrupted_calls));
	atomic_fetch_add(&c->wall_signals, atomic_load(&c->wall.signals));
	atomic_fetch_add(&c->wall_asleep, atomic_load(&c->wall.remote_samples));
	atomic_fetch_add(&c->wall_cpu_asked, atomic_load(&c->wall.cpu_asked));
	atomic_fetch_add(&c->wall_at_cpu, atomic_load(&c->sig.wall_at_cpu));
	atomic_fetch_add(&c->wall_want_left, atomic_load(&c->sig.wall_want_left));
	atomic_fetch_add(&c->wall_want_lost, atomic_load(&c->sig.wall_want_lost));
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
	/* From now on the agent's threads read this copy of the environment,
	 * never the live one the program may be changing (envsnap.h). */
	ember__env_snapshot_take();
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
	set_window_start(c); /* again on the agent thread, when sampling starts */
	c->sampling_end = 0;
	c->stop_req = 0;
	c->run_reported = 0;
	c->uploads_logged = 0; /* this run says its own (before its agent thread can) */
	c->heap_sampled0 = ember__core_heap_sampled(c);
	c->stopping = 0;
	c->start_rc = 1;
	c->last_scan = now_ns(CLOCK_MONOTONIC);
	c->drain_ns = DRAIN_NS;
	/* Libraries dlclose'd from now on are recorded for the symbolizer
	 * (where libemberprof.so's dlclose wrapper is in effect: preload). */
	ember__dlclosed_enable();

	rc = ember__thread_start(&c->thread, 1u << 20, agent_main, c, "emberprof");
	if (rc != 0) {
		ember__dlclosed_disable();
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
		ember__dlclosed_disable();
		ember__sigpath_uninstall(c->cfg.signo, &c->old_action);
		release_unwind_tables(c);
		ember__threads_release(&c->threads);
		ember__sampbuf_destroy(&c->sig.buf);
		return ember__error(rc, "%s", c->start_err);
	}
	c->state = STATE_RUNNING;
	*out = &c->running;
	/* Fork children from now on (their agents are their own): a failure
	 * here leaves this process profiled, and says so. */
	if (c->cfg.fork_fn && ember__follow_forks_begin(&c->cfg) < 0)
		ember__log(&c->cfg, EMBER_LOG_WARN, "fork children will not be profiled: %s",
			   ember_last_error());
	return 0;
}

/* The network reporters' counters, added by their stats() callbacks. */
static void add_reporter_stats(const ember__core *c, ember_stats *s)
{
	for (size_t i = 0; i < c->cfg.nreporters; i++)
		if (c->cfg.reporters[i].stats)
			c->cfg.reporters[i].stats(c->cfg.reporters[i].userdata, s);
}

static void log_upload_stats(ember__core *c)
{
	if (c->uploads_logged)
		return; /* at an exit flush; an exec that failed stops later */
	c->uploads_logged = 1;
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
	if (c->cfg.log.fn || (!failed && !lost))
		return;
	ember__log(&c->cfg, EMBER_LOG_WARN,
		   "%" PRIu64 " log lines could not be written to standard error: %" PRIu64
		   " because descriptor 2 was closed or reused by the program, %" PRIu64
		   " because the write failed%s%s",
		   failed + lost, lost, failed, failed ? ": " : "", failed ? strerror(e) : "");
}

/* JIT symbols read from a perf map, if the runtime wrote one. */
static void log_perfmap_stats(const ember__core *c)
{
	ember__log_symbolizer_stats(&c->cfg, c->sym);
}

/* The CPU of sampled threads that no sample weighs (engine/threads.h):
 * next to nothing normally (a thread's first expiry is uniform within
 * its first period, so weights match CPU time on average); more when the
 * kernel checked the timers rarely (heavy CPU contention) before threads
 * left. Info, not a warning: it depends on the machine's load, not on
 * the program, and the profile's totals are what it qualifies. */
static void log_tail(const ember__core *c)
{
	uint64_t used = atomic_load(&c->tail_cpu_ns), weight = atomic_load(&c->tail_weight_ns);
	if (!used)
		return;
	uint64_t lost = used > weight ? used - weight : 0;
	ember__log(&c->cfg, EMBER_LOG_INFO,
		   "CPU in no sample: %.1f ms (%.1f %%): the sampled threads used %.1f ms and their "
		   "samples weigh %.1f ms (timer expirations the kernel had not checked yet when a "
		   "thread left or sampling stopped; many under heavy CPU contention)",
		   (double)lost / 1e6, 100.0 * (double)lost / (double)used, (double)used / 1e6,
		   (double)weight / 1e6);
}

/* Threads that ran without a CPU timer (or perf event) of their own:
 * their CPU is in no sample. A warning with the first reason; threads
 * that left before they could be armed are not among them. */
static void log_timer_failures(const ember__core *c)
{
	uint64_t n = atomic_load(&c->timer_failures);
	if (n)
		ember__log(&c->cfg, EMBER_LOG_WARN,
			   "%" PRIu64 " thread%s could not be sampled (the first: %s)", n,
			   n == 1 ? "" : "s", c->threads.first_error);
}

/* The program's system calls that returned EINTR because one of our
 * signals arrived as they began (the race in docs/design/limits.md: a
 * thread seen running, signalled, and in a call by the time the signal
 * lands). Info, not a warning: programs that retry on EINTR (event loops,
 * redis: 22 in a high-rate run) are not harmed, and a warning would be a
 * line in every such program's standard error. */
static void log_interrupted(const ember__core *c)
{
	uint64_t n = atomic_load(&c->interrupted_calls);
	if (n)
		ember__log(&c->cfg, EMBER_LOG_INFO,
			   "%" PRIu64 " system call%s of the program returned EINTR: a sampling "
			   "signal arrived as %s began (nanosleep, poll, epoll_wait...: calls the "
			   "kernel does not restart)",
			   n, n == 1 ? "" : "s", n == 1 ? "it" : "they");
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
	int rc = ember__core_call_reporters(c, rep);
	atomic_fetch_add(&c->windows, 1);
	return rc;
}

/* Starts async-profiler instead of our sampler: no handler, no timers. */
static int asprof_agent_start(ember_running **out, ember__core *c)
{
	ember__asprof_run_cfg rcfg = {&c->cfg.asprof, c->cfg.app_name, c->cfg.interval_ms, &c->cfg.log};
	c->uploads_logged = 0; /* this run says its own (before its thread can) */
	int rc = ember__asprof_run_start(&c->asprof, &rcfg, c->seq, asprof_deliver, c);
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
	if (c->cfg.fork_fn)
		ember__follow_forks_end(); /* a fork from now on gets no agent */
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
	c->sampling_end = now_ns(CLOCK_REALTIME); /* the final window ends here */
	ember__heapprof_detach(c->heap); /* the uninstall's quiesce waits for the hook too */
	ember__sigpath_uninstall(c->cfg.signo, &c->old_action);
	ember__tls_exiting = was_exiting;
	pthread_mutex_lock(&c->mu);
	c->stop_req = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	ember__dlclosed_disable(); /* the final window took the last records */

	int rc = c->final_rc;
	add_sig_totals(c);
	release_unwind_tables(c); /* no handler runs: uninstall waited for them */
	ember__log(&c->cfg, EMBER_LOG_INFO,
		   "stopped: %" PRIu64 " samples, %" PRIu64 " dropped (buffer full), %" PRIu64
		   " truncated, %" PRIu64 " leaf-only, %" PRIu64 " windows, %" PRIu64 " report failures",
		   atomic_load(&c->samples), atomic_load(&c->dropped_full), atomic_load(&c->truncated),
		   atomic_load(&c->no_bounds), atomic_load(&c->windows), atomic_load(&c->report_failures));
	log_unwind_stats(c);
	log_tail(c);
	log_timer_failures(c);
	log_interrupted(c);
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
			   " times a running thread's time was left to its next CPU sample instead of a signal, %" PRIu64
			   " samples taken so by CPU signals, %" PRIu64
			   " threads with such time left at exit or stop (added to a repeat of their last sample; %" PRIu64
			   " of them lost: no sample to repeat), %" PRIu64 " samples that could not be weighed",
			   atomic_load(&c->wall_samples), atomic_load(&c->wall_signals),
			   atomic_load(&c->wreplay.repeated), atomic_load(&c->wreplay.lost),
			   atomic_load(&c->wall_asleep), atomic_load(&c->wall_cpu_asked),
			   atomic_load(&c->wall_at_cpu), atomic_load(&c->wall_want_left),
			   atomic_load(&c->wall_want_lost), atomic_load(&c->wall_unweighed));
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
	uint64_t used = atomic_load(&c->tail_cpu_ns), weight = atomic_load(&c->tail_weight_ns);
	if (running) {
		used += atomic_load_explicit(&c->threads.tail_cpu_ns, memory_order_relaxed);
		weight += atomic_load_explicit(&c->threads.tail_weight_ns, memory_order_relaxed);
	}
	s->cpu_tail_unsampled_ns = used > weight ? used - weight : 0;
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

void ember__log_symbolizer_stats(const ember__config *cfg, ember__symbolizer *sym)
{
	const char *last;
	uint64_t unreadable = ember__symbolizer_unreadable(sym, &last);
	if (unreadable)
		ember__log(cfg, EMBER_LOG_INFO,
			   "%" PRIu64 " mapped files could not be read for symbols, their frames have "
			   "no names (last: %s)", unreadable, last);
	uint64_t elf_failures = ember__symbolizer_elf_failures(sym, &last);
	if (elf_failures)
		ember__log(cfg, EMBER_LOG_WARN,
			   "elfutils gave up %" PRIu64 " times while reading debug information; "
			   "each time one module's frames were left without names (last: %s)",
			   elf_failures, last);
	ember__dlclosed_use du;
	ember__dlclosed_stats ds;
	ember__symbolizer_dlclosed_use(sym, &du);
	ember__dlclosed_stats_get(&ds);
	/* info, also for records dropped: they cost names only where samples
	 * fell in those libraries, which the summary's unnamed share says
	 * (the soak test's 23,000 dlopen/dlclose rounds fill the journal) */
	if (du.taken || ds.dropped || ds.skipped)
		ember__log(cfg, EMBER_LOG_INFO,
			   "dlclose'd libraries: %" PRIu64 " recorded, %" PRIu64 " named as gone "
			   "modules (never seen mapped), %" PRIu64 " whose addresses a later library "
			   "took; %" PRIu64 " not recorded (journal full), %" PRIu64 " not recordable",
			   ds.recorded, du.added, du.overlapped, ds.dropped, ds.skipped);
	ember__fde_stats f;
	ember__symbolizer_fde_stats(sym, &f);
	if (f.modules)
		ember__log(cfg, EMBER_LOG_INFO,
			   "%" PRIu64 " addresses without symbols named after their function's "
			   "FDE (module+0xSTART), %" PRIu64 " left without a name; FDE tables of %" PRIu64
			   " modules: %" PRIu64 " functions, %" PRIu64 " bytes%s%s",
			   f.named, f.unnamed, f.modules, f.fdes, f.bytes,
			   f.empty ? "; last empty one: " : "", f.empty ? f.last_why : "");
	ember__jit_stats j;
	ember__symbolizer_jit_stats(sym, &j);
	if (j.path)
		ember__log(cfg, j.bad_lines || j.dropped || j.capped ? EMBER_LOG_WARN : EMBER_LOG_INFO,
			   "perf map %s: %zu JIT symbols from %" PRIu64 " bytes, %" PRIu64
			   " malformed lines skipped, %" PRIu64 " lines dropped (table full)%s",
			   j.path, j.symbols, j.bytes, j.bad_lines, j.dropped,
			   j.capped ? ", read up to its size limit" : "");
	else if (j.refused)
		ember__log(cfg, EMBER_LOG_WARN,
			   "perf map of this process ignored: not a regular file owned by us or root");
}
