/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_window.c - from drained samples to a profile: stacks are
 * deduplicated (per thread when thread labels are on), values are the
 * sample count and the summed weights in nanoseconds, callers are looked up at the return
 * address minus one, functions are resolved through the symbolizer and
 * shared, static tags and thread labels are attached; kernel frames (the
 * perf engine's, kernel addresses on the leaf side) go to the
 * [kernel.kallsyms] mapping, named from /proc/kallsyms or one [kernel]
 * frame without it.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "profile/aggregate.h"
#include "profile/window.h"
#include "symbols/kallsyms.h"
#include "check.h"

__attribute__((noinline)) int leaf_fn(int x);
__attribute__((noinline)) int leaf_fn(int x) { return x * 3 + 1; }
__attribute__((noinline)) int caller_fn(int x);
__attribute__((noinline)) int caller_fn(int x) { return leaf_fn(x) + 2; }

static void test_aggregate(void)
{
	ember__agg a;
	ember__agg_init(&a);
	uint64_t s1[] = {1, 2, 3}, s2[] = {1, 2, 4};
	CHECK_EQ_INT(ember__agg_add(&a, 0, s1, 3, NULL, 0, 1), 0);
	CHECK_EQ_INT(ember__agg_add(&a, 0, s1, 3, NULL, 0, 2), 0);
	CHECK_EQ_INT(ember__agg_add(&a, 0, s2, 3, NULL, 0, 1), 0);
	CHECK_EQ_INT(ember__agg_add(&a, 7, s1, 3, NULL, 0, 1), 0); /* another thread */
	CHECK_EQ_INT(ember__agg_add(&a, 0, s1, 2, NULL, 0, 1), 0); /* a prefix is another stack */
	CHECK_EQ_INT(a.n, 4);
	CHECK_EQ_INT(a.samples, 5);
	CHECK_EQ_INT(a.weight, 6);
	CHECK_EQ_INT(a.stacks[0]->count, 2);
	CHECK_EQ_INT(a.stacks[0]->weight, 3);
	for (int i = 0; i < 5000; i++) { /* many distinct stacks: growth */
		uint64_t s[2] = {(uint64_t)i, 99};
		CHECK_EQ_INT(ember__agg_add(&a, 0, s, 2, NULL, 0, 1), 0);
	}
	CHECK_EQ_INT(a.n, 5004);
	CHECK_EQ_INT(ember__agg_set_name(&a, 7, "worker-7"), 0);
	CHECK_EQ_STR(ember__agg_name(&a, 7), "worker-7");
	CHECK(ember__agg_name(&a, 8) == NULL);
	ember__agg_release(&a);
}

/*
 * Mapping 1 is the main executable even when the first sample's leaf is in
 * libc, and an address in no executable mapping (a stack address, a small
 * integer read as a return address) ends the stack there, leaf side kept,
 * without becoming a location.
 */
static void test_main_mapping_and_bogus_frames(void)
{
	ember__symbolizer *sym;
	CHECK_EQ_INT(ember__symbolizer_new(&sym), 0);
	ember__window_cfg cfg = {.hz = 100};
	ember__agg a;
	ember__agg_init(&a);
	int on_stack = 0;
	uint64_t libc_pc = (uint64_t)(uintptr_t)strlen + 1;
	uint64_t ret = (uint64_t)(uintptr_t)caller_fn + 2;
	uint64_t st1[] = {libc_pc, ret, (uint64_t)(uintptr_t)&on_stack + 7, ret};
	uint64_t st2[] = {libc_pc, 0x5f5e0ff};
	ember__agg_add(&a, 0, st1, 4, NULL, 0, 10000000);
	ember__agg_add(&a, 0, st2, 2, NULL, 0, 10000000);
	ember__profile *p;
	CHECK_EQ_INT(ember__window_profile(&a, sym, &cfg, EMBER__PROFILE_CPU, 0, 1, &p), 0);
	CHECK(p->nmappings >= 2);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';
	CHECK_EQ_STR(p->mappings[0].file, exe);
	CHECK_EQ_INT(p->nsamples, 2);
	CHECK_EQ_INT(p->samples[0].nlocs, 2); /* libc leaf, caller_fn; cut at the stack word */
	CHECK_EQ_INT(p->samples[1].nlocs, 1);
	for (uint32_t i = 0; i < p->nlocations; i++)
		CHECK(p->locations[i].mapping != 0); /* every location is in a mapping */
	ember__profile_free(p);
	ember__agg_release(&a);
	ember__symbolizer_free(sym);
}

static const char *func_of(const ember__profile *p, uint32_t loc)
{
	const ember__location *l = &p->locations[loc - 1];
	return l->nlines ? p->functions[l->lines[0].function - 1].name : "";
}

static void test_profile(void)
{
	ember__symbolizer *sym;
	CHECK_EQ_INT(ember__symbolizer_new(&sym), 0);
	ember__window_cfg cfg = {.hz = 250};
	cfg.thread_labels = 1;
	ember__tag tags[] = {{"env", "test"}};
	cfg.tags = tags;
	cfg.ntags = 1;

	ember__agg a;
	ember__agg_init(&a);
	/* A leaf PC inside leaf_fn, and a "return address" into caller_fn:
	 * one byte past its start + 1 so that minus one stays inside. */
	uint64_t leaf = (uint64_t)(uintptr_t)leaf_fn + 1;
	uint64_t ret = (uint64_t)(uintptr_t)caller_fn + 2;
	uint64_t st[] = {leaf, ret};
	ember__agg_add(&a, 11, st, 2, NULL, 0, 4000000);
	ember__agg_add(&a, 11, st, 2, NULL, 0, 3 * 4000000);
	ember__agg_add(&a, 12, st, 2, NULL, 0, 4000000);
	ember__agg_set_name(&a, 11, "alpha");

	ember__profile *p;
	CHECK_EQ_INT(ember__window_profile(&a, sym, &cfg, EMBER__PROFILE_CPU, 1000, 5000, &p), 0);
	CHECK_EQ_INT(p->period, 4000000);
	CHECK_EQ_INT(p->time_nanos, 1000);
	CHECK_EQ_INT(p->duration_nanos, 4000);
	CHECK_EQ_INT(p->nsamples, 2);
	CHECK_EQ_INT(p->nlocations, 2);  /* shared between the two threads */
	CHECK_EQ_INT(p->nfunctions, 2);
	CHECK(p->nmappings >= 1);
	const ember__sample *s = &p->samples[0];
	CHECK_EQ_INT(s->values[0], 2);
	CHECK_EQ_INT(s->values[1], 4 * 4000000);
	CHECK_EQ_STR(func_of(p, s->locs[0]), "leaf_fn");
	CHECK_EQ_STR(func_of(p, s->locs[1]), "caller_fn");
	CHECK_EQ_INT(p->locations[s->locs[1] - 1].address, ret - 1);
	CHECK_EQ_INT(s->nlabels, 3);
	if (s->nlabels == 3) {
		CHECK_EQ_STR(s->labels[0].key, "env");
		CHECK_EQ_STR(s->labels[0].str, "test");
		CHECK_EQ_STR(s->labels[1].key, "thread_id");
		CHECK_EQ_STR(s->labels[1].str, "11");
		CHECK_EQ_STR(s->labels[2].str, "alpha");
	}
	/* name unknown to the aggregate: never "?" (Pyroscope would show it as a thread) */
	CHECK_EQ_STR(p->samples[1].labels[2].str, "thread-12");
	ember__profile_free(p);

	/* Without a symbolizer: addresses only, no functions. */
	CHECK_EQ_INT(ember__window_profile(&a, NULL, &cfg, EMBER__PROFILE_CPU, 0, 1, &p), 0);
	CHECK_EQ_INT(p->nfunctions, 0);
	CHECK_EQ_INT(p->nlocations, 2);
	ember__profile_free(p);
	ember__agg_release(&a);
	ember__symbolizer_free(sym);
}

/* Packs labels the way the handler does. */
static uint32_t pack(uint8_t *dst, const char *const *kv, int n)
{
	uint32_t used = 0;
	for (int i = 0; i < n; i++) {
		size_t kl = strlen(kv[2 * i]), vl = strlen(kv[2 * i + 1]);
		dst[used++] = (uint8_t)kl;
		memcpy(dst + used, kv[2 * i], kl);
		used += (uint32_t)kl;
		dst[used++] = (uint8_t)vl;
		memcpy(dst + used, kv[2 * i + 1], vl);
		used += (uint32_t)vl;
	}
	return used;
}

static const char *label(const ember__sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].str;
	return NULL;
}

static void test_dynamic_labels(void)
{
	ember__window_cfg cfg = {.hz = 100}; /* the agent's default rate */
	ember__tag tags[] = {{"env", "test"}, {"endpoint", "static"}};
	cfg.tags = tags;
	cfg.ntags = 2;
	ember__agg a;
	ember__agg_init(&a);
	uint64_t st[] = {0x1000, 0x2000};
	uint8_t l1[256], l2[256];
	static const char *const kv1[] = {"endpoint", "/checkout", "span", "a1", "endpoint", "/pay"};
	static const char *const kv2[] = {"endpoint", "/cart"};
	uint32_t n1 = pack(l1, kv1, 3), n2 = pack(l2, kv2, 1);
	ember__agg_add(&a, 0, st, 2, l1, n1, 1);
	ember__agg_add(&a, 0, st, 2, l1, n1, 1);
	ember__agg_add(&a, 0, st, 2, l2, n2, 1);
	ember__agg_add(&a, 0, st, 2, NULL, 0, 1);
	CHECK_EQ_INT(a.n, 3); /* same stack, three label sets */
	ember__profile *p;
	CHECK_EQ_INT(ember__window_profile(&a, NULL, &cfg, EMBER__PROFILE_CPU, 0, 1, &p), 0);
	CHECK_EQ_INT(p->nsamples, 3);
	const ember__sample *s = &p->samples[0];
	CHECK_EQ_INT(s->values[0], 2);
	CHECK_EQ_STR(label(s, "endpoint"), "/pay"); /* innermost wins, over the static tag too */
	CHECK_EQ_STR(label(s, "span"), "a1");
	CHECK_EQ_STR(label(s, "env"), "test");
	CHECK_EQ_INT(s->nlabels, 3);
	CHECK_EQ_STR(label(&p->samples[1], "endpoint"), "/cart");
	CHECK_EQ_STR(label(&p->samples[2], "endpoint"), "static");
	ember__profile_free(p);
	ember__agg_release(&a);
}

/*
 * Kernel frames below the user stack: without names (no kallsyms reader)
 * the run of them is one [kernel] frame in the [kernel.kallsyms] mapping,
 * the user frames follow unchanged (the first user frame is not cut for
 * following kernel frames); with the reader, where /proc/kallsyms gives
 * addresses, each kernel frame is a location named as kallsyms names it.
 */
static void test_kernel_frames(void)
{
	ember__symbolizer *sym;
	CHECK_EQ_INT(ember__symbolizer_new(&sym), 0);
	ember__window_cfg cfg = {.hz = 100};
	ember__agg a;
	ember__agg_init(&a);
	uint64_t leaf = (uint64_t)(uintptr_t)leaf_fn + 1;
	uint64_t ret = (uint64_t)(uintptr_t)caller_fn + 2;
	uint64_t kleaf = 0xffffffff81000010ull, kret = 0xffffffff81000123ull;
	uint64_t st[] = {kleaf, kret, leaf, ret};
	ember__agg_add(&a, 0, st, 4, NULL, 0, 10000000);
	ember__profile *p;
	CHECK_EQ_INT(ember__window_profile(&a, sym, &cfg, EMBER__PROFILE_CPU, 0, 1, &p), 0);
	CHECK_EQ_INT(p->nsamples, 1);
	CHECK_EQ_INT(p->samples[0].nlocs, 3); /* [kernel], leaf_fn, caller_fn */
	const ember__location *k = &p->locations[p->samples[0].locs[0] - 1];
	CHECK(k->mapping != 0);
	CHECK_EQ_STR(p->mappings[k->mapping - 1].file, EMBER_KALLSYMS_MAPPING);
	CHECK_EQ_STR(func_of(p, p->samples[0].locs[0]), "[kernel]");
	CHECK_EQ_STR(func_of(p, p->samples[0].locs[1]), "leaf_fn");
	CHECK_EQ_STR(func_of(p, p->samples[0].locs[2]), "caller_fn");
	ember__profile_free(p);

	/* named, where this machine's /proc/kallsyms gives addresses: two
	 * frames, at real functions */
	ember__kallsyms *ks;
	CHECK_EQ_INT(ember__kallsyms_new(&ks), 0);
	if (ember__kallsyms_named(ks)) {
		uint64_t lo, hi;
		ember__kallsyms_range(ks, &lo, &hi);
		CHECK(ember__kallsyms_is_kernel(lo) && hi > lo);
		uint64_t st2[] = {lo + 1, lo + 2, leaf, ret};
		ember__agg_release(&a);
		ember__agg_init(&a);
		ember__agg_add(&a, 0, st2, 4, NULL, 0, 10000000);
		cfg.kallsyms = ks;
		CHECK_EQ_INT(ember__window_profile(&a, sym, &cfg, EMBER__PROFILE_CPU, 0, 1, &p), 0);
		CHECK_EQ_INT(p->samples[0].nlocs, 4);
		const char *want = ember__kallsyms_lookup(ks, lo + 1);
		CHECK(want != NULL);
		CHECK_EQ_STR(func_of(p, p->samples[0].locs[0]), want ? want : "?");
		CHECK_EQ_STR(func_of(p, p->samples[0].locs[2]), "leaf_fn");
		ember__profile_free(p);
	} else {
		printf("named kernel frames not checked: %s\n", ember__kallsyms_why(ks));
	}
	ember__kallsyms_free(ks);
	ember__agg_release(&a);
	ember__symbolizer_free(sym);
}

int main(void)
{
	RUN(test_dynamic_labels);
	RUN(test_aggregate);
	RUN(test_profile);
	RUN(test_main_mapping_and_bogus_frames);
	RUN(test_kernel_frames);
	return CHECK_DONE();
}
