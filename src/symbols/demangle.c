/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demangle.c - ember__demangle() on top of libiberty.
 *
 * One call with DMGL_AUTO handles every scheme we care about: libiberty
 * recognises "_R" as Rust v0, and for "_Z" names it first demangles as C++
 * and then, if the result looks like a Rust legacy path (a final "h<16 hex>"
 * component and "$...$" escapes), rewrites it the Rust way and drops the
 * hash. Asking for DMGL_RUST alone would reject ordinary C++ names, and
 * DMGL_GNU_V3 alone would keep Rust's hashes and "$LT$"-style escapes.
 */
#include "symbols/demangle.h"

#include <libiberty/demangle.h>
#include <stddef.h>

char *ember__demangle(const char *sym)
{
	if (!sym)
		return NULL;
	/* Cheap filter: every scheme we decode starts with "_Z" or "_R". */
	if (sym[0] != '_' || (sym[1] != 'Z' && sym[1] != 'R'))
		return NULL;
	return cplus_demangle(sym, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}
