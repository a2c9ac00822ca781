/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.h - the upload pipeline shared by every network reporter
 * (Pyroscope today, S3 later): a bounded in-memory queue of encoded
 * windows, drained in order by the reporter's own uploader thread, with
 * retries, an optional spool directory, and a bounded flush at the end.
 *
 * Threads. The reporter's report() callback runs on the agent thread and
 * calls ember__pipeline_enqueue(), which never waits for the network: it
 * takes a mutex that the uploader thread only ever holds for short,
 * local work (queue manipulation and spool file I/O), never across a
 * send. The send function supplied by the reporter runs on the uploader
 * thread only, one call at a time.
 *
 * Order. A window is not sent before the previous one is delivered,
 * spooled or definitively failed. Spooled windows are always older than
 * queued ones (only the oldest queued window ever moves to the spool), so
 * the uploader takes the oldest spool file first, then the queue head.
 *
 * Failures. The send function classifies each attempt: ok; retryable
 * (connection error, timeout, 5xx, 429 - retried with exponential backoff
 * and full jitter, or after the server's Retry-After); permanent (other
 * 4xx - logged with the server's message, counted, dropped). A retryable
 * window is retried until delivered; it survives shutdown in the spool.
 *
 * Nothing here is async-signal-safe.
 */
#ifndef EMBER_UPLOAD_PIPELINE_H
#define EMBER_UPLOAD_PIPELINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "emberprof.h"

/* ---- logging, shared by the upload code ---- */

typedef struct ember__upload_log {
	ember_log_fn fn;   /* NULL: "emberprof: <level>: <msg>" on stderr */
	void *ud;
	int level;         /* messages above this level are skipped */
	const char *who;   /* prefix, e.g. "pyroscope"; borrowed, static */
} ember__upload_log;

/* Logs one message through `l` (formatted into a stack buffer). */
void ember__upload_logf(const ember__upload_log *l, ember_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- items ---- */

/*
 * One encoded window. `kind` and `meta` are the reporter's (e.g. which
 * protocol the body is for, a query string); the pipeline and the spool
 * only carry them. All pointers are malloc'd and owned by the item.
 */
typedef struct ember__upload_item {
	uint32_t kind;
	uint32_t seq;           /* the window's number, for logs */
	int64_t start_ns, end_ns;
	char *meta;             /* NUL-terminated, never NULL ("" if unused) */
	uint8_t *body;
	size_t len;
	/* pipeline-private */
	int64_t not_before;     /* CLOCK_MONOTONIC ns: the upload-jitter delay */
	char *spool_name;       /* set when the item was read from the spool */
} ember__upload_item;

/*
 * Makes an item, copying `meta` (NULL means "") and taking ownership of
 * `body` (malloc'd, may be NULL when len is 0) even on failure. Returns
 * NULL on out-of-memory (message set).
 */
ember__upload_item *ember__upload_item_new(uint32_t kind, uint32_t seq, int64_t start_ns,
					   int64_t end_ns, const char *meta, uint8_t *body,
					   size_t len);

/* Frees an item and everything it owns. NULL is fine. */
void ember__upload_item_free(ember__upload_item *it);

/* ---- the send function ---- */

enum {
	EMBER__SEND_OK = 0,        /* delivered */
	EMBER__SEND_RETRY = 1,     /* try again later */
	EMBER__SEND_PERMANENT = 2  /* the server refused it for good: drop */
};

typedef struct ember__send_result {
	int outcome;            /* EMBER__SEND_* */
	int64_t retry_after_ms; /* RETRY: the server's Retry-After, or -1 */
	int http_status;        /* 0 if no response */
	int server_down;        /* RETRY: the server's host refused the connection
				   (or could not be reached at all) - nothing to wait for */
	char message[384];      /* why (server message, curl error...), for logs */
	int too_old;            /* PERMANENT because the server's age limit refused it:
				   counted in uploads_expired, not uploads_failed */
} ember__send_result;

/*
 * Sends one item. Runs on the uploader thread. Must return promptly (as
 * a retryable failure) once *cancel becomes nonzero. Fills *res.
 */
typedef void (*ember__send_fn)(void *ctx, const ember__upload_item *it, const _Atomic int *cancel,
			       ember__send_result *res);

/* ---- the pipeline ---- */

typedef struct ember__pipeline ember__pipeline;

typedef struct ember__pipeline_opts {
	const char *name;            /* for logs and the thread; static string */
	unsigned queue_len;          /* 1..4096 */
	const char *spool_dir;       /* NULL: no spool */
	uint64_t spool_max_bytes;    /* > 0 when spool_dir is set */
	unsigned jitter_ms;          /* random 0..jitter_ms delay per enqueued item */
	unsigned backoff_base_ms;    /* first retry delay cap; 0 = 500 */
	unsigned backoff_max_ms;     /* retry delay cap; 0 = 30000 */
	unsigned retry_after_max_ms; /* longest Retry-After honoured; 0 = 600000 */
	/* The server refuses windows that started more than max_age_ms before
	 * it receives them (0: no limit). Such a window, from the queue, a
	 * retry or the spool, is dropped before it is sent, never re-dated,
	 * counted in uploads_expired and logged with max_age_what (a static
	 * string naming the setting), so it cannot hold up those behind it. */
	uint64_t max_age_ms;
	const char *max_age_what;
	ember__send_fn send;
	void *send_ctx;              /* borrowed; must outlive the pipeline */
} ember__pipeline_opts;

/*
 * Creates a pipeline (not yet running): copies the options, opens the
 * spool directory if one is given (creating it 0700, locking it, indexing
 * the windows left there by earlier runs). A spool directory locked by
 * another process is not an error: the pipeline then runs without a spool
 * and logs a warning when it starts. Returns 0 or a negative ember_err
 * with a message; *out is the caller's, freed with ember__pipeline_free().
 */
int ember__pipeline_new(ember__pipeline **out, const ember__pipeline_opts *o);

/*
 * Starts the uploader thread with these log settings (copied). Spooled
 * windows from earlier runs are sent first. Idempotent: later calls do
 * nothing. Returns 0 or EMBER_ERR_SYS.
 */
int ember__pipeline_start(ember__pipeline *p, const ember__upload_log *log);

/* Whether ember__pipeline_start() has run. */
int ember__pipeline_started(const ember__pipeline *p);

/*
 * Queues an item, taking ownership of it. Never waits for the network. A
 * full queue makes room by moving its oldest item to the spool, or, with
 * no spool, by dropping it (counted, logged). Returns 0.
 */
int ember__pipeline_enqueue(ember__pipeline *p, ember__upload_item *it);

/*
 * What a reporter's report() does with its encoded window: queues it and,
 * for the final window, waits up to flush_timeout_ms for delivery,
 * logging through `log` what is left. `it` may be NULL (nothing to queue,
 * only the final wait). Returns 0.
 */
int ember__pipeline_submit(ember__pipeline *p, ember__upload_item *it, int final,
			   unsigned flush_timeout_ms, const ember__upload_log *log);

/*
 * Checks and copies a versioned options struct (first member `size_t sz`)
 * of the caller's size in->sz into *out of our size `ours`: too small
 * (not initialized with the *_INIT macro) or setting fields this library
 * does not know fails with EMBER_ERR_INVALID naming `fn` and `init`.
 * `min` is the smallest size holding the required fields.
 */
int ember__options_copy(void *out, size_t ours, const void *in, size_t min, const char *fn,
			const char *init);

/*
 * Waits up to timeout_ms for every queued and spooled item to be
 * delivered or to fail for good; jitter delays are skipped meanwhile.
 * Does not wait while the server is known to be down (its last attempt
 * was refused: ember__send_result.server_down): what is left goes to the
 * spool at shutdown. Returns the number of items still undelivered (0:
 * all done).
 */
size_t ember__pipeline_flush(ember__pipeline *p, unsigned timeout_ms);

/* Whether the last attempt found the server down (refused); for tests. */
int ember__pipeline_server_down(ember__pipeline *p);

/* Adds the counters to the uploads_* and bytes_sent fields of *acc. */
void ember__pipeline_stats(const ember__pipeline *p, ember_stats *acc);

/*
 * Stops the uploader (cancelling a request in flight), writes every
 * undelivered item to the spool - or drops and counts them without one -
 * and frees the pipeline. In a fork child (a process other than the one
 * that created it) it only releases what it safely can, leaving the spool
 * to the parent. NULL is fine.
 */
void ember__pipeline_free(ember__pipeline *p);

#endif
