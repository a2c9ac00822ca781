/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threads_engine.c - which CPU engine a start uses: perf events, per-thread
 * CPU timers or the process timer (threads_internal.h).
 */
#include "engine/threads_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "engine/engine_perf.h"
#include "engine/engine_wall.h"
#include "engine/wall_remote.h"
#include "engine/sigsetup.h"
#include "emberprof.h"
#include "sample/sigvirt.h"
#include "symbols/procmaps.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/ownfd.h"

/* The kernel's tick rate (CONFIG_HZ): the coarse clocks advance once per
 * tick, so their resolution is one tick. 0 if it does not look like one. */
static long kernel_hz(void)
{
	struct timespec res;
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0 || res.tv_sec != 0 ||
	    res.tv_nsec < 500000 || res.tv_nsec > 20000000)
		return 0;
	return (long)(1000000000L / res.tv_nsec);
}

/*
 * Whether `auto` wants perf events at this period: when CPU-time timers,
 * which fire on kernel ticks, cannot deliver it - a period shorter than
 * two ticks (above 125 Hz on a 250 Hz kernel). Below that the timers
 * deliver the rate, cost less (they ride the tick instead of adding an
 * interrupt per sample: on the benchmark's KVM guest ~33 us for the
 * task-clock hrtimer plus ~20 us for the irq_work that sends the signal,
 * against ~5 us for a timer sample - bench/engine_cost.c, docs/BENCHMARKS.md
 * "Engines"), need no descriptor per thread and charge system-call time
 * to its call site whatever perf_event_paranoid says. Above it perf events
 * are the only way to the asked resolution, so auto takes them despite
 * that cost; EMBERPROF_ENGINE=timer trades the resolution back.
 */
static int auto_wants_perf(int64_t period_ns, char *why, size_t whylen)
{
	long hz = kernel_hz();
	int64_t tick = hz ? 1000000000LL / hz : 4000000; /* unknown: assume 250 Hz */
	if (period_ns < 2 * tick)
		return 1;
	snprintf(why, whylen, "%lld Hz is within what CPU-time timers deliver on this %ld Hz kernel",
		 (long long)(1000000000LL / period_ns), hz ? hz : 250L);
	return 0;
}

/* Picks the engine: perf events, per-thread timers or the process timer. */
int ember__threads_choose_engine(ember__threads *t, int engine, int perf_refuse)
{
	/* auto at a rate the timers deliver: timers, the note says why */
	int try_perf = engine == EMBER_ENGINE_PERF ||
		       (engine == EMBER_ENGINE_AUTO &&
			auto_wants_perf(t->period_ns, t->engine_note, sizeof(t->engine_note)));
	if (try_perf) {
		char why[256];
		int rc = ember__perf_probe(t->signo, t->period_ns, perf_refuse, &t->perf_exclude_kernel,
					   why, sizeof(why));
		if (rc == 0) {
			t->perf = 1;
			return 0;
		}
		if (engine == EMBER_ENGINE_PERF)
			return ember__error(EMBER_ERR_UNSUPPORTED,
					    "the perf_events engine was asked for but is not available: "
					    "%s. Use EMBERPROF_ENGINE=auto (or timer) to fall back to "
					    "CPU-time timers",
					    why);
		snprintf(t->engine_note, sizeof(t->engine_note), "%s", why);
	}
	t->process_timer = engine == EMBER_ENGINE_PROCESS_TIMER;
	if (engine == EMBER_ENGINE_AUTO) {
		/* Probe per-thread timers on this thread before relying on them. */
		ember__thread_rec probe = {.tid = (int32_t)gettid()};
		int rc = ember__threads_arm_timer(t, &probe);
		if (rc == 0)
			timer_delete(probe.timer);
		else
			t->process_timer = 1;
	}
	return 0;
}

const char *ember__threads_engine_name(const ember__threads *t)
{
	return t->perf ? (t->perf_exclude_kernel ? "perf_events task-clock (user time only)"
						 : "perf_events task-clock")
	       : t->process_timer ? "setitimer(ITIMER_PROF)"
				  : "per-thread CPU timers";
}
