/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nextsym.h - the next definition of a C library function libemberprof.so
 * also defines (the one its own definition stands in front of), for the
 * interposers that hand the program's calls on unchanged
 * (getenv_hook.c, fd_hook.c).
 */
#ifndef EMBER_PRELOAD_NEXTSYM_H
#define EMBER_PRELOAD_NEXTSYM_H

#include <dlfcn.h>

/* The next definition of `sym`, cached in *slot (found at the first call,
 * or by a constructor); NULL if there is none (yet). Not async-signal-safe
 * until *slot is set: dlsym takes the loader's lock. */
static inline void *ember__next_sym(void **slot, const char *sym)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!f) {
		f = dlsym(RTLD_NEXT, sym);
		if (f)
			__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

#endif
