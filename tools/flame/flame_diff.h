/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flame_diff.h - the table of `emberprof diff`: for every function, its
 * self share of the total in the base and in the new profiles, the change
 * in percentage points, and whether the change is larger than the noise of
 * sampling.
 *
 * Significance: a function's self samples in each profile are taken as a
 * binomial draw from that profile's samples, and the two are compared with
 * a two-proportion z-test (pooled proportion). Since every function is
 * tested, the threshold is Bonferroni-corrected: a change is significant
 * when its two-sided p-value is below 0.001 divided by the number of
 * functions compared. Sample counts come from a value whose unit is
 * "count" when the profile has one, else the value divided by the period
 * (flame.c).
 *
 * Not async-signal-safe.
 */
#ifndef EMBER_FLAME_DIFF_H
#define EMBER_FLAME_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flame/flame.h"

typedef struct ember__flame_diff_row {
	uint32_t frame;                 /* into the tree's frames */
	double base_pct, new_pct, delta; /* self shares, percent; delta = new - base */
	double z;                        /* the z statistic, signed like delta */
	int significant;
} ember__flame_diff_row;

typedef struct ember__flame_diff {
	ember__flame_diff_row *rows; /* by |delta|, largest first */
	size_t nrows;
	double z_threshold; /* |z| above which a change is significant */
	double base_count, new_count;
} ember__flame_diff;

/* Computes the table of a diff tree (opts.diff). 0 or EMBER_ERR_NOMEM.
 * Free with ember__flame_diff_free. */
int ember__flame_diff_compute(const ember__flame *fl, ember__flame_diff *out);
void ember__flame_diff_free(ember__flame_diff *d);

/* Prints the first n rows; 0 or EMBER_ERR_IO. */
int ember__flame_diff_print(const ember__flame *fl, const ember__flame_diff *d, size_t n,
			    FILE *out);

/* The largest |delta| among significant rows (0 if none). */
double ember__flame_diff_worst(const ember__flame_diff *d);

#endif
