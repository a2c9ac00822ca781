/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfod.h - debug files fetched by GNU build id from debuginfod
 * servers, as perf and gdb fetch them: through elfutils' client library
 * (libdebuginfod.so.1, loaded with dlopen on first use, never linked), so
 * DEBUGINFOD_URLS, DEBUGINFOD_CACHE_PATH, its cache layout (atomic writes,
 * cleaning), DEBUGINFOD_TIMEOUT, _MAXTIME and _MAXSIZE mean what they mean
 * to those tools, and a file fetched by one of them is found here in the
 * cache without the network, and the other way round.
 *
 * What we add around it (docs/design/debuginfod.md):
 *   - bounds: each file gets at most per_file_ms, the whole fetch total_ms,
 *     whatever the environment says (a progress callback aborts the
 *     transfer; libdebuginfod calls it about once a second while waiting);
 *   - parallel fetches: up to `threads` clients at once (a client is not
 *     thread-safe: one per thread);
 *   - failures remembered: a build id that could not be fetched (not on
 *     any server, a timeout, no server answering) gets a file
 *     <miss dir>/<build id> holding the time and the reason, and is not
 *     asked again for miss_ttl_s unless the caller says retry.
 *
 * Only the emberprof CLI's process uses this (tools/): never the profiled
 * program, never the sampling path. Not async-signal-safe.
 */
#ifndef EMBER_TOOLS_DEBUGINFOD_H
#define EMBER_TOOLS_DEBUGINFOD_H

#include <stddef.h>
#include <stdint.h>

typedef struct ember__dbgd ember__dbgd;

typedef struct ember__dbgd_opts {
	const char *urls;       /* servers, space-separated; NULL: $DEBUGINFOD_URLS */
	int64_t per_file_ms;    /* at most this long for one file (0: 30 s) */
	int64_t total_ms;       /* at most this long for one fetch call (0: 60 s) */
	unsigned threads;       /* parallel clients (0: 4) */
	int64_t miss_ttl_s;     /* failures remembered this long (0: 600 s) */
	int retry;              /* ask again for build ids remembered as failed */
	const char *miss_dir;   /* NULL: $XDG_CACHE_HOME/emberprof/debuginfod-miss
				 * (~/.cache/... without XDG_CACHE_HOME) */
} ember__dbgd_opts;

/* What fetches did, summed over the client's life. */
typedef struct ember__dbgd_stats {
	uint64_t found;      /* a path was given (from the cache or a server) */
	uint64_t missing;    /* no server has it (404) */
	uint64_t failed;     /* other errors: unreachable, refused, too large */
	uint64_t timed_out;  /* aborted at the per-file or total bound */
	uint64_t remembered; /* skipped: failed recently (miss dir) */
	char last_error[256]; /* "BUILDID: reason" of the last failure, "" if none */
} ember__dbgd_stats;

/*
 * Whether debuginfod is configured: the urls given, else
 * $DEBUGINFOD_URLS, non-empty. (No library loaded.)
 */
int ember__dbgd_configured(const char *urls);

/*
 * A debuginfod fetcher (opts may be NULL: all defaults). Loads
 * libdebuginfod.so.1. With opts->urls, sets DEBUGINFOD_URLS in this
 * process's environment (the library reads only that): call it before
 * other threads run. *out is the caller's, freed with ember__dbgd_free.
 * 0, EMBER_ERR_UNSUPPORTED (the library cannot be loaded: the message
 * says which package), EMBER_ERR_INVALID (no servers configured) or
 * EMBER_ERR_NOMEM.
 */
int ember__dbgd_new(ember__dbgd **out, const ember__dbgd_opts *opts);

void ember__dbgd_free(ember__dbgd *d);

/*
 * Fetches the debug files of n build ids (lowercase hex) in parallel and
 * sets paths[i] to a malloc'd path of build_ids[i]'s debug file in the
 * cache, or NULL (the reason counted in the stats). Returns within the
 * total bound (plus about a second: the library's polling). Repeated ids
 * are fetched once. 0 or EMBER_ERR_NOMEM (paths all NULL then).
 */
int ember__dbgd_fetch(ember__dbgd *d, const char *const *build_ids, size_t n, char **paths);

/* The counts so far (borrowed; valid until the next fetch or free). */
const ember__dbgd_stats *ember__dbgd_get_stats(const ember__dbgd *d);

#endif
