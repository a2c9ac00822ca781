/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_utctime.c - util/utctime.h against glibc's gmtime_r and timegm
 * (which the library must not call on its threads, but a test may): every
 * field for a spread of instants from 1600 to 2400, each side of the
 * epoch, leap days and century years included, and the way back.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "util/utctime.h"

static int same(int64_t secs)
{
	time_t t = (time_t)secs;
	struct tm tm;
	if (!gmtime_r(&t, &tm))
		return 1; /* out of glibc's range: nothing to compare */
	ember__utc u;
	ember__utc_from_unix(secs, &u);
	int ok = u.year == (int64_t)tm.tm_year + 1900 && u.mon == tm.tm_mon + 1 &&
		 u.mday == tm.tm_mday && u.hour == tm.tm_hour && u.min == tm.tm_min &&
		 u.sec == tm.tm_sec && ember__utc_to_unix(&u) == secs && (int64_t)timegm(&tm) == secs;
	if (!ok)
		fprintf(stderr, "at %lld: ours %lld-%02d-%02d %02d:%02d:%02d, glibc %d-%02d-%02d "
				"%02d:%02d:%02d, back %lld\n",
			(long long)secs, (long long)u.year, u.mon, u.mday, u.hour, u.min, u.sec,
			tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			(long long)ember__utc_to_unix(&u));
	return ok;
}

int main(void)
{
	/* known instants */
	ember__utc u;
	ember__utc_from_unix(0, &u);
	CHECK(u.year == 1970 && u.mon == 1 && u.mday == 1 && u.hour == 0 && u.min == 0 && u.sec == 0);
	ember__utc_from_unix(-1, &u);
	CHECK(u.year == 1969 && u.mon == 12 && u.mday == 31 && u.hour == 23 && u.min == 59 &&
	      u.sec == 59);
	ember__utc_from_unix(951782400, &u); /* 2000-02-29, a leap day of a 400-year */
	CHECK(u.year == 2000 && u.mon == 2 && u.mday == 29);
	ember__utc_from_unix(1796051045, &u); /* the AWS time of test_s3 */
	CHECK(u.year == 2026 && u.mon == 11 && u.mday == 30 && u.hour == 15 && u.min == 4 &&
	      u.sec == 5);
	/* a prime step through 800 years, every day of 1899-1901 and 2099-2101 */
	const int64_t lo = -11676096000LL, hi = 13569465600LL; /* 1600-01-01, 2400-01-01 */
	int bad = 0;
	for (int64_t s = lo; s < hi && bad < 5; s += 86400LL * 37 + 3607)
		bad += !same(s);
	for (int64_t s = -2240524800LL; s < -2240524800LL + 3 * 366 * 86400LL && bad < 5; s += 86399)
		bad += !same(s);
	for (int64_t s = 4070908800LL; s < 4070908800LL + 3 * 366 * 86400LL && bad < 5; s += 86399)
		bad += !same(s);
	CHECK_EQ_INT(bad, 0);
	return CHECK_DONE();
}
