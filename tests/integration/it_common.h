/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_common.h - shared pieces of the integration tests: a CPU workload
 * with a known split, a reporter that keeps every window in memory, and
 * checks on the decoded profiles (our reader, and `go tool pprof`).
 *
 * The workload is compiled with frame pointers (see CMakeLists.txt) and
 * its hot functions use the stack, so that GCC gives them a frame: a
 * frame-pointer unwinder then sees the full chain
 * hot_a <- stage_one <- worker_main <- start_thread.
 */
#ifndef EMBER_IT_COMMON_H
#define EMBER_IT_COMMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"
#include "encode/pprof.h"
#include "read/pprof_read.h"
#include "profile/profile.h"

#define IT_FAIL(...)                                                                \
	do {                                                                        \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                \
		fprintf(stderr, __VA_ARGS__);                                       \
		fprintf(stderr, "\n");                                              \
		exit(1);                                                            \
	} while (0)

#define IT_CHECK(cond, ...)                                                         \
	do {                                                                        \
		if (!(cond))                                                        \
			IT_FAIL(__VA_ARGS__);                                       \
	} while (0)

static __attribute__((unused)) double it_thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static __attribute__((unused)) double it_process_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Identical bodies; noinline and -fno-ipa-icf keep them apart. The
 * volatile array puts them on the stack, which gives them a frame. */
__attribute__((noinline, unused)) static double hot_a(int n)
{
	volatile double acc[2] = {0, 0};
	for (int i = 0; i < n; i++)
		acc[i & 1] += (double)i * 0.5;
	return acc[0] + acc[1];
}

__attribute__((noinline, unused)) static double hot_b(int n)
{
	volatile double acc[2] = {0, 0};
	for (int i = 0; i < n; i++)
		acc[i & 1] += (double)(i ^ 1) * 0.5; /* as many FP operations as hot_a:
						       * qemu emulates each at a cost */
	return acc[0] + acc[1];
}

__attribute__((noinline, unused)) static double stage_one(int n)
{
	volatile double r = hot_a(n);
	return r;
}

__attribute__((noinline, unused)) static double stage_two(int n)
{
	volatile double r = hot_b(n);
	return r;
}

typedef struct it_work {
	double cpu_seconds; /* of this thread */
	double sink;
	double used;        /* set by worker_main: the CPU it used */
} it_work;

/* Read through a volatile so that GCC cannot specialise the hot functions
 * for a constant (which would rename them hot_a.constprop.0). */
static volatile int it_iterations = 20000;

/* Burns cpu_seconds of this thread's CPU time, 3:1 in hot_a:hot_b. */
__attribute__((noinline, unused)) static void *worker_main(void *arg)
{
	it_work *w = arg;
	double start = it_thread_cpu(), end = start + w->cpu_seconds;
	/* Three hot_a calls and one hot_b call per round, hot_b at a random
	 * place: a fixed order can alias with the kernel tick that drives
	 * CPU-time timers and skew the measured split. */
	uint32_t rng = (uint32_t)(uintptr_t)w * 2654435761u + 1;
	while (it_thread_cpu() < end) {
		rng ^= rng << 13;
		rng ^= rng >> 17;
		rng ^= rng << 5;
		unsigned b_at = rng & 3;
		for (unsigned k = 0; k < 4; k++) {
			if (k == b_at)
				w->sink += stage_two(it_iterations);
			else
				w->sink += stage_one(it_iterations);
		}
	}
	w->used = it_thread_cpu() - start;
	return NULL;
}

/* ---- a reporter that keeps everything ---- */

typedef struct it_window {
	uint8_t *pprof;
	size_t len;
	int64_t start_ns, end_ns;
	uint64_t samples;
	uint32_t seq;
	int final;
} it_window;

typedef struct it_capture {
	pthread_mutex_t mu;
	it_window w[4096];
	/* windows filled: stored (release) after the window, so that a test
	 * thread may read n and the windows below it without the lock */
	_Atomic size_t n;
	pthread_t reporter_thread; /* the thread report() ran on */
} it_capture;

static __attribute__((unused)) int it_capture_report(void *ud, const ember_report *r)
{
	it_capture *c = ud;
	pthread_mutex_lock(&c->mu);
	size_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
	if (n < sizeof(c->w) / sizeof(c->w[0])) {
		it_window *w = &c->w[n];
		w->pprof = malloc(r->pprof_len);
		memcpy(w->pprof, r->pprof, r->pprof_len);
		w->len = r->pprof_len;
		w->start_ns = r->start_ns;
		w->end_ns = r->end_ns;
		w->samples = r->samples;
		w->seq = r->seq;
		w->final = r->final;
		c->reporter_thread = pthread_self();
		atomic_store_explicit(&c->n, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static __attribute__((unused)) void it_capture_free(it_capture *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->w[i].pprof);
	c->n = 0;
}

static __attribute__((unused)) ember_reporter it_capture_reporter(it_capture *c)
{
	pthread_mutex_init(&c->mu, NULL);
	ember_reporter r = {.name = "capture", .report = it_capture_report, .userdata = c};
	return r;
}

/* ---- profile queries ---- */

/* Name of the innermost function at a location, or "" if unknown. */
static __attribute__((unused)) const char *it_loc_func(const ember__profile *p, uint32_t loc)
{
	const ember__location *l = &p->locations[loc - 1];
	if (!l->nlines)
		return "";
	return p->functions[l->lines[0].function - 1].name;
}

/* Whether a sample's stack, leaf first, starts with the given names. */
static __attribute__((unused)) int it_stack_starts(const ember__profile *p, const ember__sample *s, const char *const *names,
			   size_t n)
{
	if (s->nlocs < n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(it_loc_func(p, s->locs[i]), names[i]) != 0)
			return 0;
	return 1;
}

static __attribute__((unused)) ember__profile *it_decode(const it_window *w)
{
	ember__profile *p = NULL;
	int rc = ember__pprof_read(w->pprof, w->len, &p);
	IT_CHECK(rc == 0, "our reader rejects window %u: %s", w->seq, ember_last_error());
	return p;
}

/* The CPU (ns) the samples of every captured window weigh. */
static __attribute__((unused)) double it_sampled_cpu_ns(const it_capture *cap)
{
	double total = 0;
	for (size_t i = 0; i < cap->n; i++) {
		ember__profile *p = it_decode(&cap->w[i]);
		for (uint32_t s = 0; s < p->nsamples; s++)
			total += (double)p->samples[s].values[1];
		ember__profile_free(p);
	}
	return total;
}

/* Writes the window to a file and has `go tool pprof` read it. */
static __attribute__((unused)) void it_go_pprof_reads(const it_window *w, const char *must_contain)
{
	char dir[] = "/tmp/ember-it-XXXXXX";
	IT_CHECK(mkdtemp(dir), "mkdtemp");
	char path[256], cmd[1024];
	snprintf(path, sizeof(path), "%s/w%u.pb.gz", dir, w->seq);
	FILE *f = fopen(path, "wb");
	IT_CHECK(f && fwrite(w->pprof, 1, w->len, f) == w->len, "write %s", path);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "HOME=%s GOCACHE=%s/gocache go tool pprof -raw %s 2>&1", dir, dir,
		 path);
	FILE *pp = popen(cmd, "r");
	IT_CHECK(pp, "popen go tool pprof");
	static char out[1 << 20];
	size_t n = fread(out, 1, sizeof(out) - 1, pp);
	out[n] = '\0';
	int st = pclose(pp);
	IT_CHECK(st == 0, "go tool pprof failed on window %u (is golang-go installed?):\n%s", w->seq, out);
	if (must_contain)
		IT_CHECK(strstr(out, must_contain), "go tool pprof output lacks %s:\n%.2000s", must_contain,
			 out);
	unlink(path);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

static __attribute__((unused)) ember_agent *it_build(it_capture *cap, unsigned hz, unsigned interval_ms)
{
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "it") == 0, "builder: %s", ember_last_error());
	IT_CHECK(ember_builder_set_sample_rate(b, hz) == 0, "rate");
	IT_CHECK(ember_builder_set_interval_ms(b, interval_ms) == 0, "interval");
	ember_reporter r = it_capture_reporter(cap);
	IT_CHECK(ember_builder_add_reporter(b, &r) == 0, "reporter");
	IT_CHECK(ember_builder_apply_env(b) == 0, "env: %s", ember_last_error());
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	return a;
}

/* A sample's string label `key`, or NULL. */
static __attribute__((unused)) const char *it_label(const ember__sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].str;
	return NULL;
}

/* Whether a function whose name contains `needle` is on the sample's stack. */
static __attribute__((unused)) int it_stack_has(const ember__profile *p, const ember__sample *s,
						const char *needle)
{
	for (uint32_t i = 0; i < s->nlocs; i++)
		if (strstr(it_loc_func(p, s->locs[i]), needle))
			return 1;
	return 0;
}

#endif
