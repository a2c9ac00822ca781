/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_nomalloc.c - proves the signal handler allocates nothing: this
 * program interposes malloc and friends (forwarding to glibc's) and counts
 * every call made while emberprof's handler runs on the calling thread
 * (ember__sig_depth > 0). Sampling at 1 kHz on threads that themselves
 * allocate heavily must produce samples and zero such calls.
 */
#include "it_common.h"

#include <malloc.h>
#include <stdatomic.h>

#include "sample/handler.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static _Atomic unsigned long in_handler_calls;

#define NOTE() \
	do { if (ember__sig_depth > 0) atomic_fetch_add(&in_handler_calls, 1); } while (0)

void *malloc(size_t n) { NOTE(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { NOTE(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { NOTE(); return __libc_realloc(p, n); }
void free(void *p) { NOTE(); __libc_free(p); }
void *memalign(size_t al, size_t n) { NOTE(); return __libc_memalign(al, n); }
void *aligned_alloc(size_t al, size_t n) { NOTE(); return __libc_memalign(al, n); }
int posix_memalign(void **out, size_t al, size_t n)
{
	NOTE();
	void *p = __libc_memalign(al, n);
	if (!p)
		return 12;
	*out = p;
	return 0;
}

static void *allocating_worker(void *arg)
{
	it_work *w = arg;
	double end = it_thread_cpu() + w->cpu_seconds;
	while (it_thread_cpu() < end) {
		void *ptrs[64];
		for (int i = 0; i < 64; i++)
			ptrs[i] = malloc((size_t)(16 + i * 8));
		w->sink += stage_one(it_iterations / 20);
		for (int i = 0; i < 64; i++)
			free(ptrs[i]);
	}
	return NULL;
}

int main(void)
{
	static it_capture cap;
	it_work work[3] = {{.cpu_seconds = 1.0}, {.cpu_seconds = 1.0}, {.cpu_seconds = 1.0}};
	pthread_t th[3];
	ember_agent *a = it_build(&cap, 1000, 500);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, allocating_worker, &work[i]);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	ember_stats st;
	ember_agent_stats(a, &st);
	printf("samples %llu, wall samples %llu (%llu of them without a signal), allocator calls "
	       "inside the handler %lu\n",
	       (unsigned long long)st.samples, (unsigned long long)st.wall_samples,
	       (unsigned long long)st.wall_unsignalled, atomic_load(&in_handler_calls));
	IT_CHECK(st.samples > 100, "the handler must have run");
	/* integration.it_nomalloc_wall runs this with EMBERPROF_WALL set */
	IT_CHECK(!getenv("EMBERPROF_WALL") || st.wall_samples > st.wall_unsignalled + 100,
		 "the handler must have taken wall samples");
	IT_CHECK(atomic_load(&in_handler_calls) == 0, "the signal handler called the allocator");
	it_capture_free(&cap);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
