/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emberprof_event.h - long-poll wiring for libevent (header only: include
 * it after <event2/event.h>; emberprof is built without libevent).
 *
 * libevent 2.1 (Debian 12) has no hook around its dispatch, so the unit
 * measured is the callback: create events with ember_event_new() instead
 * of event_new() and each run of the callback is one poll
 * (ember_poll_begin/ember_poll_end around it). Free them with
 * ember_event_free(). A callback that blocks the loop is then a long poll
 * whose stacks show it; the loop's own work between callbacks is not
 * measured.
 *
 *     struct event *ev = ember_event_new(base, fd, EV_READ | EV_PERSIST, on_read, ctx);
 *     event_add(ev, NULL);
 *     ...
 *     ember_event_free(ev);
 *
 * libevent >= 2.2 also offers ember_event_watch_start(base): prepare and
 * check watchers (evwatch) mark the time from the end of each dispatch
 * (the check watchers run right after the backend's wait) to the next
 * prepare, which is where every active callback of that iteration runs.
 * That part is compiled only against libevent 2.2 and is NOT tested here
 * (the test machines have 2.1).
 */
#ifndef EMBERPROF_EVENT_H
#define EMBERPROF_EVENT_H

#include <event2/event.h>
#include <stdlib.h>

#include "emberprof.h"

typedef struct ember__event_cb {
	event_callback_fn fn;
	void *arg;
} ember__event_cb;

static inline void ember__event_trampoline(evutil_socket_t fd, short what, void *p)
{
	ember__event_cb *c = (ember__event_cb *)p;
	ember_poll_begin();
	c->fn(fd, what, c->arg);
	ember_poll_end();
}

/*
 * event_new() with the callback run as one poll. The wrapper is freed by
 * ember_event_free(). NULL if libevent or the allocation fails. The
 * callback must not free its own event with plain event_free().
 */
static inline struct event *ember_event_new(struct event_base *base, evutil_socket_t fd,
					    short what, event_callback_fn fn, void *arg)
{
	ember__event_cb *c = (ember__event_cb *)malloc(sizeof(*c));
	if (!c)
		return NULL;
	c->fn = fn;
	c->arg = arg;
	struct event *ev = event_new(base, fd, what, ember__event_trampoline, c);
	if (!ev)
		free(c);
	return ev;
}

/* Frees an event made by ember_event_new() (event_free() for others). */
static inline void ember_event_free(struct event *ev)
{
	if (!ev)
		return;
	void *c = event_get_callback(ev) == ember__event_trampoline ? event_get_callback_arg(ev) : NULL;
	event_free(ev);
	free(c);
}

#if defined(LIBEVENT_VERSION_NUMBER) && LIBEVENT_VERSION_NUMBER >= 0x02020000
#include <event2/watch.h>

typedef struct ember_event_watch {
	struct evwatch *prepare, *check;
	int open;
} ember_event_watch;

static inline void ember__event_on_prepare(struct evwatch *w, const struct evwatch_prepare_cb_info *i,
				    void *arg)
{
	ember_event_watch *x = (ember_event_watch *)arg;
	(void)w;
	(void)i;
	if (x->open)
		ember_poll_end();
	x->open = 0;
}

static inline void ember__event_on_check(struct evwatch *w, const struct evwatch_check_cb_info *i,
				  void *arg)
{
	ember_event_watch *x = (ember_event_watch *)arg;
	(void)w;
	(void)i;
	if (!x->open)
		ember_poll_begin();
	x->open = 1;
}

/* Marks each iteration's callbacks as one poll. 0, or -1 if libevent fails. */
static inline int ember_event_watch_start(ember_event_watch *x, struct event_base *base)
{
	x->open = 0;
	x->prepare = evwatch_prepare_new(base, ember__event_on_prepare, x);
	x->check = evwatch_check_new(base, ember__event_on_check, x);
	return x->prepare && x->check ? 0 : -1;
}

static inline void ember_event_watch_stop(ember_event_watch *x)
{
	if (x->open)
		ember_poll_end();
	x->open = 0;
	if (x->prepare)
		evwatch_free(x->prepare);
	if (x->check)
		evwatch_free(x->check);
}
#endif

#endif
