/* SPDX-License-Identifier: Apache-2.0 */
/*
 * convert.h - `emberprof convert`'s work, apart from the command line:
 * profile files of any format emberprof reads (pprof, JFR, OTLP request
 * bodies) into the in-memory model, and the model out again as pprof or
 * as one OTLP ExportProfilesServiceRequest (src/encode/otlp.h).
 *
 * Ownership: arrays and profiles returned are the caller's. Not
 * async-signal-safe.
 */
#ifndef EMBER_CONVERT_CONVERT_H
#define EMBER_CONVERT_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

enum { EMBER_CONV_AUTO, EMBER_CONV_PPROF, EMBER_CONV_JFR, EMBER_CONV_OTLP };

/* The format named s ("pprof", "jfr", "otlp"), or -1. */
int ember__convert_format(const char *s);

/*
 * Reads the file at path as `from` (EMBER_CONV_AUTO: JFR by its magic,
 * else pprof, else an OTLP request) and appends its profiles to *v (*n
 * of them, realloc'd). *format receives the format read. 0, or the
 * reader's error with a message naming the file.
 */
int ember__convert_read(const char *path, int from, ember__profile ***v, size_t *n, int *format);

/*
 * If data[0..len) is a spool file of the OTLP reporter (src/upload/
 * spool.h, version 1), points *body at the request body inside it and
 * returns 1; returns 0 for any other data, or EMBER_ERR_FORMAT (message
 * set) for a spool file that is not an OTLP window or is damaged. The
 * body's CRC is not checked (the spool checks it when it sends).
 */
int ember__convert_spool_body(const uint8_t *data, size_t len, const uint8_t **body,
			      size_t *body_len);

/*
 * Encodes profiles p[0..n) as one OTLP request: resource service.name
 * (when service is not NULL), scope emberprof. *out malloc'd, gzip'd when
 * gzip is set. 0 or the encoder's error.
 */
int ember__convert_to_otlp(ember__profile *const *p, size_t n, const char *service, int gzip,
			   uint8_t **out, size_t *out_len);

#endif
