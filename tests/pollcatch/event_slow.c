/* SPDX-License-Identifier: Apache-2.0 */
/*
 * event_slow.c - the libevent twin of uv_slow.c, for
 * test_longpolls_loop.sh. Usage: event_slow DIR timer|io SLOW_MS
 * Events are made with ember_event_new() (emberprof_event.h), so each
 * callback is one poll. A 2 ms persistent timer ticks 60 times; in
 * "timer" mode the 30th tick calls slow_timer_callback(), in "io" mode it
 * writes into a pipe whose read event calls slow_io_callback(). Prints
 * "slow_ms=<measured duration of the slow callback>".
 */
#include <unistd.h>

#include <event2/event.h>

#include "emberprof_event.h"
#include "slow_common.h"

static int ticks, io_mode;
static double slow_ms, measured_ms;
static int pipefd[2];
static struct event *timer_ev, *read_ev;

__attribute__((noinline)) static void slow_timer_callback(void)
{
	measured_ms = slow_burn(slow_ms);
}

__attribute__((noinline)) static void slow_io_callback(void)
{
	measured_ms = slow_burn(slow_ms);
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	char c;
	(void)what;
	(void)arg;
	if (read(fd, &c, 1) == 1)
		slow_io_callback();
	event_del(read_ev);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	slow_burn(0.1);
	if (++ticks == 30) {
		if (io_mode) {
			if (write(pipefd[1], "x", 1) != 1)
				abort();
		} else {
			slow_timer_callback();
		}
	}
	if (ticks >= 60)
		event_del(timer_ev);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: event_slow DIR timer|io SLOW_MS\n");
		return 2;
	}
	io_mode = argv[2][0] == 'i';
	slow_ms = atof(argv[3]);
	ember_running *r = slow_start_agent(argv[1]);
	struct event_base *base = event_base_new();
	if (!base || pipe(pipefd))
		return 1;
	timer_ev = ember_event_new(base, -1, EV_PERSIST, on_tick, NULL);
	read_ev = ember_event_new(base, pipefd[0], EV_READ | EV_PERSIST, on_readable, NULL);
	struct timeval tv = {0, 2000};
	if (!timer_ev || !read_ev || event_add(timer_ev, &tv) || (io_mode && event_add(read_ev, NULL)))
		return 1;
	event_base_dispatch(base);
	ember_event_free(timer_ev);
	ember_event_free(read_ev);
	event_base_free(base);
	slow_stop_agent(r);
	printf("slow_ms=%.3f\n", measured_ms);
	return 0;
}
