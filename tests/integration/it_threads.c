/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_threads.c - many more threads than cores (16 on this 2-core machine),
 * some created before start, some after, some short-lived: every thread
 * gets a timer, total sampled CPU stays within 10% of the CPU the
 * program's threads used (their own thread CPU clocks: the agent's
 * threads, never sampled, are not in it, however slow they run on a
 * loaded or emulated machine), and threads that exited are forgotten.
 * Then a second agent's run of many short threads: none counted as a
 * failure.
 */
#include "it_common.h"

#include <math.h>

#define NEARLY 6
#define NLATE 10
#define NCHURN 800

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

	/* A second agent (its counters its own): short threads, eight at a
	 * time, whose exits race the agent's scans. A scan can list a thread
	 * that has left by the time its timer is made (seen under qemu-user:
	 * "timer failures"); such a thread is gone, not a failure. Their CPU is mostly in no sample
	 * (0.5 ms each, a 10 ms period): what is checked is that samples plus
	 * the CPU the agent counts as in no sample make up what they used. */
	static it_work tiny[NCHURN];
	double churn = 0, main1 = it_thread_cpu(), proc1 = it_process_cpu();
	a = it_build(&cap, 100, 10000);
	IT_CHECK(ember_agent_start(&run, a) == 0, "second start: %s", ember_last_error());
	for (int i = 0; i < NCHURN; i += 8) {
		pthread_t ct[8];
		for (int k = 0; k < 8; k++) {
			tiny[i + k] = (it_work){.cpu_seconds = 0.0005};
			IT_CHECK(pthread_create(&ct[k], NULL, worker_main, &tiny[i + k]) == 0, "create");
		}
		for (int k = 0; k < 8; k++) {
			pthread_join(ct[k], NULL);
			churn += tiny[i + k].used;
		}
	}
	ember_running_stats(run, &st);
	IT_CHECK(ember_running_stop(&a, run) == 0, "second stop: %s", ember_last_error());
	churn += it_thread_cpu() - main1;
	double whole = it_process_cpu() - proc1;
	double sampled = it_sampled_cpu_ns(&cap) / 1e9, tail = st.cpu_tail_unsampled_ns / 1e9;
	printf("churn: %d threads, threads seen %llu, timer failures %llu, CPU %.3f s in the workers' "
	       "loops, %.3f s in the process; sampled %.3f s, in no sample %.3f s\n",
	       NCHURN, (unsigned long long)st.threads_seen, (unsigned long long)st.timer_failures, churn,
	       whole, sampled, tail);
	IT_CHECK(st.timer_failures == 0, "churn: timer failures");
	IT_CHECK(st.threads_seen >= NCHURN, "churn: every thread must get a timer");
	/* The agent measures each thread whole (its start and exit too): at
	 * least the loops' CPU, at most the process's (the agent's threads
	 * included). */
	IT_CHECK(sampled + tail >= 0.8 * churn && sampled + tail <= 1.05 * whole,
		 "churn: samples and the CPU in no sample are outside [0.8 x the loops' CPU, 1.05 x "
		 "the process's]");
	it_capture_free(&cap);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
