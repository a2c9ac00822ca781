/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_getenv_hook.c - src/preload/getenv_hook.c, linked into this test:
 * on a thread marked as emberprof's own (ember__env_own_thread), getenv
 * reads the start-up copy and gmtime_r/gmtime convert UTC without glibc
 * (which would read TZ); on the other threads they are the C library's.
 * The own thread's gmtime_r agrees with glibc's on every field (wday,
 * yday, isdst, gmtoff, zone included) from 1600 to 2400.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "util/envsnap.h"

#define NT 4000

static int64_t instants[NT];
static struct tm own_r[NT], own_plain[NT];
static const char *own_env_before, *own_env_after;

static void *own_thread(void *arg)
{
	(void)arg;
	ember__env_own_thread();
	own_env_before = getenv("EMBER_HOOK_TEST");
	/* the program changes its environment: our thread keeps the copy */
	own_env_after = getenv("EMBER_HOOK_TEST");
	for (int i = 0; i < NT; i++) {
		time_t t = (time_t)instants[i];
		if (!gmtime_r(&t, &own_r[i]))
			memset(&own_r[i], 0xff, sizeof(own_r[i]));
		struct tm *p = gmtime(&t);
		if (p)
			own_plain[i] = *p;
	}
	return NULL;
}

static int same_tm(const struct tm *a, const struct tm *b)
{
	return a->tm_year == b->tm_year && a->tm_mon == b->tm_mon && a->tm_mday == b->tm_mday &&
	       a->tm_hour == b->tm_hour && a->tm_min == b->tm_min && a->tm_sec == b->tm_sec &&
	       a->tm_wday == b->tm_wday && a->tm_yday == b->tm_yday &&
	       a->tm_isdst == b->tm_isdst && a->tm_gmtoff == b->tm_gmtoff && a->tm_zone &&
	       b->tm_zone && strcmp(a->tm_zone, b->tm_zone) == 0;
}

static void test_hook(void)
{
	/* 1600-01-01 .. 2400-01-01, spread and around the epoch */
	const int64_t lo = -11676096000LL, hi = 13569465600LL;
	for (int i = 0; i < NT; i++)
		instants[i] = lo + (hi - lo) / NT * i + (i % 7) * 86399;
	instants[0] = 0;
	instants[1] = -1;
	instants[2] = 951782400; /* 2000-02-29 */
	instants[3] = 4107542399LL; /* 2100-02-28T23:59:59 */
	setenv("EMBER_HOOK_TEST", "at start", 1);
	ember__env_snapshot_take();
	setenv("EMBER_HOOK_TEST", "changed", 1);

	pthread_t th;
	CHECK(pthread_create(&th, NULL, own_thread, NULL) == 0);
	pthread_join(th, NULL);
	CHECK_EQ_STR(own_env_before, "at start");
	CHECK_EQ_STR(own_env_after, "at start");
	CHECK_EQ_STR(getenv("EMBER_HOOK_TEST"), "changed"); /* this thread: the live one */

	int bad = 0;
	for (int i = 0; i < NT && bad < 5; i++) {
		time_t t = (time_t)instants[i];
		struct tm libc;
		CHECK(gmtime_r(&t, &libc) != NULL); /* not ours: glibc's */
		if (!same_tm(&own_r[i], &libc) || !same_tm(&own_plain[i], &libc)) {
			fprintf(stderr, "at %lld: ours %d-%d-%d %d:%d:%d wday %d yday %d, glibc "
					"%d-%d-%d %d:%d:%d wday %d yday %d\n",
				(long long)instants[i], own_r[i].tm_year, own_r[i].tm_mon,
				own_r[i].tm_mday, own_r[i].tm_hour, own_r[i].tm_min, own_r[i].tm_sec,
				own_r[i].tm_wday, own_r[i].tm_yday, libc.tm_year, libc.tm_mon,
				libc.tm_mday, libc.tm_hour, libc.tm_min, libc.tm_sec, libc.tm_wday,
				libc.tm_yday);
			bad++;
		}
	}
	CHECK_EQ_INT(bad, 0);
}

int main(void)
{
	RUN(test_hook);
	return CHECK_DONE();
}
