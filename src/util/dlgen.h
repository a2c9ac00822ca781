/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlgen.h - the dynamic loader's load and unload counters, a cheap way to
 * tell whether any library was dlopen'ed or dlclose'd since a last look.
 */
#ifndef EMBER_UTIL_DLGEN_H
#define EMBER_UTIL_DLGEN_H

/* The counters at one look. known 0: not read yet, or the loader does not
 * report them (not glibc). A zeroed struct is "not read". */
typedef struct ember__dlgen {
	unsigned long long adds, subs; /* objects ever loaded, unloaded */
	int known;
} ember__dlgen;

/*
 * Reads the loader's counters as dl_iterate_phdr reports them (dlpi_adds,
 * dlpi_subs) into *g. Takes the loader's list lock for one callback: agent
 * threads only, never in a signal handler; not async-signal-safe.
 */
void ember__dlgen_read(ember__dlgen *g);

/* Has the loader moved from *seen to *now? Never when *now is unknown;
 * always when *seen is. Pure. */
int ember__dlgen_moved(const ember__dlgen *seen, const ember__dlgen *now);

#endif
