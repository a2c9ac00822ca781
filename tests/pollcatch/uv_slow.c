/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uv_slow.c - a libuv program with one deliberately slow callback, for
 * test_longpolls_loop.sh. Usage: uv_slow DIR timer|io|sleep SLOW_MS
 *
 * A 2 ms repeating timer does a little work for 60 ticks. In "timer" mode
 * its 30th tick calls slow_timer_callback(); in "io" mode the 30th tick
 * writes a byte into a pipe whose read callback (uv_poll) calls
 * slow_io_callback(). Either burns CPU for SLOW_MS. In "sleep" mode the
 * 30th tick calls slow_sleep_callback(), which blocks (nanosleep) for
 * SLOW_MS: found only with wall-clock sampling (EMBERPROF_WALL). The loop is watched
 * with ember_uv_watch_start() and profiled by an agent writing into DIR.
 * Prints "slow_ms=<measured duration of the slow callback>".
 */
#include <unistd.h>
#include <uv.h>

#include "emberprof_uv.h"
#include "slow_common.h"

static int ticks;
static int io_mode, sleep_mode;
static double slow_ms, measured_ms;
static int pipefd[2];
static uv_timer_t timer;
static uv_poll_t poller;

__attribute__((noinline)) static void slow_timer_callback(void)
{
	measured_ms = slow_burn(slow_ms);
}

__attribute__((noinline)) static void slow_io_callback(void)
{
	measured_ms = slow_burn(slow_ms);
}

__attribute__((noinline)) static void slow_sleep_callback(void)
{
	measured_ms = slow_sleep(slow_ms);
}

static void on_readable(uv_poll_t *h, int status, int events)
{
	char c;
	if (status == 0 && read(pipefd[0], &c, 1) == 1)
		slow_io_callback();
	uv_poll_stop(h);
	uv_close((uv_handle_t *)h, NULL);
}

static void on_tick(uv_timer_t *t)
{
	slow_burn(0.1); /* a fast callback */
	if (++ticks == 30) {
		if (io_mode) {
			if (write(pipefd[1], "x", 1) != 1)
				abort();
		} else if (sleep_mode) {
			slow_sleep_callback();
		} else {
			slow_timer_callback();
		}
	}
	if (ticks >= 60) {
		uv_timer_stop(t);
		uv_close((uv_handle_t *)t, NULL);
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: uv_slow DIR timer|io|sleep SLOW_MS\n");
		return 2;
	}
	io_mode = argv[2][0] == 'i';
	sleep_mode = argv[2][0] == 's';
	slow_ms = atof(argv[3]);
	ember_running *r = slow_start_agent(argv[1]);
	uv_loop_t *loop = uv_default_loop();
	ember_uv_watch w;
	if (ember_uv_watch_start(&w, loop)) {
		fprintf(stderr, "ember_uv_watch_start failed\n");
		return 1;
	}
	if (pipe(pipefd) || uv_poll_init(loop, &poller, pipefd[0]) ||
	    uv_poll_start(&poller, UV_READABLE, on_readable))
		return 1;
	if (!io_mode) {
		uv_poll_stop(&poller);
		uv_close((uv_handle_t *)&poller, NULL);
	}
	uv_timer_init(loop, &timer);
	uv_timer_start(&timer, on_tick, 2, 2);
	uv_run(loop, UV_RUN_DEFAULT);
	ember_uv_watch_stop(&w);
	uv_run(loop, UV_RUN_DEFAULT); /* frees the watch's handles */
	uv_loop_close(loop);
	slow_stop_agent(r);
	printf("slow_ms=%.3f\n", measured_ms);
	return 0;
}
