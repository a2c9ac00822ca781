/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_heap_sampler.c - the arithmetic of allocation sampling
 * (src/heap/sampler.c) and the allocation options' parsers.
 *
 * Unbiasedness is checked by running the hook's own algorithm (an
 * exponential countdown over the byte stream, redrawn after each sample)
 * over a known allocation stream, and comparing the unsampled estimates
 * with the truth. Under a Poisson process each allocation of s bytes is
 * sampled independently with p = 1 - exp(-s/mean), so the estimate of N
 * allocations of s bytes, sum(B_i) * s / p, has mean N s and variance
 * N s^2 (1 - p) / p. Each check allows 5 standard deviations: a correct
 * sampler fails one with probability under 1e-6, and a 3% bias (about
 * what a sampler that ignored the scaling for small objects, or drew from
 * a wrong distribution, would show) exceeds the band by far at these N.
 * The generator is seeded, so the test is also reproducible.
 */
#include <math.h>
#include <stdlib.h>

#include "agent/agent.h"
#include "heap/heapprof.h"
#include "check.h"
#include "heap/sampler.h"

/* The hook's algorithm (hook.c: account/slow) on a synthetic stream. */
typedef struct sim {
	uint64_t rng, mean;
	int64_t left;
} sim;

static int sim_take(sim *s, uint64_t size)
{
	if ((s->left -= (int64_t)size) >= 0)
		return 0;
	s->left = ember__heap_draw(&s->rng, s->mean);
	return 1;
}

static void check_unbiased(uint64_t mean, const uint64_t *sizes, size_t nsizes, uint64_t n_each)
{
	sim s = {0x1234567887654321ULL ^ mean, mean, 0};
	s.left = ember__heap_draw(&s.rng, mean);
	double est_bytes[8] = {0}, est_objs[8] = {0};
	for (uint64_t i = 0; i < n_each; i++)
		for (size_t k = 0; k < nsizes; k++)
			if (sim_take(&s, sizes[k])) {
				double f = ember__heap_unsample(sizes[k], mean);
				est_objs[k] += f;
				est_bytes[k] += f * (double)sizes[k];
			}
	for (size_t k = 0; k < nsizes; k++) {
		double p = -expm1(-(double)sizes[k] / (double)mean);
		double truth = (double)n_each * (double)sizes[k];
		double sd = sqrt((double)n_each * (double)sizes[k] * (double)sizes[k] * (1 - p) / p);
		double err = fabs(est_bytes[k] - truth);
		if (err > 5 * sd + 1e-9 * truth)
			fprintf(stderr, "mean %llu size %llu: estimate %.0f, truth %.0f, sd %.0f\n",
				(unsigned long long)mean, (unsigned long long)sizes[k], est_bytes[k],
				truth, sd);
		CHECK(err <= 5 * sd + 1e-9 * truth);
		double osd = sd / (double)sizes[k];
		CHECK(fabs(est_objs[k] - (double)n_each) <= 5 * osd + 1e-9 * (double)n_each);
	}
}

static void test_unbiased_default_mean(void)
{
	/* Small objects (p ~ 3e-5) to ones larger than the mean (p ~ 0.98). */
	static const uint64_t sizes[] = {16, 1000, 64 * 1024, 2 * 1024 * 1024};
	check_unbiased(EMBER_HEAP_DEFAULT_MEAN, sizes, 4, 2000000);
}

static void test_unbiased_small_mean(void)
{
	static const uint64_t sizes[] = {1, 32, 96, 4096};
	check_unbiased(128, sizes, 4, 500000);
}

static void test_draw_is_exponential(void)
{
	/* Mean and the fraction above the mean (e^-1) of many draws. */
	uint64_t rng = 42;
	const uint64_t mean = 1000000;
	const int n = 400000;
	double sum = 0;
	int above = 0;
	for (int i = 0; i < n; i++) {
		int64_t x = ember__heap_draw(&rng, mean);
		CHECK(x >= 0);
		sum += (double)x;
		above += x > (int64_t)mean;
	}
	/* sd of the mean of n Exp(m) draws: m / sqrt(n); of a fraction: sqrt(q(1-q)/n). */
	CHECK(fabs(sum / n - (double)mean) < 5.0 * (double)mean / sqrt(n));
	double q = exp(-1.0);
	CHECK(fabs((double)above / n - q) < 5.0 * sqrt(q * (1 - q) / n));
	CHECK(ember__heap_draw(&rng, 1) == 0);
	CHECK(ember__heap_draw(&rng, 0) == 0);
}

static void test_unsample_factor(void)
{
	CHECK(fabs(ember__heap_unsample(512 * 1024, 512 * 1024) - 1.0 / (1.0 - exp(-1.0))) < 1e-12);
	/* Tiny objects: ~mean/size. */
	CHECK(fabs(ember__heap_unsample(1, 1u << 20) - (double)(1u << 20)) < 1.0);
	/* Huge objects are always sampled: factor ~1. */
	CHECK(fabs(ember__heap_unsample(1ull << 40, 512 * 1024) - 1.0) < 1e-12);
	CHECK(ember__heap_unsample(100, 1) == 1.0);
	CHECK(ember__heap_unsample(0, 4096) == 1.0);
}

/* Our 1 - e^-x against libm's -expm1(-x): relative error within a few
 * ulps from 1e-300 to where it is 1, across the two methods' border. */
static void test_one_minus_exp_neg(void)
{
	double worst = 0, at = 0;
	for (double x = 1e-300; x < 800; x *= 1.01) {
		double want = -expm1(-x), got = ember__one_minus_exp_neg(x);
		double rel = fabs(got - want) / want;
		if (rel > worst)
			worst = rel, at = x;
	}
	for (double x = 0.45; x < 0.55; x += 1e-4) { /* series / range reduction */
		double want = -expm1(-x), rel = fabs(ember__one_minus_exp_neg(x) - want) / want;
		if (rel > worst)
			worst = rel, at = x;
	}
	if (worst > 8e-16)
		fprintf(stderr, "worst relative error %g at x = %g\n", worst, at);
	CHECK(worst <= 8e-16);
	CHECK(ember__one_minus_exp_neg(0) == 0);
	CHECK(ember__one_minus_exp_neg(-1) == 0);
	CHECK(ember__one_minus_exp_neg(1e6) == 1.0);
}

static void test_stack_hash(void)
{
	uint64_t a[] = {1, 2, 3}, b[] = {1, 2, 4};
	CHECK(ember__heap_stack_hash(a, 3) == ember__heap_stack_hash(a, 3));
	CHECK(ember__heap_stack_hash(a, 3) != ember__heap_stack_hash(b, 3));
	CHECK(ember__heap_stack_hash(a, 2) != ember__heap_stack_hash(a, 3));
	CHECK(ember__heap_stack_hash(a, 0) != 0);
}

static void test_parse(void)
{
	uint64_t v = 7;
	CHECK(ember__parse_alloc("on", &v) == 0 && v == 512 * 1024);
	CHECK(ember__parse_alloc("1", &v) == 0 && v == 512 * 1024);
	CHECK(ember__parse_alloc("off", &v) == 0 && v == 0);
	CHECK(ember__parse_alloc("0", &v) == 0 && v == 0);
	CHECK(ember__parse_alloc("1m", &v) == 0 && v == 1024 * 1024);
	CHECK(ember__parse_alloc("4096", &v) == 0 && v == 4096);
	CHECK(ember__parse_alloc("512KiB", &v) == 0 && v == 512 * 1024);
	CHECK(ember__parse_alloc("1g", &v) == 0 && v == 1u << 30);
	CHECK(ember__parse_alloc("2g", &v) != 0);
	CHECK(ember__parse_alloc("lots", &v) != 0);
	CHECK(ember__parse_alloc("-5", &v) != 0);
	CHECK(ember__parse_alloc("12q", &v) != 0);
	CHECK(ember__parse_bytes("1", &v) == 0 && v == 1);
	CHECK(ember__parse_bytes("0", &v) != 0);
	CHECK(ember__parse_bytes("", &v) != 0);
}

/* The agent drains faster while the allocation ring fills, and slows
 * down again once it is quiet. */
static void test_drain_interval(void)
{
	const uint32_t slots = 2048;
	int64_t t = EMBER_HEAP_DRAIN_MAX_NS;
	/* Over a quarter full: halved each time, down to the floor. */
	int64_t seen[8];
	for (int i = 0; i < 8; i++)
		seen[i] = t = ember__heap_drain_interval(t, slots / 4 + 1, slots);
	CHECK_EQ_INT(seen[0], EMBER_HEAP_DRAIN_MAX_NS / 2);
	CHECK_EQ_INT(seen[1], EMBER_HEAP_DRAIN_MAX_NS / 4);
	CHECK_EQ_INT(seen[2], EMBER_HEAP_DRAIN_MAX_NS / 8);
	for (int i = 3; i < 8; i++)
		CHECK(seen[i] < seen[i - 1] || seen[i] == EMBER_HEAP_DRAIN_MIN_NS);
	CHECK_EQ_INT(seen[7], EMBER_HEAP_DRAIN_MIN_NS);
	/* Over half full (it may have filled): the floor at once. */
	CHECK_EQ_INT(ember__heap_drain_interval(EMBER_HEAP_DRAIN_MAX_NS, slots / 2 + 1, slots),
		     EMBER_HEAP_DRAIN_MIN_NS);
	CHECK_EQ_INT(ember__heap_drain_interval(EMBER_HEAP_DRAIN_MAX_NS, slots, slots),
		     EMBER_HEAP_DRAIN_MIN_NS);
	/* Between a sixteenth and a quarter: kept. */
	CHECK_EQ_INT(ember__heap_drain_interval(12500000, slots / 4, slots), 12500000);
	CHECK_EQ_INT(ember__heap_drain_interval(12500000, slots / 16, slots), 12500000);
	/* Quiet again: doubled back up to the ceiling. */
	t = EMBER_HEAP_DRAIN_MIN_NS;
	for (int i = 0; i < 8; i++)
		t = ember__heap_drain_interval(t, slots / 16 - 1, slots);
	CHECK_EQ_INT(t, EMBER_HEAP_DRAIN_MAX_NS);
	CHECK_EQ_INT(ember__heap_drain_interval(EMBER_HEAP_DRAIN_MIN_NS, 0, slots),
		     2 * EMBER_HEAP_DRAIN_MIN_NS);
	/* No allocation ring: the agent's usual interval. */
	CHECK_EQ_INT(ember__heapprof_next_drain(NULL, EMBER_HEAP_DRAIN_MIN_NS, 5000),
		     EMBER_HEAP_DRAIN_MAX_NS);
}

static void test_builder_and_env(void)
{
	ember_builder *b = NULL;
	CHECK(ember_builder_new(&b, "t") == 0);
	CHECK(ember_builder_set_alloc(b, 0) == 0);
	CHECK(ember_builder_set_alloc(b, (1ull << 30) + 1) == EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "allocation") != NULL);
	setenv("EMBERPROF_ALLOC", "sometimes", 1);
	CHECK(ember_builder_apply_env(b) == EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "EMBERPROF_ALLOC") != NULL);
	setenv("EMBERPROF_ALLOC", "on", 1);
	setenv("EMBERPROF_ALLOC_SAMPLE_BYTES", "1x", 1);
	CHECK(ember_builder_apply_env(b) == EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "EMBERPROF_ALLOC_SAMPLE_BYTES") != NULL);
	setenv("EMBERPROF_ALLOC_SAMPLE_BYTES", "64k", 1);
	CHECK(ember_builder_apply_env(b) == 0);
	CHECK(b->cfg.alloc_mean == 64 * 1024);
	setenv("EMBERPROF_ALLOC", "off", 1);
	CHECK(ember_builder_apply_env(b) == 0);
	CHECK(b->cfg.alloc_mean == 0);
	unsetenv("EMBERPROF_ALLOC");
	unsetenv("EMBERPROF_ALLOC_SAMPLE_BYTES");
	ember_builder_free(b);
}

int main(void)
{
	RUN(test_unbiased_default_mean);
	RUN(test_unbiased_small_mean);
	RUN(test_draw_is_exponential);
	RUN(test_unsample_factor);
	RUN(test_one_minus_exp_neg);
	RUN(test_stack_hash);
	RUN(test_parse);
	RUN(test_drain_interval);
	RUN(test_builder_and_env);
	return CHECK_DONE();
}
