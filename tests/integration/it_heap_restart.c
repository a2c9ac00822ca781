/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_heap_restart.c - allocation profiling across stop and start of the
 * same agent. Blocks allocated in the first run and still live are not
 * reported as in use by the second (each run tracks what it sampled; the
 * live table is emptied at stop), freeing them during the second run is
 * harmless, and the second run samples its own allocations (a new epoch:
 * every thread's countdown restarts). Also: an agent without allocation
 * profiling reports no memory profile at all.
 *
 * Estimates are checked within 10%: 20000 blocks of 200 bytes at a mean
 * of 1024 are each sampled with p = 0.177, so the estimate's relative
 * standard deviation is sqrt((1 - p) / (p N)) = 1.5%; 10% is over six.
 */
#include "it_heap_common.h"

#define N 20000

static void *first[N], *second[N];

__attribute__((noinline)) static void *first_site(void)
{
	void *p = malloc(200);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

__attribute__((noinline)) static void *second_site(void)
{
	void *p = malloc(200);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void fill(void **v, void *(*site)(void))
{
	for (int i = 0; i < N; i++) {
		v[i] = site();
		if (i % 1000 == 999) {
			struct timespec d = {0, 10 * 1000000};
			nanosleep(&d, NULL);
		}
	}
}

int main(void)
{
	it_heap_require_hook();
	it_heap_cap cap = {0};
	ember_agent *a = it_heap_build(&cap, 1024);
	ember_running *run;

	IT_CHECK(ember_agent_start(&run, a) == 0, "start 1: %s", ember_last_error());
	fill(first, first_site);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop 1: %s", ember_last_error());
	size_t n1 = cap.n;
	IT_CHECK(n1 >= 1, "no memory profile from run 1");
	ember__profile *p = it_decode(&cap.w[n1 - 1]);
	double in1 = it_heap_sum(p, "inuse_space", "first_site");
	ember__profile_free(p);
	printf("run 1: first_site in use %.0f (truth %d)\n", in1, N * 200);
	IT_CHECK(fabs(in1 / (N * 200.0) - 1) < 0.1, "run 1 in-use estimate off");

	IT_CHECK(ember_agent_start(&run, a) == 0, "start 2: %s", ember_last_error());
	fill(second, second_site);
	for (int i = 0; i < N; i++) /* run 1's blocks, freed now */
		free(first[i]);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop 2: %s", ember_last_error());
	IT_CHECK(cap.n > n1, "no memory profile from run 2");
	p = it_decode(&cap.w[cap.n - 1]);
	double in_first = it_heap_sum(p, "inuse_space", "first_site");
	double in_second = it_heap_sum(p, "inuse_space", "second_site");
	double alloc_second = it_heap_sum(p, "alloc_space", "second_site");
	ember__profile_free(p);
	printf("run 2: first_site in use %.0f, second_site in use %.0f, allocated %.0f\n", in_first,
	       in_second, alloc_second);
	IT_CHECK(in_first == 0, "run 1's blocks reported in use by run 2");
	IT_CHECK(fabs(in_second / (N * 200.0) - 1) < 0.1, "run 2 in-use estimate off");
	IT_CHECK(fabs(alloc_second / (N * 200.0) - 1) < 0.1, "run 2 alloc estimate off");
	for (int i = 0; i < N; i++)
		free(second[i]);
	for (size_t i = 0; i < cap.n; i++)
		free(cap.w[i].pprof);
	ember_agent_shutdown(a);

	/* Allocation profiling off: no memory profile, nothing sampled. */
	it_heap_cap off = {0};
	a = it_heap_build(&off, 0);
	IT_CHECK(ember_agent_start(&run, a) == 0, "start 3: %s", ember_last_error());
	fill(first, first_site);
	ember_stats st;
	ember_running_stats(run, &st);
	/* A run without any sample reports nothing at all: some CPU, so that
	 * its CPU profile shows the capture works (other_types below). */
	for (int k = 0; k < 20000 && st.samples == 0; k++) {
		for (volatile int i = 0; i < 100000; i++)
			;
		ember_running_stats(run, &st);
	}
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop 3: %s", ember_last_error());
	IT_CHECK(off.n == 0 && off.other_types >= 1, "memory profile without allocation profiling");
	IT_CHECK(st.alloc_samples == 0, "samples without allocation profiling");
	for (int i = 0; i < N; i++)
		free(first[i]);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
