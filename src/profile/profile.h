/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile.h - the in-memory profile model shared by the aggregator, the
 * encoders (pprof now, JFR later), the pprof reader and `emberprof top`.
 *
 * It mirrors profile.proto closely so that encoding is a straight walk:
 * mappings, functions and locations are tables; samples refer to locations
 * by 1-based index (0 is never a valid reference, as in pprof's ids).
 * Every string and array lives in the profile's arena and is freed with the
 * profile: nothing inside a profile is individually owned.
 *
 * Not async-signal-safe: runs on the agent thread or in the CLI.
 */
#ifndef EMBER_PROFILE_H
#define EMBER_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"

typedef struct ember__mapping {
	uint64_t start, limit, offset;
	const char *file;     /* path, "" if unknown */
	const char *build_id; /* lowercase hex, "" if unknown */
	int has_functions, has_filenames, has_line_numbers;
} ember__mapping;

typedef struct ember__function {
	const char *name;        /* demangled name */
	const char *system_name; /* mangled name as in the symbol table */
	const char *filename;    /* source file, "" if unknown */
	int64_t start_line;
} ember__function;

typedef struct ember__line {
	uint32_t function; /* 1-based index into functions */
	int64_t line;      /* 0 if unknown */
} ember__line;

typedef struct ember__location {
	uint64_t address;
	uint32_t mapping; /* 1-based index into mappings, 0 = none */
	uint32_t nlines;  /* innermost (inlined) first, as in pprof */
	ember__line *lines;
} ember__location;

typedef struct ember__label {
	const char *key;
	const char *str;      /* NULL for a numeric label */
	int64_t num;
	const char *num_unit; /* NULL if none */
} ember__label;

#define EMBER_PROFILE_MAX_VALUES 4

typedef struct ember__sample {
	uint32_t *locs; /* 1-based indices into locations, leaf first */
	uint32_t nlocs;
	uint32_t nlabels;
	ember__label *labels;
	int64_t values[EMBER_PROFILE_MAX_VALUES];
} ember__sample;

typedef struct ember__value_type {
	const char *type;
	const char *unit;
} ember__value_type;

typedef struct ember__profile {
	ember__arena arena;

	uint32_t nvalues; /* sample types, <= EMBER_PROFILE_MAX_VALUES */
	ember__value_type sample_type[EMBER_PROFILE_MAX_VALUES];
	ember__value_type period_type;
	int64_t period;
	int64_t time_nanos, duration_nanos;
	const char *default_sample_type; /* NULL if none */
	const char *comment;             /* NULL if none */

	ember__mapping *mappings;
	uint32_t nmappings, cap_mappings;
	ember__function *functions;
	uint32_t nfunctions, cap_functions;
	ember__location *locations;
	uint32_t nlocations, cap_locations;
	ember__sample *samples;
	uint32_t nsamples, cap_samples;
} ember__profile;

/* Creates an empty profile. Returns NULL on out-of-memory. Caller frees. */
ember__profile *ember__profile_new(void);
void ember__profile_free(ember__profile *p);

/* Copies a string into the profile's arena. NULL in gives "" out. */
const char *ember__profile_strdup(ember__profile *p, const char *s);

/*
 * Appenders. Each copies nothing but the struct: strings and arrays must
 * already live in the profile's arena (use ember__profile_strdup and
 * ember__arena_alloc). Return the new 1-based index, or 0 on OOM.
 */
uint32_t ember__profile_add_mapping(ember__profile *p, const ember__mapping *m);
uint32_t ember__profile_add_function(ember__profile *p, const ember__function *f);
uint32_t ember__profile_add_location(ember__profile *p, const ember__location *l);
uint32_t ember__profile_add_sample(ember__profile *p, const ember__sample *s);

/*
 * Appends a sample of `ns` (values[1]; values[0], the count, 0) for time
 * that no sampled stack stands for, its stack two frames: `leaf` (such as
 * "[unsampled]") called from the executable's name, the root. Both are
 * in the mapping of `exe` (path; added, with no address range, unless
 * present); without exe the root is `comm`. Labels are the caller's to
 * add. Returns the sample's 1-based index, 0 on OOM (no error set).
 */
uint32_t ember__profile_add_pseudo(ember__profile *p, const char *exe, const char *comm,
				   const char *leaf, int64_t ns);

/*
 * Reads the file at path (at most max bytes) and decodes it with decode
 * (ember__pprof_read, ember__jfr_to_profile), naming the file in front of
 * a format error's message. *out as decode gives it. 0, EMBER_ERR_IO, or
 * what reading or decode returns.
 */
typedef int (*ember__profile_decoder)(const uint8_t *data, size_t len, ember__profile **out);
int ember__profile_read_file(const char *path, size_t max, ember__profile_decoder decode,
			     ember__profile **out);

#endif
