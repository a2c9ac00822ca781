/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lazydep.h - libraries loaded with dlopen() when first needed, not when
 * the program starts.
 *
 * `emberprof run` puts libemberprof.so into every process of the tree it
 * profiles, and most of those processes are short: a shell loop's
 * /bin/true lives a millisecond or two. Linked the usual way, each of them
 * loaded libdw and what it pulls in (libelf, zlib, liblzma, libbz2), about
 * 0.4x of what such a process costs by itself (docs/BENCHMARKS.md section
 * 13), for names and unwind tables it never needed. So elfutils and zlib
 * are loaded the first time the agent's own threads (or the CLI) call
 * them, as libcurl and libzip already were (src/upload/http.c,
 * src/report/s3_object.c).
 *
 * How: a source file includes "util/dep_elfutils.h" or "util/dep_zlib.h"
 * instead of the library's headers. Those include the real headers, so
 * types and prototypes are the library's, then redefine each function the
 * project calls as a call through a table of pointers, loading the
 * library at the first call (ember__lazydep_need). The table lists every
 * function used: one that is called but not listed is an undefined symbol,
 * and the shared library is linked with --no-undefined, so the build
 * fails instead of the program.
 *
 * If a library cannot be loaded (removed since the install, a container
 * without it), ember__lazydep_load() fails with a message naming the
 * library and its package; the entry points that use it (the symbolizer,
 * the unwind-table builder, the gzip encoder and decoder, the spool)
 * check it first and fail cleanly. As a last guard the table's pointers
 * then lead to a function that returns 0 (NULL, "no result" for all of
 * them) rather than to address 0.
 *
 * Nothing here is async-signal-safe: dlopen takes the loader's lock. The
 * signal path never calls these libraries.
 */
#ifndef EMBER_UTIL_LAZYDEP_H
#define EMBER_UTIL_LAZYDEP_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

/* One lazily loaded library. Defined once per library (src/util/lazydep.c),
 * static storage, never freed: the library stays loaded (unloading code
 * other threads may be running is never safe). */
struct ember__lazydep {
	const char *what;              /* for messages: "libdw (elfutils)" */
	const char *package;           /* where it comes from: "libdw1" */
	const char *const *sonames;    /* tried in order; NULL-terminated */
	const char *const *names;      /* the functions; NULL-terminated */
	void *slots;                   /* the *_fns table: one pointer a name */
	/* 0 not loaded (not tried, or to be tried again), 1 loaded, -1 failed
	 * for good (a function missing), 2 being loaded by a thread of
	 * process `loader` */
	atomic_int state;
	_Atomic pid_t loader;
	_Atomic int64_t retry_after_ns; /* CLOCK_MONOTONIC; after a failed dlopen */
	char error[256];
};

/* Loads the library and fills its table; once loaded, or once it lacks
 * a function, every later call returns that outcome at once. A library
 * that could not be opened (missing, or memory short: dlopen's own
 * allocations) is tried again by a call 100 ms or more later. Returns 0,
 * or EMBER_ERR_UNSUPPORTED with the message (which library, why, which
 * package) set. Thread-safe, also across fork (a fork child of a load
 * under way loads again); not async-signal-safe. */
int ember__lazydep_load(struct ember__lazydep *d);

/* The call every redirected function makes first: a load on first use,
 * one atomic load after that. */
static inline void ember__lazydep_need(struct ember__lazydep *d)
{
	if (atomic_load_explicit(&d->state, memory_order_acquire) != 1)
		(void)ember__lazydep_load(d);
}

/* For the X-macro lists of the dep_*.h headers: a slot named p_<f> of
 * <f>'s own type, and its row in the loader's name table. */
#define EMBER__LAZYDEP_SLOT(f) __typeof__(f) *p_##f;
#define EMBER__LAZYDEP_NAME(f) #f,

#endif
