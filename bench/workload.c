/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workload.c - the CPU-bound program the overhead and RSS benchmarks
 * profile (bench/overhead.sh, bench/abrun.c).
 *
 * THREADS threads (default 4) each run main_loop(), which calls
 * stage_one() three times for every call of stage_two(); stage_one calls
 * work_a() and stage_two calls work_b(). work_a and work_b have identical
 * bodies (a latency-bound integer hash chain), so the true CPU split is
 * 75/25 below two levels of callers, as in the anchor measurements
 * (/work/shared/reference/anchor-measurements.md). The program is built
 * -O2 -fno-omit-frame-pointer -g -fno-ipa-icf (the last so that GCC does
 * not fold the two identical functions into one).
 *
 * The amount of work is fixed by the arguments, not by time, so that a
 * profiled and an unprofiled run do exactly the same work and their CPU
 * times can be compared:
 *
 *     ember_bench_workload [THREADS [CALLS_PER_THREAD [ITERS_PER_CALL]]]
 *
 * The defaults (4 threads, 20000 calls of 62500 iterations) take about
 * 2.5 CPU-seconds per thread on the 2-vCPU machines the benchmarks were
 * written on. It prints a checksum (so the work cannot be optimized away)
 * and nothing else.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct job {
	long calls;
	long iters;
	uint64_t seed;
	uint64_t result;
} job;

/* The two leaves: the same body, called 3:1. */
__attribute__((noinline, noclone)) static uint64_t work_a(uint64_t x, long iters)
{
	for (long i = 0; i < iters; i++) {
		x ^= x >> 31;
		x *= 0x9e3779b97f4a7c15ULL;
		x += (uint64_t)i;
	}
	return x;
}

__attribute__((noinline, noclone)) static uint64_t work_b(uint64_t x, long iters)
{
	for (long i = 0; i < iters; i++) {
		x ^= x >> 31;
		x *= 0x9e3779b97f4a7c15ULL;
		x += (uint64_t)i;
	}
	return x;
}

__attribute__((noinline, noclone)) static uint64_t stage_one(uint64_t x, long iters)
{
	return work_a(x, iters) + 1;
}

__attribute__((noinline, noclone)) static uint64_t stage_two(uint64_t x, long iters)
{
	return work_b(x, iters) + 2;
}

__attribute__((noinline, noclone)) static uint64_t main_loop(uint64_t x, long calls, long iters)
{
	for (long c = 0; c < calls; c++)
		x = (c % 4 == 3) ? stage_two(x, iters) : stage_one(x, iters);
	return x;
}

static void *thread_main(void *arg)
{
	job *j = arg;
	j->result = main_loop(j->seed, j->calls, j->iters);
	return NULL;
}

static long arg_or(int argc, char **argv, int i, long def)
{
	if (argc <= i)
		return def;
	char *end;
	long v = strtol(argv[i], &end, 10);
	if (*end || v <= 0) {
		fprintf(stderr, "ember_bench_workload: argument %d (%s) must be a positive integer\n", i,
			argv[i]);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long nthreads = arg_or(argc, argv, 1, 4);
	long calls = arg_or(argc, argv, 2, 20000);
	long iters = arg_or(argc, argv, 3, 62500);
	if (nthreads > 256) {
		fprintf(stderr, "ember_bench_workload: at most 256 threads\n");
		return 2;
	}
	job jobs[256];
	pthread_t th[256];
	for (long i = 0; i < nthreads; i++) {
		jobs[i] = (job){.calls = calls, .iters = iters, .seed = 0x1234567ULL + (uint64_t)i};
		if (pthread_create(&th[i], NULL, thread_main, &jobs[i]) != 0) {
			fprintf(stderr, "ember_bench_workload: pthread_create failed\n");
			return 1;
		}
	}
	uint64_t sum = 0;
	for (long i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		sum ^= jobs[i].result;
	}
	printf("checksum %016llx\n", (unsigned long long)sum);
	return 0;
}
