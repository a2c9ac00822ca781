/*
 * dlgen.h - the dynamic loader's load and unload counters, a cheap way to
 * tell whether any library was dlopen'ed or dlclose'd since a last look.
 */
#ifndef EMBER_UTIL_DLGEN_H
#define EMBER_UTIL_DLGEN_H

/*
 * The loader's counters as dl_iterate_phdr reports them (dlpi_adds,
 * dlpi_subs: objects ever loaded and unloaded). Returns 1 and fills both,
 * or 0 where the loader does not report them (not glibc), leaving them
 * untouched. Takes the loader's list lock for one callback: agent threads
 * only, never in a signal handler; not async-signal-safe.
 */
int ember__dl_counters(unsigned long long *adds, unsigned long long *subs);

#endif
