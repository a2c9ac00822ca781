/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolize.h - names for the addresses of profiles already written:
 * `emberprof symbolize`, and `emberprof run`'s pass over its own files
 * when debuginfod is configured.
 *
 * A location whose frames have a real function name is kept as it is; one
 * without a name (no line, or a placeholder such as "libfoo.so+0x1a2b0" or
 * "0x55ac93b6d883") is looked up in its mapping's file and gets functions,
 * files, lines and inlined frames, exactly as the symbolizing agent would
 * have given them (the same code: src/symbols/, offline). Everything else
 * in the profile (samples, values, labels, comments, times, period,
 * mappings' ranges) is kept; a profile with nothing to name is not
 * rewritten at all, so a second run changes no byte.
 *
 * Files come from, in order (each checked against the mapping's GNU build
 * id when it has one):
 *   - the module's ELF: SYSROOT/path, else path itself;
 *   - its debug file: the standard local places (/usr/lib/debug/.build-id,
 *     .gnu_debuglink), each --debug-dir DIR (DIR/.build-id/xx/rest.debug,
 *     DIR/path.debug, DIR/path), SYSROOT/usr/lib/debug/.build-id, then
 *     debuginfod (tools/debuginfod/), fetched in parallel before the
 *     lookups for the modules that need it;
 *   - a module whose ELF is not on this machine is read from its debug file.
 *
 * One symbolizer at a time per process: it sets the symbolizer's file
 * hooks (symbols/debugfile.h) while it lives. Not async-signal-safe.
 */
#ifndef EMBER_TOOLS_SYMBOLIZE_H
#define EMBER_TOOLS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "debuginfod/dbgd_bg.h"
#include "debuginfod/debuginfod.h"
#include "profile/profile.h"

typedef struct ember__symz_opts {
	const char *const *debug_dirs; /* borrowed for the symbolizer's life */
	size_t ndebug_dirs;
	const char *sysroot;           /* NULL: none */
	int debuginfod;                /* use debuginfod when configured */
	ember__dbgd_opts dbgd;         /* its options (urls NULL: $DEBUGINFOD_URLS) */
	ember__dbgd_bg *bg;            /* non-NULL (borrowed): debuginfod through this
					* background fetcher instead, never waited for:
					* what has not arrived is asked for and counted
					* (ember__symz_pending); dbgd is then unused */
	int lines;                     /* EMBER__LINES_* (symbols/symbolizer.h) */
} ember__symz_opts;

typedef struct ember__symz_stats {
	uint64_t files;      /* profiles read */
	uint64_t rewritten;  /* profiles that changed and were written */
	uint64_t named;      /* locations given names */
	uint64_t kept;       /* locations that had names already */
	uint64_t unnamed;    /* locations still without a name */
	uint64_t no_file;    /* mappings with no file to read on this machine */
} ember__symz_stats;

typedef struct ember__symz ember__symz;

/* A symbolizer with these options (copied; the arrays and strings are
 * borrowed). *out is the caller's. 0 or EMBER_ERR_NOMEM. */
int ember__symz_new(ember__symz **out, const ember__symz_opts *o);

/* Frees it and clears the file hooks. NULL is ok. */
void ember__symz_free(ember__symz *z);

/*
 * Names the unnamed locations of p in place. *changed is set when
 * anything in p changed. 0 or an ember_err (p then unchanged or partly
 * named; still a valid profile).
 */
int ember__symz_profile(ember__symz *z, ember__profile *p, int *changed);

/* The build ids the last ember__symz_profile wanted from debuginfod that
 * had not arrived (background fetcher only; 0 otherwise). */
size_t ember__symz_pending(const ember__symz *z);

/*
 * Reads the pprof file or JFR recording `in`, names it, and writes it to
 * `out` (NULL: in place) through a temporary file renamed over it (a
 * pprof file gzip'd or raw as `in` was). Nothing is written when nothing changed (and out is NULL or `in`);
 * with another `out` the profile is written either way. 0 or an ember_err
 * naming the file.
 */
int ember__symz_file(ember__symz *z, const char *in, const char *out, int *changed);

/*
 * Names the placeholder frames of the JFR recording data[0..len)
 * (borrowed) as jfr_symbolize.c says: on success with *changed set,
 * *out is the new recording, malloc'd, the caller's; with nothing named
 * *changed is 0 and *out NULL (the recording is right as it is). Counts:
 * a placeholder method is a location. 0 or an ember_err (EMBER_ERR_FORMAT
 * for a malformed recording).
 */
int ember__symz_jfr(ember__symz *z, const uint8_t *data, size_t len, uint8_t **out,
		    size_t *out_len, int *changed);

/* Counts so far (borrowed). */
const ember__symz_stats *ember__symz_get_stats(const ember__symz *z);

/* The debuginfod client's counts, or NULL if debuginfod was not used. */
const ember__dbgd_stats *ember__symz_dbgd_stats(const ember__symz *z);

/* A debuginfod problem worth a line to the user ("debuginfod: ..."), or
 * NULL. Borrowed. */
const char *ember__symz_dbgd_problem(const ember__symz *z);

#endif
