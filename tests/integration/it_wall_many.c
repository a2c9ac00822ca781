/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_wall_many.c - the wall-clock engine with 500 threads (all blocked on
 * a condition variable): the run completes, no tick signals more than 8
 * threads, and over a few passes every thread is sampled at least once.
 * Prints the measured numbers; no timing is asserted.
 */
#include "it_common.h"

#define NTHREADS 500

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int released;

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	while (!released)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(void)
{
	static it_capture cap;
	static pthread_t th[NTHREADS];
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64u << 10);
	for (int i = 0; i < NTHREADS; i++)
		IT_CHECK(pthread_create(&th[i], &attr, waiter, NULL) == 0, "thread %d", i);
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "it") == 0, "builder");
	IT_CHECK(ember_builder_apply_env(b) == 0, "env: %s", ember_last_error());
	IT_CHECK(ember_builder_set_wall(b, 50) == 0, "wall");
	IT_CHECK(ember_builder_set_thread_labels(b, 1) == 0, "thread labels");
	ember_reporter rep = it_capture_reporter(&cap);
	IT_CHECK(ember_builder_add_reporter(b, &rep) == 0, "reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	ember_running *run;
	double cpu0 = it_process_cpu();
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	/* A pass over 500 threads, 8 per tick of at least 1 ms: ~63 ms. The
	 * wall-clock signals cut nanosleep short (EINTR): sleep the rest. */
	struct timespec d = {1, 500000000};
	while (nanosleep(&d, &d) != 0)
		;
	ember_stats st;
	ember_running_stats(run, &st);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	double cpu = it_process_cpu() - cpu0;
	pthread_mutex_lock(&mu);
	released = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);

	/* Distinct thread ids in the wall profiles. */
	static char seen[1 << 22];
	size_t distinct = 0;
	double wall_total = 0;
	for (size_t i = 0; i < cap.n; i++) {
		ember__profile *p = it_decode(&cap.w[i]);
		if (strcmp(p->sample_type[1].type, "wall") != 0) {
			ember__profile_free(p);
			continue;
		}
		for (uint32_t s = 0; s < p->nsamples; s++) {
			wall_total += (double)p->samples[s].values[1] / 1e9;
			for (uint32_t l = 0; l < p->samples[s].nlabels; l++)
				if (!strcmp(p->samples[s].labels[l].key, "thread_id")) {
					long tid = atol(p->samples[s].labels[l].str);
					if (tid > 0 && tid < (long)sizeof(seen) && !seen[tid]) {
						seen[tid] = 1;
						distinct++;
					}
				}
		}
		ember__profile_free(p);
	}
	printf("%d threads: wall samples %llu, signals %llu, max per tick %llu, distinct threads "
	       "sampled %zu, wall total %.1f s, process CPU over the run %.3f s\n",
	       NTHREADS, (unsigned long long)st.wall_samples, (unsigned long long)st.wall_signals,
	       (unsigned long long)st.wall_max_per_tick, distinct, wall_total, cpu);
	IT_CHECK(st.wall_max_per_tick >= 1 && st.wall_max_per_tick <= 8,
		 "the per-tick count must stay bounded by 8");
	IT_CHECK(distinct >= NTHREADS, "every thread must be sampled at least once (%zu of %d)",
		 distinct, NTHREADS);
	it_capture_free(&cap);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
