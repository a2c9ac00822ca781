/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sha256.h - SHA-256 (FIPS 180-4), for the x-amz-content-sha256 header of
 * signed S3 requests (the signature itself is computed by libcurl).
 * Pure computation: async-signal-safe, though nothing calls it there.
 */
#ifndef EMBER_SHA256_H
#define EMBER_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* The digest of data[0..n) as 64 lowercase hex digits and a NUL. */
void ember__sha256_hex(const void *data, size_t n, char out[65]);

/* The raw 32-byte digest. */
void ember__sha256(const void *data, size_t n, uint8_t out[32]);

#endif
