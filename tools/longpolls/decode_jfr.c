/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decode_jfr.c - long polls from JFR recordings (decode.h): async-profiler's
 * tokio.PollcatchV1 user events and emberprof's emberprof.LongPoll events,
 * matched with the samples on their thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "read/jfr_read.h"
#include "encode/pprof.h"
#include "read/pprof_read.h"
#include "longpolls/decode.h"
#include "pollcatch/pollcatch.h"
#include "util/error.h"

/* The clocks poll times are in: tokio.PollcatchV1's are the TSC (the
 * chunks' ticks, one clock across chunks), emberprof.LongPoll's are
 * converted to ns since the epoch (each of our chunks counts its ticks from
 * its own start). */
enum { CLK_TICKS = 0, CLK_NS = 1 };

typedef struct jpoll {
	int clock;          /* CLK_*: sorted by clock, then thread, then start */
	int64_t tid;
	int64_t start, end; /* in `clock` */
	double duration_ms;
	uint64_t id;        /* PollcatchV1: 0 until a sample matches; LongPoll: its pollId */
	int open;           /* LongPoll: had not ended when its window closed */
	const char *thread; /* LongPoll: the event thread's name (arena), or NULL */
	int64_t max_end;    /* the latest end of this thread's polls up to this one */
} jpoll;

/* A user event's data as bytes: Latin-1 as it is, UTF-8 decoded to code
 * points that must each fit a byte. Returns the length or -1. */
static long data_bytes(const ember__jfr_value *v, uint8_t *out, size_t cap)
{
	if (!v || v->kind != EMBER_JFR_STRING)
		return -1;
	const uint8_t *s = (const uint8_t *)v->u.s;
	if (v->latin1) {
		if (v->n > cap)
			return -1;
		memcpy(out, s, v->n);
		return (long)v->n;
	}
	size_t n = 0;
	for (uint32_t i = 0; i < v->n; n++) {
		if (n >= cap)
			return -1;
		if (s[i] < 0x80) {
			out[n] = s[i++];
		} else if ((s[i] & 0xe0) == 0xc0 && i + 1 < v->n && (s[i + 1] & 0xc0) == 0x80 &&
			   (s[i] & 0x1f) <= 3) {
			out[n] = (uint8_t)((s[i] & 0x1f) << 6 | (s[i + 1] & 0x3f));
			i += 2;
		} else {
			return -1; /* not a byte */
		}
	}
	return (long)n;
}

static const char *type_name(const ember__jfr_value *ev)
{
	const ember__jfr_value *t = ember__jfr_get(ev, "type");
	if (t && t->kind == EMBER_JFR_STRING)
		return t->u.s;
	return ember__jfr_get_str(t, "name");
}

static int64_t thread_id(const ember__jfr_value *ev, const char *field)
{
	const ember__jfr_value *t = ember__jfr_get(ev, field);
	return t && t->kind == EMBER_JFR_OBJECT ? ember__jfr_get_int(t, "osThreadId") : -1;
}

static const char *symbol(const ember__jfr_value *v)
{
	if (v && v->kind == EMBER_JFR_STRING)
		return v->u.s;
	return ember__jfr_get_str(v, "string");
}

static int cmp_jpoll(const void *a, const void *b)
{
	const jpoll *x = a, *y = b;
	if (x->clock != y->clock)
		return x->clock < y->clock ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* LongPoll polls by id, the ended view first, then the longest. */
static int cmp_by_id(const void *a, const void *b)
{
	const jpoll *x = a, *y = b;
	if (x->clock != y->clock)
		return x->clock < y->clock ? -1 : 1;
	if (x->clock == CLK_NS && x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->open != y->open)
		return x->open ? 1 : -1;
	return x->duration_ms > y->duration_ms ? -1 : x->duration_ms < y->duration_ms;
}

/* One emberprof.LongPoll per poll id: a poll still running when one window
 * closed appears again, ended, in the next; its ended view holds the
 * samples of both (and a sample counts once). Returns the new count. */
static size_t unique_ids(jpoll *polls, size_t n)
{
	qsort(polls, n, sizeof(*polls), cmp_by_id);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || polls[i].clock != CLK_NS || polls[k - 1].clock != CLK_NS ||
		    polls[k - 1].id != polls[i].id)
			polls[k++] = polls[i];
	return k;
}

/* A chunk's ticks as ns since the epoch (its header's conversion), in
 * 128 bits and clamped, so that no input overflows. ticks_per_second > 0. */
static int64_t ticks_to_ns(const ember__jfr_chunk_info *ci, __int128 ticks)
{
	__int128 ns = (ticks - ci->start_ticks) * 1000000000 / ci->ticks_per_second +
		      ci->start_nanos;
	return ns > INT64_MAX ? INT64_MAX : ns < INT64_MIN ? INT64_MIN : (int64_t)ns;
}

/* Room for one more poll. */
static jpoll *next_poll(jpoll **polls, size_t *n, size_t *cap)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		jpoll *np = realloc(*polls, ncap * sizeof(*np));
		if (!np)
			return NULL;
		*polls = np;
		*cap = ncap;
	}
	return &(*polls)[(*n)++];
}

/* An emberprof.LongPoll event (encode/jfr.h) as a poll in CLK_NS. */
static int long_poll(ember__longpolls *lp, const ember__jfr_event *ev,
		     const ember__jfr_chunk_info *ci, jpoll *p, const char *name)
{
	int64_t start = ember__jfr_get_int(ev->value, "startTime");
	int64_t dur = ember__jfr_get_int(ev->value, "duration");
	int64_t id = ember__jfr_get_int(ev->value, "pollId");
	if (dur < 0 || id <= 0)
		return ember__error(EMBER_ERR_FORMAT, "%s: emberprof.LongPoll event at byte %llu has "
				    "duration %lld, pollId %lld", name,
				    (unsigned long long)ev->offset, (long long)dur, (long long)id);
	const ember__jfr_value *th = ember__jfr_get(ev->value, "eventThread");
	const char *tname = ember__jfr_get_str(th, "osName");
	*p = (jpoll){
		.clock = CLK_NS,
		.tid = thread_id(ev->value, "eventThread"),
		.start = ticks_to_ns(ci, start),
		.end = ticks_to_ns(ci, (__int128)start + dur),
		.duration_ms = (double)dur * 1e3 / (double)ci->ticks_per_second,
		.id = (uint64_t)id,
		.open = ember__jfr_get_int(ev->value, "open") != 0,
	};
	if (tname && !(p->thread = ember__arena_strdup(&lp->arena, tname)))
		return ember__error_oom("long polls");
	return 0;
}

/* Pass 1: the clock setting and the polls. */
static int collect_polls(ember__longpolls *lp, ember__jfr *j, jpoll **out, size_t *nout,
			 const char *name)
{
	ember__jfr_event ev;
	int rc, tsc = -1; /* -1: no clock setting seen */
	jpoll *polls = NULL;
	size_t n = 0, cap = 0, ntsc = 0;
	while ((rc = ember__jfr_next_event(j, &ev)) == 1) {
		if (ember__jfr_is(ev.type, "jdk.ActiveSetting")) {
			const char *k = ember__jfr_get_str(ev.value, "name");
			const char *v = ember__jfr_get_str(ev.value, "value");
			if (k && v && !strcmp(k, "clock"))
				tsc = !strcmp(v, "tsc");
			continue;
		}
		if (ember__jfr_is(ev.type, "emberprof.LongPoll")) {
			const ember__jfr_chunk_info *ci = ember__jfr_chunk(j, ev.chunk);
			jpoll *p = ci->ticks_per_second > 0 ? next_poll(&polls, &n, &cap) : NULL;
			rc = ci->ticks_per_second <= 0
				     ? ember__error(EMBER_ERR_FORMAT, "%s: a chunk's ticksPerSecond is %lld",
						    name, (long long)ci->ticks_per_second)
				     : !p ? ember__error_oom("long polls")
					  : long_poll(lp, &ev, ci, p, name);
			if (rc)
				break;
			continue;
		}
		if (!ember__jfr_is(ev.type, "profiler.UserEvent"))
			continue;
		const char *t = type_name(ev.value);
		if (!t || strcmp(t, EMBER__POLLCATCH_EVENT))
			continue;
		uint8_t buf[32];
		long len = data_bytes(ember__jfr_get(ev.value, "data"), buf, sizeof(buf));
		uint64_t before, after;
		if (len < 0 || ember__pollcatch_payload_decode(buf, (size_t)len, &before, &after)) {
			rc = ember__error(EMBER_ERR_FORMAT, "%s: " EMBER__POLLCATCH_EVENT
					  " event at byte %llu has a malformed payload (%ld bytes, expected 16)",
					  name, (unsigned long long)ev.offset, len);
			break;
		}
		if (after < before)
			continue; /* the counter went backwards (another CPU's TSC): no duration */
		const ember__jfr_chunk_info *ci = ember__jfr_chunk(j, ev.chunk);
		if (ci->ticks_per_second <= 0) {
			rc = ember__error(EMBER_ERR_FORMAT, "%s: a chunk's ticksPerSecond is %lld", name,
					  (long long)ci->ticks_per_second);
			break;
		}
		jpoll *p = next_poll(&polls, &n, &cap);
		if (!p) {
			rc = ember__error_oom("long polls");
			break;
		}
		ntsc++;
		int64_t end = ember__jfr_get_int(ev.value, "startTime");
		*p = (jpoll){
			.clock = CLK_TICKS,
			.tid = thread_id(ev.value, "eventThread"),
			.start = end - (int64_t)(after - before),
			.end = end,
			.duration_ms = (double)(after - before) * 1e3 / (double)ci->ticks_per_second,
		};
	}
	if (rc >= 0 && ntsc && tsc == 0)
		rc = ember__error(EMBER_ERR_FORMAT, "%s: the recording's clock is not tsc: the poll "
				  "times (TSC) cannot be matched with its samples", name);
	if (rc < 0) {
		free(polls);
		return rc;
	}
	if (n) {
		n = unique_ids(polls, n);
		qsort(polls, n, sizeof(*polls), cmp_jpoll);
	}
	/* so that a sample looks back only over the polls that can hold it */
	for (size_t i = 0; i < n; i++)
		polls[i].max_end = i && polls[i - 1].clock == polls[i].clock &&
					   polls[i - 1].tid == polls[i].tid &&
					   polls[i - 1].max_end > polls[i].end
					   ? polls[i - 1].max_end
					   : polls[i].end;
	*out = polls;
	*nout = n;
	return 0;
}

/* A stack trace's frames as "Class.method" (or "method" without a class). */
static int frames_of(ember__longpolls *lp, const ember__jfr_value *st, const char ***frames,
		     size_t *cap, uint32_t *n)
{
	const ember__jfr_value *fr = ember__jfr_get(st, "frames");
	*n = 0;
	if (!fr || fr->kind != EMBER_JFR_ARRAY)
		return 0;
	if (fr->n > *cap) {
		const char **nf = realloc(*frames, fr->n * sizeof(*nf));
		if (!nf)
			return ember__error_oom("long polls");
		*frames = nf;
		*cap = fr->n;
	}
	for (uint32_t i = 0; i < fr->n; i++) {
		const ember__jfr_value *m = ember__jfr_get(&fr->u.items[i], "method");
		const char *meth = symbol(ember__jfr_get(m, "name"));
		const char *cls = symbol(ember__jfr_get(ember__jfr_get(m, "type"), "name"));
		if (!meth)
			meth = "?";
		if (cls && *cls) {
			size_t len = strlen(cls) + strlen(meth) + 2;
			char *s = ember__arena_alloc(&lp->arena, len);
			if (!s)
				return ember__error_oom("long polls");
			snprintf(s, len, "%s.%s", cls, meth);
			(*frames)[i] = s;
		} else {
			(*frames)[i] = meth;
		}
	}
	*n = fr->n;
	return 0;
}

/* Adds one sample (event ev at time t in `clock`, on thread tid) to every
 * poll of that clock holding it. */
static int match(ember__longpolls *lp, jpoll *polls, size_t npolls, int clock, int64_t tid,
		 int64_t t, const ember__jfr_event *ev, const char ***frames, size_t *cap)
{
	/* the first poll of this clock and thread starting at or after t, then back */
	size_t lo = 0, hi = npolls;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const jpoll *m = &polls[mid];
		if (m->clock < clock ||
		    (m->clock == clock && (m->tid < tid || (m->tid == tid && m->start < t))))
			lo = mid + 1;
		else
			hi = mid;
	}
	int rc = 0;
	for (size_t i = lo; i-- > 0 && polls[i].clock == clock && polls[i].tid == tid &&
			    polls[i].max_end > t && !rc;) {
		jpoll *p = &polls[i];
		if (!(p->start < t && t < p->end))
			continue;
		uint64_t id = p->id;
		if (clock == CLK_TICKS) { /* PollcatchV1 polls: ids of our own, kept apart */
			if (!p->id)
				p->id = lp->next_jfr_id++;
			id = p->id | (1ull << 63);
		}
		const ember__jfr_value *th = ember__jfr_get(ev->value, "sampledThread");
		const char *tname = ember__jfr_get_str(th, "javaName");
		if (!tname)
			tname = ember__jfr_get_str(th, "osName");
		uint32_t n;
		rc = frames_of(lp, ember__jfr_get(ev->value, "stackTrace"), frames, cap, &n);
		int64_t w = ember__jfr_get_int(ev->value, "samples");
		if (!rc)
			rc = ember__longpolls_add(lp, id, tid, tname, p->duration_ms, p->open, *frames,
						  n, w > 0 ? (uint64_t)w : 1);
	}
	return rc;
}

static int add_jfr(ember__longpolls *lp, ember__jfr *j, const char *name)
{
	jpoll *polls = NULL;
	size_t npolls = 0;
	int rc = collect_polls(lp, j, &polls, &npolls, name);
	if (rc || !npolls)
		return rc;
	/* emberprof.LongPoll polls are listed even when no sample matches */
	for (size_t i = 0; i < npolls && !rc; i++)
		if (polls[i].clock == CLK_NS)
			rc = ember__longpolls_add(lp, polls[i].id, polls[i].tid, polls[i].thread,
						  polls[i].duration_ms, polls[i].open, NULL, 0, 0);
	int has_ticks = polls[0].clock == CLK_TICKS, has_ns = polls[npolls - 1].clock == CLK_NS;
	ember__jfr_rewind(j);
	const char **frames = NULL;
	size_t cap = 0;
	ember__jfr_event ev;
	while (rc == 0 && (rc = ember__jfr_next_event(j, &ev)) == 1) {
		rc = 0;
		if (!ember__jfr_is(ev.type, "jdk.ExecutionSample") &&
		    !ember__jfr_is(ev.type, "profiler.WallClockSample"))
			continue;
		int64_t tid = thread_id(ev.value, "sampledThread");
		int64_t t = ember__jfr_get_int(ev.value, "startTime");
		int arc = 0;
		if (has_ticks)
			arc = match(lp, polls, npolls, CLK_TICKS, tid, t, &ev, &frames, &cap);
		const ember__jfr_chunk_info *ci = ember__jfr_chunk(j, ev.chunk);
		if (!arc && has_ns && ci->ticks_per_second > 0)
			arc = match(lp, polls, npolls, CLK_NS, tid, ticks_to_ns(ci, t), &ev, &frames,
				    &cap);
		if (arc)
			rc = arc;
	}
	free(frames);
	free(polls);
	return rc < 0 ? rc : 0;
}

int ember__longpolls_add_data(ember__longpolls *lp, const uint8_t *data, size_t len,
			      const char *name)
{
	if (len >= 4 && !memcmp(data, "FLR\0", 4)) {
		ember__jfr *j;
		int rc = ember__jfr_open(data, len, &j);
		if (rc) {
			char why[EMBER_ERROR_MAX];
			snprintf(why, sizeof(why), "%s", ember_last_error());
			return ember__error(rc, "%s: %s", name, why);
		}
		rc = add_jfr(lp, j, name);
		ember__jfr_free(j);
		return rc;
	}
	ember__profile *p = NULL;
	int rc = ember__pprof_read(data, len, &p);
	if (rc == 0)
		rc = ember__longpolls_add_pprof(lp, p);
	ember__profile_free(p);
	if (rc) {
		char why[EMBER_ERROR_MAX];
		snprintf(why, sizeof(why), "%s", ember_last_error());
		return ember__error(rc, "%s: %s (neither a JFR recording nor a usable pprof profile)",
				    name, why);
	}
	return 0;
}

int ember__longpolls_add_file(ember__longpolls *lp, const char *path)
{
	FILE *f = fopen(path, "rbe");
	if (!f)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot open %s", path);
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			if (cap >= ((size_t)1 << 30)) {
				free(buf);
				fclose(f);
				return ember__error(EMBER_ERR_IO, "%s is larger than 1 GiB", path);
			}
			size_t ncap = cap ? cap * 2 : 65536;
			uint8_t *nb = realloc(buf, ncap);
			if (!nb) {
				free(buf);
				fclose(f);
				return ember__error_oom(path);
			}
			buf = nb;
			cap = ncap;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	int err = ferror(f);
	fclose(f);
	if (err) {
		free(buf);
		return ember__error(EMBER_ERR_IO, "cannot read %s", path);
	}
	int rc = ember__longpolls_add_data(lp, buf, len, path);
	free(buf);
	return rc;
}
