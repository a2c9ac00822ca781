/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_read.h - the OTLP profiles decoder: an ExportProfilesServiceRequest
 * (or a ProfilesData, which has the same fields) as written by
 * encode/otlp.c or any other exporter of the pinned version, back into the
 * in-memory profile model, for `emberprof convert` and the tests.
 *
 * Joining. OTLP has one sample type per Profile; consecutive Profiles of
 * one scope that share time, duration, period type and period and list
 * the same samples (same stack and attributes, in the same order) are
 * joined into one model profile with several sample types, as encode/
 * otlp.c splits them (at most EMBER_PROFILE_MAX_VALUES). Any other
 * Profile becomes a profile of its own.
 *
 * The input is untrusted: every index into the dictionary is checked and
 * a bad one is EMBER_ERR_FORMAT with a message naming it. gzip'd input
 * (1f 8b) is inflated first, up to EMBER_PPROF_MAX_RAW bytes.
 *
 * None of this is async-signal-safe.
 */
#ifndef EMBER_CONVERT_OTLP_READ_H
#define EMBER_CONVERT_OTLP_READ_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

typedef struct ember__otlp_kv {
	char *key, *value; /* malloc'd; an integer value is written in decimal */
} ember__otlp_kv;

typedef struct ember__otlp_read_result {
	ember__profile **profiles; /* malloc'd array of owned profiles */
	size_t nprofiles;
	size_t notlp_profiles;     /* Profiles in the request (before joining) */
	ember__otlp_kv *resource;  /* the attributes of the first resource */
	size_t nresource;
	char *scope_name, *scope_version; /* of the first scope, malloc'd or NULL */
	size_t table_len[8];       /* dictionary table lengths, by EMBER_OTLP_DICT_* */
} ember__otlp_read_result;

/* Decodes data[0..len) (borrowed) into *out, which the caller frees with
 * ember__otlp_read_free(), on success as on failure. 0, EMBER_ERR_FORMAT
 * (message set) or EMBER_ERR_NOMEM. */
int ember__otlp_read(const uint8_t *data, size_t len, ember__otlp_read_result *out);

void ember__otlp_read_free(ember__otlp_read_result *r);

#endif
