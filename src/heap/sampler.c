/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler.c - the arithmetic of allocation sampling (sampler.h).
 */
#include "heap/sampler.h"

#include <math.h>

uint64_t ember__heap_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/*
 * ln(u) for u in (0, 1]: u = 2^e * m with m in [1, 2), so ln u = e ln 2 +
 * ln m, and ln m = 2 atanh(z) with z = (m - 1) / (m + 1) in [0, 1/3):
 * 2 (z + z^3/3 + z^5/5 + z^7/7 + z^9/9) is within 2e-6 of it, far below
 * the statistical noise of sampling. No libm on the hook's path.
 */
static double fast_ln(double u)
{
	union {
		double d;
		uint64_t b;
	} v = {.d = u};
	int e = (int)((v.b >> 52) & 0x7ff) - 1023;
	v.b = (v.b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL; /* m in [1, 2) */
	double z = (v.d - 1.0) / (v.d + 1.0), z2 = z * z;
	double lnm = 2.0 * z * (1.0 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 / 9))));
	return (double)e * 0.69314718055994530942 + lnm;
}

int64_t ember__heap_draw(uint64_t *state, uint64_t mean)
{
	if (mean <= 1)
		return 0;
	/* 53 random bits, +1 so that u is in (0, 1]: ln(0) never happens. */
	double u = (double)((ember__heap_rand(state) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double x = -fast_ln(u) * (double)mean;
	if (x > 4.0e18)
		return INT64_C(4000000000000000000);
	return (int64_t)x;
}

double ember__one_minus_exp_neg(double x)
{
	if (!(x > 0))
		return 0.0;
	if (x < 0.5) {
		/* x - x^2/2! + x^3/3! - ..., as x (1 - x/2 (1 - x/3 (1 - ...))):
		 * 18 terms, the last below 1e-17 of the sum. */
		double t = 1.0;
		for (int n = 18; n >= 2; n--)
			t = 1.0 - x / n * t;
		return x * t;
	}
	if (x > 745.0)
		return 1.0;
	/* e^-x = 2^-k e^-r, r = x - k ln 2 in [0, ln 2): 20 terms of e^-r. */
	int k = (int)(x / 0.69314718055994530942);
	double r = x - k * 0.69314718055994530942;
	double e = 1.0;
	for (int n = 20; n >= 1; n--)
		e = 1.0 - r / n * e;
	while (k-- > 0)
		e *= 0.5;
	return 1.0 - e;
}

double ember__heap_unsample(uint64_t size, uint64_t mean)
{
	if (mean <= 1 || size == 0)
		return 1.0;
	double p = ember__one_minus_exp_neg((double)size / (double)mean);
	return p > 0 ? 1.0 / p : 1.0;
}

uint64_t ember__heap_stack_hash(const uint64_t *pcs, uint32_t depth)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ depth;
	for (uint32_t i = 0; i < depth; i++) {
		h ^= pcs[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h ? h : 1;
}
