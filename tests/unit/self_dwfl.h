/* SPDX-License-Identifier: Apache-2.0 */
/*
 * self_dwfl.h - for unit tests: a symbolizer of this process that names
 * every module through libdwfl (the reference the libelf path is checked
 * against): one given this process's layout, as another process's would
 * be, after libdw is loaded (its modules among them).
 * ember__symbolizer_new reads most modules with libelf alone
 * (symbols/symbolizer_elf.c).
 */
#ifndef EMBER_TEST_SELF_DWFL_H
#define EMBER_TEST_SELF_DWFL_H

#include <unistd.h>

#include "symbols/procmaps.h"
#include "symbols/symbolizer.h"
#include "util/dep_elfutils.h"

/* The symbolizer (the caller frees it), or NULL on any failure. */
static inline ember__symbolizer *ember_test_dwfl_symbolizer(void)
{
	ember__procmaps maps = EMBER_PROCMAPS_INIT;
	ember__symbolizer *s = NULL;
	if (ember__lazydep_load(&ember__elfutils) != 0 || ember__procmaps_read_self(&maps) != 0)
		return NULL;
	if (ember__symbolizer_new_remote(&s, getpid(), &maps) != 0)
		s = NULL;
	ember__procmaps_free(&maps);
	return s;
}

#endif
