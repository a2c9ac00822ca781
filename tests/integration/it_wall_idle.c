/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_wall_idle.c - the wall-clock engine leaves sleeping threads asleep.
 *
 * Three threads block for the whole run: one in poll(), one in
 * epoll_wait(), one in nanosleep(), each with a timeout far longer than
 * the run, in a loop that counts the early returns (EINTR) a signal causes
 * and calls again. The wall engine samples every 10 ms. Twice in one
 * process:
 *  - default: after the first sample (which has to interrupt each thread
 *    once to learn its stack), a thread that has not run since is recorded
 *    again without a signal, so each thread sees only a few EINTRs - fewer
 *    than a tenth of the ticks it got;
 *  - control, EMBERPROF_WALL_SIGNAL_IDLE=1 (every thread signalled at
 *    every tick, the behaviour before): each thread sees an EINTR at most
 *    ticks, which shows the count above can fail.
 * In both runs the wall profile shows each blocked thread ~100% sleeping
 * (>= 90%) in its own wait function, with a wall total within 15% of the
 * run's elapsed time (from start's return to stop's call at least, from
 * start's call to stop's return at most), and no repeated sample is lost.
 * Prints the measured numbers; no timing is asserted.
 */
#include "it_common.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>

#define INTERVAL_MS 10
#define RUN_S 2

enum { W_POLL, W_EPOLL, W_SLEEP, NW };
static const char *const names[NW] = {"idle_poll", "idle_epoll", "idle_sleep"};
static const char *const funcs[NW] = {"idle_poll_wait", "idle_epoll_wait", "idle_nanosleep"};

static atomic_int stop_flag;
static atomic_long eintr[NW];
static int wake_pipe[2];
static int epfd;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static _Thread_local volatile int sink; /* per thread: the waiters share no plain data */

__attribute__((noinline)) static int idle_poll_wait(void)
{
	struct pollfd p = {.fd = wake_pipe[0], .events = POLLIN};
	int rc = poll(&p, 1, 60000);
	sink++; /* not a tail call: this frame stays on the stack */
	return rc;
}

__attribute__((noinline)) static int idle_epoll_wait(void)
{
	struct epoll_event ev;
	int rc = epoll_wait(epfd, &ev, 1, 60000);
	sink++;
	return rc;
}

__attribute__((noinline)) static int idle_nanosleep(void)
{
	struct timespec d = {60, 0};
	int rc = nanosleep(&d, NULL);
	sink++;
	return rc;
}

static void *idler(void *arg)
{
	int k = (int)(intptr_t)arg;
	pthread_setname_np(pthread_self(), names[k]);
	while (!atomic_load(&stop_flag)) {
		int rc = k == W_POLL ? idle_poll_wait() : k == W_EPOLL ? idle_epoll_wait() : idle_nanosleep();
		if (rc < 0 && errno == EINTR)
			atomic_fetch_add(&eintr[k], 1);
	}
	return NULL;
}

static void sleep_fully(time_t sec)
{
	struct timespec d = {sec, 0};
	while (nanosleep(&d, &d) != 0)
		;
}

/* One profiled run; returns each thread's EINTR count in `intr`. */
static void run(const char *what, long intr[NW])
{
	static it_capture cap;
	memset(&cap, 0, sizeof(cap));
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "it") == 0, "builder");
	IT_CHECK(ember_builder_apply_env(b) == 0, "env: %s", ember_last_error());
	IT_CHECK(ember_builder_set_sample_rate(b, 100) == 0, "rate");
	IT_CHECK(ember_builder_set_wall(b, INTERVAL_MS) == 0, "wall");
	IT_CHECK(ember_builder_set_thread_labels(b, 1) == 0, "thread labels");
	ember_reporter rep = it_capture_reporter(&cap);
	IT_CHECK(ember_builder_add_reporter(b, &rep) == 0, "reporter");
	ember_agent *ag;
	IT_CHECK(ember_builder_build(&ag, b) == 0, "build: %s", ember_last_error());

	long before[NW];
	for (int k = 0; k < NW; k++)
		before[k] = atomic_load(&eintr[k]);
	ember_running *r;
	double t0 = now_s();
	IT_CHECK(ember_agent_start(&r, ag) == 0, "start: %s", ember_last_error());
	double t_started = now_s();
	sleep_fully(RUN_S);
	ember_stats st;
	ember_running_stats(r, &st);
	double t_stopping = now_s();
	IT_CHECK(ember_running_stop(&ag, r) == 0, "stop: %s", ember_last_error());
	/* Sampling covers threads from their adoption, inside start, to the
	 * last tick before stop: between these two spans. */
	double elapsed = now_s() - t0, inner = t_stopping - t_started;
	ember_agent_stats(ag, &st);
	for (int k = 0; k < NW; k++)
		intr[k] = atomic_load(&eintr[k]) - before[k];

	double total[NW] = {0}, sleeping[NW] = {0}, in_func[NW] = {0};
	for (size_t i = 0; i < cap.n; i++) {
		ember__profile *p = it_decode(&cap.w[i]);
		if (strcmp(p->sample_type[1].type, "wall") != 0) {
			ember__profile_free(p);
			continue;
		}
		for (uint32_t s = 0; s < p->nsamples; s++) {
			const ember__sample *sm = &p->samples[s];
			const char *name = it_label(sm, "thread_name");
			const char *state = it_label(sm, "thread_state");
			double v = (double)sm->values[1] / 1e9;
			for (int k = 0; k < NW; k++) {
				if (!name || strcmp(name, names[k]) != 0)
					continue;
				total[k] += v;
				if (state && !strcmp(state, "sleeping")) {
					sleeping[k] += v;
					if (it_stack_has(p, sm, funcs[k]))
						in_func[k] += v;
				}
			}
		}
		ember__profile_free(p);
	}
	double ticks = elapsed * 1000 / INTERVAL_MS;
	printf("%s: elapsed %.3f s (%.0f ticks); wall samples %llu, signals %llu, "
	       "recorded without a signal %llu, lost %llu\n",
	       what, elapsed, ticks, (unsigned long long)st.wall_samples,
	       (unsigned long long)st.wall_signals, (unsigned long long)st.wall_unsignalled,
	       (unsigned long long)st.wall_repeats_lost);
	for (int k = 0; k < NW; k++) {
		printf("  %-10s EINTR %4ld; wall %.3f s (%.2fx elapsed), sleeping %.1f%%, "
		       "in %s %.1f%%\n",
		       names[k], intr[k], total[k], total[k] / elapsed,
		       total[k] ? 100 * sleeping[k] / total[k] : 0, funcs[k],
		       total[k] ? 100 * in_func[k] / total[k] : 0);
		IT_CHECK(total[k] >= 0.85 * inner && total[k] <= 1.15 * elapsed,
			 "%s: %s's wall total %.3f s is not within 15%% of the elapsed %.3f..%.3f s",
			 what, names[k], total[k], inner, elapsed);
		IT_CHECK(sleeping[k] >= 0.9 * total[k], "%s: %s must show >= 90%% sleeping", what,
			 names[k]);
		IT_CHECK(in_func[k] >= 0.9 * total[k],
			 "%s: %s's sleeping samples must be in %s", what, names[k], funcs[k]);
	}
	IT_CHECK(st.wall_repeats_lost == 0, "%s: repeated samples lost", what);
	it_capture_free(&cap);
	ember_agent_shutdown(ag);
}

static void on_usr1(int sig)
{
	(void)sig;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	IT_CHECK(pipe(wake_pipe) == 0, "pipe");
	epfd = epoll_create1(EPOLL_CLOEXEC);
	IT_CHECK(epfd >= 0, "epoll");
	struct epoll_event ev = {.events = EPOLLIN};
	IT_CHECK(epoll_ctl(epfd, EPOLL_CTL_ADD, wake_pipe[0], &ev) == 0, "epoll_ctl");
	pthread_t th[NW];
	for (int k = 0; k < NW; k++)
		IT_CHECK(pthread_create(&th[k], NULL, idler, (void *)(intptr_t)k) == 0, "thread");

	unsetenv("EMBERPROF_WALL_SIGNAL_IDLE");
	long quiet[NW], noisy[NW];
	run("default", quiet);
	setenv("EMBERPROF_WALL_SIGNAL_IDLE", "1", 1);
	run("control (every thread signalled)", noisy);
	unsetenv("EMBERPROF_WALL_SIGNAL_IDLE");

	atomic_store(&stop_flag, 1);
	IT_CHECK(write(wake_pipe[1], "x", 1) == 1, "wake");
	for (int k = 0; k < NW; k++) {
		if (k == W_SLEEP)
			pthread_kill(th[k], SIGUSR1); /* ends its nanosleep (EINTR) */
		pthread_join(th[k], NULL);
	}
	double ticks = RUN_S * 1000.0 / INTERVAL_MS;
	for (int k = 0; k < NW; k++) {
		IT_CHECK(quiet[k] <= ticks / 10,
			 "%s was interrupted %ld times in ~%.0f ticks: sleeping threads must be "
			 "left asleep",
			 names[k], quiet[k], ticks);
		IT_CHECK(noisy[k] >= ticks / 3,
			 "control: %s was interrupted only %ld times in ~%.0f ticks: the test cannot "
			 "tell",
			 names[k], noisy[k], ticks);
	}
	printf("ok\n");
	return 0;
}
