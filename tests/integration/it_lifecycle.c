/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_lifecycle.c - the agent's life around the application:
 *  - start, stop, start again, stop: each stop reports a final window;
 *  - an application that owns SIGPROF is told so and keeps its handler;
 *    with another signal configured, sampling works next to it;
 *  - stop restores the previous disposition exactly;
 *  - the process-wide setitimer engine works as the fallback;
 *  - fork() while sampling leaves parent and child healthy, and a child
 *    that execs runs normally.
 */
#include "it_common.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

static void burn(double seconds)
{
	it_work w = {.cpu_seconds = seconds};
	worker_main(&w);
}

static size_t finals(const it_capture *c)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n; i++)
		n += c->w[i].final != 0;
	return n;
}

static void test_restart(void)
{
	static it_capture cap;
	ember_agent *a = it_build(&cap, 200, 10000);
	for (int round = 0; round < 2; round++) {
		ember_running *r;
		IT_CHECK(ember_agent_start(&r, a) == 0, "start %d: %s", round, ember_last_error());
		burn(0.3);
		IT_CHECK(ember_running_stop(&a, r) == 0, "stop %d: %s", round, ember_last_error());
	}
	IT_CHECK(finals(&cap) == 2, "each stop reports a final window (got %zu)", finals(&cap));
	/* Each run burned 0.3 s of CPU: its windows - up to its final one;
	 * a run can straddle a wall-clock window boundary - must account for
	 * most of it (weights, not counts: under load, CPU timers fire less
	 * often but carry their overruns). */
	double cpu = 0;
	int run = 0;
	for (size_t i = 0; i < cap.n; i++) {
		ember__profile *p = it_decode(&cap.w[i]);
		for (uint32_t s = 0; s < p->nsamples; s++)
			cpu += (double)p->samples[s].values[1] / 1e9;
		ember__profile_free(p);
		if (!cap.w[i].final)
			continue;
		IT_CHECK(cpu > 0.2, "run %d's windows account for only %.3f s of CPU", run, cpu);
		cpu = 0;
		run++;
	}
	ember_stats st;
	ember_agent_stats(a, &st);
	IT_CHECK(st.windows_reported == cap.n, "stats count windows");
	printf("restart: ok (%zu windows)\n", cap.n);
	ember_agent_shutdown(a);
	it_capture_free(&cap);
}

static volatile sig_atomic_t app_signals;
static void app_handler(int sig)
{
	(void)sig;
	app_signals++;
}

static void test_signal_owned_by_app(void)
{
	struct sigaction mine, now;
	memset(&mine, 0, sizeof(mine));
	mine.sa_handler = app_handler;
	sigaction(SIGPROF, &mine, NULL);

	static it_capture cap;
	ember_agent *a = it_build(&cap, 100, 10000);
	ember_running *r;
	int rc = ember_agent_start(&r, a);
	IT_CHECK(rc == EMBER_ERR_BUSY, "start must refuse a SIGPROF the application owns (rc %d)", rc);
	IT_CHECK(strstr(ember_last_error(), "already has a handler"), "message: %s", ember_last_error());
	sigaction(SIGPROF, NULL, &now);
	IT_CHECK(now.sa_handler == app_handler, "the application's handler must stay");
	ember_agent_shutdown(a);

	/* With another signal, emberprof samples and the app keeps SIGPROF. */
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "it") == 0, "builder");
	ember_reporter rep = it_capture_reporter(&cap);
	ember_builder_add_reporter(b, &rep);
	IT_CHECK(ember_builder_set_signal(b, SIGRTMIN + 4) == 0, "set_signal");
	IT_CHECK(ember_builder_build(&a, b) == 0, "build");
	struct sigaction before;
	sigaction(SIGRTMIN + 4, NULL, &before);
	IT_CHECK(ember_agent_start(&r, a) == 0, "start on SIGRTMIN+4: %s", ember_last_error());
	/* 0.3 s, then on (up to 30 s) until the handler has recorded a
	 * sample: under two CPU hogs one run had none in its 0.3 s (the
	 * agent counted all of it as in no sample) */
	double burnt = 0.3;
	burn(0.3);
	for (int i = 0; i < 300; i++) {
		ember_stats sofar;
		ember_running_stats(r, &sofar);
		if (sofar.samples >= 1)
			break;
		burn(0.1);
		burnt += 0.1;
	}
	raise(SIGPROF);
	IT_CHECK(ember_running_stop(&a, r) == 0, "stop");
	IT_CHECK(app_signals == 1, "the application's SIGPROF handler still runs");
	/* Every window of the run (it may straddle a window boundary), by CPU
	 * time: under load the timer fires less often than 100 Hz, and each
	 * sample then weighs its overruns too. */
	uint64_t got = 0;
	double cpu_s = 0;
	for (size_t i = 0; i < cap.n; i++) {
		got += cap.w[i].samples;
		ember__profile *p = it_decode(&cap.w[i]);
		for (uint32_t s = 0; p && s < p->nsamples; s++)
			cpu_s += (double)p->samples[s].values[1] / 1e9;
		ember__profile_free(p);
	}
	/* What the samples' weights fall short of, the agent counts (the
	 * CPU after the kernel's last timer check: under two CPU hogs one
	 * sample weighed 0.09 s of the 0.3 s): the two together are the burn
	 * (the main thread's own work besides it is small). */
	ember_stats st;
	ember_agent_stats(a, &st);
	double tail_s = (double)st.cpu_tail_unsampled_ns / 1e9;
	printf("SIGRTMIN+4: %llu samples, %.3f s of CPU in %zu window(s), %.3f s in no sample\n",
	       (unsigned long long)got, cpu_s, cap.n, tail_s);
	IT_CHECK(got >= 1 && cpu_s + tail_s > 0.8 * burnt,
		 "samples on SIGRTMIN+4 (%.1f s burnt: %.3f s sampled, %.3f s counted as in no sample)",
		 burnt, cpu_s, tail_s);
	struct sigaction after;
	sigaction(SIGRTMIN + 4, NULL, &after);
	/* glibc adds SA_RESTORER (0x04000000) to every action it installs. */
	IT_CHECK(after.sa_handler == before.sa_handler &&
			 (after.sa_flags & ~0x04000000) == (before.sa_flags & ~0x04000000),
		 "stop restores the previous disposition (handler %p/%p, flags %#x/%#x)",
		 (void *)after.sa_handler, (void *)before.sa_handler, after.sa_flags, before.sa_flags);
	ember_agent_shutdown(a);
	it_capture_free(&cap);
	signal(SIGPROF, SIG_DFL);
	printf("signal owned by the application: ok\n");
}

static void test_itimer(void)
{
	static it_capture cap;
	setenv("EMBERPROF_ENGINE", "itimer", 1);
	ember_agent *a = it_build(&cap, 100, 10000);
	unsetenv("EMBERPROF_ENGINE");
	ember_running *r;
	/* ITIMER_PROF counts the whole process, the agent thread included
	 * (its signals land on other threads): compare with all of it. */
	double c0 = it_process_cpu();
	IT_CHECK(ember_agent_start(&r, a) == 0, "start itimer: %s", ember_last_error());
	burn(0.6);
	IT_CHECK(ember_running_stop(&a, r) == 0, "stop");
	double cpu = it_process_cpu() - c0;
	double total = 0;
	uint32_t odd = 0;
	for (size_t i = 0; i < cap.n; i++) { /* the run may straddle a window boundary */
		ember__profile *p = it_decode(&cap.w[i]);
		for (uint32_t s = 0; p && s < p->nsamples; s++) {
			int64_t v = p->samples[s].values[1];
			total += (double)v;
			odd += v <= 0 || v % 10000000 != 0; /* whole 10 ms periods */
		}
		ember__profile_free(p);
	}
	printf("itimer: sampled %.3f s of %.3f s in %zu window(s)\n", total / 1e9, cpu, cap.n);
	/* The fallback must sample, each sample weighing whole 10 ms periods,
	 * never more in all than the CPU used. It cannot be accurate:
	 * ITIMER_PROF keeps one signal pending for the whole process and drops
	 * expirations meanwhile, with no overrun count. It measures 0.93x on
	 * an idle machine (anchor measurements), but with the 2 cores busy
	 * with other work it kept 0.1-0.4x of the CPU time, so no lower bound
	 * is checked beyond "it samples". Nor is it a tight upper bound: the
	 * kernel charges ITIMER_PROF by whole scheduler ticks, and on a loaded
	 * virtual machine (steal time) the ASan build once counted 0.82 s of
	 * ticks for 0.68 s of CPU. 1.5x still catches a double count. */
	IT_CHECK(total > 0 && odd == 0, "itimer samples (%u with a weight not whole periods)", odd);
	IT_CHECK(total / 1e9 < 1.5 * cpu, "itimer totals above the CPU used");
	struct sigaction now;
	sigaction(SIGPROF, NULL, &now);
	IT_CHECK(now.sa_handler == SIG_DFL, "SIGPROF back to default after stop");
	ember_agent_shutdown(a);
	it_capture_free(&cap);
}

static void test_fork(void)
{
	static it_capture cap;
	ember_agent *a = it_build(&cap, 1000, 10000);
	ember_running *r;
	IT_CHECK(ember_agent_start(&r, a) == 0, "start");
	for (int round = 0; round < 20; round++) {
		pid_t pid = fork();
		IT_CHECK(pid >= 0, "fork");
		if (pid == 0) {
			/* The child: must run normally, create threads, even exec. */
			burn(0.02);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
			/* Not under ThreadSanitizer, whose runtime does not support
			 * a thread started after a multi-threaded fork (it dies
			 * unless told die_after_fork=0, and may then hang).
			 * Not under ASan: GCC 12's ASan runtime does not lock its
			 * allocator around fork(), so a child whose parent had a
			 * thread inside free() at the fork (the agent thread,
			 * draining) spins forever on the quarantine lock at its
			 * first free() - the new thread's. Seen in CI; glibc's
			 * malloc locks its arenas around fork() and is safe. */
			pthread_t t;
			it_work w = {.cpu_seconds = 0.01};
			if (pthread_create(&t, NULL, worker_main, &w) != 0)
				_exit(3);
			pthread_join(t, NULL);
#endif
			if (round % 2)
				execl("/bin/true", "true", (char *)NULL);
			_exit(0);
		}
		burn(0.01);
		int st;
		IT_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		IT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d ended badly (status %d)", round,
			 st);
	}
	burn(0.1);
	IT_CHECK(ember_running_stop(&a, r) == 0, "stop after forks: %s", ember_last_error());
	IT_CHECK(cap.n >= 1 && cap.w[cap.n - 1].final, "parent still reports");
	ember_agent_shutdown(a);
	it_capture_free(&cap);
	printf("fork: ok\n");
}

int main(void)
{
	test_restart();
	test_signal_owned_by_app();
	test_itimer();
	test_fork();
	printf("ok\n");
	return 0;
}
