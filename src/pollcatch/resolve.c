/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve.c - matching held samples with ended long polls (resolve.h).
 */
#include "pollcatch/resolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emberprof.h"

/* Ended polls are kept this long after their end for samples still on
 * their way through the sample ring; open ones until they end. */
#define KEEP_ENDED_SEC 2.0
#define KEEP_OPEN_SEC 3600.0

void ember__pollres_init(ember__pollres *r, unsigned threshold_ms)
{
	memset(r, 0, sizeof(*r));
	r->threshold_ms = threshold_ms;
	r->next_id = 1;
}

void ember__pollres_free(ember__pollres *r)
{
	for (size_t i = 0; i < r->nheld; i++)
		free(r->held[i]);
	free(r->held);
	free(r->polls);
	ember__u64map_free(&r->index);
	ember__u64map_free(&r->latest);
	unsigned t = r->threshold_ms;
	memset(r, 0, sizeof(*r));
	r->threshold_ms = t;
	r->next_id = 1;
}

void ember__pollres_discard_records(void)
{
	ember__poll_rec rec;
	while (ember__poll_records_take(&rec))
		;
}

/* Remembers that thread `tid` has been in the poll started at `start`. */
static void saw_start(ember__pollres *r, int32_t tid, uint64_t start)
{
	int inserted;
	uint64_t *v = ember__u64map_put(&r->latest, (uint64_t)(uint32_t)tid, &inserted);
	if (v && (inserted || *v < start))
		*v = start;
}

int ember__pollres_hold(ember__pollres *r, int32_t tid, int32_t agg_tid, uint32_t flags,
			int64_t time_ns, uint64_t weight, uint64_t poll_start, const uint64_t *pcs,
			uint32_t depth, const uint8_t *labels, uint32_t label_len)
{
	saw_start(r, tid, poll_start);
	if (r->nheld == r->capheld) {
		size_t ncap = r->capheld ? r->capheld * 2 : 64;
		ember__pollres_sample **n = realloc(r->held, ncap * sizeof(*n));
		if (!n)
			return EMBER_ERR_NOMEM;
		r->held = n;
		r->capheld = ncap;
	}
	ember__pollres_sample *s = malloc(sizeof(*s) + depth * sizeof(*pcs) + label_len);
	if (!s)
		return EMBER_ERR_NOMEM;
	*s = (ember__pollres_sample){.tid = tid, .agg_tid = agg_tid, .flags = flags,
				     .depth = depth, .label_len = label_len, .time_ns = time_ns,
				     .weight = weight, .poll_start = poll_start};
	memcpy(s->pcs, pcs, depth * sizeof(*pcs));
	if (label_len)
		memcpy((uint8_t *)(s->pcs + depth), labels, label_len);
	r->held[r->nheld++] = s;
	return 0;
}

uint32_t ember__pollres_put_label(uint8_t *buf, uint32_t len, size_t cap, const char *key,
				  const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);
	if (kl > 255 || vl > 255 || len + 2 + kl + vl > cap)
		return len;
	buf[len++] = (uint8_t)kl;
	memcpy(buf + len, key, kl);
	len += (uint32_t)kl;
	buf[len++] = (uint8_t)vl;
	memcpy(buf + len, value, vl);
	return len + (uint32_t)vl;
}

static uint64_t poll_key(int32_t tid, uint64_t start)
{
	return ember__hash64(start ^ ((uint64_t)(uint32_t)tid << 32 | (uint32_t)tid));
}

static ember__pollres_poll *find_poll(ember__pollres *r, int32_t tid, uint64_t start)
{
	for (uint64_t k = poll_key(tid, start);; k++) {
		uint64_t *v = ember__u64map_get(&r->index, k);
		if (!v)
			return NULL;
		ember__pollres_poll *p = &r->polls[*v - 1];
		if (p->rec.tid == tid && p->rec.start == start)
			return p;
	}
}

static ember__pollres_poll *add_poll(ember__pollres *r, const ember__poll_rec *rec)
{
	if (r->npolls == r->cappolls) {
		size_t ncap = r->cappolls ? r->cappolls * 2 : 64;
		ember__pollres_poll *n = realloc(r->polls, ncap * sizeof(*n));
		if (!n)
			return NULL;
		r->polls = n;
		r->cappolls = ncap;
	}
	for (uint64_t k = poll_key(rec->tid, rec->start);; k++) {
		int inserted;
		uint64_t *v = ember__u64map_put(&r->index, k, &inserted);
		if (!v)
			return NULL;
		if (!inserted)
			continue; /* another poll hashed here: probe on */
		*v = r->npolls + 1;
		break;
	}
	ember__pollres_poll *p = &r->polls[r->npolls++];
	p->rec = *rec;
	p->id = 0;
	return p;
}

/* Forgets polls no sample can still be waiting for. */
static int prune(ember__pollres *r, uint64_t now, double tps)
{
	size_t k = 0;
	for (size_t i = 0; i < r->npolls; i++) {
		const ember__pollres_poll *p = &r->polls[i];
		double age = p->rec.end ? (double)(int64_t)(now - p->rec.end) / tps
					: (double)(int64_t)(now - p->rec.start) / tps;
		if (age < (p->rec.end ? KEEP_ENDED_SEC : KEEP_OPEN_SEC))
			r->polls[k++] = *p;
	}
	if (k == r->npolls)
		return 0;
	r->npolls = k;
	ember__u64map_free(&r->index);
	for (size_t i = 0; i < r->npolls; i++)
		for (uint64_t key = poll_key(r->polls[i].rec.tid, r->polls[i].rec.start);; key++) {
			int inserted;
			uint64_t *v = ember__u64map_put(&r->index, key, &inserted);
			if (!v)
				return EMBER_ERR_NOMEM;
			if (inserted) {
				*v = i + 1;
				break;
			}
		}
	return 0;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Has the sample's thread started a later poll since? */
static int poll_is_over(const ember__pollres *r, const ember__pollres_sample *s)
{
	uint64_t *v = ember__u64map_get(&r->latest, (uint64_t)(uint32_t)s->tid);
	return v && (int64_t)(*v - s->poll_start) > 0;
}

/* Releases one sample; its poll is `p` (NULL: not known to be long), whose
 * busy part started at start_ns (CLOCK_REALTIME) and lasted dur_ms. */
static int release(ember__pollres *r, const ember__pollres_sample *s, ember__pollres_poll *p,
		   int64_t start_ns, double dur_ms, int open, ember__pollres_emit_fn emit, void *ud)
{
	ember__pollres_long lp = {0};
	uint8_t buf[EMBER_POLLRES_LABEL_BYTES];
	uint32_t n = s->label_len <= sizeof(buf) ? s->label_len : 0;
	memcpy(buf, ember__pollres_labels(s), n);
	if (p) {
		if (!p->id) {
			p->id = r->next_id++;
			r->long_polls++;
		}
		char id[24], dur[32];
		snprintf(id, sizeof(id), "%llu", (unsigned long long)p->id);
		snprintf(dur, sizeof(dur), "%.3f", dur_ms);
		n = ember__pollres_put_label(buf, n, sizeof(buf), "poll_id", id);
		n = ember__pollres_put_label(buf, n, sizeof(buf), "poll_duration_ms", dur);
		if (open)
			n = ember__pollres_put_label(buf, n, sizeof(buf), "poll_open", "1");
		r->samples_labelled++;
		lp = (ember__pollres_long){.id = p->id, .start_ns = start_ns,
					   .duration_ns = (int64_t)(dur_ms * 1e6), .tid = s->tid,
					   .open = open};
	}
	return emit(ud, s, p ? &lp : NULL, buf, n);
}

int ember__pollres_resolve(ember__pollres *r, int64_t flush_before_ns, ember__pollres_emit_fn emit,
			   void *ud)
{
	int rc = 0;
	ember__poll_rec rec;
	while (ember__poll_records_take(&rec)) {
		saw_start(r, rec.tid, rec.start);
		ember__pollres_poll *p = find_poll(r, rec.tid, rec.start);
		if (p)
			p->rec = rec; /* was open: now it has ended */
		else if (!add_poll(r, &rec))
			rc = EMBER_ERR_NOMEM;
	}
	if (!r->nheld)
		return rc;
	double tps = ember__poll_ticks_per_sec(); /* measured once, on first use */
	uint64_t now = ember__poll_now();
	int64_t now_rt = realtime_ns();
	double threshold_ns = (double)r->threshold_ms * 1e6;
	size_t k = 0;
	for (size_t i = 0; i < r->nheld; i++) {
		ember__pollres_sample *s = r->held[i];
		ember__pollres_poll *p = find_poll(r, s->tid, s->poll_start);
		int erc = 0, done = 1;
		if (p && p->rec.end) {
			double busy_ns = (double)(p->rec.end - p->rec.start) * 1e9 / tps -
					 (double)p->rec.idle_ns;
			/* CLOCK_REALTIME at the end of the poll's waiting part */
			int64_t busy_from = now_rt - (int64_t)((double)(now - p->rec.start) * 1e9 / tps) +
					    (int64_t)p->rec.idle_ns;
			int in_busy = !p->rec.idle_ns || s->time_ns >= busy_from;
			erc = release(r, s, busy_ns >= threshold_ns && in_busy ? p : NULL, busy_from,
				      busy_ns / 1e6, 0, emit, ud);
		} else if (!p && s->time_ns < flush_before_ns && poll_is_over(r, s)) {
			/* its poll ended but its record was dropped: no duration */
			erc = release(r, s, NULL, 0, 0, 0, emit, ud);
			r->samples_lost_record++;
		} else if (s->time_ns < flush_before_ns) {
			/* Its window closes and the poll has not ended (or its
			 * record was lost): it counts with the time so far. */
			double so_far = (double)(int64_t)(now - s->poll_start) * 1e9 / tps;
			if (so_far >= threshold_ns && !p) {
				ember__poll_rec open = {.tid = s->tid, .start = s->poll_start};
				p = add_poll(r, &open);
			}
			erc = release(r, s, so_far >= threshold_ns ? p : NULL, now_rt - (int64_t)so_far,
				      so_far / 1e6, 1, emit, ud);
			r->samples_unresolved++;
		} else {
			done = 0;
		}
		if (erc && !rc)
			rc = erc;
		if (done)
			free(s);
		else
			r->held[k++] = s;
	}
	r->nheld = k;
	int prc = prune(r, now, tps);
	return rc ? rc : prc;
}

int ember__pollres_list_note(ember__pollres_list *l, const ember__pollres_long *p)
{
	if (l->n == l->cap) { /* room first, so that a failure leaves no dead entry */
		size_t ncap = l->cap ? l->cap * 2 : 16;
		ember__pollres_long *nv = realloc(l->v, ncap * sizeof(*nv));
		if (!nv)
			return EMBER_ERR_NOMEM;
		l->v = nv;
		l->cap = ncap;
	}
	int inserted;
	uint64_t *v = ember__u64map_put(&l->index, p->id, &inserted);
	if (!v)
		return EMBER_ERR_NOMEM;
	if (inserted) {
		l->v[l->n++] = *p;
		*v = l->n;
		return 0;
	}
	ember__pollres_long *e = &l->v[*v - 1];
	if (e->open && (!p->open || p->duration_ns > e->duration_ns))
		*e = *p;
	return 0;
}

void ember__pollres_list_free(ember__pollres_list *l)
{
	free(l->v);
	ember__u64map_free(&l->index);
	memset(l, 0, sizeof(*l));
}
