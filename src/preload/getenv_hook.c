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
 * after libc's and nothing is interposed: docs/design/host.md says what
 * that leaves open.
 *
 * Not covered by any interposer: the C library's own reads through its
 * internal names (TZ in the time functions, the resolver's LOCALDOMAIN and
 * RES_OPTIONS); docs/design/host.md lists them and how we avoid them.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "util/envsnap.h"
#include "util/hotpage.h"

#define EXPORT __attribute__((visibility("default")))

/* <stdlib.h> declares both; exported here. */
EXPORT char *getenv(const char *name);
EXPORT char *secure_getenv(const char *name);

typedef char *(*getenv_fn)(const char *);

static getenv_fn real_getenv EMBER_HOT_DATA;
static getenv_fn real_secure_getenv EMBER_HOT_DATA;

extern char **environ;

/* Before the next definition is known (a library's constructor that runs
 * before ours): the walk glibc's getenv does. */
static char *walk_environ(const char *name)
{
	size_t n = strlen(name);
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static getenv_fn next(getenv_fn *slot, const char *sym)
{
	getenv_fn f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!f) {
		f = (getenv_fn)dlsym(RTLD_NEXT, sym);
		if (f)
			__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

__attribute__((constructor(101))) static void resolve_getenv(void)
{
	next(&real_getenv, "getenv");
	next(&real_secure_getenv, "secure_getenv");
}

/* Same contract as the C library's: the string belongs to the environment
 * (or to the start-up copy on our threads); not async-signal-safe (as
 * glibc's is not). */
EXPORT char *getenv(const char *name)
{
	if (ember__env_is_own_thread())
		return (char *)ember__getenv(name);
	getenv_fn f = next(&real_getenv, "getenv");
	return f ? f(name) : walk_environ(name);
}

EXPORT char *secure_getenv(const char *name)
{
	if (ember__env_is_own_thread())
		return (char *)ember__secure_getenv(name);
	getenv_fn f = next(&real_secure_getenv, "secure_getenv");
	return f ? f(name) : getauxval(AT_SECURE) ? NULL : walk_environ(name);
}
