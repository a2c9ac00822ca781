/* SPDX-License-Identifier: Apache-2.0 */
/*
 * getenv_hook.c - getenv and secure_getenv in libemberprof.so, so that the
 * libraries emberprof's threads call read the environment the program
 * started with, never the live one.
 *
 * glibc's getenv walks the environ array with no lock, and setenv,
 * unsetenv and clearenv on another thread may move that array and free
 * the old one under the walk. Our own code reads the start-up copy
 * (util/envsnap.h), but the libraries it loads and calls read variables
 * themselves: libcurl (proxies, on every transfer), OpenSSL (OPENSSL_CONF,
 * OPENSSL_ia32cap), GnuTLS, nettle and p11-kit in their initialization,
 * libdw's debuginfod client. Where the agent starts lazily on a helper
 * thread (an image exec'd in the profiled tree, a fork child:
 * fork_child.c), those libraries are loaded and initialized there while
 * the program runs; host.test_envstress saw such a process die of it
 * (SIGSEGV in getenv under OpenSSL's initialization, the program's thread
 * in clearenv).
 *
 * So on a thread marked as ours (ember__env_own_thread: the agent's
 * threads, the fork helper, threads they create), these answer from the
 * copy; on every other thread they are the next definition's (the C
 * library's), unchanged. Preloaded or linked ahead of libc, the library's
 * definitions come first in the symbol search order, so the libraries'
 * calls reach them. Loaded by `emberprof attach` (dlopen), they come
 * after libc's and nothing is interposed: docs/design/fork-and-exec.md
 * says what that leaves open.
 *
 * glibc's time functions read TZ through its internal getenv, which no
 * interposer reaches: gmtime_r and gmtime at their first call in a
 * process (they load the zone for its leap seconds), and OpenSSL calls
 * gmtime_r on the uploader thread to check a certificate's dates.
 * host.test_envstress saw that crash too (SIGSEGV in getenv under
 * tzset_internal under OPENSSL_gmtime, the program's thread in setenv),
 * in a program that had not called a time function itself. So gmtime_r
 * and gmtime are here as well: on our threads they convert UTC without
 * any zone (util/utctime.h: what glibc gives for every zone but the
 * "right/" ones, whose leap seconds are not applied on our threads), on
 * the program's threads they are the C library's. The resolver's own reads
 * (LOCALDOMAIN, RES_OPTIONS) remain: docs/design/fork-and-exec.md.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <errno.h>
#include <limits.h>
#include <time.h>

#include "preload/nextsym.h"
#include "util/envsnap.h"
#include "util/hotpage.h"
#include "util/utctime.h"

#define EXPORT __attribute__((visibility("default")))

/* <stdlib.h> and <time.h> declare them; exported here. */
EXPORT char *getenv(const char *name);
EXPORT char *secure_getenv(const char *name);
EXPORT struct tm *gmtime_r(const time_t *t, struct tm *tm);
EXPORT struct tm *gmtime(const time_t *t);

typedef char *(*getenv_fn)(const char *);
typedef struct tm *(*gmtime_r_fn)(const time_t *, struct tm *);
typedef struct tm *(*gmtime_fn)(const time_t *);

/* The next definitions (the C library's), found at the first call or by
 * the constructor, whichever comes first. */
static void *real_getenv EMBER_HOT_DATA;
static void *real_secure_getenv EMBER_HOT_DATA;
static void *real_gmtime_r EMBER_HOT_DATA;
static void *real_gmtime EMBER_HOT_DATA;

extern char **environ;

/* Before the next definition is known (a library's constructor that runs
 * before ours): the walk glibc's getenv does, over the live array. */
static char *walk_environ(const char *name)
{
	return (char *)ember__env_find(environ, name);
}

__attribute__((constructor(101))) static void resolve_getenv(void)
{
	ember__next_sym(&real_getenv, "getenv");
	ember__next_sym(&real_secure_getenv, "secure_getenv");
	ember__next_sym(&real_gmtime_r, "gmtime_r");
	ember__next_sym(&real_gmtime, "gmtime");
}

/* Same contract as the C library's: the string belongs to the environment
 * (or to the start-up copy on our threads); not async-signal-safe (as
 * glibc's is not). */
EXPORT char *getenv(const char *name)
{
	if (ember__env_is_own_thread())
		return (char *)ember__getenv(name);
	getenv_fn f = (getenv_fn)ember__next_sym(&real_getenv, "getenv");
	return f ? f(name) : walk_environ(name);
}

EXPORT char *secure_getenv(const char *name)
{
	if (ember__env_is_own_thread())
		return (char *)ember__secure_getenv(name);
	getenv_fn f = (getenv_fn)ember__next_sym(&real_secure_getenv, "secure_getenv");
	return f ? f(name) : getauxval(AT_SECURE) ? NULL : walk_environ(name);
}

/* UTC broken down as glibc's gmtime_r does it, without a zone. NULL and
 * EOVERFLOW when the year does not fit an int. */
static struct tm *utc_tm(time_t t, struct tm *tm)
{
	ember__utc u;
	ember__utc_from_unix((int64_t)t, &u);
	if (u.year - 1900 > INT_MAX || u.year - 1900 < INT_MIN) {
		errno = EOVERFLOW;
		return NULL;
	}
	ember__utc jan1 = {u.year, 1, 1, 0, 0, 0};
	int64_t day = ((int64_t)t - (int64_t)u.hour * 3600 - u.min * 60 - u.sec) / 86400;
	int64_t wday = (day + 4) % 7; /* 1970-01-01 was a Thursday */
	memset(tm, 0, sizeof(*tm));
	tm->tm_year = (int)(u.year - 1900);
	tm->tm_mon = u.mon - 1;
	tm->tm_mday = u.mday;
	tm->tm_hour = u.hour;
	tm->tm_min = u.min;
	tm->tm_sec = u.sec;
	tm->tm_wday = (int)(wday < 0 ? wday + 7 : wday);
	tm->tm_yday = (int)(day - ember__utc_to_unix(&jan1) / 86400);
	tm->tm_isdst = 0;
	tm->tm_gmtoff = 0;
	tm->tm_zone = "GMT";
	return tm;
}

/* Same contract as the C library's; *tm is the caller's. Not
 * async-signal-safe (as glibc's is not). */
EXPORT struct tm *gmtime_r(const time_t *t, struct tm *tm)
{
	if (ember__env_is_own_thread())
		return utc_tm(*t, tm);
	gmtime_r_fn f = (gmtime_r_fn)ember__next_sym(&real_gmtime_r, "gmtime_r");
	return f ? f(t, tm) : utc_tm(*t, tm);
}

/* On our threads, a buffer of the thread's own rather than glibc's one
 * static struct (which the program's threads share). */
static __thread struct tm t_gmtime_buf __attribute__((tls_model("initial-exec")));

EXPORT struct tm *gmtime(const time_t *t)
{
	if (ember__env_is_own_thread())
		return utc_tm(*t, &t_gmtime_buf);
	gmtime_fn g = (gmtime_fn)ember__next_sym(&real_gmtime, "gmtime");
	return g ? g(t) : utc_tm(*t, &t_gmtime_buf);
}
