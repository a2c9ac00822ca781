/* SPDX-License-Identifier: Apache-2.0 */
/*
 * getenv_audit.c - libgetenv_audit.so, a test-only interposer (never
 * installed): preloaded next to libemberprof, it wraps getenv and
 * secure_getenv and records every call made on one of emberprof's own
 * threads (those named "emberprof..." - the agent, uploader, wall-clock
 * and fork helper threads name themselves first thing). Those threads must
 * never read the live environment: glibc's getenv is not safe while a
 * program thread calls setenv/unsetenv (the environ array may be moved and
 * freed under the reader). Everything they need is read from the start-up
 * copy (src/util/envsnap.h) and passed to libcurl explicitly.
 *
 * EMBER_GETENV_AUDIT_LOG=PATH: each such call appends one line
 * "getenv NAME THREAD" followed by the caller's stack (backtrace_symbols_fd)
 * to PATH. Calls of the program's threads are passed through untouched.
 *
 * What it cannot see: calls inside glibc itself (its resolver reads
 * LOCALDOMAIN and RES_OPTIONS through internal symbols), which no
 * interposer reaches; the test resolves no names for that reason. The
 * same holds for TZ, which glibc's time functions read at their first
 * call in a process (gmtime_r, localtime_r, timegm) or at every call
 * (localtime, mktime, strftime, tzset): those functions themselves are
 * wrapped, and a call of one that reaches the C library on our threads,
 * from any caller (our code, libcurl, OpenSSL's certificate checks), is
 * recorded as "tz_getenv FUNCTION THREAD" (host.test_setenv once crashed
 * in getenv under gmtime_r on the agent thread, host.test_envstress under
 * OpenSSL's gmtime_r on the uploader). libemberprof's own gmtime and
 * gmtime_r (src/preload/getenv_hook.c) sit in front of these and answer
 * our threads' calls without the C library.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef char *(*getenv_fn)(const char *);

/* A thread named emberprof* other than a main thread (the emberprof
 * command's own main thread has that name too). */
static int ours(void)
{
	if (syscall(SYS_gettid) == getpid())
		return 0;
	char name[17] = {0};
	if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0)
		return 0;
	return strncmp(name, "emberprof", 9) == 0;
}

/* The log's path, read once before main() (the program may clear its
 * environment later: host_envstress does). */
static char log_path[4096];

__attribute__((constructor)) static void audit_init(void)
{
	const char *p = getenv("EMBER_GETENV_AUDIT_LOG");
	if (p && strlen(p) < sizeof(log_path))
		strcpy(log_path, p);
}

static void record(const char *fn, const char *var)
{
	const char *path = log_path;
	if (!*path)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	char name[17] = {0};
	prctl(PR_GET_NAME, name, 0, 0, 0);
	char line[512];
	size_t n = 0;
	const char *parts[] = {fn, " ", var ? var : "(null)", " ", name, "\n"};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t k = strlen(parts[i]);
		if (k > sizeof(line) - 1 - n)
			k = sizeof(line) - 1 - n;
		memcpy(line + n, parts[i], k);
		n += k;
	}
	(void)!write(fd, line, n);
	void *pcs[16];
	int depth = backtrace(pcs, 16);
	backtrace_symbols_fd(pcs, depth, fd);
	close(fd);
}

/* The wrapped function fn (its libc definition in *real, looked up once)
 * of name, recorded first on our threads. */
static char *audited(const char *fn, getenv_fn *real, const char *name)
{
	if (!*real)
		*real = (getenv_fn)dlsym(RTLD_NEXT, fn);
	if (ours())
		record(fn, name);
	return *real ? (*real)(name) : NULL;
}

EXPORT char *getenv(const char *name)
{
	static getenv_fn real;
	return audited("getenv", &real, name);
}

EXPORT char *secure_getenv(const char *name)
{
	static getenv_fn real;
	return audited("secure_getenv", &real, name);
}

#define TZ_AUDIT(fn)                               \
	do {                                       \
		if (ours())                        \
			record("tz_getenv", fn);   \
	} while (0)
#define REAL(type, fn) static type real_##fn; if (!real_##fn) real_##fn = (type)dlsym(RTLD_NEXT, #fn)

typedef struct tm *(*tm_r_fn)(const time_t *, struct tm *);
typedef struct tm *(*tm_fn)(const time_t *);
typedef time_t (*mk_fn)(struct tm *);
typedef size_t (*strftime_fn)(char *, size_t, const char *, const struct tm *);
typedef void (*tzset_fn)(void);

EXPORT struct tm *gmtime_r(const time_t *t, struct tm *tm)
{
	TZ_AUDIT("gmtime_r");
	REAL(tm_r_fn, gmtime_r);
	return real_gmtime_r(t, tm);
}

EXPORT struct tm *localtime_r(const time_t *t, struct tm *tm)
{
	TZ_AUDIT("localtime_r");
	REAL(tm_r_fn, localtime_r);
	return real_localtime_r(t, tm);
}

EXPORT struct tm *gmtime(const time_t *t)
{
	TZ_AUDIT("gmtime");
	REAL(tm_fn, gmtime);
	return real_gmtime(t);
}

EXPORT struct tm *localtime(const time_t *t)
{
	TZ_AUDIT("localtime");
	REAL(tm_fn, localtime);
	return real_localtime(t);
}

EXPORT time_t timegm(struct tm *tm)
{
	TZ_AUDIT("timegm");
	REAL(mk_fn, timegm);
	return real_timegm(tm);
}

EXPORT time_t mktime(struct tm *tm)
{
	TZ_AUDIT("mktime");
	REAL(mk_fn, mktime);
	return real_mktime(tm);
}

EXPORT size_t strftime(char *s, size_t max, const char *fmt, const struct tm *tm)
{
	TZ_AUDIT("strftime");
	REAL(strftime_fn, strftime);
	return real_strftime(s, max, fmt, tm);
}

EXPORT void tzset(void)
{
	TZ_AUDIT("tzset");
	REAL(tzset_fn, tzset);
	real_tzset();
}
