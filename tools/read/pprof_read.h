/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof_read.h - the profile.proto decoder (pprof_read.c), for the tools:
 * what it accepts and how it treats hostile input is described in
 * encode/pprof.h. None of this is async-signal-safe.
 */
#ifndef EMBER_PPROF_READ_H
#define EMBER_PPROF_READ_H

#include "encode/pprof.h"

/*
 * Decodes a profile from data[0..len), gzip'd (detected by the 1f 8b magic)
 * or raw. The input is borrowed. On success *out is a new profile owned by
 * the caller (free with ember__profile_free) whose strings all live in its
 * arena. On failure *out is NULL and the return is EMBER_ERR_FORMAT (with a
 * message naming the problem: malformed protobuf, a missing id, a string
 * index out of range, too many values...), EMBER_ERR_NOMEM or
 * EMBER_ERR_INVALID for NULL arguments.
 */
int ember__pprof_read(const uint8_t *data, size_t len, ember__profile **out);

/*
 * Reads the file at `path` and decodes it like ember__pprof_read(). Files
 * larger than EMBER_PPROF_MAX_RAW are refused. EMBER_ERR_IO if the file
 * cannot be read. *out as above.
 */
int ember__pprof_read_file(const char *path, ember__profile **out);

#endif
