/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.h - the OpenTelemetry profiles encoder: windows of the in-memory
 * profile model (profile.h) as one OTLP ExportProfilesServiceRequest
 * (opentelemetry-proto, opentelemetry/proto/collector/profiles/
 * v1development/profiles_service.proto), hand-written on protobuf.h as
 * pprof.c is. docs/design/otlp.md says what the pinned version means and
 * what changes with the next one.
 *
 * Layout. One ResourceProfiles (the resource attributes given) holding one
 * ScopeProfiles (the scope given) holding, for each input profile and each
 * of its sample types in order, one Profile: OTLP's Profile has a single
 * sample_type, so a pprof with n sample types becomes n Profiles that
 * share time, duration, period type and period, and list the same samples
 * (same stack, same attributes, in the model's order) each with its own
 * value: a zero value is kept, so that the n Profiles stay aligned and can
 * be joined back into one pprof (tools/convert). Everything the Profiles
 * refer to lives in the request's one ProfilesDictionary, whose tables
 * each start with the zero value and hold no entry twice (entries are
 * interned by their encoded bytes). A sample's labels are its attributes
 * (string_value, or int_value with the label's unit as the unit); a
 * mapping's build ID is its attribute process.executable.build_id.gnu.
 * Attribute keys and values are written as plain strings (not the
 * *_strindex references), which every receiver of this version reads.
 * Dropped for want of a field: default_sample_type and comment.
 *
 * Ownership: the input is only read; the output is malloc'd, the
 * caller's. Not async-signal-safe (malloc): agent thread or CLI.
 */
#ifndef EMBER_ENCODE_OTLP_H
#define EMBER_ENCODE_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* The pinned protocol: the opentelemetry-proto release tag the encoder
 * follows, and the profiles signal's package version in it (Go module
 * go.opentelemetry.io/proto/otlp/profiles/v1development at v0.3.0,
 * generated from that tag; what Grafana Pyroscope's ingester is built on). */
#define EMBER_OTLP_PROTO_TAG "v1.10.0"
#define EMBER_OTLP_PROFILES_VERSION "v1development (Go module v0.3.0)"
/* The OTLP/HTTP path of the profiles signal at this version. */
#define EMBER_OTLP_HTTP_PATH "/v1development/profiles"

/* One attribute: a string value, or (str NULL) an integer value. */
typedef struct ember__otlp_attr {
	const char *key;
	const char *str;
	int64_t num;
} ember__otlp_attr;

typedef struct ember__otlp_window {
	const ember__otlp_attr *resource; /* the Resource's attributes, in order */
	size_t nresource;
	const char *scope_name, *scope_version;
	const ember__profile *const *profiles; /* NULL entries are skipped */
	size_t nprofiles;
	int profile_ids; /* nonzero: a random 16-byte profile_id per Profile */
} ember__otlp_window;

/*
 * Encodes the window as an ExportProfilesServiceRequest (not compressed).
 * *out is malloc'd (the caller frees it), *out_len its length. Returns 0,
 * EMBER_ERR_INVALID (a reference out of range, a table beyond int32
 * indices: the message names it) or EMBER_ERR_NOMEM.
 */
int ember__otlp_encode(const ember__otlp_window *w, uint8_t **out, size_t *out_len);

/*
 * The same in steps, for a reporter that gets a window's profiles one at
 * a time: new, add each profile (its tables are interned at once, so it
 * may be freed after), finish (the request, *out malloc'd), free. The
 * encoder is the caller's; enc_count says how many Profiles were added.
 * Returns as ember__otlp_encode().
 */
typedef struct ember__otlp_enc ember__otlp_enc;
int ember__otlp_enc_new(ember__otlp_enc **out);
int ember__otlp_enc_add(ember__otlp_enc *e, const ember__profile *p, int profile_ids);
size_t ember__otlp_enc_count(const ember__otlp_enc *e);
int ember__otlp_enc_finish(ember__otlp_enc *e, const ember__otlp_attr *resource, size_t nresource,
			   const char *scope_name, const char *scope_version, uint8_t **out,
			   size_t *out_len);
void ember__otlp_enc_free(ember__otlp_enc *e);

/* ExportProfilesServiceRequest and dictionary field numbers, shared with
 * the reader (tools/convert). */
enum {
	EMBER_OTLP_REQ_RESOURCE_PROFILES = 1,
	EMBER_OTLP_REQ_DICTIONARY = 2,

	EMBER_OTLP_DICT_MAPPING = 1,
	EMBER_OTLP_DICT_LOCATION = 2,
	EMBER_OTLP_DICT_FUNCTION = 3,
	EMBER_OTLP_DICT_LINK = 4,
	EMBER_OTLP_DICT_STRING = 5,
	EMBER_OTLP_DICT_ATTRIBUTE = 6,
	EMBER_OTLP_DICT_STACK = 7,
	EMBER_OTLP_DICT_NTABLES = 8,

	EMBER_OTLP_RP_RESOURCE = 1,
	EMBER_OTLP_RP_SCOPE_PROFILES = 2,
	EMBER_OTLP_RESOURCE_ATTRIBUTES = 1,
	EMBER_OTLP_SP_SCOPE = 1,
	EMBER_OTLP_SP_PROFILES = 2,
	EMBER_OTLP_SCOPE_NAME = 1,
	EMBER_OTLP_SCOPE_VERSION = 2,
	EMBER_OTLP_KV_KEY = 1,
	EMBER_OTLP_KV_VALUE = 2,
	EMBER_OTLP_ANY_STRING = 1,
	EMBER_OTLP_ANY_BOOL = 2,
	EMBER_OTLP_ANY_INT = 3,
	EMBER_OTLP_ANY_DOUBLE = 4,
	EMBER_OTLP_ANY_STRINDEX = 8,

	EMBER_OTLP_PROFILE_SAMPLE_TYPE = 1,
	EMBER_OTLP_PROFILE_SAMPLES = 2,
	EMBER_OTLP_PROFILE_TIME = 3, /* fixed64 */
	EMBER_OTLP_PROFILE_DURATION = 4,
	EMBER_OTLP_PROFILE_PERIOD_TYPE = 5,
	EMBER_OTLP_PROFILE_PERIOD = 6,
	EMBER_OTLP_PROFILE_ID = 7,

	EMBER_OTLP_VT_TYPE = 1,
	EMBER_OTLP_VT_UNIT = 2,

	EMBER_OTLP_SAMPLE_STACK = 1,
	EMBER_OTLP_SAMPLE_ATTRS = 2,
	EMBER_OTLP_SAMPLE_LINK = 3,
	EMBER_OTLP_SAMPLE_VALUES = 4,

	EMBER_OTLP_MAPPING_START = 1,
	EMBER_OTLP_MAPPING_LIMIT = 2,
	EMBER_OTLP_MAPPING_OFFSET = 3,
	EMBER_OTLP_MAPPING_FILENAME = 4,
	EMBER_OTLP_MAPPING_ATTRS = 5,

	EMBER_OTLP_STACK_LOCATIONS = 1,

	EMBER_OTLP_LOCATION_MAPPING = 1,
	EMBER_OTLP_LOCATION_ADDRESS = 2,
	EMBER_OTLP_LOCATION_LINES = 3,
	EMBER_OTLP_LOCATION_ATTRS = 4,

	EMBER_OTLP_LINE_FUNCTION = 1,
	EMBER_OTLP_LINE_LINE = 2,
	EMBER_OTLP_LINE_COLUMN = 3,

	EMBER_OTLP_FUNCTION_NAME = 1,
	EMBER_OTLP_FUNCTION_SYSTEM_NAME = 2,
	EMBER_OTLP_FUNCTION_FILENAME = 3,
	EMBER_OTLP_FUNCTION_START_LINE = 4,

	EMBER_OTLP_KVU_KEY = 1,
	EMBER_OTLP_KVU_VALUE = 2,
	EMBER_OTLP_KVU_UNIT = 3
};

/* The mapping attribute carrying the GNU build ID (semantic conventions). */
#define EMBER_OTLP_BUILD_ID_KEY "process.executable.build_id.gnu"

#endif
