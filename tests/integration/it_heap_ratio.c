/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_heap_ratio.c - allocation profiling end to end, in process: two call
 * sites allocate in a known byte ratio (3:1), then half of one site's
 * blocks are freed. The memory profile must show the ratio in
 * alloc_space (within 5%), the same object counts in alloc_objects, and
 * the new ratio (1.5:1) in inuse_space - read both with our pprof reader
 * and with `go tool pprof -sample_index=...`.
 *
 * Statistics: with a sampling mean of 128 bytes, blocks of 96 and 32
 * bytes are sampled with probability 0.53 and 0.22. N = 50000 blocks per
 * site give estimates with relative standard deviations of 0.42% (site a)
 * and 0.84% (site b), so the ratio's is under 1%, and 1.03% after the
 * frees: the 5% band is five standard deviations wide (a false failure
 * under one in a million). The allocations are paced (batches with
 * pauses) so the sample ring, drained every 50 ms, does not fill; losses
 * are counted, do not bias a ratio (the sites interleave), and must stay
 * small. Nothing here depends on timing.
 */
#include "it_heap_common.h"

#define N 50000
#define BATCH 500
#define SIZE_A 96
#define SIZE_B 32

static void *blocks_a[N], *blocks_b[N];

__attribute__((noinline)) static void *site_a(void)
{
	void *p = malloc(SIZE_A);
	__asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call */
	return p;
}

__attribute__((noinline)) static void *site_b(void)
{
	void *p = malloc(SIZE_B);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void check_ratio(const char *what, double a, double b, double want)
{
	IT_CHECK(b > 0, "%s: site_b has nothing", what);
	double r = a / b;
	printf("%s: site_a %.0f, site_b %.0f, ratio %.3f (want %.2f +-5%%)\n", what, a, b, r, want);
	IT_CHECK(fabs(r / want - 1) <= 0.05, "%s: ratio %.3f, want %.2f +-5%%", what, r, want);
}

int main(void)
{
	it_heap_require_hook();
	it_heap_cap cap = {0};
	ember_agent *a = it_heap_build(&cap, 128);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());

	for (int i = 0; i < N; i += BATCH) {
		for (int k = i; k < i + BATCH; k++) {
			blocks_a[k] = site_a();
			blocks_b[k] = site_b();
			memset(blocks_a[k], 1, SIZE_A);
			memset(blocks_b[k], 2, SIZE_B);
		}
		struct timespec d = {0, 20 * 1000000};
		nanosleep(&d, NULL);
	}
	for (int k = 0; k < N; k += 2) { /* half of site a's blocks */
		free(blocks_a[k]);
		blocks_a[k] = NULL;
	}
	ember_stats st;
	ember_running_stats(run, &st);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	printf("allocation samples %llu, lost %llu, live overflow %llu\n",
	       (unsigned long long)st.alloc_samples, (unsigned long long)st.alloc_dropped,
	       (unsigned long long)st.alloc_live_overflow);
	IT_CHECK(st.alloc_samples > (uint64_t)N / 2, "too few samples: %llu",
		 (unsigned long long)st.alloc_samples);
	IT_CHECK(st.alloc_dropped * 5 < st.alloc_samples, "a fifth of the samples were lost");
	IT_CHECK(st.alloc_live_overflow == 0, "live table overflowed");
	IT_CHECK(cap.n >= 1 && cap.w[cap.n - 1].final, "no final memory profile");
	IT_CHECK(cap.other_types >= 1, "the CPU profile was not reported next to it");

	/* Allocations: summed over the windows (one, or two across an hour). */
	double alloc_a = 0, alloc_b = 0, obj_a = 0, obj_b = 0;
	ember__profile *last = NULL;
	for (size_t i = 0; i < cap.n; i++) {
		ember__profile *p = it_decode(&cap.w[i]);
		IT_CHECK(p->nvalues == 4, "memory profile has %u values", p->nvalues);
		IT_CHECK(!strcmp(p->sample_type[1].type, "alloc_space") &&
				 !strcmp(p->sample_type[1].unit, "bytes") &&
				 !strcmp(p->sample_type[3].type, "inuse_space"),
			 "sample types");
		IT_CHECK(p->default_sample_type && !strcmp(p->default_sample_type, "inuse_space"),
			 "default sample type");
		it_heap_no_own_frames(p, 0);
		alloc_a += it_heap_sum(p, "alloc_space", "site_a");
		alloc_b += it_heap_sum(p, "alloc_space", "site_b");
		obj_a += it_heap_sum(p, "alloc_objects", "site_a");
		obj_b += it_heap_sum(p, "alloc_objects", "site_b");
		if (last)
			ember__profile_free(last);
		last = p;
	}
	check_ratio("alloc_space", alloc_a, alloc_b, 3.0);
	check_ratio("alloc_objects", obj_a, obj_b, 1.0);
	if (st.alloc_dropped == 0) {
		/* Unbiased totals too: 5 sd of site b's estimate is 4.2%. */
		IT_CHECK(fabs(alloc_b / ((double)N * SIZE_B) - 1) <= 0.05,
			 "alloc_space of site_b %.0f, truth %d", alloc_b, N * SIZE_B);
		IT_CHECK(fabs(obj_a / N - 1) <= 0.05, "alloc_objects of site_a %.0f, truth %d", obj_a, N);
	}
	/* In use at the end: half of a's blocks, all of b's. */
	double in_a = it_heap_sum(last, "inuse_space", "site_a");
	double in_b = it_heap_sum(last, "inuse_space", "site_b");
	check_ratio("inuse_space", in_a, in_b, 1.5);
	ember__profile_free(last);

	/* The same through go tool pprof. */
	char dir[] = "/tmp/ember-heap-XXXXXX", path[256];
	IT_CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof(path), "%s/final.memory.pb.gz", dir);
	it_heap_write(&cap.w[cap.n - 1], path);
	double ga = it_heap_go_flat(dir, path, "inuse_space", "site_a");
	double gb = it_heap_go_flat(dir, path, "inuse_space", "site_b");
	check_ratio("go tool pprof -sample_index=inuse_space", ga, gb, 1.5);
	if (cap.n == 1) {
		ga = it_heap_go_flat(dir, path, "alloc_space", "site_a");
		gb = it_heap_go_flat(dir, path, "alloc_space", "site_b");
		check_ratio("go tool pprof -sample_index=alloc_space", ga, gb, 3.0);
	}
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	IT_CHECK(system(cmd) == 0, "rm");

	for (int k = 0; k < N; k++) {
		free(blocks_a[k]);
		free(blocks_b[k]);
	}
	for (size_t i = 0; i < cap.n; i++)
		free(cap.w[i].pprof);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
