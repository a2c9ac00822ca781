/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heapprof.c - allocation profiling on the agent's side (heapprof.h).
 *
 * Stacks of sampled allocations are interned once in `dict` (stack hash
 * -> pcs), which outlives windows: a block allocated in one window and
 * still live ten windows later is reported in-use under the stack its
 * record had. The dictionary is rebuilt from the live table when it grows
 * past DICT_MAX stacks, so it stays bounded by what is live plus one
 * window's worth.
 */
#include "heap/heapprof.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "heap/gotpatch.h"
#include "heap/hook.h"
#include "heap/sampler.h"
#include "heap/tsclock.h"
#include "util/error.h"

#define RING_SLOTS 2048u
#define DICT_MAX 65536u
#define MAX_SOURCES 4

struct ember__heapprof {
	ember__heap_hook hook;
	int attached, ring_mapped;
	int want_events; /* keep each sampled allocation as an event (for JFR) */
	uint64_t mean;
	ember__memagg cur, next; /* allocation sums of this and the next window */
	ember__memagg dict;      /* every stack a live block may have */
	ember__heap_event *ev_cur, *ev_next, *ev_closed;
	size_t nev_cur, nev_next, nev_closed, cap_cur, cap_next, cap_closed;
	uint64_t events_cut; /* events beyond the per-window cap (JFR only) */
	ember__heap_source src[MAX_SOURCES];
	int src_on[MAX_SOURCES];
	size_t nsrc;
	/* totals of finished runs (the hook's counters restart each run) */
	ember__heap_stats tot;
	uint64_t live_unknown;
	ember__tsclock clock; /* the records' TSC times (tsclock.h) */
	int tsc_on;
	int got;     /* the GOT entries patched now (gotpatch.h) */
	int got_run; /* ... this run: its profiles say what they miss */
	const ember__logger *log; /* the agent's, for detach */
};

#define EVENTS_MAX 100000u

static int ensure(ember__heapprof **hp)
{
	if (*hp)
		return 0;
	*hp = calloc(1, sizeof(**hp));
	return *hp ? 0 : ember__error_oom("heap profiler");
}

int ember__heapprof_add_source(ember__heapprof **hp, const ember__heap_source *src)
{
	int rc = ensure(hp);
	if (rc)
		return rc;
	if ((*hp)->nsrc == MAX_SOURCES)
		return ember__error(EMBER_ERR_INVALID, "too many heap profile sources");
	(*hp)->src[(*hp)->nsrc++] = *src;
	return 0;
}

int ember__heapprof_start(ember__heapprof **hpp, const ember__heap_cfg *cfg, int want_events)
{
	int rc = ensure(hpp);
	if (rc)
		return rc;
	ember__heapprof *hp = *hpp;
	hp->mean = cfg->alloc_mean;
	hp->want_events = want_events;
	ember__memagg_init(&hp->cur);
	ember__memagg_init(&hp->next);
	int exclusive = 0;
	for (size_t i = 0; i < hp->nsrc; i++) {
		hp->src_on[i] = 1;
		if (hp->src[i].start && hp->src[i].start(hp->src[i].ud, hp->mean) < 0) {
			ember__logf(cfg->log, EMBER_LOG_WARN, "heap source %s not used: %s", hp->src[i].name,
				   ember_last_error());
			hp->src_on[i] = 0;
		}
		if (hp->src_on[i] && (hp->src[i].flags & EMBER_HEAP_SOURCE_EXCLUSIVE)) {
			ember__logf(cfg->log, EMBER_LOG_INFO, "allocation profiling through %s, not the malloc hook",
				   hp->src[i].name);
			exclusive = 1;
		}
	}
	ember__heap_hook *h = &hp->hook;
	memset(h, 0, sizeof(*h));
	if (exclusive)
		return 0;
	h->mean = hp->mean;
	h->live = ember__heap_live_table();
	if (!h->live)
		return ember__error(EMBER_ERR_NOMEM, "cannot map the live allocation table");
	ember__livetab_clear(h->live);
	rc = ember__sampbuf_init(&h->buf, RING_SLOTS, cfg->max_depth + 8);
	if (rc)
		return ember__error(rc, "cannot map the allocation sample buffer");
	hp->ring_mapped = 1;
	if (ember__heap_hook_attach(h) != 0) {
		ember__sampbuf_destroy(&h->buf);
		hp->ring_mapped = 0;
		return ember__error(EMBER_ERR_BUSY, "allocation hook already in use");
	}
	hp->attached = 1;
	/* Records carry clock_gettime times until the TSC's rate is known
	 * (the first drain 10 ms on), then ticks. */
	ember__heap_set_tsc(0);
	hp->tsc_on = 0;
	ember__tsclock_start(&hp->clock);
	hp->log = cfg->log;
	hp->got_run = 0;
	void *entry = ember__heap_malloc_entry();
	if (ember__heap_got_requested()) {
		/* loaded into a running process: its calls reach the hook only
		 * once their GOT entries point at it */
		size_t n = 0;
		const ember__got_fn *fns = ember__heap_wrappers(&n);
		ember__got_stats st;
		if ((rc = ember__heap_got_patch(fns, n, cfg->log, &st)) != 0)
			return rc;
		hp->got = hp->got_run = 1;
		if (!st.patched)
			ember__logf(cfg->log, EMBER_LOG_WARN, "allocation profiling: no GOT entry of "
				   "malloc & co could be patched: nothing will be seen");
	} else if (!entry)
		ember__logf(cfg->log, EMBER_LOG_WARN, "allocation profiling: this library does not interpose "
			   "malloc (libemberprof_noalloc.so, or a sanitizer build); memory profiles "
			   "will hold only other sources");
	else if (dlsym(RTLD_DEFAULT, "malloc") != entry)
		ember__logf(cfg->log, EMBER_LOG_WARN, "allocation profiling: malloc is not emberprof's here "
			   "(another allocator comes first, or emberprof was dlopen'ed); memory "
			   "profiles will hold only what reaches emberprof's malloc");
	else {
		Dl_info info;
		void *real = ember__heap_real_malloc();
		const char *lib = real && dladdr(real, &info) && info.dli_fname ? info.dli_fname : "?";
		ember__logf(cfg->log, EMBER_LOG_INFO, "allocation profiling: one sample per %llu bytes on "
			   "average, allocations served by %s", (unsigned long long)hp->mean, lib);
	}
	return 0;
}

void ember__heapprof_detach(ember__heapprof *hp)
{
	if (hp && hp->got) {
		/* calls go back to the allocator before the hook goes */
		ember__heap_got_restore();
		unsigned patched, restored;
		ember__heap_got_last(&patched, &restored);
		ember__logf(hp->log, restored == patched ? EMBER_LOG_INFO : EMBER_LOG_WARN,
			   "allocation profiling: %u of the %u GOT entries patched restored%s", restored,
			   patched, restored == patched ? "" : " (the others' modules were unloaded, or "
			   "someone else rewrote them: left)");
		hp->got = 0;
	}
	if (hp && hp->attached) {
		ember__heap_hook_detach();
		ember__heap_set_tsc(0);
		hp->attached = 0;
	}
}

static void push_event(ember__heap_event **ev, size_t *n, size_t *cap, const ember__heap_event *e,
		       uint64_t *cut)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		ember__heap_event *ne = ncap <= EVENTS_MAX ? realloc(*ev, ncap * sizeof(*ne)) : NULL;
		if (!ne) {
			(*cut)++;
			return;
		}
		*ev = ne;
		*cap = ncap;
	}
	(*ev)[(*n)++] = *e;
}

static void keep(const ember__memagg *old, ember__memagg *fresh, uint64_t hash)
{
	static const double zero[EMBER_MEM_NVALUES];
	if (ember__memagg_find(fresh, hash))
		return;
	const ember__memagg_stack *s = ember__memagg_find(old, hash);
	if (s)
		ember__memagg_add(fresh, s->pcs, s->depth, zero);
}

static void keep_live(void *ud, uintptr_t p, const ember__live_val *v)
{
	(void)p;
	ember__memagg **a = ud;
	keep(a[0], a[1], v->hash);
}

/* Keeps only the stacks a live block or a pending event refers to. */
static void prune_dict(ember__heapprof *hp)
{
	ember__memagg fresh;
	ember__memagg_init(&fresh);
	ember__memagg *a[2] = {&hp->dict, &fresh};
	if (hp->hook.live)
		ember__livetab_scan(hp->hook.live, keep_live, a);
	for (size_t i = 0; i < hp->nev_closed; i++)
		keep(&hp->dict, &fresh, hp->ev_closed[i].stack);
	for (size_t i = 0; i < hp->nev_cur; i++)
		keep(&hp->dict, &fresh, hp->ev_cur[i].stack);
	for (size_t i = 0; i < hp->nev_next; i++)
		keep(&hp->dict, &fresh, hp->ev_next[i].stack);
	ember__memagg_release(&hp->dict);
	hp->dict = fresh;
}

int64_t ember__heap_drain_interval(int64_t cur_ns, uint32_t drained, uint32_t slots)
{
	if (drained > slots / 2)
		return EMBER_HEAP_DRAIN_MIN_NS; /* it may have filled: at once */
	if (drained > slots / 4)
		cur_ns /= 2;
	else if (drained < slots / 16)
		cur_ns *= 2;
	if (cur_ns < EMBER_HEAP_DRAIN_MIN_NS)
		return EMBER_HEAP_DRAIN_MIN_NS;
	return cur_ns > EMBER_HEAP_DRAIN_MAX_NS ? EMBER_HEAP_DRAIN_MAX_NS : cur_ns;
}

int64_t ember__heapprof_next_drain(const ember__heapprof *hp, int64_t cur_ns, uint32_t drained)
{
	if (!hp || !hp->ring_mapped)
		return EMBER_HEAP_DRAIN_MAX_NS;
	return ember__heap_drain_interval(cur_ns, drained, RING_SLOTS);
}

uint32_t ember__heapprof_drain(ember__heapprof *hp, int64_t win_end)
{
	uint32_t n = 0;
	if (!hp || !hp->ring_mapped)
		return 0;
	ember__sample_rec *r;
	static const double zero[EMBER_MEM_NVALUES];
	/* A fresh anchor for converting TSC times; once the rate is known,
	 * the hook may switch to them. */
	int tsc_ok = ember__tsclock_update(&hp->clock);
	if (tsc_ok != hp->tsc_on && hp->attached) {
		ember__heap_set_tsc(tsc_ok); /* off again: the counter misbehaved */
		hp->tsc_on = tsc_ok;
	}
	while ((r = ember__sampbuf_peek(&hp->hook.buf))) {
		int64_t t = r->time_ns;
		if (r->flags & EMBER_HEAP_REC_TSC)
			t = ember__tsclock_realtime(&hp->clock, (uint64_t)r->time_ns);
		int later = t >= win_end;
		double f = ember__heap_unsample(r->weight, hp->mean);
		double v[EMBER_MEM_NVALUES] = {f, f * (double)r->weight, 0, 0};
		ember__memagg_add(later ? &hp->next : &hp->cur, r->pcs, r->depth, v);
		/* The hook computed the same hash for the live table. */
		uint64_t h = ember__heap_stack_hash(r->pcs, r->depth);
		if (!ember__memagg_find(&hp->dict, h))
			ember__memagg_add(&hp->dict, r->pcs, r->depth, zero);
		ember__heap_event e = {t, r->tid, -1, r->weight, r->addr, f * (double)r->weight, h};
		if (hp->want_events && later)
			push_event(&hp->ev_next, &hp->nev_next, &hp->cap_next, &e, &hp->events_cut);
		else if (hp->want_events)
			push_event(&hp->ev_cur, &hp->nev_cur, &hp->cap_cur, &e, &hp->events_cut);
		ember__sampbuf_release(&hp->hook.buf, r);
		n++;
	}
	return n;
}

typedef struct live_ctx {
	ember__heapprof *hp;
	ember__memagg *into;
	int failed;
} live_ctx;

static void add_live(void *ud, uintptr_t p, const ember__live_val *v)
{
	(void)p;
	live_ctx *c = ud;
	const ember__memagg_stack *s = ember__memagg_find(&c->hp->dict, v->hash);
	if (!s) {
		c->hp->live_unknown++; /* its record was not drained yet */
		return;
	}
	double f = ember__heap_unsample(v->size, c->hp->mean);
	double val[EMBER_MEM_NVALUES] = {0, 0, f, f * (double)v->size};
	if (ember__memagg_add(c->into, s->pcs, s->depth, val) != 0)
		c->failed = 1;
}

int ember__heapprof_window(ember__heapprof *hp, ember__symbolizer *sym, const ember__heap_cfg *cfg,
			   int64_t start_ns, int64_t end_ns, int final, ember__profile **out,
			   uint64_t *nsamples)
{
	*out = NULL;
	*nsamples = 0;
	if (!hp)
		return 0;
	int rc = 0;
	if (hp->got)
		ember__heap_got_rescan(cfg->log); /* modules dlopen'ed since (gotpatch.h) */
	uint64_t allocs = hp->cur.samples;
	if (hp->hook.live) {
		live_ctx c = {hp, &hp->cur, 0};
		ember__livetab_scan(hp->hook.live, add_live, &c);
		if (c.failed)
			rc = ember__error_oom("in-use profile");
	}
	for (size_t i = 0; i < hp->nsrc; i++) {
		if (!hp->src_on[i])
			continue;
		ember__error_clear();
		if (hp->src[i].collect(hp->src[i].ud, start_ns, end_ns, &hp->cur) != 0) {
			ember__logf(cfg->log, EMBER_LOG_WARN, "heap source %s: %s", hp->src[i].name,
				   ember_last_error());
			rc = rc ? rc : EMBER_ERR_REPORTER;
		}
	}
	*nsamples = allocs;
	if (hp->cur.n || final)
		rc = ember__memagg_profile(&hp->cur, sym, &cfg->window, hp->mean, start_ns, end_ns, out) ?: rc;
	if (*out && hp->got_run) {
		(*out)->comment = ember__profile_strdup(*out, EMBER_HEAP_ATTACH_NOTE);
		if (!(*out)->comment)
			rc = rc ? rc : ember__error_oom("memory profile");
	}
	/* Each event names its stack's sample in that profile (JFR). */
	for (size_t i = 0; i < hp->nev_cur; i++) {
		const ember__memagg_stack *s = *out ? ember__memagg_find(&hp->cur, hp->ev_cur[i].stack) : NULL;
		hp->ev_cur[i].sample = s ? s->sample : -1;
	}
	/* The window's events become the closed ones; the next window's move up. */
	free(hp->ev_closed);
	hp->ev_closed = hp->ev_cur;
	hp->nev_closed = hp->nev_cur;
	hp->cap_closed = hp->cap_cur;
	hp->ev_cur = hp->ev_next;
	hp->nev_cur = hp->nev_next;
	hp->cap_cur = hp->cap_next;
	hp->ev_next = NULL;
	hp->nev_next = hp->cap_next = 0;
	ember__memagg_release(&hp->cur);
	hp->cur = hp->next;
	ember__memagg_init(&hp->next);
	/* Bounded: the stacks of blocks freed since go. */
	if (hp->dict.n >= DICT_MAX)
		prune_dict(hp);
	return rc;
}

const uint64_t *ember__heapprof_stack(const ember__heapprof *hp, uint64_t stack, uint32_t *depth)
{
	const ember__memagg_stack *s = hp && stack ? ember__memagg_find(&hp->dict, stack) : NULL;
	*depth = s ? s->depth : 0;
	return s ? s->pcs : NULL;
}

void ember__heapprof_events(const ember__heapprof *hp, const ember__heap_event **ev, size_t *n)
{
	*ev = hp ? hp->ev_closed : NULL;
	*n = hp ? hp->nev_closed : 0;
}

static void add_hook_totals(ember__heapprof *hp)
{
	ember__heap_hook *h = &hp->hook;
	/* Records written: every successful claim of the ring moved its head. */
	hp->tot.sampled += atomic_load(&h->buf.head);
	hp->tot.dropped_full += atomic_load(&h->dropped_full);
	hp->tot.no_bounds += atomic_load(&h->no_bounds);
	hp->tot.live_overflow += atomic_load(&h->live_overflow);
	atomic_store(&h->buf.head, 0);
	atomic_store(&h->dropped_full, 0);
	atomic_store(&h->no_bounds, 0);
	atomic_store(&h->live_overflow, 0);
}

void ember__heapprof_stop(ember__heapprof *hp)
{
	if (!hp)
		return;
	ember__heapprof_detach(hp);
	for (size_t i = 0; i < hp->nsrc; i++)
		if (hp->src_on[i] && hp->src[i].stop)
			hp->src[i].stop(hp->src[i].ud);
	if (hp->ring_mapped) {
		ember__sampbuf_destroy(&hp->hook.buf);
		hp->ring_mapped = 0;
	}
	add_hook_totals(hp);
	/* Blocks sampled in this run would be reported by the next under a
	 * stack it may have pruned, and with this run's mean: forget them. */
	if (hp->hook.live)
		ember__livetab_clear(hp->hook.live);
	ember__memagg_release(&hp->cur);
	ember__memagg_release(&hp->next);
	free(hp->ev_next);
	hp->ev_next = NULL;
	hp->nev_next = hp->cap_next = 0;
}

void ember__heapprof_stats(const ember__heapprof *hp, ember__heap_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!hp)
		return;
	*out = hp->tot;
	const ember__heap_hook *h = &hp->hook;
	out->sampled += atomic_load(&h->buf.head);
	out->dropped_full += atomic_load(&h->dropped_full);
	out->no_bounds += atomic_load(&h->no_bounds);
	out->live_overflow += atomic_load(&h->live_overflow);
	out->live_unknown = hp->live_unknown;
}

int ember__heapprof_hooked(const ember__heapprof *hp)
{
	return hp && hp->attached;
}

void ember__heapprof_free(ember__heapprof *hp)
{
	if (!hp)
		return;
	ember__heapprof_stop(hp);
	for (size_t i = 0; i < hp->nsrc; i++)
		if (hp->src[i].destroy)
			hp->src[i].destroy(hp->src[i].ud);
	ember__memagg_release(&hp->dict);
	free(hp->ev_cur);
	free(hp->ev_closed);
	free(hp);
}
