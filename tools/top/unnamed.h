/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unnamed.h - how much of a profile has no function name, per module:
 * what `emberprof top` and the run summary say after their table, with
 * what would name it (cli/missing_names.c).
 *
 * A sample counts as unnamed when its leaf location (the first) has no
 * line, a function without a name, a bare address for a name ("0x..."),
 * or the symbolizer's placeholder for a function without symbols
 * ("MODULE+0xSTART", src/symbols/symbolizer.h): the cost is then per
 * function, but the function has no name. The module is the leaf
 * location's mapping (its file), "?" without one.
 *
 * The accumulator copies every string it keeps; profiles may be freed
 * after they are added. Not thread-safe; not async-signal-safe.
 */
#ifndef EMBER_TOP_UNNAMED_H
#define EMBER_TOP_UNNAMED_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

typedef struct ember__unnamed ember__unnamed;

/* One module's share, as ember__unnamed_module() returns it. */
typedef struct ember__unnamed_mod {
	const char *path;     /* the mapping's file ("?" if none); borrowed */
	const char *build_id; /* lowercase hex, "" if unknown; borrowed */
	int64_t total;        /* the value of samples whose leaf is in it */
	int64_t unnamed;      /* ...of those without a function name */
} ember__unnamed_mod;

/* An empty accumulator, or NULL on out-of-memory. */
ember__unnamed *ember__unnamed_new(void);

/* Adds p's samples' value `vi` (< p->nvalues, else EMBER_ERR_INVALID).
 * 0 or EMBER_ERR_NOMEM. */
int ember__unnamed_add(ember__unnamed *u, const ember__profile *p, uint32_t vi);

/* The value of every sample added, and of those unnamed. */
int64_t ember__unnamed_total(const ember__unnamed *u);
int64_t ember__unnamed_sum(const ember__unnamed *u);

/* The modules with unnamed samples, most unnamed first: count, and
 * module i (0-based, < count) into *out. */
size_t ember__unnamed_count(const ember__unnamed *u);
void ember__unnamed_module(const ember__unnamed *u, size_t i, ember__unnamed_mod *out);

/* Is `name` no function name for a location of `file`: empty, "0x...",
 * or "BASENAME(file)+0x..."? */
int ember__unnamed_is_placeholder(const char *name, const char *file);

void ember__unnamed_free(ember__unnamed *u);

#endif
