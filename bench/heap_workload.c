/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap_workload.c - the malloc-heavy workload of bench/heap.sh: THREADS
 * threads each do OPS allocate/free operations on a private table of
 * LIVE slots (free the slot's block, allocate a new one of a random size:
 * 70% 16..128 bytes, 25% 128..1024, 5% 1..16 KiB; write its first and
 * last byte). A fixed amount of work, the same in every run: the sizes
 * come from a seeded xorshift per thread, and stdout gets a checksum that
 * must be identical in every run (the same allocations were made).
 * stderr gets the process's CPU time (getrusage, all threads) measured at
 * the end of main; bench/heap.sh measures the whole process from outside.
 *
 *     ember_bench_heap_workload [THREADS [OPS [LIVE [TOUCH]]]]
 *         (default 4 4000000 4096 0; TOUCH 1 writes every allocated byte)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "heap_common.h"

static long ops = 4000000, live = 4096;
static int touch; /* 1: write every allocated byte, not just two */

/* One per thread, each on its own cache lines: the threads must not share
 * a line they write (they did: four jobs in one line, written at every
 * operation). */
typedef struct job {
	_Alignas(64) uint64_t seed;
	uint64_t sum;
	char pad[48];
} job;

static void *worker(void *arg)
{
	job *j = arg;
	unsigned char **slot = calloc((size_t)live, sizeof(*slot));
	if (!slot)
		abort();
	/* Locals, not j->: the stores through p may alias anything, which
	 * would keep them in memory. */
	uint64_t seed = j->seed, sum = 0;
	for (long i = 0; i < ops; i++) {
		uint64_t r = heap_bench_next(&seed);
		size_t k = (size_t)(r % (uint64_t)live);
		free(slot[k]);
		size_t n = heap_bench_size(heap_bench_next(&seed));
		unsigned char *p = malloc(n);
		if (!p)
			abort();
		if (touch) {
			memset(p, (int)(i & 0x7f), n);
			sum += p[n / 2];
		}
		p[0] = (unsigned char)i;
		p[n - 1] = (unsigned char)n;
		slot[k] = p;
		sum += n + p[0];
	}
	for (long k = 0; k < live; k++)
		free(slot[k]);
	free(slot);
	j->sum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	if (argc > 2)
		ops = atol(argv[2]);
	if (argc > 3)
		live = atol(argv[3]);
	if (argc > 4)
		touch = atoi(argv[4]) != 0;
	if (threads < 1 || threads > 64 || ops < 1 || live < 1) {
		fprintf(stderr, "usage: %s [THREADS [OPS [LIVE [TOUCH]]]]\n", argv[0]);
		return 2;
	}
	pthread_t tid[64];
	job jobs[64];
	for (int t = 0; t < threads; t++) {
		jobs[t] = (job){.seed = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1), .sum = 0};
		if (pthread_create(&tid[t], NULL, worker, &jobs[t]) != 0)
			abort();
	}
	uint64_t sum = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		sum += jobs[t].sum;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	printf("checksum %llu\n", (unsigned long long)sum);
	fprintf(stderr, "cpu_s %.3f\n", cpu);
	return 0;
}
