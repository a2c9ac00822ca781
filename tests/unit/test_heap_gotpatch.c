/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_heap_gotpatch.c - src/heap/gotpatch.c in this very process: its
 * modules' GOT entries of malloc and free pointed at two counting
 * wrappers (which call glibc's), then restored. This program holds
 * emberprof's code, so it is the module the patch skips as its own: the
 * calls counted are libc's own (strdup's malloc through libc's GOT).
 * Counts what the calls did, never a clock. x86-64 and aarch64 (the
 * patch says EMBER_ERR_UNSUPPORTED elsewhere, checked there).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emberprof.h"
#include "heap/gotpatch.h"

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static atomic_long n_malloc, n_free;
static volatile uintptr_t sink;

static void *count_malloc(size_t n)
{
	atomic_fetch_add(&n_malloc, 1);
	return __libc_malloc(n);
}

static void count_free(void *p)
{
	atomic_fetch_add(&n_free, 1);
	__libc_free(p);
}

static const ember__got_fn fns[] = {{"malloc", (void *)count_malloc}, {"free", (void *)count_free}};

/* 100 blocks allocated by libc itself. */
static __attribute__((noinline)) void allocate_100(void)
{
	for (int i = 0; i < 100; i++) {
		char *p = strdup("a string libc copies into a block it allocates");
		sink ^= (uintptr_t)p;
		free(p);
	}
}

static void test_patch_and_restore(void)
{
	ember__got_stats st;
	allocate_100(); /* lazy entries bound first, as they would be */
	int rc = ember__heap_got_patch(fns, 2, NULL, &st);
#if (!defined(__x86_64__) && !defined(__aarch64__)) || defined(__SANITIZE_ADDRESS__)
	/* elsewhere, and in the sanitizer build (AddressSanitizer owns
	 * malloc: this build defines none to point the entries at) */
	CHECK_EQ_INT(rc, EMBER_ERR_UNSUPPORTED);
	CHECK(!ember__heap_got_active());
#else
	CHECK_EQ_INT(rc, 0);
	CHECK(ember__heap_got_active());
	printf("patched %u slots in %u modules, %u elsewhere, %u absolute, %u pending\n",
	       st.patched, st.modules, st.elsewhere, st.absolute, st.pending);
	/* at least libc's own two (GLOB_DAT malloc and free) */
	CHECK(st.patched >= 2);
	CHECK(st.modules >= 1);
	CHECK_EQ_INT(st.failed, 0);
	/* a second patch while patched is refused, nothing changed */
	ember__got_stats st2;
	CHECK_EQ_INT(ember__heap_got_patch(fns, 2, NULL, &st2), EMBER_ERR_BUSY);

	long m0 = atomic_load(&n_malloc), f0 = atomic_load(&n_free);
	allocate_100();
	CHECK(atomic_load(&n_malloc) - m0 >= 100);
	(void)f0; /* this program's free is not patched: it holds the patcher */

	/* nothing new loaded: a rescan patches nothing more */
	ember__heap_got_rescan(NULL);
	unsigned patched, restored;
	ember__heap_got_last(&patched, &restored);
	CHECK_EQ_INT(patched, st.patched);

	unsigned back = ember__heap_got_restore();
	CHECK_EQ_INT(back, st.patched);
	CHECK(!ember__heap_got_active());
	ember__heap_got_last(&patched, &restored);
	CHECK_EQ_INT(restored, patched);
	m0 = atomic_load(&n_malloc);
	f0 = atomic_load(&n_free);
	allocate_100();
	CHECK_EQ_INT(atomic_load(&n_malloc), m0);
	CHECK_EQ_INT(atomic_load(&n_free), f0); /* nothing at all */
	/* idempotent */
	CHECK_EQ_INT(ember__heap_got_restore(), 0);

	/* and again: the entries are patched and restored a second time */
	CHECK_EQ_INT(ember__heap_got_patch(fns, 2, NULL, &st2), 0);
	CHECK_EQ_INT(st2.patched, st.patched);
	CHECK_EQ_INT(ember__heap_got_restore(), st.patched);
#endif
}

static void test_no_wrappers(void)
{
	ember__got_stats st;
	CHECK(ember__heap_got_patch(NULL, 0, NULL, &st) < 0);
	CHECK(!ember__heap_got_active());
}

int main(void)
{
	RUN(test_no_wrappers);
	RUN(test_patch_and_restore);
	return CHECK_DONE();
}
