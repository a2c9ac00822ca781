/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbgd_bg.h - debuginfod fetches in the background: build ids asked for
 * while a run goes on are fetched by one thread of ours, in batches, with
 * the bounded, parallel fetcher of debuginfod.h (its bounds, its threads,
 * its failures remembered), and their answers kept, so that the caller
 * never waits: it asks, goes on, and asks again later
 * (docs/design/debuginfod.md, "Per window").
 *
 * Only the emberprof CLI's process uses this (tools/): never the profiled
 * program, never a signal handler. The calls are thread-safe (one mutex);
 * none is async-signal-safe.
 */
#ifndef EMBER_TOOLS_DBGD_BG_H
#define EMBER_TOOLS_DBGD_BG_H

#include <stdint.h>

#include "debuginfod/debuginfod.h"

typedef struct ember__dbgd_bg ember__dbgd_bg;

/*
 * A background fetcher (opts as ember__dbgd_new's; opts->urls must be
 * NULL: DEBUGINFOD_URLS is read, never set, with the thread running).
 * Loads libdebuginfod and starts the thread. *out is the caller's, freed
 * with ember__dbgd_bg_free. 0 or what ember__dbgd_new returns, or
 * EMBER_ERR_NOMEM / EMBER_ERR_INVALID (no thread).
 */
int ember__dbgd_bg_new(ember__dbgd_bg **out, const ember__dbgd_opts *opts);

/*
 * Stops the thread, waiting for a batch under way (it ends within the
 * fetcher's total bound): nothing more is asked, the answers and the
 * stats are final. Once; later calls return at once.
 */
void ember__dbgd_bg_stop(ember__dbgd_bg *b);

/* Stops it (ember__dbgd_bg_stop) and frees everything. NULL is ignored. */
void ember__dbgd_bg_free(ember__dbgd_bg *b);

/*
 * The answer for a build id (lowercase hex), asking for it if it was not
 * asked yet: 1 when it is known (*path: a malloc'd path of its debug file
 * in the cache, or NULL when it could not be fetched), 0 while it is
 * under way (*path NULL), EMBER_ERR_NOMEM. Never waits for the network.
 */
int ember__dbgd_bg_get(ember__dbgd_bg *b, const char *build_id, char **path);

/* The same without asking: 1 and *path (maybe NULL) when answered, else 0
 * (nothing asked). */
int ember__dbgd_bg_peek(ember__dbgd_bg *b, const char *build_id, char **path);

/* Build ids answered so far (a file or a failure): it grows with each. */
uint64_t ember__dbgd_bg_answered(ember__dbgd_bg *b);

/* Debug files fetched so far: it grows when a new one arrives. */
uint64_t ember__dbgd_bg_arrived(ember__dbgd_bg *b);

/* Build ids asked for and not answered yet. */
uint64_t ember__dbgd_bg_under_way(ember__dbgd_bg *b);

/* A copy of the fetcher's counts so far (debuginfod.h). */
void ember__dbgd_bg_stats(ember__dbgd_bg *b, ember__dbgd_stats *out);

#endif
