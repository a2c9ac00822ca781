/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demangle.h - turning linker symbol names back into source-level names:
 * C++ (Itanium ABI, "_Z..."), Rust legacy ("_ZN...17h<hash>E", printed
 * without the hash as rustc-demangle does by default) and Rust v0 ("_R...").
 * Plain C names are not mangled and are left alone.
 *
 * Backed by libiberty's cplus_demangle(). Not async-signal-safe (it
 * allocates); called from the agent thread while symbolizing.
 */
#ifndef EMBER_DEMANGLE_H
#define EMBER_DEMANGLE_H

/*
 * Returns a malloc'd demangled form of `sym`, which the caller frees, or
 * NULL if `sym` is NULL, is not a mangled name, or cannot be demangled (the
 * caller then shows `sym` as it is). A trailing GCC clone suffix such as
 * ".cold" or ".constprop.0" is kept, in the "[clone .cold]" style.
 */
char *ember__demangle(const char *sym);

#endif
