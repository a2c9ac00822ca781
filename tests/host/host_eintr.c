/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_eintr.c - threads that alternate a little work and a short
 * nanosleep, the pattern most exposed to a sampling signal that arrives
 * just as a thread enters a call the kernel does not restart (the race
 * in docs/design/limits.md). Each thread counts the EINTRs its nanosleep
 * returns and sleeps the rest; the program stops once the threads have
 * seen MIN_EINTR of them together, or after MAX_SECONDS of its own run,
 * and writes "eintr N loops L" to OUT.
 *
 *   host_eintr OUT MIN_EINTR MAX_SECONDS
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 4

static atomic_long eintrs, loops;
static atomic_int stop;
static volatile unsigned sink; /* the work's result: kept */

static void *sleeper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct timespec ts = {0, 200000}, rem;
		while (nanosleep(&ts, &rem) != 0 && errno == EINTR) {
			atomic_fetch_add(&eintrs, 1);
			ts = rem;
		}
		for (unsigned i = 0; i < 20000; i++)
			sink += i;
		atomic_fetch_add(&loops, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: host_eintr OUT MIN_EINTR MAX_SECONDS\n");
		return 2;
	}
	long want = atol(argv[2]), secs = atol(argv[3]);
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, sleeper, NULL) != 0)
			return 1;
	struct timespec t0, now, tick = {0, 50000000};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		while (nanosleep(&tick, &tick) != 0 && errno == EINTR)
			atomic_fetch_add(&eintrs, 1);
		tick = (struct timespec){0, 50000000};
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (atomic_load(&eintrs) < want && now.tv_sec - t0.tv_sec < secs);
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "eintr %ld loops %ld\n", (long)atomic_load(&eintrs), (long)atomic_load(&loops));
	return fclose(f) == 0 ? 0 : 1;
}
