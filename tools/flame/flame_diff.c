/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flame_diff.c - the significance table of `emberprof diff` (flame_diff.h).
 */
#include "flame/flame_diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/error.h"

/* The z with two-sided p-value alpha under the normal law (bisection). */
static double z_for(double alpha)
{
	double lo = 0, hi = 40;
	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;
		if (erfc(mid / sqrt(2.0)) > alpha)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

static int by_change(const void *a, const void *b)
{
	const ember__flame_diff_row *x = a, *y = b;
	double dx = fabs(x->delta), dy = fabs(y->delta);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

int ember__flame_diff_compute(const ember__flame *fl, ember__flame_diff *out)
{
	memset(out, 0, sizeof(*out));
	double nv = (double)ember__flame_total(fl, 0, 0), bv = (double)ember__flame_total(fl, 1, 0);
	double n2 = fl->total_count[0], n1 = fl->total_count[1];
	out->base_count = n1;
	out->new_count = n2;
	out->rows = calloc(fl->nframes ? fl->nframes : 1, sizeof(*out->rows));
	if (!out->rows)
		return ember__error_oom("diff table");
	for (uint32_t f = 0; f < fl->nframes; f++) {
		const ember__flame_frame *fr = &fl->frames[f];
		if (fr->self_count[0] <= 0 && fr->self_count[1] <= 0 && fr->self_value[0] == 0 &&
		    fr->self_value[1] == 0)
			continue;
		ember__flame_diff_row *r = &out->rows[out->nrows++];
		r->frame = f;
		r->new_pct = nv != 0 ? 100.0 * fr->self_value[0] / nv : 0;
		r->base_pct = bv != 0 ? 100.0 * fr->self_value[1] / bv : 0;
		r->delta = r->new_pct - r->base_pct;
		double x2 = fr->self_count[0], x1 = fr->self_count[1];
		if (n1 > 0 && n2 > 0) {
			double p = (x1 + x2) / (n1 + n2);
			double se = sqrt(p * (1 - p) * (1 / n1 + 1 / n2));
			double d = x2 / n2 - x1 / n1;
			r->z = se > 0 ? d / se : 0;
		}
	}
	out->z_threshold = z_for(0.001 / (double)(out->nrows ? out->nrows : 1));
	for (size_t i = 0; i < out->nrows; i++)
		out->rows[i].significant = fabs(out->rows[i].z) > out->z_threshold;
	qsort(out->rows, out->nrows, sizeof(*out->rows), by_change);
	return 0;
}

void ember__flame_diff_free(ember__flame_diff *d)
{
	free(d->rows);
	memset(d, 0, sizeof(*d));
}

double ember__flame_diff_worst(const ember__flame_diff *d)
{
	double worst = 0;
	for (size_t i = 0; i < d->nrows; i++)
		if (d->rows[i].significant && fabs(d->rows[i].delta) > worst)
			worst = fabs(d->rows[i].delta);
	return worst;
}

int ember__flame_diff_print(const ember__flame *fl, const ember__flame_diff *d, size_t n,
			    FILE *out)
{
	fprintf(out,
		"Self share, new against base (%.0f samples in the base, %.0f in the new; a change "
		"is significant when |z| > %.2f)\n",
		d->base_count, d->new_count, d->z_threshold);
	fprintf(out, "%8s %8s %10s %8s  %-12s %s\n", "base%", "new%", "change", "z", "", "function");
	for (size_t i = 0; i < d->nrows && i < n; i++) {
		const ember__flame_diff_row *r = &d->rows[i];
		const ember__flame_frame *fr = &fl->frames[r->frame];
		const char *mod = fl->strings[fr->module];
		fprintf(out, "%7.2f%% %7.2f%% %+8.2fpp %8.2f  %-12s %s%s%s%s\n", r->base_pct,
			r->new_pct, r->delta, r->z, r->significant ? "significant" : "noise",
			fl->strings[fr->name], *mod ? " (" : "", mod, *mod ? ")" : "");
	}
	return ferror(out) ? ember__error(EMBER_ERR_IO, "cannot write the diff table") : 0;
}
