/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolize_internal.h - the state shared by symbolize.c (profiles) and
 * symz_files.c (which file to read for a module, and its debug file).
 * Private to tools/symbolize/. Not async-signal-safe.
 */
#ifndef EMBER_TOOLS_SYMBOLIZE_INTERNAL_H
#define EMBER_TOOLS_SYMBOLIZE_INTERNAL_H

#include <stdint.h>

#include "debuginfod/debuginfod.h"
#include "symbolize/symbolize.h"

/* One module of the profile being named. */
typedef struct symz_mod {
	char *path;     /* as the profile names it */
	char *build_id; /* lowercase hex, "" if unknown */
	char *elf;      /* the file read for it; "" none (malloc'd) */
	int wanted;     /* some location in it needs a name */
	int need_debug; /* elf lacks .symtab or DWARF, no local debug file */
} symz_mod;

/* A build id asked of debuginfod, and its answer ("" none). */
typedef struct symz_fetched {
	char *id, *path;
} symz_fetched;

struct ember__symz {
	ember__symz_opts o;
	ember__symz_stats st;
	ember__dbgd *dbgd;
	int dbgd_tried;
	char dbgd_problem[400];
	symz_mod *mods; /* the current profile's */
	size_t nmods;
	symz_fetched *fetched; /* kept across profiles */
	size_t nfetched;
	size_t pending; /* the last profile's ids still under way (o.bg) */
};

/* The profile's module for path and build id, added if new (NULL: out
 * of memory). Its elf is chosen at once. */
symz_mod *ember__symz_module(ember__symz *z, const char *path, const char *build_id);

/* Forgets the current profile's modules. */
void ember__symz_modules_reset(ember__symz *z);

/* Fetches, from debuginfod, the debug files of the wanted modules that
 * need one and were not asked before (a debuginfod failure is said in
 * z->dbgd_problem, not returned). 0 or EMBER_ERR_NOMEM. */
int ember__symz_fetch(ember__symz *z);

/* Whether a module wanted has a debug file from debuginfod. */
int ember__symz_any_fetched(const ember__symz *z);

/* The image's load bias for a mapping of `elf` at [start, ...) from file
 * offset `offset`, and the address the image starts at (what libdwfl
 * takes as the module's low address). 0, or -1 if the file has no
 * PT_LOAD holding offset. */
int ember__symz_image(const char *elf, uint64_t start, uint64_t offset, uint64_t *low);

/* Sets and clears the symbolizer's file hooks (symbols/debugfile.h) to z. */
void ember__symz_hooks(ember__symz *z, int on);

#endif
