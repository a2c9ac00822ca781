/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.c - the upload pipeline: queue, uploader thread, retries with
 * backoff, spool hand-off and the final flush (see pipeline.h).
 *
 * Locking. One mutex guards the queue, the spool, the item in flight and
 * the flags; one condition variable (on CLOCK_MONOTONIC) carries every
 * wake-up: new item, flush started, item done, stop. The uploader holds
 * the mutex for local work only and drops it around the send function,
 * so ember__pipeline_enqueue() on the agent thread waits at most for a
 * spool file write, never for the network.
 *
 * The item being sent (or waiting for its next attempt) is `cur`. It has
 * left the queue; if it came from the spool its file stays there until it
 * is delivered or refused, so a crash cannot lose it, and spool eviction
 * skips it.
 */
#include "upload/pipeline.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "engine/thread_start.h"
#include "upload/spool.h"
#include "util/envsnap.h"
#include "util/error.h"
#include "util/log.h"

#define DEFAULT_BACKOFF_BASE_MS 500
#define DEFAULT_BACKOFF_MAX_MS 30000
#define DEFAULT_RETRY_AFTER_MAX_MS 600000
#define SPOOL_ERROR_PAUSE_MS 1000

struct ember__pipeline {
	ember__pipeline_opts o;
	char *spool_dir;            /* our copy of o.spool_dir */
	ember__upload_log log;
	pid_t pid;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	ember__upload_item **q;     /* ring of queue_len items */
	size_t qhead, qn;
	ember__spool *spool;        /* NULL: none */
	char spool_note[EMBER_ERROR_MAX]; /* why there is no spool, logged at start */
	ember__upload_item *cur;
	unsigned attempts;          /* failed attempts of cur so far */
	int64_t retry_at;           /* monotonic ns; 0 = now */
	int started, stopping, flushing;
	int down;                   /* the last attempt was refused: the server is down */
	pthread_t thread;
	uint64_t rng;

	_Atomic int cancel;
	_Atomic uint64_t ok, retried, failed, spooled, dropped, bytes, expired;
	_Atomic uint64_t fd_reopens; /* the spool's (ember__spool_reopens) */
};

/* ---- small helpers ---- */

void ember__upload_logf(const ember__upload_log *l, ember_log_level level, const char *fmt, ...)
{
	if (level == EMBER_LOG_OFF || (int)level > l->level)
		return;
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "%s: ", l->who ? l->who : "upload");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	ember__logger to = {l->fn, l->ud, l->level}; /* the callback, or stderr */
	ember__logf(&to, level, "%s", msg);
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* xorshift64*: jitter only needs to differ between processes. */
static uint64_t rng_next(ember__pipeline *p)
{
	uint64_t x = p->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	p->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n]. */
static uint64_t rng_upto(ember__pipeline *p, uint64_t n)
{
	return n == 0 ? 0 : rng_next(p) % (n + 1);
}

static void timed_wait(ember__pipeline *p, int64_t deadline)
{
	struct timespec ts = {deadline / 1000000000, deadline % 1000000000};
	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

ember__upload_item *ember__upload_item_new(uint32_t kind, uint32_t seq, int64_t start_ns,
					   int64_t end_ns, const char *meta, uint8_t *body,
					   size_t len)
{
	ember__upload_item *it = calloc(1, sizeof(*it));
	char *m = strdup(meta ? meta : "");
	if (!it || !m) {
		free(it);
		free(m);
		free(body);
		ember__error_oom("upload item");
		return NULL;
	}
	it->kind = kind;
	it->seq = seq;
	it->start_ns = start_ns;
	it->end_ns = end_ns;
	it->meta = m;
	it->body = body;
	it->len = len;
	return it;
}

void ember__upload_item_free(ember__upload_item *it)
{
	if (!it)
		return;
	free(it->meta);
	free(it->body);
	free(it->spool_name);
	free(it);
}

/* ---- creation ---- */

int ember__pipeline_new(ember__pipeline **out, const ember__pipeline_opts *o)
{
	*out = NULL;
	if (!o->send)
		return ember__error(EMBER_ERR_INVALID, "upload pipeline needs a send function");
	if (o->queue_len < 1 || o->queue_len > 4096)
		return ember__error(EMBER_ERR_INVALID, "upload queue length %u is out of range 1..4096",
				    o->queue_len);
	ember__pipeline *p = calloc(1, sizeof(*p));
	if (!p)
		return ember__error_oom("upload pipeline");
	p->o = *o;
	if (!p->o.name)
		p->o.name = "upload";
	if (!p->o.backoff_base_ms)
		p->o.backoff_base_ms = DEFAULT_BACKOFF_BASE_MS;
	if (!p->o.backoff_max_ms)
		p->o.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
	if (!p->o.retry_after_max_ms)
		p->o.retry_after_max_ms = DEFAULT_RETRY_AFTER_MAX_MS;
	p->log.level = EMBER_LOG_WARN;
	p->log.who = p->o.name;
	p->pid = getpid();
	p->q = calloc(o->queue_len, sizeof(*p->q));
	if (!p->q) {
		free(p);
		return ember__error_oom("upload queue");
	}
	if (o->spool_dir && *o->spool_dir) {
		int rc = ember__spool_open(&p->spool, o->spool_dir, o->spool_max_bytes);
		if (rc == EMBER_ERR_BUSY) {
			snprintf(p->spool_note, sizeof(p->spool_note), "%s", ember_last_error());
		} else if (rc < 0) {
			free(p->q);
			free(p);
			return rc;
		}
		p->spool_dir = strdup(o->spool_dir);
	}
	p->o.spool_dir = p->spool_dir;
	if (getrandom(&p->rng, sizeof(p->rng), GRND_NONBLOCK) != sizeof(p->rng))
		p->rng = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 32);
	p->rng |= 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	*out = p;
	return 0;
}

/* ---- handing items to the spool ---- */

/*
 * After each use of the spool: picks up (and logs) descriptors the program
 * took from it, and gives up a spool that another process locked after
 * the program closed our lock descriptor. Under mu.
 */
static void spool_after(ember__pipeline *p, int rc)
{
	if (!p->spool)
		return;
	uint64_t n = ember__spool_reopens(p->spool);
	if (n != atomic_load(&p->fd_reopens)) {
		atomic_store(&p->fd_reopens, n);
		ember__upload_logf(&p->log, EMBER_LOG_INFO, "the program closed or reused the "
				   "descriptors of spool '%s'; reopened by path",
				   ember__spool_dir(p->spool));
	}
	if (rc == EMBER_ERR_BUSY) {
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "%s; running without a spool",
				   ember_last_error());
		ember__spool_close(p->spool);
		p->spool = NULL;
	}
}

/* Writes `it` to the spool (or counts it dropped). Frees it. Under mu. */
static void spool_or_drop(ember__pipeline *p, ember__upload_item *it, const char *why)
{
	if (it->spool_name) {
		/* Already on disk: nothing to do. */
		ember__upload_item_free(it);
		return;
	}
	if (!p->spool) {
		atomic_fetch_add(&p->dropped, 1);
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "window %" PRIu32 " dropped: %s and no "
				   "spool directory", it->seq, why);
		ember__upload_item_free(it);
		return;
	}
	unsigned evicted = 0;
	const char *keep = p->cur ? p->cur->spool_name : NULL;
	int rc = ember__spool_put(p->spool, it, keep, &evicted);
	const char *err = rc ? ember_last_error() : "";
	if (evicted) {
		atomic_fetch_add(&p->dropped, evicted);
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "spool '%s' is full: dropped its %u oldest "
				   "window%s", ember__spool_dir(p->spool), evicted,
				   evicted == 1 ? "" : "s");
	}
	if (rc == 0) {
		atomic_fetch_add(&p->spooled, 1);
		ember__upload_logf(&p->log, EMBER_LOG_DEBUG, "window %" PRIu32 " spooled (%s)", it->seq,
				   why);
	} else {
		atomic_fetch_add(&p->dropped, 1);
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "window %" PRIu32 " dropped: %s", it->seq,
				   err);
	}
	spool_after(p, rc);
	ember__upload_item_free(it);
}

static ember__upload_item *queue_pop(ember__pipeline *p)
{
	if (p->qn == 0)
		return NULL;
	ember__upload_item *it = p->q[p->qhead];
	p->q[p->qhead] = NULL;
	p->qhead = (p->qhead + 1) % p->o.queue_len;
	p->qn--;
	return it;
}

int ember__pipeline_enqueue(ember__pipeline *p, ember__upload_item *it)
{
	pthread_mutex_lock(&p->mu);
	if (p->qn == p->o.queue_len)
		spool_or_drop(p, queue_pop(p), "the upload queue is full");
	it->not_before = mono_ns() + (int64_t)rng_upto(p, p->o.jitter_ms) * 1000000;
	p->q[(p->qhead + p->qn) % p->o.queue_len] = it;
	p->qn++;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* ---- the uploader ---- */

/* cur is delivered or dropped for good: its spool file goes, it is freed. Under mu. */
static void done_with_cur(ember__pipeline *p)
{
	if (p->cur->spool_name && p->spool) {
		ember__spool_remove(p->spool, p->cur->spool_name);
		spool_after(p, 0);
	}
	ember__upload_item_free(p->cur);
	p->cur = NULL;
	p->attempts = 0;
	p->retry_at = 0;
}

static int64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Drops cur if the server would refuse it for its age (opts.max_age_ms):
 * its start, in whole seconds as /ingest sends it, is that old. The window
 * keeps its true time; it is not re-dated. Under mu. Returns 1 if dropped.
 */
static int drop_if_expired(ember__pipeline *p)
{
	ember__upload_item *it = p->cur;
	if (!p->o.max_age_ms || !it || it->start_ns <= 0)
		return 0;
	int64_t start = it->start_ns / 1000000000 * 1000000000;
	int64_t age_ms = (real_ns() - start) / 1000000;
	if (age_ms < (int64_t)p->o.max_age_ms)
		return 0;
	atomic_fetch_add(&p->expired, 1);
	ember__upload_logf(&p->log, EMBER_LOG_WARN, "window %" PRIu32 " dropped unsent: it started "
			   "%" PRId64 " s ago%s, older than the %" PRIu64 " s the server accepts (%s)",
			   it->seq, age_ms / 1000, it->spool_name ? " (from the spool)" : "",
			   p->o.max_age_ms / 1000, p->o.max_age_what ? p->o.max_age_what : "max age");
	done_with_cur(p);
	return 1;
}

/* Picks the next item into cur: the oldest spool file, else the queue head. */
static int pick_next(ember__pipeline *p)
{
	while (p->spool && ember__spool_count(p->spool) > 0) {
		ember__upload_item *it;
		int rc = ember__spool_load_oldest(p->spool, &it);
		if (rc != EMBER_ERR_FORMAT)
			spool_after(p, rc);
		if (!p->spool)
			break;
		if (rc == 0) {
			p->cur = it;
			return 1;
		}
		if (rc == EMBER_ERR_FORMAT) {
			atomic_fetch_add(&p->dropped, 1);
			ember__upload_logf(&p->log, EMBER_LOG_WARN, "%s", ember_last_error());
			continue;
		}
		/* Unreadable for now (out of memory, I/O): wait, then retry. */
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "%s", ember_last_error());
		timed_wait(p, mono_ns() + (int64_t)SPOOL_ERROR_PAUSE_MS * 1000000);
		return 0;
	}
	p->cur = queue_pop(p);
	return p->cur != NULL;
}

/* Delay before attempt number `attempts`+1: full jitter over an exponential cap. */
static int64_t backoff_ms(ember__pipeline *p, const ember__send_result *r)
{
	if (r->retry_after_ms >= 0)
		return r->retry_after_ms < (int64_t)p->o.retry_after_max_ms ? r->retry_after_ms
									      : (int64_t)p->o.retry_after_max_ms;
	unsigned shift = p->attempts > 1 ? p->attempts - 1 : 0;
	uint64_t cap = (uint64_t)p->o.backoff_base_ms << (shift > 20 ? 20 : shift);
	if (cap > p->o.backoff_max_ms)
		cap = p->o.backoff_max_ms;
	return (int64_t)rng_upto(p, cap);
}

/* Accounts for one attempt of cur. Under mu. */
static void finish_attempt(ember__pipeline *p, const ember__send_result *r)
{
	ember__upload_item *it = p->cur;
	if (r->outcome == EMBER__SEND_RETRY) {
		p->attempts++;
		atomic_fetch_add(&p->retried, 1);
		int64_t delay = backoff_ms(p, r);
		p->retry_at = mono_ns() + delay * 1000000;
		ember__upload_logf(&p->log, p->attempts == 1 ? EMBER_LOG_WARN : EMBER_LOG_DEBUG,
				   "upload of window %" PRIu32 " failed (%s); retrying in %" PRId64
				   " ms", it->seq, r->message, delay);
		if (r->server_down && p->spool && !it->spool_name) {
			/* The server is down, not slow: the window goes to disk now
			 * (an exit will not wait for the server) and is retried from
			 * there, still first in line. */
			p->cur = NULL;
			spool_or_drop(p, it, "the server refused the connection");
		}
		return;
	}
	if (r->outcome == EMBER__SEND_OK) {
		atomic_fetch_add(&p->ok, 1);
		atomic_fetch_add(&p->bytes, it->len);
		ember__upload_logf(&p->log, p->attempts ? EMBER_LOG_INFO : EMBER_LOG_DEBUG,
				   "window %" PRIu32 " delivered%s", it->seq,
				   p->attempts ? " after retrying" : "");
	} else if (r->too_old) {
		atomic_fetch_add(&p->expired, 1);
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "server refused window %" PRIu32 " as "
				   "too old, dropped: %s", it->seq, r->message);
	} else {
		atomic_fetch_add(&p->failed, 1);
		ember__upload_logf(&p->log, EMBER_LOG_ERROR, "server refused window %" PRIu32
				   ", dropped: %s", it->seq, r->message);
	}
	done_with_cur(p);
}

static void *uploader_main(void *arg)
{
	ember__pipeline *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		if (!p->cur && !pick_next(p)) {
			pthread_cond_broadcast(&p->cv); /* flush waiters: nothing left */
			if (!p->stopping && !p->qn && !(p->spool && ember__spool_count(p->spool)))
				pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		if (drop_if_expired(p)) { /* checked before every attempt */
			pthread_cond_broadcast(&p->cv);
			continue;
		}
		int64_t wake = p->retry_at;
		if (!p->flushing && p->cur->not_before > wake)
			wake = p->cur->not_before;
		if (mono_ns() < wake) {
			timed_wait(p, wake);
			continue;
		}
		ember__send_result r;
		memset(&r, 0, sizeof(r));
		r.retry_after_ms = -1;
		ember__upload_item *it = p->cur;
		pthread_mutex_unlock(&p->mu);
		p->o.send(p->o.send_ctx, it, &p->cancel, &r);
		pthread_mutex_lock(&p->mu);
		if (p->stopping && r.outcome == EMBER__SEND_RETRY)
			break; /* cancelled: cur stays for the spool */
		p->down = r.outcome == EMBER__SEND_RETRY && r.server_down;
		finish_attempt(p, &r);
		pthread_cond_broadcast(&p->cv);
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int ember__pipeline_start(ember__pipeline *p, const ember__upload_log *log)
{
	pthread_mutex_lock(&p->mu);
	if (p->started) {
		pthread_mutex_unlock(&p->mu);
		return 0;
	}
	if (log) {
		p->log = *log;
		if (!p->log.who)
			p->log.who = p->o.name;
	}
	if (p->spool_note[0])
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "%s; running without a spool",
				   p->spool_note);
	if (p->spool && ember__spool_count(p->spool))
		ember__upload_logf(&p->log, EMBER_LOG_INFO, "%zu window%s from earlier runs in spool "
				   "'%s' will be sent first", ember__spool_count(p->spool),
				   ember__spool_count(p->spool) == 1 ? "" : "s",
				   ember__spool_dir(p->spool));
	/* The thread blocks every signal, so sampling signals land on the
	 * application's threads; it is created past the pthread_create hook
	 * so that it is not profiled itself (engine/thread_start.h). */
	/* The copy of the environment the thread reads (envsnap.h). */
	ember__env_snapshot_take();
	int rc = ember__thread_start(&p->thread, 1u << 20, uploader_main, p, "emberprof-up");
	if (rc == 0)
		p->started = 1;
	pthread_mutex_unlock(&p->mu);
	if (rc != 0)
		return ember__error_errno(EMBER_ERR_SYS, rc, "cannot start the %s upload thread",
					  p->o.name);
	return 0;
}

int ember__pipeline_started(const ember__pipeline *p)
{
	return p->started;
}

static size_t pending(const ember__pipeline *p)
{
	return p->qn + (p->cur && !p->cur->spool_name ? 1 : 0) +
	       (p->spool ? ember__spool_count(p->spool) : 0);
}

size_t ember__pipeline_flush(ember__pipeline *p, unsigned timeout_ms)
{
	pthread_mutex_lock(&p->mu);
	int64_t deadline = mono_ns() + (int64_t)timeout_ms * 1000000;
	p->flushing++;
	pthread_cond_broadcast(&p->cv); /* skip jitter delays from now on */
	while (p->started && !p->stopping && !p->down && pending(p) > 0 && mono_ns() < deadline)
		timed_wait(p, deadline);
	p->flushing--;
	size_t left = pending(p);
	pthread_mutex_unlock(&p->mu);
	return left;
}

int ember__pipeline_server_down(ember__pipeline *p)
{
	pthread_mutex_lock(&p->mu);
	int d = p->down;
	pthread_mutex_unlock(&p->mu);
	return d;
}

void ember__pipeline_stats(const ember__pipeline *p, ember_stats *acc)
{
	acc->uploads_ok += atomic_load(&p->ok);
	acc->uploads_retried += atomic_load(&p->retried);
	acc->uploads_failed += atomic_load(&p->failed);
	acc->uploads_spooled += atomic_load(&p->spooled);
	acc->uploads_dropped += atomic_load(&p->dropped);
	acc->bytes_sent += atomic_load(&p->bytes);
	acc->fds_reopened += atomic_load(&p->fd_reopens);
	acc->uploads_expired += atomic_load(&p->expired);
}

void ember__pipeline_free(ember__pipeline *p)
{
	if (!p)
		return;
	if (p->pid != getpid()) {
		/* A fork child: the thread, and maybe the mutex's owner, exist
		 * only in the parent, which also owns the spool. Leave it all. */
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	atomic_store(&p->cancel, 1);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->started)
		pthread_join(p->thread, NULL);

	/* Alone now. What is left goes to the spool, oldest first. */
	uint64_t spooled0 = atomic_load(&p->spooled), dropped0 = atomic_load(&p->dropped);
	ember__upload_item *cur = p->cur;
	p->cur = NULL;
	if (cur)
		spool_or_drop(p, cur, "undelivered at shutdown");
	ember__upload_item *it;
	while ((it = queue_pop(p)))
		spool_or_drop(p, it, "undelivered at shutdown");
	uint64_t ns = atomic_load(&p->spooled) - spooled0, nd = atomic_load(&p->dropped) - dropped0;
	if (ns || nd)
		ember__upload_logf(&p->log, nd ? EMBER_LOG_WARN : EMBER_LOG_INFO,
				   "at shutdown: %" PRIu64 " undelivered window%s spooled, %" PRIu64
				   " dropped", ns, ns == 1 ? "" : "s", nd);
	ember__spool_close(p->spool);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->q);
	free(p->spool_dir);
	free(p);
}

int ember__pipeline_submit(ember__pipeline *p, ember__upload_item *it, int final,
			   unsigned flush_timeout_ms, const ember__upload_log *log)
{
	if (it) /* NULL: nothing to add, only the final flush */
		ember__pipeline_enqueue(p, it);
	if (final) {
		size_t left = ember__pipeline_flush(p, flush_timeout_ms);
		const char *what = p->spool ? (left == 1 ? "goes to the spool directory"
							 : "go to the spool directory")
					    : (left == 1 ? "is dropped (no spool directory is set)"
							 : "are dropped (no spool directory is set)");
		if (left && ember__pipeline_server_down(p))
			ember__upload_logf(log, EMBER_LOG_WARN, "the server refused the connection: "
					   "not waiting for it; %zu undelivered window%s %s", left,
					   left == 1 ? "" : "s", what);
		else if (left)
			ember__upload_logf(log, EMBER_LOG_WARN, "%zu window%s not delivered within "
					   "the %u ms flush wait: %s", left, left == 1 ? "" : "s",
					   flush_timeout_ms, what);
	}
	return 0;
}

int ember__options_copy(void *out, size_t ours, const void *in, size_t min, const char *fn,
			const char *init)
{
	memset(out, 0, ours);
	if (!in)
		return ember__error(EMBER_ERR_INVALID, "%s: options are NULL", fn);
	size_t sz;
	memcpy(&sz, in, sizeof(sz));
	if (sz < min)
		return ember__error(EMBER_ERR_INVALID, "%s: options.sz is %zu; initialize the options "
				    "with %s", fn, sz, init);
	const unsigned char *extra = (const unsigned char *)in + ours;
	for (size_t i = 0; sz > ours && i < sz - ours; i++)
		if (extra[i])
			return ember__error(EMBER_ERR_INVALID, "%s: the options set fields this library "
					    "version does not know (sz %zu > %zu)", fn, sz, ours);
	memcpy(out, in, sz < ours ? sz : ours);
	memcpy(out, &ours, sizeof(ours));
	return 0;
}
