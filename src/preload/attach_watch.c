/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attach_watch.c - the injected agent stops when its emberprof is gone
 * (attach_watch.h).
 *
 * One watch per process, its state in statics: the attach entry points
 * are called from outside, one at a time, on a borrowed thread.
 * Who stops the agent is decided by one compare-and-swap on `state`: the
 * watch when emberprof exited (FIRED), emberprof's own stop otherwise
 * (ENDED); the loser leaves the agent alone.
 */
#include "preload/attach_watch.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/thread_start.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on x86-64 and aarch64 */
#endif

enum { WATCH_OFF, WATCH_ON, WATCH_FIRED, WATCH_ENDED };

static _Atomic int state = WATCH_OFF;
static int pidfd = -1, wakefd = -1;
static pthread_t watcher;
static void (*stop_agent)(void);

static void close_fds(void)
{
	if (pidfd >= 0)
		close(pidfd);
	if (wakefd >= 0)
		close(wakefd);
	pidfd = wakefd = -1;
}

static void *watch_main(void *arg)
{
	(void)arg;
	struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = wakefd, .events = POLLIN}};
	for (;;) {
		int n = poll(p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[1].revents)
			return NULL; /* ended by emberprof (or poll failed: nothing to do) */
		if (p[0].revents)
			break;
	}
	int on = WATCH_ON;
	if (!atomic_compare_exchange_strong(&state, &on, WATCH_FIRED))
		return NULL; /* emberprof's stop came first and joins us */
	stop_agent();
	close_fds();
	pthread_detach(pthread_self()); /* nobody will join: emberprof is gone */
	atomic_store(&state, WATCH_OFF);
	return NULL;
}

int ember__attach_watch_start(pid_t attacher, void (*stop)(void), const char **why)
{
	if (atomic_load(&state) != WATCH_OFF) {
		*why = "a watch runs already";
		return -1;
	}
	pidfd = (int)syscall(SYS_pidfd_open, attacher, 0); /* close-on-exec by itself */
	if (pidfd < 0) {
		*why = errno == ENOSYS ? "no pidfd_open on this kernel" : "pidfd_open failed";
		pidfd = -1;
		return -1;
	}
	wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wakefd < 0) {
		*why = "no eventfd";
		close_fds();
		return -1;
	}
	stop_agent = stop;
	atomic_store(&state, WATCH_ON);
	if (ember__thread_start(&watcher, 1u << 20, watch_main, NULL, "emberprof-watch") != 0) {
		*why = "no thread";
		atomic_store(&state, WATCH_OFF);
		close_fds();
		return -1;
	}
	return 0;
}

int ember__attach_watch_end(void)
{
	int on = WATCH_ON;
	if (!atomic_compare_exchange_strong(&state, &on, WATCH_ENDED))
		return on == WATCH_OFF ? 0 : 1; /* none, or the watch fired */
	uint64_t one = 1;
	ssize_t w;
	do
		w = write(wakefd, &one, sizeof(one));
	while (w < 0 && errno == EINTR);
	if (w == (ssize_t)sizeof(one)) {
		pthread_join(watcher, NULL);
	} else {
		/* cannot wake it (never seen): never join a thread that may not
		 * return; it ends when emberprof does, finding ENDED */
		pthread_detach(watcher);
		pidfd = wakefd = -1; /* left to the thread's poll: not closed under it */
	}
	close_fds();
	atomic_store(&state, WATCH_OFF);
	return 0;
}
