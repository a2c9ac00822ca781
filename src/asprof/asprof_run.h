/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asprof_run.h - one run of the async-profiler backend: the agent thread
 * that starts async-profiler, rotates its JFR output between two anonymous
 * files at every window boundary and hands each finished recording to the
 * agent as an EMBER_FORMAT_JFR report.
 *
 * Per window boundary (on the agent thread "emberprof"): `stop`; truncate
 * the inactive file; swap; `start` on the new active file (so profiling
 * goes on meanwhile); read the file just finished; report it. At stop the
 * last, partial window is reported too, marked final. Files are unlinked
 * temporaries (O_TMPFILE in $TMPDIR or /tmp, else memfd), held on
 * descriptors >= 256 and named to async-profiler as /proc/self/fd/<N>, so
 * no path can be raced. Nothing here is async-signal-safe.
 */
#ifndef EMBER_ASPROF_RUN_H
#define EMBER_ASPROF_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "asprof/asprof.h"
#include "emberprof.h"
#include "util/log.h"

/*
 * Hands one report to the reporters (called on the run's thread). Returns
 * 0 or a negative ember_err; the run only logs and counts failures.
 */
typedef int (*ember__asprof_deliver_fn)(void *ctx, const ember_report *rep);

typedef struct ember__asprof_run ember__asprof_run;

/* What a run takes from the agent's settings (copied at start; what the
 * pointers point to is borrowed for the run's life). */
typedef struct ember__asprof_run_cfg {
	const ember__asprof_config *asprof; /* the backend's settings */
	const char *app_name;               /* for the reports */
	unsigned interval_ms;               /* window length */
	const ember__logger *log;           /* may be NULL: nothing logged */
} ember__asprof_run_cfg;

/*
 * Starts a run: creates the thread, which loads the library (cfg->asprof),
 * calls asprof_init once, makes the two files and sends the first `start`;
 * returns once that is done. Windows get seq numbers from `first_seq` on.
 * `cfg` is copied; what it points to is borrowed for the run's life. On failure nothing is left behind
 * and the message names the problem (EMBER_ERR_UNSUPPORTED: library or
 * symbol missing; EMBER_ERR_SYS: async-profiler refused to start).
 */
int ember__asprof_run_start(ember__asprof_run **out, const ember__asprof_run_cfg *cfg,
			    uint32_t first_seq, ember__asprof_deliver_fn deliver, void *ctx);

/*
 * Stops the run: its thread sends the final `stop`, reports the last
 * window (final = 1) and exits; then frees everything. Returns 0 if the
 * final window was delivered, else a negative ember_err with a message.
 * *next_seq receives the seq after the last window, *errors the number of
 * async-profiler commands and recordings that failed during the run.
 */
int ember__asprof_run_stop(ember__asprof_run *r, uint32_t *next_seq, uint64_t *errors);

/* Failed commands and unusable recordings so far (any thread). */
uint64_t ember__asprof_run_errors(const ember__asprof_run *r);

/*
 * Refuses (EMBER_ERR_INVALID, naming it) a configuration whose reporter
 * does not take EMBER_FORMAT_JFR: async-profiler's output is JFR only.
 */
int ember__asprof_check_reporters(const ember_reporter *reporters, size_t n);

#endif
