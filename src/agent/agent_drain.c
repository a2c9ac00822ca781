/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent_drain.c - on the agent thread, every drain: the samples the
 * signal handler published in the rings go into the aggregates of the
 * window their time falls in (wall-clock samples with their thread_state,
 * repeats of threads left asleep, samples pollcatch held back); thread
 * names are read; the symbolizer and the lazy unwind tables are made or
 * refreshed for the modules the samples landed in. Never called from a
 * signal handler.
 */
#include "agent/core.h"

/*
 * A thread's name for the thread_name label, on the agent thread: its
 * /proc/self/task/TID/comm while it runs (remembered in c->tnames); once
 * it is gone, the name remembered from an earlier look, or the one it had
 * when it exited through the pthread_create hook (threads.c), or, for a
 * thread that lived and died between two drains without the hook,
 * "thread-TID": never a placeholder such as "?".
 */
void ember__core_thread_name(ember__core *c, int32_t tid, char *buf, size_t len)
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
ember__unwind_tables *ember__core_active_utab(const ember__core *c)
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
		ember__core_thread_name(c, tid, name, sizeof(name));
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
int64_t ember__core_wall_grace_ns(const ember__core *c)
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
		ember__core_thread_name(c, agg_tid, name, sizeof(name));
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
void ember__core_resolve_polls(ember__core *c, int64_t flush_before)
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
void ember__core_ensure_symbolizer(ember__core *c)
{
	if (c->sym)
		return;
	if (ember__symbolizer_new_opts(&c->sym, ember__config_symbolizer_flags(&c->cfg)) != 0) {
		/* tried again at the next drain; said once */
		ember__log(&c->cfg, c->sym_failures++ ? EMBER_LOG_DEBUG : EMBER_LOG_WARN,
			   "no symbolizer, profiles will hold addresses only: %s", ember_last_error());
		c->sym = NULL;
		return;
	}
	ember__symbolizer_set_lines(c->sym, ember__config_lines_policy(&c->cfg));
}

/* Moves every published sample from the rings into the window
 * aggregates, and sets the wait before the next drain. */
void ember__core_drain(ember__core *c)
{
	int need_refresh = 0, any = 0;
	ember__unwind_tables *utab = ember__core_active_utab(c);
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
				if (!ember__kallsyms_is_kernel(r->pcs[i]) &&
				    !ember__symbolizer_covers(c->sym, r->pcs[i])) {
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
		ember__core_ensure_symbolizer(c);
	/* Tables for the modules samples landed in, before more land there
	 * (within the build budget: the CPU the program's threads used, ours
	 * left out); none once stopping: no sample would use them. */
	if (!c->stopping && ember__unwind_tables_wanted(utab)) {
		int64_t app_cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - now_ns(CLOCK_THREAD_CPUTIME_ID);
		if (ember__unwind_tables_build_wanted(utab, app_cpu) != 0)
			ember__log(&c->cfg, EMBER_LOG_DEBUG, "unwind tables: %s", ember_last_error());
	}
	ember__core_resolve_polls(c, INT64_MIN);
	/* Code we have not seen mapped (a library dlopen'ed since): learn its
	 * module now, while it is surely still loaded. */
	if (need_refresh && ember__symbolizer_refresh(c->sym) != 0)
		ember__log(&c->cfg, EMBER_LOG_DEBUG, "symbolizer refresh: %s", ember_last_error());
	/* The same for the unwinder: tables for code mapped since. */
	if (need_refresh && ember__core_active_utab(c) && ember__unwind_tables_refresh(c->utab) != 0)
		ember__log(&c->cfg, EMBER_LOG_DEBUG, "unwind tables refresh: %s", ember_last_error());
}
