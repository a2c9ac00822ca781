/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_heap_fork.c - fork() while threads allocate under the hook. Four
 * threads allocate and free without pause while the main thread forks 30
 * times; each child allocates and frees (with a thread of its own that
 * starts and exits), frees a block its parent sampled, then exits 0. A
 * child that deadlocked in the allocator is killed by its alarm and fails
 * the test. The parent must go on profiling: its final memory profile is
 * reported and holds the workers' allocations.
 */
#include <signal.h>
#include <sys/wait.h>

#include "it_heap_common.h"

#define FORKS 30

static _Atomic int stop_workers;

__attribute__((noinline)) static void *churn_site(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void *worker(void *arg)
{
	uint32_t rng = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
	void *keep[64] = {0};
	while (!atomic_load(&stop_workers)) {
		rng ^= rng << 13;
		rng ^= rng >> 17;
		rng ^= rng << 5;
		unsigned k = rng % 64;
		free(keep[k]);
		keep[k] = churn_site(16 + rng % 8192);
		if (keep[k])
			memset(keep[k], 1, 16);
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	return NULL;
}

static void *child_thread(void *arg)
{
	for (int i = 0; i < 1000; i++)
		free(malloc(100 + (size_t)i));
	return arg;
}

static void child(void *from_parent)
{
	alarm(20); /* a deadlock becomes SIGALRM */
	for (int i = 0; i < 20000; i++) {
		void *p = malloc(32 + (size_t)(i % 4000));
		if (!p)
			_exit(3);
		free(p);
	}
	pthread_t t;
	if (pthread_create(&t, NULL, child_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
		_exit(4);
	free(from_parent);
	_exit(0);
}

int main(void)
{
	it_heap_require_hook();
	it_heap_cap cap = {0};
	ember_agent *a = it_heap_build(&cap, 256 * 1024);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	pthread_t w[4];
	for (int i = 0; i < 4; i++)
		IT_CHECK(pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)(i + 1)) == 0, "create");
	for (int i = 0; i < FORKS; i++) {
		void *block = churn_site(1 << 20); /* always sampled at this mean */
		pid_t pid = fork();
		IT_CHECK(pid >= 0, "fork");
		if (pid == 0)
			child(block);
		int status;
		IT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		IT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			 "child %d: %s %d", i, WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		free(block);
		struct timespec d = {0, 20 * 1000000};
		nanosleep(&d, NULL);
	}
	atomic_store(&stop_workers, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(w[i], NULL);
	ember_stats st;
	ember_running_stats(run, &st);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	IT_CHECK(cap.n >= 1 && cap.w[cap.n - 1].final, "no final memory profile");
	double churn = 0;
	for (size_t i = 0; i < cap.n; i++) {
		ember__profile *p = it_decode(&cap.w[i]);
		churn += it_heap_sum(p, "alloc_objects", "churn_site");
		ember__profile_free(p);
	}
	printf("%d forks, samples %llu (lost %llu), churn_site objects %.0f\n", FORKS,
	       (unsigned long long)st.alloc_samples, (unsigned long long)st.alloc_dropped, churn);
	IT_CHECK(churn > 0, "the workers' allocations are missing");
	for (size_t i = 0; i < cap.n; i++)
		free(cap.w[i].pprof);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
