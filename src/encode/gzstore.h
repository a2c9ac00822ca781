/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gzstore.h - a gzip stream written without zlib: the data in deflate's
 * stored (uncompressed) blocks, with its CRC-32. What ember__gzip
 * (pprof.h) writes when zlib cannot be loaded in the process (a program
 * in a container whose filesystem has no libz.so.1, the library loaded
 * there by `emberprof attach`): the files stay gzip, which every reader
 * takes, only larger. Not async-signal-safe (malloc); thread-safe.
 */
#ifndef EMBER_ENCODE_GZSTORE_H
#define EMBER_ENCODE_GZSTORE_H

#include <stddef.h>
#include <stdint.h>

/* in[0..len) (borrowed) as a malloc'd gzip stream *out of *out_len bytes
 * (the caller frees it). 0, or EMBER_ERR_NOMEM. */
int ember__gzip_stored(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);

/* The CRC-32 (gzip's, ISO 3309) of b[0..n) continuing from crc (0 to
 * start). */
uint32_t ember__crc32(uint32_t crc, const uint8_t *b, size_t n);

/* How many streams ember__gzip_stored has written in this process (the
 * agent says once that its profiles are not compressed). */
unsigned long ember__gzip_stored_count(void);

#endif
