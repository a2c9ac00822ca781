/*
 * it_tail.c - the CPU no sample weighs is measured and reported
 * (ember_stats.cpu_tail_unsampled_ns, issue 15): at 1 Hz, 40 threads run
 * one after another, each using 10 ms of its own CPU and exiting. A
 * thread's first expiry is uniform within its first period (1 s), so
 * about 1 in 100 of them takes a sample, and the CPU of the others is in
 * no sample. The counter must hold that CPU: at least the threads' CPU
 * minus the CPU the samples weigh, and at most the threads' CPU.
 */
#include "it_common.h"

#define NTHREADS 40
#define BURN_NS 10000000LL

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *burn(void *arg)
{
	int64_t *used = arg;
	volatile uint64_t x = 0;
	int64_t t0 = thread_cpu_ns();
	while (thread_cpu_ns() - t0 < BURN_NS)
		for (int i = 0; i < 1000; i++)
			x += (uint64_t)i * 2654435761u;
	*used = thread_cpu_ns();
	return NULL;
}

int main(void)
{
	static it_capture cap;
	ember_agent *a = it_build(&cap, 1, 10000);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	int64_t main0 = thread_cpu_ns();
	double threads_cpu = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_t th;
		int64_t used = 0;
		IT_CHECK(pthread_create(&th, NULL, burn, &used) == 0, "pthread_create");
		pthread_join(th, NULL);
		threads_cpu += (double)used / 1e9;
	}
	double main_cpu = (double)(thread_cpu_ns() - main0) / 1e9;
	int rc = ember_running_stop(&a, run);
	IT_CHECK(rc == 0, "stop: %s", ember_last_error());
	ember_stats st;
	ember_agent_stats(a, &st);

	double sampled = it_sampled_cpu_ns(&cap);
	sampled /= 1e9;
	double tail = (double)st.cpu_tail_unsampled_ns / 1e9;
	printf("%d threads used %.3f s of CPU; samples weigh %.3f s; CPU in no sample %.3f s\n",
	       NTHREADS, threads_cpu, sampled, tail);
	/* (The main thread's CPU until stop is measured too: it may be in no
	 * sample.) Each sample lands on one thread, whose 10 ms it covers; the CPU of
	 * every other thread is in no sample. (The main thread, which only
	 * creates and joins, adds a little to what is measured.) */
	double covered = (double)st.samples * 0.0105;
	IT_CHECK(tail >= threads_cpu - covered - 0.005,
		 "the CPU in no sample (%.3f s) must hold the CPU of the %d threads no sample "
		 "covered (%.3f s of CPU, %llu samples)",
		 tail, NTHREADS, threads_cpu, (unsigned long long)st.samples);
	IT_CHECK(tail <= threads_cpu + main_cpu + 0.01,
		 "more CPU in no sample than the threads used (%.3f s, main thread %.3f s)",
		 threads_cpu, main_cpu);
	it_capture_free(&cap);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
