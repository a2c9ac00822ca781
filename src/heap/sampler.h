/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler.h - the arithmetic of allocation sampling (Poisson sampling by
 * bytes, as Go's runtime and tcmalloc do), shared by the malloc hook and
 * the agent.
 *
 * Sampling points fall on the stream of allocated bytes as a Poisson
 * process with mean spacing `mean` bytes: each thread counts down an
 * exponentially distributed number of bytes, and the allocation that
 * brings the count below zero is sampled, after which a new
 * countdown is drawn. An allocation of s bytes is therefore sampled with
 * probability 1 - exp(-s/mean) whatever happened before it, and scaling a
 * sampled allocation by 1 / (1 - exp(-s/mean)) makes every estimate
 * (objects, bytes) unbiased.
 *
 * ember__heap_draw is async-signal-safe and allocation-free (the hook
 * calls it); the others are pure functions.
 */
#ifndef EMBER_HEAP_SAMPLER_H
#define EMBER_HEAP_SAMPLER_H

#include <stdint.h>

/* The default mean: 512 KiB, as Go (MemProfileRate) and tcmalloc. */
#define EMBER_HEAP_DEFAULT_MEAN (512u * 1024u)

/* One step of a per-thread xorshift64* generator; *state must not be 0. */
uint64_t ember__heap_rand(uint64_t *state);

/*
 * The next countdown: floor(X) for X exponentially distributed with the
 * given mean, from the generator `state` (X = -mean * ln(U), U uniform in
 * (0, 1]); 0 for a mean of 0 or 1. An allocation of s >= 1 bytes is
 * sampled when it takes the countdown below zero: floor(X) < s exactly
 * when X < s, so it is sampled with probability 1 - exp(-s/mean), with
 * no rounding bias even for sizes near the mean's scale. Computed without libm (a short series, error under 2e-6).
 */
int64_t ember__heap_draw(uint64_t *state, uint64_t mean);

/*
 * The factor that unsamples one sampled allocation of `size` bytes:
 * 1 / (1 - exp(-size / mean)). Multiply the object count (1) and the
 * size by it. mean 1 means every allocation was taken: factor 1.
 */
double ember__heap_unsample(uint64_t size, uint64_t mean);

/*
 * 1 - e^-x for x >= 0 (0 for x <= 0), to within a few units in the last
 * place: what -expm1(-x) gives, without libm, which libemberprof.so does
 * not load into every process of a profiled tree for two functions
 * (series for small x, where the difference would cancel; range reduction
 * by ln 2 above). Async-signal-safe (arithmetic only).
 */
double ember__one_minus_exp_neg(double x);

/* The hash the hook and the agent both compute over a sampled stack. */
uint64_t ember__heap_stack_hash(const uint64_t *pcs, uint32_t depth);

#endif
