/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_wall_exit.c - threads that end while wall-clock profiling is on.
 *
 * A thread created after the start registers an exit hook (thread_hook.c)
 * that records the time since its last wall tick. That time must be shown
 * where the thread was (its last sampled stack), never in the agent's own
 * exit-hook code, which the program did not run: a wall profile that
 * shows emberprof's functions tells the program it is profiled.
 *
 * 60 short-lived threads, each burning 20-40 ms of CPU in its own function
 * and returning, one after the other, with wall-clock samples every 10 ms:
 * - no wall sample holds a frame of the agent's exit hook (on_thread_exit,
 *   ember__threads_on_exit, wall_final_sample, what they call) nor of
 *   glibc's thread-specific-data teardown (__nptl_deallocate_tsd), which
 *   only the hook runs in;
 * - the workers' wall time is there: at least half of their lifetimes
 *   as each measured its own (no timing asserted beyond that loose floor,
 *   which a lost exit record would not break alone but a lost thread
 *   would).
 * And no wall sample of any thread (the main thread stops the agent)
 * shows the stop's own code (ember_running_stop, ember__wall_stop).
 * Then 100 threads that live about 0.5 ms, most of them ending before
 * their first wall tick: their time is a one-frame sample of their start
 * routine (tiny_life), again with no agent frame, and some is there.
 * Prints the numbers.
 */
#include "it_common.h"

#define NTHREADS 60

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile uint64_t burn_sink;

__attribute__((noinline)) static void short_life_burn(double seconds)
{
	double end = it_thread_cpu() + seconds;
	uint64_t x = 1;
	while (it_thread_cpu() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	burn_sink += x;
}

__attribute__((noinline)) static void *tiny_life(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "tinylife");
	short_life_burn(0.0005);
	return NULL;
}

/* Each worker's lifetime as it measured it itself, from its start routine's
 * entry to its return: what the agent sees of it (the thread is registered
 * before the routine runs, its exit recorded after). Timed from outside,
 * around pthread_create and pthread_join, it held the creation and the
 * join's wake-up too, which a loaded machine or an emulator stretches. */
static double worker_lived[NTHREADS];

static void *short_life(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	double t0 = now_s();
	pthread_setname_np(pthread_self(), "shortlife");
	short_life_burn(0.020 + 0.020 * (double)(i % 5) / 4);
	worker_lived[i] = now_s() - t0;
	return NULL;
}

int main(void)
{
	static it_capture cap;
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "it") == 0, "builder");
	IT_CHECK(ember_builder_apply_env(b) == 0, "env: %s", ember_last_error());
	IT_CHECK(ember_builder_set_sample_rate(b, 100) == 0, "rate");
	IT_CHECK(ember_builder_set_wall(b, 10) == 0, "wall");
	IT_CHECK(ember_builder_set_thread_labels(b, 1) == 0, "thread labels");
	ember_reporter rep = it_capture_reporter(&cap);
	IT_CHECK(ember_builder_add_reporter(b, &rep) == 0, "reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());

	double lived = 0;
	for (unsigned i = 0; i < NTHREADS; i++) {
		pthread_t th;
		IT_CHECK(pthread_create(&th, NULL, short_life, (void *)(uintptr_t)i) == 0,
			 "pthread_create");
		pthread_join(th, NULL);
		lived += worker_lived[i];
	}
	double tiny_lived = 0;
	for (unsigned i = 0; i < 100; i++) {
		pthread_t th;
		double t0 = now_s();
		IT_CHECK(pthread_create(&th, NULL, tiny_life, NULL) == 0, "pthread_create");
		pthread_join(th, NULL);
		tiny_lived += now_s() - t0;
	}
	ember_stats st;
	ember_running_stats(run, &st);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	ember_agent_shutdown(a);

	/* The exit hook's frames. (The start hook's registration is real time
	 * the thread spends in emberprof, and may be sampled.) */
	static const char *const ours[] = {"ember__threads_on_exit", "on_thread_exit",
					   "wall_final_sample", "ember__queue_signal",
					   "ember__wall_record", "__nptl_deallocate_tsd"};
	double worker_wall = 0, in_ours = 0, in_burn = 0, tiny_wall = 0, tiny_start = 0;
	unsigned bad = 0, in_stop = 0;
	for (size_t i = 0; i < cap.n; i++) {
		ember__profile *p = it_decode(&cap.w[i]);
		if (strcmp(p->sample_type[1].type, "wall") != 0) {
			ember__profile_free(p);
			continue;
		}
		for (uint32_t s = 0; s < p->nsamples; s++) {
			const ember__sample *sm = &p->samples[s];
			if (it_stack_has(p, sm, "ember_running_stop") ||
			    it_stack_has(p, sm, "ember__wall_stop")) {
				if (in_stop++ < 3) {
					fprintf(stderr, "stop frames in a wall sample (%.4f s):",
						(double)sm->values[1] / 1e9);
					for (uint32_t k = 0; k < sm->nlocs && k < 8; k++)
						fprintf(stderr, " %s", it_loc_func(p, sm->locs[k]));
					fprintf(stderr, "\n");
				}
			}
			const char *name = it_label(sm, "thread_name");
			int tiny = name && !strcmp(name, "tinylife");
			if (!name || (strcmp(name, "shortlife") != 0 && !tiny))
				continue;
			double v = (double)sm->values[1] / 1e9;
			if (tiny) {
				tiny_wall += v;
				if (sm->nlocs == 1 && !strcmp(it_loc_func(p, sm->locs[0]), "tiny_life"))
					tiny_start += v;
			} else {
				worker_wall += v;
			}
			if (it_stack_has(p, sm, "short_life_burn"))
				in_burn += v;
			int hit = 0;
			for (size_t k = 0; k < sizeof(ours) / sizeof(ours[0]); k++)
				hit |= it_stack_has(p, sm, ours[k]);
			if (hit) {
				in_ours += v;
				if (bad++ < 5) {
					fprintf(stderr, "exit-hook frames in a wall sample (%.4f s):", v);
					for (uint32_t k = 0; k < sm->nlocs && k < 8; k++)
						fprintf(stderr, " %s", it_loc_func(p, sm->locs[k]));
					fprintf(stderr, "\n");
				}
			}
		}
		ember__profile_free(p);
	}
	printf("%d threads lived %.3f s; their wall samples %.3f s, %.3f s in short_life_burn, "
	       "%.4f s in %u samples with exit-hook frames; 100 tiny threads lived %.4f s, their wall "
	       "samples %.4f s, %.4f s as their start routine alone\n",
	       NTHREADS, lived, worker_wall, in_burn, in_ours, bad, tiny_lived, tiny_wall, tiny_start);
	IT_CHECK(bad == 0, "%u wall samples (%.4f s) show the agent's exit hook", bad, in_ours);
	IT_CHECK(worker_wall >= lived / 2, "the workers' wall time is missing: %.3f s of %.3f s",
		 worker_wall, lived);
	IT_CHECK(in_stop == 0, "%u wall samples show the agent's stop code", in_stop);
	IT_CHECK(tiny_start > 0, "no tiny thread's time is shown as its start routine");
	it_capture_free(&cap);
	return 0;
}
