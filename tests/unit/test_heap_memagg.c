/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_heap_memagg.c - the agent side of allocation profiling without the
 * malloc hook (so it runs under AddressSanitizer too): per-stack sums,
 * the memory profile they become (four sample types, read back from the
 * encoded pprof), and a heap profile source (the interface the jemalloc
 * backend plugs into) driving whole windows through ember__heapprof.
 */
#include <stdlib.h>

#include "check.h"
#include "encode/pprof.h"
#include "read/pprof_read.h"
#include "heap/heapprof.h"
#include "heap/sampler.h"

static ember__profile *roundtrip(const ember__profile *p)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	CHECK(ember__pprof_encode(p, &buf, &len) == 0);
	ember__profile *q = NULL;
	CHECK(ember__pprof_read(buf, len, &q) == 0);
	free(buf);
	return q;
}

static int64_t value_of(const ember__profile *p, uint64_t leaf_addr, int k)
{
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const ember__sample *s = &p->samples[i];
		if (s->nlocs && p->locations[s->locs[0] - 1].address == leaf_addr)
			return s->values[k];
	}
	return -1;
}

static void test_memagg_profile(void)
{
	ember__window_cfg cfg = {.hz = 100};
	ember__memagg m;
	ember__memagg_init(&m);
	uint64_t a[] = {0x1000, 0x2000, 0x3000}, b[] = {0x1100, 0x2000, 0x3000}, z[] = {0x1200};
	double va[4] = {10.4, 1040.0, 2.0, 200.0}, vb[4] = {1.0, 32.0, 0, 0}, vz[4] = {0.2, 0.3, 0, 0};
	CHECK(ember__memagg_add(&m, a, 3, va) == 0);
	CHECK(ember__memagg_add(&m, a, 3, va) == 0); /* same stack: summed */
	CHECK(ember__memagg_add(&m, b, 3, vb) == 0);
	CHECK(ember__memagg_add(&m, z, 1, vz) == 0); /* rounds to all zeros: left out */
	CHECK(m.n == 3 && m.samples == 4);
	CHECK(ember__memagg_find(&m, ember__heap_stack_hash(b, 3)) != NULL);
	ember__profile *p = NULL;
	CHECK(ember__memagg_profile(&m, NULL, &cfg, 4096, 1000, 2000, &p) == 0);
	ember__profile *q = roundtrip(p);
	CHECK(q->nvalues == 4);
	CHECK_EQ_STR(q->sample_type[0].type, "alloc_objects");
	CHECK_EQ_STR(q->sample_type[0].unit, "count");
	CHECK_EQ_STR(q->sample_type[1].type, "alloc_space");
	CHECK_EQ_STR(q->sample_type[1].unit, "bytes");
	CHECK_EQ_STR(q->sample_type[2].type, "inuse_objects");
	CHECK_EQ_STR(q->sample_type[3].type, "inuse_space");
	CHECK_EQ_STR(q->default_sample_type, "inuse_space");
	CHECK_EQ_STR(q->period_type.type, "space");
	CHECK(q->period == 4096);
	CHECK(q->nsamples == 2);
	CHECK(value_of(q, 0x1000, 0) == 21);   /* 20.8 rounded */
	CHECK(value_of(q, 0x1000, 1) == 2080);
	CHECK(value_of(q, 0x1000, 3) == 400);
	CHECK(value_of(q, 0x1100, 1) == 32);
	CHECK(value_of(q, 0x1200, 0) == -1);
	ember__profile_free(q);
	ember__profile_free(p);
	ember__memagg_release(&m);
}

/* The agent's defaults, a mean of 64 KiB, no log. */
static ember__heap_cfg heap_cfg(void)
{
	return (ember__heap_cfg){.alloc_mean = 65536, .max_depth = 128, .window = {.hz = 100}};
}

/* A source standing in for the jemalloc backend. */
typedef struct fake_src {
	int started, collected, stopped, destroyed;
	uint64_t mean;
} fake_src;

static int fake_start(void *ud, uint64_t mean)
{
	fake_src *f = ud;
	f->started++;
	f->mean = mean;
	return 0;
}

static int fake_collect(void *ud, int64_t start_ns, int64_t end_ns, ember__memagg *out)
{
	fake_src *f = ud;
	f->collected++;
	CHECK(end_ns > start_ns);
	uint64_t pcs[] = {0x4000, 0x5000};
	double v[4] = {3, 300, 1, 100};
	return ember__memagg_add(out, pcs, 2, v);
}

static void fake_stop(void *ud)
{
	((fake_src *)ud)->stopped++;
}

static void fake_destroy(void *ud)
{
	((fake_src *)ud)->destroyed++;
}

static void test_source_windows(void)
{
	ember__heap_cfg cfg = heap_cfg();
	fake_src f = {0};
	ember__heap_source src = {"fake", &f, 0, fake_start, fake_collect, fake_stop, fake_destroy};
	ember__heapprof *hp = NULL;
	CHECK(ember__heapprof_add_source(&hp, &src) == 0);
	CHECK(ember__heapprof_start(&hp, &cfg, 1) == 0);
	CHECK(f.started == 1 && f.mean == 65536);
	CHECK(ember__heapprof_hooked(hp));
	for (int w = 0; w < 2; w++) {
		ember__heapprof_drain(hp, 2000 + w * 1000);
		ember__profile *p = NULL;
		uint64_t n = 99;
		CHECK(ember__heapprof_window(hp, NULL, &cfg, 1000 + w * 1000, 2000 + w * 1000, w == 1, &p,
					     &n) == 0);
		CHECK(p != NULL);
		CHECK(n == 0); /* no hook samples */
		if (p) {
			CHECK(p->nsamples == 1 && p->samples[0].values[1] == 300 &&
			      p->samples[0].values[3] == 100);
			CHECK(p->time_nanos == 1000 + w * 1000 && p->duration_nanos == 1000);
		}
		ember__profile_free(p);
		const ember__heap_event *ev;
		size_t nev;
		ember__heapprof_events(hp, &ev, &nev);
		CHECK(nev == 0);
	}
	CHECK(f.collected == 2);
	ember__heapprof_detach(hp);
	ember__heapprof_stop(hp);
	CHECK(f.stopped == 1);
	ember__heap_stats st;
	ember__heapprof_stats(hp, &st);
	CHECK(st.sampled == 0 && st.dropped_full == 0);
	ember__heapprof_free(hp);
	CHECK(f.destroyed == 1);
}

static void test_empty_window_not_reported(void)
{
	ember__heap_cfg cfg = heap_cfg();
	ember__heapprof *hp = NULL;
	CHECK(ember__heapprof_start(&hp, &cfg, 0) == 0);
	ember__profile *p = NULL;
	uint64_t n = 0;
	CHECK(ember__heapprof_window(hp, NULL, &cfg, 0, 1000, 0, &p, &n) == 0);
	CHECK(p == NULL); /* nothing in it and not final */
	CHECK(ember__heapprof_window(hp, NULL, &cfg, 1000, 2000, 1, &p, &n) == 0);
	CHECK(p != NULL && p->nsamples == 0); /* the final window always is */
	ember__profile_free(p);
	ember__heapprof_free(hp);
}

/* An exclusive source (jemalloc's own sampling) keeps the hook off. */
static void test_exclusive_source(void)
{
	ember__heap_cfg cfg = heap_cfg();
	fake_src f = {0};
	ember__heap_source src = {"fake", &f, EMBER_HEAP_SOURCE_EXCLUSIVE, fake_start, fake_collect,
				  fake_stop, fake_destroy};
	ember__heapprof *hp = NULL;
	CHECK(ember__heapprof_add_source(&hp, &src) == 0);
	CHECK(ember__heapprof_start(&hp, &cfg, 0) == 0);
	CHECK(!ember__heapprof_hooked(hp));
	ember__heapprof_drain(hp, 2000); /* no ring: nothing to do */
	ember__profile *p = NULL;
	uint64_t n = 0;
	CHECK(ember__heapprof_window(hp, NULL, &cfg, 1000, 2000, 1, &p, &n) == 0);
	CHECK(p && p->nsamples == 1 && f.collected == 1);
	ember__profile_free(p);
	ember__heapprof_free(hp);
	CHECK(f.stopped == 1 && f.destroyed == 1);
}

int main(void)
{
	RUN(test_memagg_profile);
	RUN(test_source_windows);
	RUN(test_empty_window_not_reported);
	RUN(test_exclusive_source);
	return CHECK_DONE();
}
