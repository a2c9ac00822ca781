/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof.h - conversion between the in-memory profile model (profile.h) and
 * pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
 * gzip'd as pprof tools expect on disk.
 *
 * Encoding (pprof.c) walks the model's tables: a mapping, function or
 * location gets the id equal to its 1-based index; strings are interned
 * once each into the string table, whose entry 0 is "". Sample location
 * ids and values are packed.
 *
 * Decoding (tools/read/pprof_read.c, declared in read/pprof_read.h: the
 * preloaded library has no reader) accepts gzip'd or raw profile.proto as written
 * by us, by Go's runtime/pprof or by `go tool pprof -proto`: ids may be
 * sparse and in any order, and are remapped to 1-based indices. Input is
 * treated as hostile: every reference is checked, the decompressed size is
 * bounded by EMBER_PPROF_MAX_RAW, and allocation is proportional to the
 * (decompressed) input.
 *
 * Fields the model has no place for are dropped on reading: drop_frames,
 * keep_frames, Line.column, Location.is_folded, Mapping.has_inline_frames.
 * Several comments are joined into one with "\n" (cut at 1 MiB); on
 * writing, a comment is split at "\n" into several. On writing, has_inline_frames is set for a
 * mapping when one of its locations has more than one line.
 *
 * Labels: a label whose str index is nonzero is a string label, any other
 * is numeric (so a string label with the value "" reads back as the
 * numeric label 0, as in Go's reader).
 *
 * None of this is async-signal-safe.
 */
#ifndef EMBER_PPROF_H
#define EMBER_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* The largest decompressed profile the reader accepts: 1 GiB. */
#define EMBER_PPROF_MAX_RAW ((size_t)1 << 30)

/*
 * Encodes `p` as gzip'd profile.proto. On success *out is a malloc'd buffer
 * of *out_len bytes that the caller frees with free(). The profile is only
 * read. Returns 0, EMBER_ERR_INVALID if the profile refers to a missing
 * mapping, function or location or has more than EMBER_PROFILE_MAX_VALUES
 * sample types, EMBER_ERR_NOMEM, or EMBER_ERR_FORMAT if zlib fails
 * (without zlib, see ember__gzip).
 */
int ember__pprof_encode(const ember__profile *p, uint8_t **out, size_t *out_len);

/* Compresses in[0..len) (borrowed) into a malloc'd gzip stream *out (the
 * caller's); where zlib cannot be loaded, the stream holds the data
 * uncompressed (encode/gzstore.h). 0, EMBER_ERR_NOMEM, EMBER_ERR_FORMAT
 * if zlib fails. */
int ember__gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);

/* The same without gzip: *out is raw profile.proto, caller frees. */
int ember__pprof_encode_raw(const ember__profile *p, uint8_t **out, size_t *out_len);

/*
 * Whether a report's pprof holds no sample (no data at all, or a profile
 * whose top-level message has no Sample field): such a window is not
 * written or sent by the reporters. Data that cannot be inflated or
 * parsed counts as not empty (it is the user's data). Borrowed input;
 * allocates only to inflate gzip'd data.
 */
int ember__pprof_is_empty(const uint8_t *data, size_t len);

#endif
