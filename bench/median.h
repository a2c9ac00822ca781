/* SPDX-License-Identifier: Apache-2.0 */
/*
 * median.h - the median the benchmark programs report (engine_cost.c,
 * nosignal_cost.c, pyroscope_hang.c, sort_faults.c).
 */
#ifndef EMBER_BENCH_MEDIAN_H
#define EMBER_BENCH_MEDIAN_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n >= 1); sorts v in place. */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
