/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfguard.h - a fence around calls into elfutils, so that the few places
 * where libdw ends the process instead of returning an error end only the
 * guarded call.
 *
 * elfutils 0.188 does not survive every allocation failure: libdw's own
 * allocator calls the Dwarf's out-of-memory handler, whose default prints
 * "libdw: cannot allocate memory" and exits the process, and its
 * concurrent hash tables (abbreviations, type units) assert that a resized
 * table was allocated. For a profiler inside someone else's program both
 * are a kill (found by tests/faults).
 *
 * ember__elfguard_run() runs a function with a jump point set on the
 * calling thread. While it runs:
 *   - ember__elfguard_oom(), installed as the handler of every Dwarf the
 *     symbolizer uses (dwarf_new_oom_handler), jumps back instead of
 *     exiting;
 *   - a failed assertion inside the call (libemberprof.so interposes
 *     __assert_fail, src/preload/assert_hook.c) jumps back instead of
 *     aborting.
 * And an allocation that failed inside the call (errno ENOMEM when it
 * returns, whatever it returned) counts as a trip too: elfutils 0.188
 * returns from some failed allocations with its state poisoned (a NULL
 * node left in a module's CU tree, a half-read abbreviation table), and
 * the next call on that Dwfl dereferences it (SIGSEGV, which no guard
 * may catch in someone else's process). An allocation failure of the
 * agent's own code inside the call is then one too: the module's names
 * are lost for that lookup either way.
 * The call then returns EMBER__ELFGUARD_TRIPPED with a description. What
 * the interrupted elfutils call was building is left half-built (its
 * locks possibly held): the caller must never use that Dwarf or Dwfl
 * again, and leaks it (symbolizer.c swaps in a new Dwfl).
 *
 * Threads: the jump point is per thread; only the thread that set it is
 * ever sent back. Not async-signal-safe (the symbolizer runs on agent
 * threads). Not covered: libdw objects created inside elfutils with the
 * default handler (the dwz "alt" file, split DWARF units) still exit on
 * an allocation failure inside them.
 */
#ifndef EMBER_ELFGUARD_H
#define EMBER_ELFGUARD_H

#include <stddef.h>

/* Returned by ember__elfguard_run when elfutils gave up inside fn. Positive,
 * so it can never be mistaken for fn's own 0 or negative ember_err. */
#define EMBER__ELFGUARD_TRIPPED 1

/*
 * Runs fn(arg) and returns what it returns (0 or a negative ember_err), or
 * EMBER__ELFGUARD_TRIPPED if elfutils ran out of memory or failed an
 * assertion inside it; why (of whylen bytes, may be NULL) then says what
 * happened, e.g. "libdw: out of memory". Guards nest. fn must not itself
 * return EMBER__ELFGUARD_TRIPPED.
 */
int ember__elfguard_run(int (*fn)(void *), void *arg, char *why, size_t whylen);

/*
 * Inside a guard, if an allocation failed since the guard began (errno is
 * ENOMEM: the guard clears errno when it starts), jumps back to it as a
 * trip; else returns. Called between elfutils calls in one guarded call,
 * so that state a failed allocation poisoned is not used by the next
 * (0.188 crashes in dwarf_child after dwfl_module_getsrc ran out). Not
 * async-signal-safe.
 */
void ember__elfguard_poll(void);

/* A Dwarf_OOM handler (dwarf_new_oom_handler): inside a guard, jumps back
 * to it; outside one, exits as libdw's default handler does. */
void ember__elfguard_oom(void) __attribute__((noreturn));

/*
 * Called by the __assert_fail interposer: inside a guard on this thread,
 * records the assertion (and errno, which is ENOMEM when the assertion
 * follows a failed malloc, as libdw's do) and jumps back; outside one,
 * returns, and the caller goes on to the C library's __assert_fail.
 */
void ember__elfguard_assert(const char *assertion, const char *file, unsigned line,
			    const char *function, int errnum);

#endif
