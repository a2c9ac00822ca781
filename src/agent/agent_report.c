/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent_report.c - on the agent thread, at each window boundary and at
 * stop: a window's aggregates are symbolized and encoded (pprof per
 * profile type, JFR for the reporters that take it) and handed to every
 * reporter; an empty final window reports nothing.
 */
#include "agent/core.h"

#include <limits.h>
#include "encode/gzstore.h"
#include "report/otlp.h"
#include "util/dep_zlib.h"

/* The formats a reporter takes (0 means pprof). */
static unsigned reporter_formats(const ember_reporter *r)
{
	return r->formats ? r->formats : EMBER_FORMAT_PPROF;
}

int ember__config_call_reporters(const ember__config *cfg, const ember_report *rep,
				 uint64_t *failed)
{
	int rc = 0;
	for (size_t i = 0; i < cfg->nreporters; i++) {
		const ember_reporter *r = &cfg->reporters[i];
		if (!(reporter_formats(r) & rep->format))
			continue;
		ember__error_clear();
		int rrc = r->report(r->userdata, rep);
		if (rrc != 0) {
			char pid[32] = "";
			if (rep->pid)
				snprintf(pid, sizeof(pid), " of process %d", (int)rep->pid);
			ember__log(cfg, EMBER_LOG_ERROR, "reporter %s failed for window %" PRIu32 "%s: %s",
				   r->name, rep->seq, pid,
				   ember_last_error()[0] ? ember_last_error() : ember_strerror(rrc));
			(*failed)++;
			rc = EMBER_ERR_REPORTER;
		}
	}
	return rc;
}

/* Hands one report to every reporter taking its format. 0, or
 * EMBER_ERR_REPORTER if one failed (logged and counted). */
int ember__core_call_reporters(ember__core *c, const ember_report *rep)
{
	uint64_t failed = 0;
	int rc = ember__config_call_reporters(&c->cfg, rep, &failed);
	if (failed)
		atomic_fetch_add(&c->report_failures, failed);
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
	if (rc == 0 && pb && !c->gzip_noted && ember__gzip_stored_count()) {
		c->gzip_noted = 1;
		ember__log(&c->cfg, EMBER_LOG_WARN,
			   "profiles are written gzip'd but not compressed (several times larger): "
			   "%s", ember__zlib.error[0] ? ember__zlib.error : "zlib cannot be loaded");
	}
	if (rc) {
		ember__profile_free(p);
		p = NULL;
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
	if (want_pprof) {
		ember__otlp_window_profile(p); /* the model, for the OTLP reporter */
		rc = ember__core_call_reporters(c, &rep);
		ember__otlp_window_profile(NULL);
	}
	free(pb);
	if (keep && p)
		*keep = p;
	else
		ember__profile_free(p);
	return rc;
}

/*
 * The names of kernel frames once the perf engine has taken any
 * (/proc/kallsyms read then, once per agent), else NULL; where kallsyms
 * gives no addresses the log says so once (the frames are one [kernel]
 * frame each).
 */
static ember__kallsyms *kernel_names(ember__core *c)
{
	if (!atomic_load(&c->sig.kernel_samples))
		return c->kallsyms;
	if (!c->kallsyms && ember__kallsyms_new(&c->kallsyms) != 0) {
		c->kallsyms = NULL;
		return NULL;
	}
	if (!c->kallsyms_noted && !ember__kallsyms_named(c->kallsyms)) {
		c->kallsyms_noted = 1;
		ember__log(&c->cfg, EMBER_LOG_WARN,
			   "note: kernel frames are one [kernel] frame each: %s",
			   ember__kallsyms_why(c->kallsyms));
	}
	return c->kallsyms;
}

/* The CPU before sampling began (core.h, early[]) as one sample per
 * thread on the EMBER__EARLY_FRAME stack of p, the window's CPU profile;
 * then forgotten. Not in a JFR recording, whose samples are events. */
static int add_early(ember__core *c, const ember__window_cfg *wcfg, const ember__agg *a,
		     ember__profile *p)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	int rc = 0;
	for (unsigned i = 0; i < c->nearly && rc == 0; i++) {
		const ember__early_cpu *x = &c->early[i];
		char comm[32];
		const char *name = ember__agg_name(a, x->tid);
		if (!name) {
			ember__core_thread_name(c, x->tid, comm, sizeof(comm));
			name = comm;
		}
		rc = ember__window_add_pseudo(p, wcfg, exe[0] ? exe : NULL, EMBER__EARLY_FRAME,
					      x->tid, name, x->ns);
	}
	c->nearly = 0;
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
	ember__window_cfg wcfg = ember__config_window(&c->cfg);
	wcfg.kallsyms = kernel_names(c);
	int rc = ember__window_profile(a, c->sym, &wcfg, kind, c->win_start, end, &p);
	if (rc == 0 && kind == EMBER__PROFILE_CPU && c->nearly)
		rc = add_early(c, &wcfg, a, p);
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
	ember__heap_cfg hcfg = ember__config_heap(&c->cfg);
	int rc = ember__heapprof_window(c->heap, c->sym, &hcfg, c->win_start, end, final, &p, &n);
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
	rc = ember__core_call_reporters(c, &rep);
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
int ember__core_close_window(ember__core *c, int64_t end, int final)
{
	int rc = 0, any = 0;
	/* the profiles kept for the JFR recording, by EMBER_JFR_* kind */
	ember__profile *jfr[EMBER_JFR_NKINDS] = {NULL};
	ember__core_resolve_polls(c, end);
	/* Nothing this run (no CPU, wall or allocation sample): empty
	 * profiles are skipped. An allocation profile with samples keeps the
	 * window final, and the CPU profile comes next to it even if empty
	 * (under load a program that mostly allocates and sleeps had no CPU
	 * sample: its memory profile went out as not final). */
	if (final && !c->run_reported && !c->cur.samples && !c->wcur.samples &&
	    ember__core_heap_sampled(c) == c->heap_sampled0)
		final = 0;
	if (c->cur.samples || c->wcur.samples || c->heap)
		ember__core_ensure_symbolizer(c);
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
	ember__otlp_window_done(); /* the OTLP reporters send the window's one request */
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
void ember__core_final_window(ember__core *c)
{
	c->stopping = 1;
	ember__core_drain(c);
	int64_t end = now_ns(CLOCK_REALTIME);
	if (ember__core_follow_clock(c, end, now_ns(CLOCK_MONOTONIC)))
		c->sampling_end = 0; /* read on the old clock */
	if (c->sampling_end > 0 && c->sampling_end < end)
		end = c->sampling_end;
	ember__core_close_until(c, end);
	c->final_rc = ember__core_close_window(c, end, 1);
}

void ember__core_close_until(ember__core *c, int64_t t)
{
	int64_t interval = (int64_t)c->cfg.interval_ms * 1000000;
	while (t >= c->win_end) {
		ember__core_close_window(c, c->win_end, 0);
		c->win_end += interval;
	}
}

int ember__core_follow_clock(ember__core *c, int64_t rt, int64_t mono)
{
	int64_t off = rt - mono, step = off - c->clock_off;
	if (step > -1000000000 && step < 1000000000) {
		c->clock_off = off; /* slewing, followed as it goes */
		return 0;
	}
	int64_t interval = (int64_t)c->cfg.interval_ms * 1000000;
	int64_t old_now = mono + c->clock_off; /* now, as the old clock reads it */
	ember__log(&c->cfg, EMBER_LOG_INFO,
		   "the wall clock was set %s by %.3f s: window %" PRIu32
		   " ends now, and windows start again on the new clock",
		   step > 0 ? "forward" : "back", (double)(step > 0 ? step : -step) / 1e9, c->seq);
	ember__core_close_until(c, old_now);
	if (old_now > c->win_start)
		ember__core_close_window(c, old_now, 0);
	c->clock_off = off;
	c->win_start = rt;
	c->win_end = (rt / interval + 1) * interval;
	return 1;
}
