/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lazydep.c - the loader behind util/lazydep.h, and the tables of the
 * libraries loaded that way (elfutils, zlib).
 */
#include "util/lazydep.h"

#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/dep_elfutils.h"
#include "util/dep_zlib.h"
#if __has_include(<jansson.h>) /* only the S3 reporter uses it */
#define EMBER_LAZYDEP_JANSSON 1
#include "util/dep_jansson.h"
#endif
#include "util/error.h"
#include "util/forkguard.h"

/* Where a slot points when its library could not be loaded: 0 (NULL) is
 * "no result" for every function listed (dep_*.h). Only reached by a call an
 * entry point's check did not stop (lazydep.h). */
static long lazydep_missing(void)
{
	return 0;
}

/* Slot i of d's table. The table is a struct of function pointers walked
 * as an array (every member a pointer, in the names' order; checked
 * below); written with memcpy, whose bytes any type may take. */
static void set_slot(struct ember__lazydep *d, size_t i, void *p)
{
	memcpy((char *)d->slots + i * sizeof(void *), &p, sizeof(p));
}

#define RETRY_NS 100000000LL /* a failed dlopen is tried again this much later */

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One attempt, by the thread that moved the state to 2: fills every slot
 * (with the stub that returns 0 on failure) and sets the outcome. */
static void lazydep_run_guarded(struct ember__lazydep *d);

static void lazydep_run(struct ember__lazydep *d)
{
	ember__forkguard_enter(); /* the library's initialization runs here */
	lazydep_run_guarded(d);
	ember__forkguard_leave();
}

static void lazydep_run_guarded(struct ember__lazydep *d)
{
	void *lib = NULL;
	const char *found = NULL;
	char why[160] = "not found";
	for (size_t i = 0; !lib && d->sonames[i]; i++) {
		lib = dlopen(d->sonames[i], RTLD_NOW | RTLD_LOCAL);
		const char *e = lib ? NULL : dlerror(); /* valid until the next dl call */
		if (lib)
			found = d->sonames[i];
		else if (i == 0 && e)
			snprintf(why, sizeof(why), "%s", e);
	}
	size_t n = 0, missing = 0;
	while (d->names[n])
		n++;
	if (lib) {
		for (size_t i = 0; i < n; i++) {
			/* As a link would bind it: the first definition in the
			 * global scope. The program may define the function
			 * itself (node carries its own zlib and exports it),
			 * and then the library we loaded calls the program's
			 * copies for its own internal calls too, so its
			 * functions must not be mixed with the program's. Else
			 * the library's. */
			void *p = dlsym(RTLD_DEFAULT, d->names[i]);
			if (!p)
				p = dlsym(lib, d->names[i]);
			set_slot(d, i, p);
			if (!p) {
				snprintf(d->error, sizeof(d->error),
					 "the %s found (%s) lacks %s; install a current %s", d->what,
					 found, d->names[i], d->package);
				lib = NULL; /* stays loaded: unloading is never safe */
				missing = 1;
				break;
			}
		}
	} else {
		snprintf(d->error, sizeof(d->error), "cannot load %s (%s); install %s", d->what, why,
			 d->package);
	}
	if (!lib)
		for (size_t i = 0; i < n; i++)
			set_slot(d, i, (void *)lazydep_missing);
	if (!lib && !missing)
		atomic_store(&d->retry_after_ns, mono_ns() + RETRY_NS);
	atomic_store_explicit(&d->state, lib ? 1 : missing ? -1 : 0, memory_order_release);
}

#define LAZYDEP_LIB(name, what_, package_, fns, ...)                                         \
	static const char *const name##_sonames[] = {__VA_ARGS__, NULL};                     \
	static const char *const name##_names[] = {fns(EMBER__LAZYDEP_NAME) NULL};            \
	struct name##_fns name##_fn;                                                         \
	struct ember__lazydep name = {                                                       \
		.what = what_,                                                               \
		.package = package_,                                                         \
		.sonames = name##_sonames,                                                   \
		.names = name##_names,                                                       \
		.slots = &name##_fn,                                                         \
	};                                                                                   \
	/* one pointer-sized slot per name (set_slot) */                                     \
	_Static_assert(sizeof(struct name##_fns) ==                                          \
			       sizeof(void *) * (sizeof(name##_names) / sizeof(char *) - 1), \
		       "one slot per name")

LAZYDEP_LIB(ember__libelf, "libelf (elfutils)", "libelf1", EMBER__LIBELF_FNS, "libelf.so.1");
LAZYDEP_LIB(ember__elfutils, "libdw (elfutils)", "libdw1", EMBER__ELFUTILS_FNS, "libdw.so.1");
LAZYDEP_LIB(ember__zlib, "zlib", "zlib1g", EMBER__ZLIB_FNS, "libz.so.1");
#ifdef EMBER_LAZYDEP_JANSSON
LAZYDEP_LIB(ember__jansson, "jansson", "libjansson4", EMBER__JANSSON_FNS, "libjansson.so.4");
#endif

__thread int ember__libelf_thread_ready;
__thread int ember__elfutils_thread_ready;

/* Reserves and releases 64 KiB so that the dynamic TLS block glibc
 * allocates at a library's first TLS access on this thread comes from
 * memory the thread's arena holds (dep_elfutils.h). 0 when it could not. */
static int tls_reserve(void)
{
	void *reserve = malloc(64 * 1024);
	if (!reserve)
		return 0;
	free(reserve);
	return 1;
}

void ember__libelf_thread_init(void)
{
	if (ember__lazydep_load(&ember__libelf) < 0)
		return; /* the stubs touch no TLS; the next call tries again */
	if (!tls_reserve())
		return; /* not now: the next call tries again */
	/* The first TLS access of libelf on this thread. */
	(void)ember__libelf_fn.p_elf_errno();
	ember__libelf_thread_ready = 1;
}

void ember__elfutils_thread_init(void)
{
	/* libdw calls into libelf on this thread: libelf's TLS first */
	if (!ember__libelf_thread_ready)
		ember__libelf_thread_init();
	if (!ember__libelf_thread_ready || ember__lazydep_load(&ember__elfutils) < 0)
		return;
	if (!tls_reserve())
		return;
	/* The first TLS access of libdw on this thread. */
	(void)ember__elfutils_fn.p_dwarf_errno();
	ember__elfutils_thread_ready = 1;
}

int ember__lazydep_load(struct ember__lazydep *d)
{
	for (;;) {
		int s = atomic_load_explicit(&d->state, memory_order_acquire);
		if (s == 1)
			return 0;
		if (s == -1)
			break;
		if (s == 2) {
			if (atomic_load(&d->loader) != getpid()) {
				/* copied from a parent whose loading thread is
				 * not in this fork child: load here */
				int expect = 2;
				atomic_compare_exchange_strong(&d->state, &expect, 0);
				continue;
			}
			struct timespec nap = {0, 1000000}; /* another thread loads it */
			nanosleep(&nap, NULL);
			continue;
		}
		if (d->error[0] && mono_ns() < atomic_load(&d->retry_after_ns))
			break;
		/* (the same pid from every thread of this process: set first) */
		atomic_store(&d->loader, getpid());
		int expect = 0;
		if (!atomic_compare_exchange_strong(&d->state, &expect, 2))
			continue;
		lazydep_run(d);
	}
	return ember__error(EMBER_ERR_UNSUPPORTED, "%s", d->error);
}
