/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_tail.c - the CPU the samples' weights fall short of is measured and
 * reported (ember_stats.cpu_tail_unsampled_ns). At 1 Hz, 20
 * threads run one after another, each using 5 ms of its own CPU and
 * exiting. A thread's first expiry is uniform within its first period
 * (1 s), so in about 9 runs of 10 none of them takes a sample and their
 * 100 ms are in no sample; when one does, its sample weighs 1 s, more
 * than they all used. Either way the counter must be the threads' CPU
 * (the workers', and the main thread's while sampled) minus what the
 * profile's samples weigh, or 0 if they weigh more.
 */
#include "it_common.h"

#include <math.h>

#define NTHREADS 20
#define BURN_NS 5000000LL

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A file-scope sink: the compiler cannot drop the loop, and no build
 * warns that a local is set but never read. */
static volatile uint64_t sink;

/* What a thread used: its whole CPU clock at the end, and the part its
 * burn loop used. The agent counts from when it armed the thread, which
 * lies between the two: under qemu-user a new thread's clock starts with
 * a quarter millisecond of the emulator's own set-up, before our hook
 * runs. */
struct used {
	int64_t total, burn;
};

static void *burn(void *arg)
{
	struct used *used = arg;
	int64_t t0 = thread_cpu_ns();
	while (thread_cpu_ns() - t0 < BURN_NS)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 2654435761u;
	used->total = thread_cpu_ns();
	used->burn = used->total - t0;
	return NULL;
}

int main(void)
{
	static it_capture cap;
	ember_agent *a = it_build(&cap, 1, 10000);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	int64_t main0 = thread_cpu_ns();
	double threads_cpu = 0, threads_burn = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_t th;
		struct used used = { 0, 0 };
		IT_CHECK(pthread_create(&th, NULL, burn, &used) == 0, "pthread_create");
		pthread_join(th, NULL);
		threads_cpu += (double)used.total / 1e9;
		threads_burn += (double)used.burn / 1e9;
	}
	double main_cpu = (double)(thread_cpu_ns() - main0) / 1e9;
	int rc = ember_running_stop(&a, run);
	IT_CHECK(rc == 0, "stop: %s", ember_last_error());
	ember_stats st;
	ember_agent_stats(a, &st);

	double used = threads_cpu + main_cpu, used_lo = threads_burn + main_cpu;
	double weight = it_sampled_cpu_ns(&cap) / 1e9;
	double expect = used > weight ? used - weight : 0;
	double expect_lo = used_lo > weight ? used_lo - weight : 0;
	double tail = (double)st.cpu_tail_unsampled_ns / 1e9;
	printf("%d threads used %.4f s of CPU (%.4f s in their loops), the main thread %.4f s; "
	       "%llu samples weigh %.3f s; CPU in no sample %.4f s, expected %.4f..%.4f s\n",
	       NTHREADS, threads_cpu, threads_burn, main_cpu, (unsigned long long)st.samples,
	       weight, tail, expect_lo, expect);
	/* Between the loops' CPU and the threads' whole CPU (see struct
	 * used); the agent also reads the main thread's clock a little before
	 * and after this test does (start and stop): 2 ms of slack and 2 %. */
	double slack = 0.002 + 0.02 * used;
	IT_CHECK(tail >= expect_lo - slack && tail <= expect + slack,
		 "the CPU in no sample (%.4f s) is not the CPU used minus what the samples "
		 "weigh (%.4f..%.4f s)", tail, expect_lo, expect);
	it_capture_free(&cap);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
