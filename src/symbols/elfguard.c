/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfguard.c - jump points around elfutils calls (see elfguard.h).
 */
#include "symbols/elfguard.h"

#include <errno.h>
#include <error.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct guard {
	sigjmp_buf jb;
	char why[256];
	struct guard *prev;
} guard;

/* The innermost guard of this thread, or NULL. */
static __thread guard *current;

int ember__elfguard_run(int (*fn)(void *), void *arg, char *why, size_t whylen)
{
	guard g;
	g.prev = current;
	g.why[0] = '\0';
	if (sigsetjmp(g.jb, 0)) {
		current = g.prev;
		if (why && whylen)
			snprintf(why, whylen, "%s", g.why);
		return EMBER__ELFGUARD_TRIPPED;
	}
	current = &g;
	int saved = errno;
	errno = 0;
	int rc = fn(arg);
	int oom = errno == ENOMEM;
	current = g.prev;
	if (oom) {
		/* A failed allocation that elfutils returned from (or went on
		 * past) can leave its state poisoned: 0.188's intern_cu leaves a
		 * NULL node in the module's CU tree, and the next lookup in that
		 * module dereferences it (found by tests/faults, elfutils mode).
		 * Treated as a trip: that Dwfl is never used again. */
		if (why && whylen)
			snprintf(why, whylen, "an allocation failed inside elfutils: out of memory");
		return EMBER__ELFGUARD_TRIPPED;
	}
	errno = saved;
	return rc;
}

void ember__elfguard_oom(void)
{
	guard *g = current;
	if (g) {
		snprintf(g->why, sizeof(g->why), "libdw: out of memory");
		siglongjmp(g->jb, 1);
	}
	/* Unguarded: what libdw's own handler does. */
	for (;;)
		error(EXIT_FAILURE, ENOMEM, "libdw");
}

void ember__elfguard_poll(void)
{
	guard *g = current;
	if (g && errno == ENOMEM) {
		snprintf(g->why, sizeof(g->why), "an allocation failed inside elfutils: out of memory");
		siglongjmp(g->jb, 1);
	}
}

void ember__elfguard_assert(const char *assertion, const char *file, unsigned line,
			    const char *function, int errnum)
{
	guard *g = current;
	if (!g)
		return;
	snprintf(g->why, sizeof(g->why), "%s:%u: %s: assertion '%s' failed (errno then: %s)",
		 file ? file : "?", line, function ? function : "?", assertion ? assertion : "?",
		 errnum ? strerror(errnum) : "none");
	siglongjmp(g->jb, 1);
}
