/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_threads.c - many more threads than cores (16 on this 2-core machine),
 * some created before start, some after, some short-lived: every thread
 * gets a timer, total sampled CPU stays within 10% of the CPU the
 * program's threads used (their own thread CPU clocks: the agent's
 * threads, never sampled, are not in it, however slow they run on a
 * loaded or emulated machine), and threads that exited are forgotten.
 */
#include "it_common.h"

#include <math.h>

#define NEARLY 6
#define NLATE 10

static pthread_barrier_t go;

static void *early(void *arg)
{
	pthread_barrier_wait(&go);
	return worker_main(arg);
}

int main(void)
{
	static it_capture cap;
	it_work work[NEARLY + NLATE];
	pthread_t th[NEARLY + NLATE];
	for (int i = 0; i < NEARLY + NLATE; i++)
		work[i] = (it_work){.cpu_seconds = i < NEARLY ? 0.4 : 0.3};
	pthread_barrier_init(&go, NULL, NEARLY + 1);
	for (int i = 0; i < NEARLY; i++)
		pthread_create(&th[i], NULL, early, &work[i]);

	ember_agent *a = it_build(&cap, 100, 10000);
	ember_running *run;
	double cpu0 = it_process_cpu(), main0 = it_thread_cpu();
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	pthread_barrier_wait(&go);
	/* Late threads in two waves: the first wave exits before the second
	 * starts, so thread ids may be reused. */
	for (int i = NEARLY; i < NEARLY + NLATE / 2; i++)
		pthread_create(&th[i], NULL, worker_main, &work[i]);
	for (int i = NEARLY; i < NEARLY + NLATE / 2; i++)
		pthread_join(th[i], NULL);
	for (int i = NEARLY + NLATE / 2; i < NEARLY + NLATE; i++)
		pthread_create(&th[i], NULL, worker_main, &work[i]);
	for (int i = 0; i < NEARLY + NLATE; i++)
		if (i < NEARLY || i >= NEARLY + NLATE / 2)
			pthread_join(th[i], NULL);
	ember_stats st;
	ember_running_stats(run, &st);
	int rc = ember_running_stop(&a, run);
	double cpu = it_process_cpu() - cpu0;
	double prog = it_thread_cpu() - main0; /* this thread's, then the workers' */
	for (int i = 0; i < NEARLY + NLATE; i++)
		prog += work[i].used;
	IT_CHECK(rc == 0, "stop: %s", ember_last_error());

	double total = it_sampled_cpu_ns(&cap);
	printf("threads seen %llu, samples %llu, sampled CPU %.3f s, the program's threads' CPU %.3f s, "
	       "ratio %.3f (process CPU, the agent's threads included, %.3f s)\n",
	       (unsigned long long)st.threads_seen, (unsigned long long)st.samples, total / 1e9, prog,
	       total / 1e9 / prog, cpu);
	IT_CHECK(st.threads_seen >= NEARLY + NLATE, "every thread must get a timer");
	IT_CHECK(st.timer_failures == 0, "timer failures");
	IT_CHECK(fabs(total / 1e9 / prog - 1.0) <= 0.10,
		 "sampled CPU is not within 10%% of the program's threads' CPU");
	it_capture_free(&cap);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
