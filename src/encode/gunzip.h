/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gunzip.h - inflating gzip data into memory, for the pprof reader (tools)
 * and the reporters' empty-profile check (ember__pprof_is_empty). zlib is
 * loaded on first use. Not async-signal-safe.
 */
#ifndef EMBER_GUNZIP_H
#define EMBER_GUNZIP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Inflates the gzip stream in[0..len) (several members may follow each
 * other, as gzip allows) into a malloc'd buffer of at most `max` bytes,
 * owned by the caller: *out, *out_len. `what` names the data in errors
 * ("pprof"). Returns 0, EMBER_ERR_FORMAT (corrupt, truncated, trailing
 * junk, larger than max), EMBER_ERR_NOMEM, or lazydep's error when zlib
 * cannot be loaded. The input is borrowed.
 */
int ember__gunzip(const uint8_t *in, size_t len, size_t max, const char *what, uint8_t **out,
		  size_t *out_len);

#endif
