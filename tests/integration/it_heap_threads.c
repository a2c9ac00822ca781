/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_heap_threads.c - blocks allocated on one thread and freed on
 * another. Four producers allocate blocks of varied sizes (from two call
 * sites) and hand them through a queue to four consumers that free them;
 * threads come and go. Checks:
 *  - every sampled block is found by the free on the other thread: the
 *    live table is empty when all blocks are freed (exact, no statistics),
 *    and the final profile's inuse_space is 0;
 *  - alloc_space estimates the bytes allocated: within 8%, which is over
 *    five standard deviations for the ~8000 samples expected (each sample
 *    stands for at most the mean, so the relative sd is under
 *    1/sqrt(samples) ~ 1.1%);
 *  - the producer sites split 1:1 within the same band (each producer
 *    alternates them), and hold all but 1% of the bytes (the rest:
 *    pthread_create's own allocations).
 */
#include "it_heap_common.h"

#define PRODUCERS 4
#define CONSUMERS 4
#define PER_PRODUCER 40000
#define QCAP 4096

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void *q[QCAP];
	size_t head, tail;
	int producers_left;
} Q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, PRODUCERS};

static _Atomic uint64_t bytes_allocated;

static void push(void *p)
{
	pthread_mutex_lock(&Q.mu);
	while (Q.tail - Q.head == QCAP)
		pthread_cond_wait(&Q.cv, &Q.mu);
	Q.q[Q.tail++ % QCAP] = p;
	pthread_cond_broadcast(&Q.cv);
	pthread_mutex_unlock(&Q.mu);
}

static void *pop(void)
{
	pthread_mutex_lock(&Q.mu);
	while (Q.tail == Q.head && Q.producers_left > 0)
		pthread_cond_wait(&Q.cv, &Q.mu);
	void *p = Q.tail == Q.head ? NULL : Q.q[Q.head++ % QCAP];
	pthread_cond_broadcast(&Q.cv);
	pthread_mutex_unlock(&Q.mu);
	return p;
}

__attribute__((noinline)) static void *site_one(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

__attribute__((noinline)) static void *site_two(size_t n)
{
	void *p = calloc(1, n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void *producer(void *arg)
{
	uint32_t rng = (uint32_t)(uintptr_t)arg * 2654435761u + 7;
	uint64_t mine = 0;
	for (int i = 0; i < PER_PRODUCER; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 17;
		rng ^= rng << 5;
		size_t n = 64 + (rng % 4033); /* 64..4096 bytes */
		void *p = (i & 1) ? site_two(n) : site_one(n);
		IT_CHECK(p, "allocation failed");
		memset(p, 3, n);
		mine += n;
		push(p);
		if (i % 200 == 199) {
			struct timespec d = {0, 5 * 1000000}; /* pace: the ring is drained every 50 ms */
			nanosleep(&d, NULL);
		}
	}
	atomic_fetch_add(&bytes_allocated, mine);
	pthread_mutex_lock(&Q.mu);
	Q.producers_left--;
	pthread_cond_broadcast(&Q.cv);
	pthread_mutex_unlock(&Q.mu);
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	void *p;
	while ((p = pop()))
		free(p);
	return NULL;
}

int main(void)
{
	it_heap_require_hook();
	it_heap_cap cap = {0};
	ember_agent *a = it_heap_build(&cap, 32 * 1024);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	pthread_t prod[PRODUCERS], cons[CONSUMERS];
	for (int i = 0; i < CONSUMERS; i++)
		IT_CHECK(pthread_create(&cons[i], NULL, consumer, NULL) == 0, "pthread_create");
	for (int i = 0; i < PRODUCERS; i++)
		IT_CHECK(pthread_create(&prod[i], NULL, producer, (void *)(uintptr_t)(i + 1)) == 0,
			 "pthread_create");
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(prod[i], NULL);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_join(cons[i], NULL);

	/* Every block is freed: every sampled one must have left the table. */
	ember__livetab *live = ember__heap_live_table();
	IT_CHECK(live, "no live table");
	long long left = (long long)atomic_load(&live->count);
	ember_stats st;
	ember_running_stats(run, &st);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	printf("samples %llu, lost %llu, live overflow %llu, still live %lld\n",
	       (unsigned long long)st.alloc_samples, (unsigned long long)st.alloc_dropped,
	       (unsigned long long)st.alloc_live_overflow, left);
	IT_CHECK(left == 0, "%lld sampled blocks freed on another thread were not found", left);
	IT_CHECK(st.alloc_live_overflow == 0, "live table overflowed");
	IT_CHECK(st.alloc_samples > 1000, "too few samples");

	double alloc = 0, one = 0, two = 0, inuse = 0;
	for (size_t i = 0; i < cap.n; i++) {
		ember__profile *p = it_decode(&cap.w[i]);
		it_heap_no_own_frames(p, 1);
		alloc += it_heap_sum(p, "alloc_space", NULL);
		one += it_heap_sum(p, "alloc_space", "site_one");
		two += it_heap_sum(p, "alloc_space", "site_two");
		if (cap.w[i].final)
			inuse = it_heap_sum(p, "inuse_space", NULL);
		ember__profile_free(p);
	}
	double truth = (double)atomic_load(&bytes_allocated);
	printf("alloc_space %.0f, truth %.0f (%.2f%%); site_one/site_two %.3f; inuse %.0f\n", alloc,
	       truth, 100 * (alloc / truth - 1), one / two, inuse);
	IT_CHECK(inuse == 0, "inuse_space %.0f after every block was freed", inuse);
	/* Elsewhere: only what pthread_create allocates for the threads, and
	 * samples taken before a new thread's stack bounds were known. */
	IT_CHECK(alloc - one - two <= 0.01 * alloc, "%.0f bytes outside the two sites",
		 alloc - one - two);
	IT_CHECK(fabs(one / two - 1) <= 0.08, "sites split %.3f, want 1 +-8%%", one / two);
	if (st.alloc_dropped == 0)
		IT_CHECK(fabs(alloc / truth - 1) <= 0.08, "alloc_space off by more than 8%%");
	else
		IT_CHECK(st.alloc_dropped * 10 < st.alloc_samples, "a tenth of the samples lost");
	for (size_t i = 0; i < cap.n; i++)
		free(cap.w[i].pprof);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
