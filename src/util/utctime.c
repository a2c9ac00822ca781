/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utctime.c - the proleptic Gregorian calendar in whole days since the
 * epoch, by 400-year eras of 146097 days (each era starts on March 1st, so
 * that the leap day is the era-year's last day). See utctime.h for why
 * this is not gmtime_r.
 */
#include "util/utctime.h"

/* Floor division for a possibly negative dividend. */
static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

void ember__utc_from_unix(int64_t secs, ember__utc *out)
{
	int64_t days = floor_div(secs, 86400);
	int64_t rem = secs - days * 86400; /* 0..86399 */
	out->hour = (int)(rem / 3600);
	out->min = (int)(rem % 3600 / 60);
	out->sec = (int)(rem % 60);

	int64_t z = days + 719468; /* days since 0000-03-01 */
	int64_t era = floor_div(z, 146097);
	int64_t doe = z - era * 146097;                                      /* 0..146096 */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* 0..399 */
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* 0..365 */
	int64_t mp = (5 * doy + 2) / 153;                                    /* 0..11, March first */
	out->mday = (int)(doy - (153 * mp + 2) / 5 + 1);
	out->mon = (int)(mp < 10 ? mp + 3 : mp - 9);
	out->year = yoe + era * 400 + (out->mon <= 2);
}

int64_t ember__utc_to_unix(const ember__utc *t)
{
	int64_t y = t->year - (t->mon <= 2);
	int64_t era = floor_div(y, 400);
	int64_t yoe = y - era * 400;                                        /* 0..399 */
	int64_t mp = t->mon > 2 ? t->mon - 3 : t->mon + 9;                  /* 0..11 */
	int64_t doy = (153 * mp + 2) / 5 + t->mday - 1;                     /* 0..365 */
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;                /* 0..146096 */
	int64_t days = era * 146097 + doe - 719468;
	return days * 86400 + t->hour * 3600 + t->min * 60 + t->sec;
}
