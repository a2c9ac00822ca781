/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local.h - internals of the local-directory reporter behind
 * ember_reporter_local() (declared in include/emberprof.h).
 *
 * The reporter writes one gzip'd pprof file per reporting window (and
 * profile type) and/or one JFR recording per window into a directory it
 * holds open, so the file names and the directory checks are
 * exposed here for the unit tests and for the CLI, which lists the files
 * the reporter produced.
 *
 * Nothing here is async-signal-safe: it runs on the agent thread or in the
 * CLI, never in the signal handler.
 */
#ifndef EMBER_REPORT_LOCAL_H
#define EMBER_REPORT_LOCAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/fileio.h"

/* The suffix every finished profile file ends with. */
#define EMBER_LOCAL_SUFFIX ".pb.gz"
/* The suffix of a JFR recording (ember_reporter_local_ex with EMBER_FORMAT_JFR). */
#define EMBER_LOCAL_JFR_SUFFIX ".jfr"

/* Longest application-name part of a file name, in bytes. */
#define EMBER_LOCAL_APP_MAX 96

/*
 * Writes the file name of one window into buf (size n):
 *     <app>-<UTC yyyymmddTHHMMSS>.<mmm>Z-<pid>-<seq>[.<type>].pb.gz
 * where <type> is the report's profile type unless it is "cpu" (NULL too).
 * The app name is sanitized to [A-Za-z0-9._-] (other bytes become '_'),
 * cut to EMBER_LOCAL_APP_MAX bytes, and "app" if empty. A start time before
 * the epoch is written as the epoch. Returns 0, or EMBER_ERR_INVALID (with
 * a message) if buf is too small. Does not allocate.
 */
int ember__local_filename(char *buf, size_t n, const char *app, int64_t start_ns, pid_t pid,
			  uint32_t seq, const char *type);
/* The same name ending in `suffix` instead of .pb.gz (".jfr": a JFR
 * recording, with type NULL). */
int ember__local_filename_ext(char *buf, size_t n, const char *app, int64_t start_ns, pid_t pid,
			      uint32_t seq, const char *type, const char *suffix);

/* ember__local_open_dir, the directory rule this reporter shares with the
 * upload spool, is in util/fileio.h. */

#endif
