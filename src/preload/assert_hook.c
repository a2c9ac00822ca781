/* SPDX-License-Identifier: Apache-2.0 */
/*
 * assert_hook.c - __assert_fail in libemberprof.so, so that an assertion
 * elfutils fails on an agent thread inside a guarded call ends that call,
 * not the program (src/symbols/elfguard.h says why and when).
 *
 * Every other caller, the program's own assertions first, reaches the C
 * library's __assert_fail unchanged: same message, same abort. The
 * library's definition is looked up before main, so an assertion failing
 * in a signal handler or a vfork child runs no dlsym.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include "symbols/elfguard.h"
#include "util/hotpage.h"

#define EXPORT __attribute__((visibility("default")))

/* <assert.h> declares it only without NDEBUG. */
EXPORT void __assert_fail(const char *assertion, const char *file, unsigned int line,
			  const char *function) __attribute__((noreturn));

typedef void (*assert_fail_fn)(const char *, const char *, unsigned int, const char *);

static assert_fail_fn real_assert_fail EMBER_HOT_DATA;

__attribute__((constructor(101))) static void resolve_assert_fail(void)
{
	real_assert_fail = (assert_fail_fn)dlsym(RTLD_NEXT, "__assert_fail");
}

void __assert_fail(const char *assertion, const char *file, unsigned int line,
		   const char *function)
{
	ember__elfguard_assert(assertion, file, line, function, errno); /* returns if unguarded */
	assert_fail_fn f = real_assert_fail;
	if (!f)
		f = (assert_fail_fn)dlsym(RTLD_NEXT, "__assert_fail");
	if (f)
		f(assertion, file, line, function);
	abort();
}
