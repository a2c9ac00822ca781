/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_profile.h - a JFR recording (emberprof's own, or async-profiler's)
 * turned into the in-memory profile model (profile.h), so that `emberprof
 * top` and the summary of `emberprof run` can rank its functions as they
 * do a pprof file's.
 *
 * Events read, each a sample of its own value (sample type, unit):
 *   jdk.ExecutionSample      cpu, count (one per event)
 *   profiler.WallClockSample wall, count (its `samples` field, at least 1)
 *   profiler.Malloc          alloc_space, bytes (its `size` field)
 * Every other event is skipped. A frame's function is its method's name;
 * for a native frame (frame type Native, C++ or Kernel) the method's class
 * is the module it lies in, as emberprof's encoder writes it (its mapping's
 * file), and for a Java frame the function is Class.method. Frames keep
 * their line numbers. The default sample type is the first present, in
 * the order above.
 *
 * Input is hostile; the reader (jfr_read.h) checks it. Not
 * async-signal-safe.
 */
#ifndef EMBER_JFR_PROFILE_H
#define EMBER_JFR_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* Does data[0..len) start like a JFR recording ("FLR\0")? */
int ember__jfr_magic(const uint8_t *data, size_t len);

/*
 * Converts the recording in data[0..len) (borrowed). On success *out is
 * the caller's (ember__profile_free). EMBER_ERR_FORMAT (not JFR, malformed,
 * or no event of a type above: the message says which) or EMBER_ERR_NOMEM.
 */
int ember__jfr_to_profile(const uint8_t *data, size_t len, ember__profile **out);

/* The same for the file at path (at most 1 GiB); errors name the file. */
int ember__jfr_read_profile_file(const char *path, ember__profile **out);

#endif
