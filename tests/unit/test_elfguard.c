/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_elfguard.c - the jump points around elfutils calls: a guarded call
 * in which libdw's out-of-memory handler or a failed assertion fires comes
 * back with EMBER__ELFGUARD_TRIPPED and a description, as does one in
 * which an allocation failed (errno ENOMEM at its end or at a poll);
 * guards nest; with
 * no guard the assertion hook hands over to the C library.
 *
 * The real elfutils failure (libdw's hash table assertion after a failed
 * malloc, reached from the symbolizer) is provoked end to end by
 * tests/faults, which fails if the program notices it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "symbols/elfguard.h"

static int calls;

static int returns_minus_five(void *arg)
{
	(void)arg;
	calls++;
	return -5;
}

static int runs_out_of_memory(void *arg)
{
	(void)arg;
	calls++;
	ember__elfguard_oom();
}

static int fails_assertion(void *arg)
{
	(void)arg;
	calls++;
	ember__elfguard_assert("htab->table", "dynamicsizehash_concurrent.c", 266, "resize", ENOMEM);
	calls += 100; /* not reached */
	return 0;
}

/* What elfutils 0.188 does in intern_cu: its malloc fails (errno ENOMEM),
 * it returns an error and goes on, its state poisoned. */
static int allocation_failed_then_returned(void *arg)
{
	(void)arg;
	calls++;
	errno = ENOMEM;
	return 0;
}

/* Between two elfutils calls: the first one's failed allocation ends the
 * guarded call there, the second is never made. */
static int allocation_failed_then_polled(void *arg)
{
	(void)arg;
	calls++;
	errno = ENOMEM;
	ember__elfguard_poll();
	calls += 100; /* not reached */
	return 0;
}

static void test_plain_result(void)
{
	calls = 0;
	char why[64] = "untouched";
	CHECK_EQ_INT(ember__elfguard_run(returns_minus_five, NULL, why, sizeof(why)), -5);
	CHECK_EQ_INT(calls, 1);
	CHECK_EQ_STR(why, "untouched");
}

/* fn trips the guard once, and why contains each of want[]. */
static void expect_trip(int (*fn)(void *), const char *const *want, size_t nwant)
{
	calls = 0;
	char why[256] = "";
	CHECK_EQ_INT(ember__elfguard_run(fn, NULL, why, sizeof(why)), EMBER__ELFGUARD_TRIPPED);
	CHECK_EQ_INT(calls, 1);
	for (size_t i = 0; i < nwant; i++) {
		if (!strstr(why, want[i])) {
			fprintf(stderr, "why '%s' lacks '%s'\n", why, want[i]);
			CHECK(strstr(why, want[i]) != NULL);
		}
	}
}

static void test_oom_trips(void)
{
	const char *const want[] = {"libdw: out of memory"};
	expect_trip(runs_out_of_memory, want, 1);
}

/* errno ENOMEM when the call returns, or at a poll, is a trip; an errno
 * of the caller's is cleared for the call and given back after. */
static void test_failed_allocation_trips(void)
{
	const char *const want[] = {"out of memory"};
	expect_trip(allocation_failed_then_returned, want, 1);
	expect_trip(allocation_failed_then_polled, want, 1);
	errno = ENOMEM; /* the caller's, from before */
	calls = 0;
	CHECK_EQ_INT(ember__elfguard_run(returns_minus_five, NULL, NULL, 0), -5);
	CHECK_EQ_INT(errno, ENOMEM);
	ember__elfguard_poll(); /* no guard: returns */
	CHECK_EQ_INT(calls, 1);
}

static void test_assert_trips(void)
{
	const char *const want[] = {"assertion 'htab->table' failed",
				    "dynamicsizehash_concurrent.c:266", strerror(ENOMEM)};
	expect_trip(fails_assertion, want, 3);
}

/* An inner trip returns to the inner guard; the outer call goes on. */
static int outer(void *arg)
{
	int *inner_rc = arg;
	*inner_rc = ember__elfguard_run(runs_out_of_memory, NULL, NULL, 0);
	calls++;
	return 7;
}

static void test_nesting(void)
{
	calls = 0;
	int inner_rc = 0;
	CHECK_EQ_INT(ember__elfguard_run(outer, &inner_rc, NULL, 0), 7);
	CHECK_EQ_INT(inner_rc, EMBER__ELFGUARD_TRIPPED);
	CHECK_EQ_INT(calls, 2);
	/* After both returned, a trip goes to a new guard, not a stale one. */
	CHECK_EQ_INT(ember__elfguard_run(runs_out_of_memory, NULL, NULL, 0),
		     EMBER__ELFGUARD_TRIPPED);
	CHECK_EQ_INT(calls, 3);
}

static void test_unguarded_assert_returns(void)
{
	/* No guard: the hook returns, and __assert_fail goes on to libc's. */
	ember__elfguard_assert("x", "f.c", 1, "fn", 0);
	CHECK_EQ_INT(ember__elfguard_run(returns_minus_five, NULL, NULL, 0), -5);
}

int main(void)
{
	RUN(test_plain_result);
	RUN(test_oom_trips);
	RUN(test_failed_allocation_trips);
	RUN(test_assert_trips);
	RUN(test_nesting);
	RUN(test_unguarded_assert_returns);
	return CHECK_DONE();
}
