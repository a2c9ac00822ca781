/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3.h - internals of the S3 reporter (src/report/s3.c) and of the object
 * it uploads (src/report/s3_object.c): the zip, metadata.json, the key,
 * and the S3 error classification, exposed for the unit tests.
 * Nothing here is async-signal-safe.
 */
#ifndef EMBER_REPORT_S3_H
#define EMBER_REPORT_S3_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "emberprof.h"
#include "upload/pipeline.h"

/* The pipeline item kind of an S3 upload ("S3Z1"): body = the zip, meta =
 * "<pid> <time>" fixed when the window was reported. */
#define EMBER_S3_KIND_ZIP 0x53335a31u

/* The async-profiler agent's entry names. */
#define EMBER_S3_JFR_ENTRY "async_profiler_dump_0.jfr"
#define EMBER_S3_META_ENTRY "metadata.json"

/* Loads libzip (dlopen, once per process). 0 or EMBER_ERR_UNSUPPORTED. */
int ember__zip_global_init(void);

/* {"start":<ms>,"end":<ms>,"reporting_interval":<ms>} into out; returns its length. */
size_t ember__s3_metadata_json(char *out, size_t cap, int64_t start_ms, int64_t end_ms,
			       int64_t interval_ms);

/*
 * The zip: EMBER_S3_JFR_ENTRY (jfr) then EMBER_S3_META_ENTRY, both
 * Deflated. *out is malloc'd. 0 or a negative ember_err with a message.
 */
int ember__s3_zip(const uint8_t *jfr, size_t jfr_len, const char *metadata_json, uint8_t **out,
		  size_t *out_len);

/* UTC "yyyy-mm-ddTHH-MM-SSZ" (whole seconds). */
void ember__s3_time(time_t t, char out[32]);

/* profile_{group}_{machine}_{pid}_{time}.zip; returns the length, or -1 if it does not fit. */
int ember__s3_key(char *out, size_t cap, const char *group, const char *machine, long pid,
		  const char *time);

/* The URL of `key` in `bucket`: path-style under a custom endpoint,
 * virtual-hosted under https://{bucket}.s3.{region}.amazonaws.com. */
int ember__s3_object_url(char *out, size_t cap, const char *endpoint, int path_style,
			 const char *bucket, const char *region, const char *key);

/*
 * Reclassifies an S3 answer: `status` and the XML error body. Fills
 * code/message (from <Code>, <Message>) and returns:
 *   EMBER__SEND_OK for 2xx; EMBER__SEND_RETRY for 408, 429, 5xx,
 *   403/400 RequestTimeTooSkewed, ExpiredToken (*refresh = 1: fetch
 *   credentials again first); EMBER__SEND_PERMANENT for other 4xx.
 */
int ember__s3_classify(long status, const char *body, char *code, size_t code_cap,
		       char *message, size_t msg_cap, int *refresh);

/* Adds an S3 reporter from the EMBERPROF_S3_* variables (src/agent/env_s3.c, rows of src/agent/options.c), if
 * EMBERPROF_S3_BUCKET is set. 0 or EMBER_ERR_INVALID naming the variable. */
int ember__s3_apply_env(ember_builder *b);

/* Test hooks on a reporter's userdata. */
void ember__s3_set_detect_retry_ms(void *userdata, unsigned min_ms, unsigned max_ms);
void ember__s3_set_lookup_timeouts(void *userdata, unsigned connect_ms, unsigned total_ms);
/* Where relative container credential URIs go (default http://169.254.170.2). */
int ember__s3_set_ecs_credentials_host(void *userdata, const char *host);
/* Counters for tests: detection attempts, auth failures (403s), credential refreshes. */
void ember__s3_counters(void *userdata, uint64_t *detections, uint64_t *auth_failures,
			uint64_t *refreshes);

#endif
