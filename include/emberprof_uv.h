/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emberprof_uv.h - one-call long-poll wiring for a libuv loop (header
 * only: include it after <uv.h>; it needs no libuv at emberprof's build).
 *
 *     ember_uv_watch w;
 *     ember_uv_watch_start(&w, loop);   // before uv_run
 *     uv_run(loop, UV_RUN_DEFAULT);
 *     ember_uv_watch_stop(&w);          // then let the loop close the handles
 *
 * What is measured. A libuv iteration runs: timers, pending callbacks,
 * idle, prepare handles, then the I/O phase (wait in epoll, then the I/O
 * callbacks), then check handles and close callbacks. A prepare and a
 * check handle of ours mark two polls per iteration with
 * ember_poll_begin/ember_poll_end:
 *   - "work": from our check handle to our prepare handle of the next
 *     iteration: check handles after ours, close callbacks, timers,
 *     pending and idle callbacks, prepare handles before ours, and the
 *     application's own code between two uv_run calls;
 *   - "I/O": from our prepare to our check handle: the wait and the I/O
 *     callbacks. The loop is configured with UV_METRICS_IDLE_TIME (libuv
 *     >= 1.39) and the time it spent waiting is passed to
 *     ember_poll_end_idle(), so the poll reports only the callbacks' time
 *     (as if they ran after the wait, which is how one epoll round goes).
 *     Without the metric (older libuv) the I/O phase is not marked, since
 *     its duration would be mostly waiting.
 * A callback that blocks the loop therefore lies in one of the two, and
 * the poll's duration is that of the callbacks run in it. Our handles are
 * unreferenced, so they never keep uv_run from returning. Loop thread only.
 */
#ifndef EMBERPROF_UV_H
#define EMBERPROF_UV_H

#include <string.h>
#include <uv.h>

#include "emberprof.h"

#if defined(UV_VERSION_HEX) && UV_VERSION_HEX >= 0x012700
#define EMBER_UV_IDLE_METRIC 1
#else
#define EMBER_UV_IDLE_METRIC 0
#endif

typedef struct ember_uv_watch {
	uv_prepare_t prepare;
	uv_check_t check;
	uv_loop_t *loop;
	int open;              /* 0: none, 1: work poll open, 2: I/O poll open */
	int idle_metric;       /* the loop measures its idle time */
	uint64_t idle_before;  /* uv_metrics_idle_time at our prepare */
} ember_uv_watch;

static inline void ember__uv_close_poll(ember_uv_watch *w)
{
#if EMBER_UV_IDLE_METRIC
	if (w->open == 2) {
		uint64_t idle = uv_metrics_idle_time(w->loop) - w->idle_before;
		ember_poll_end_idle(idle);
	}
#endif
	if (w->open == 1)
		ember_poll_end();
	w->open = 0;
}

static inline void ember__uv_on_prepare(uv_prepare_t *h)
{
	ember_uv_watch *w = (ember_uv_watch *)h->data;
	ember__uv_close_poll(w); /* the work phase ends */
#if EMBER_UV_IDLE_METRIC
	if (w->idle_metric) {
		w->idle_before = uv_metrics_idle_time(w->loop);
		ember_poll_begin();
		w->open = 2;
	}
#endif
}

static inline void ember__uv_on_check(uv_check_t *h)
{
	ember_uv_watch *w = (ember_uv_watch *)h->data;
	ember__uv_close_poll(w); /* the I/O phase ends */
	ember_poll_begin();
	w->open = 1;
}

/* Starts marking `loop`'s polls. Returns 0 or a libuv error (< 0). */
static inline int ember_uv_watch_start(ember_uv_watch *w, uv_loop_t *loop)
{
	memset(w, 0, sizeof(*w));
	w->loop = loop;
#if EMBER_UV_IDLE_METRIC
	/* Fails only on a loop that already runs without it: then the I/O
	 * phase goes unmarked. */
	w->idle_metric = uv_loop_configure(loop, UV_METRICS_IDLE_TIME) == 0;
#endif
	int rc = uv_prepare_init(loop, &w->prepare);
	if (rc == 0)
		rc = uv_check_init(loop, &w->check);
	if (rc)
		return rc;
	w->prepare.data = w;
	w->check.data = w;
	if ((rc = uv_prepare_start(&w->prepare, ember__uv_on_prepare)) ||
	    (rc = uv_check_start(&w->check, ember__uv_on_check)))
		return rc;
	uv_unref((uv_handle_t *)&w->prepare);
	uv_unref((uv_handle_t *)&w->check);
	return 0;
}

/* Ends the open poll and closes the handles (the loop frees them on its
 * next run; `w` must live until then). */
static inline void ember_uv_watch_stop(ember_uv_watch *w)
{
	ember__uv_close_poll(w);
	uv_prepare_stop(&w->prepare);
	uv_check_stop(&w->check);
	uv_close((uv_handle_t *)&w->prepare, NULL);
	uv_close((uv_handle_t *)&w->check, NULL);
}

#endif
