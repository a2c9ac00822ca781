/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof.c - the profile.proto encoder (see pprof.h for the contract).
 *
 * One pass over the model writes Profile's repeated messages in field
 * order (sample_type, sample, mapping, location, function), then the
 * scalar fields, and the string table last, since it is only complete once
 * everything has been interned. Protobuf does not care about field order.
 * Strings are interned through an open-addressing hash table keyed by
 * content, so every distinct string is written once whatever its address.
 */
#include "encode/pprof.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "encode/gunzip.h"
#include "encode/gzstore.h"
#include "encode/intern.h"
#include "encode/protobuf.h"
#include "util/dep_zlib.h"
#include "util/error.h"

/* profile.proto field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,

	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,

	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,

	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	LABEL_NUM_UNIT = 4,

	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,

	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,

	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,

	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5
};

/* ---- string interning (encode/intern.h: the profile's strings, borrowed) ---- */

typedef ember__intern strtab;

/* The index of s[0..len), added if new; 0 with t->failed on out of memory. */
static int64_t intern_n(strtab *t, const char *s, size_t len)
{
	int64_t i = ember__intern_bytes(t, s, len);
	return i < 0 ? 0 : i;
}

/* Interns a C string; NULL is "". */
static int64_t intern(strtab *t, const char *s)
{
	return s ? intern_n(t, s, strlen(s)) : 0;
}

/* ---- validation ---- */

/* Checks every reference in the model so that the output is consistent. */
static int validate(const ember__profile *p)
{
	if (p->nvalues > EMBER_PROFILE_MAX_VALUES)
		return ember__error(EMBER_ERR_INVALID, "pprof: profile has %u sample types, at most %d",
				    p->nvalues, EMBER_PROFILE_MAX_VALUES);
	for (uint32_t i = 0; i < p->nlocations; i++) {
		const ember__location *l = &p->locations[i];
		if (l->mapping > p->nmappings)
			return ember__error(EMBER_ERR_INVALID,
					    "pprof: location %u refers to mapping %u of %u", i + 1,
					    l->mapping, p->nmappings);
		if (l->nlines && !l->lines)
			return ember__error(EMBER_ERR_INVALID, "pprof: location %u has no line array",
					    i + 1);
		for (uint32_t k = 0; k < l->nlines; k++)
			if (l->lines[k].function > p->nfunctions)
				return ember__error(EMBER_ERR_INVALID,
						    "pprof: location %u refers to function %u of %u",
						    i + 1, l->lines[k].function, p->nfunctions);
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const ember__sample *s = &p->samples[i];
		if ((s->nlocs && !s->locs) || (s->nlabels && !s->labels))
			return ember__error(EMBER_ERR_INVALID, "pprof: sample %u has a missing array",
					    i + 1);
		for (uint32_t k = 0; k < s->nlocs; k++)
			if (s->locs[k] == 0 || s->locs[k] > p->nlocations)
				return ember__error(EMBER_ERR_INVALID,
						    "pprof: sample %u refers to location %u of %u",
						    i + 1, s->locs[k], p->nlocations);
	}
	return 0;
}

/* ---- encoding ---- */

static void put_value_type(ember__pbuf *b, strtab *st, uint32_t field, const ember__value_type *vt)
{
	size_t m = ember__pb_begin(b, field);
	ember__pb_int64_opt(b, VALUE_TYPE_TYPE, intern(st, vt->type));
	ember__pb_int64_opt(b, VALUE_TYPE_UNIT, intern(st, vt->unit));
	ember__pb_end(b, m);
}

static void put_sample(ember__pbuf *b, strtab *st, const ember__profile *p, const ember__sample *s)
{
	size_t m = ember__pb_begin(b, PROFILE_SAMPLE);
	ember__pb_packed_uint32(b, SAMPLE_LOCATION_ID, s->locs, s->nlocs);
	ember__pb_packed_int64(b, SAMPLE_VALUE, s->values, p->nvalues);
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const ember__label *l = &s->labels[i];
		size_t lm = ember__pb_begin(b, SAMPLE_LABEL);
		ember__pb_int64_opt(b, LABEL_KEY, intern(st, l->key));
		if (l->str) {
			ember__pb_int64_opt(b, LABEL_STR, intern(st, l->str));
		} else {
			ember__pb_int64_opt(b, LABEL_NUM, l->num);
			if (l->num_unit)
				ember__pb_int64_opt(b, LABEL_NUM_UNIT, intern(st, l->num_unit));
		}
		ember__pb_end(b, lm);
	}
	ember__pb_end(b, m);
}

static void put_mapping(ember__pbuf *b, strtab *st, const ember__mapping *mp, uint32_t id,
			int inline_frames)
{
	size_t m = ember__pb_begin(b, PROFILE_MAPPING);
	ember__pb_uint64(b, MAPPING_ID, id);
	ember__pb_uint64_opt(b, MAPPING_MEMORY_START, mp->start);
	ember__pb_uint64_opt(b, MAPPING_MEMORY_LIMIT, mp->limit);
	ember__pb_uint64_opt(b, MAPPING_FILE_OFFSET, mp->offset);
	ember__pb_int64_opt(b, MAPPING_FILENAME, intern(st, mp->file));
	ember__pb_int64_opt(b, MAPPING_BUILD_ID, intern(st, mp->build_id));
	ember__pb_uint64_opt(b, MAPPING_HAS_FUNCTIONS, mp->has_functions != 0);
	ember__pb_uint64_opt(b, MAPPING_HAS_FILENAMES, mp->has_filenames != 0);
	ember__pb_uint64_opt(b, MAPPING_HAS_LINE_NUMBERS, mp->has_line_numbers != 0);
	ember__pb_uint64_opt(b, MAPPING_HAS_INLINE_FRAMES, inline_frames != 0);
	ember__pb_end(b, m);
}

static void put_location(ember__pbuf *b, const ember__location *l, uint32_t id)
{
	size_t m = ember__pb_begin(b, PROFILE_LOCATION);
	ember__pb_uint64(b, LOCATION_ID, id);
	ember__pb_uint64_opt(b, LOCATION_MAPPING_ID, l->mapping);
	ember__pb_uint64_opt(b, LOCATION_ADDRESS, l->address);
	for (uint32_t k = 0; k < l->nlines; k++) {
		size_t lm = ember__pb_begin(b, LOCATION_LINE);
		ember__pb_uint64_opt(b, LINE_FUNCTION_ID, l->lines[k].function);
		ember__pb_int64_opt(b, LINE_LINE, l->lines[k].line);
		ember__pb_end(b, lm);
	}
	ember__pb_end(b, m);
}

static void put_function(ember__pbuf *b, strtab *st, const ember__function *f, uint32_t id)
{
	size_t m = ember__pb_begin(b, PROFILE_FUNCTION);
	ember__pb_uint64(b, FUNCTION_ID, id);
	ember__pb_int64_opt(b, FUNCTION_NAME, intern(st, f->name));
	ember__pb_int64_opt(b, FUNCTION_SYSTEM_NAME, intern(st, f->system_name));
	ember__pb_int64_opt(b, FUNCTION_FILENAME, intern(st, f->filename));
	ember__pb_int64_opt(b, FUNCTION_START_LINE, f->start_line);
	ember__pb_end(b, m);
}

/* Writes one comment entry per line of `c` (a trailing "\n" adds none). */
static void put_comments(ember__pbuf *b, strtab *st, const char *c)
{
	while (*c) {
		const char *nl = strchr(c, '\n');
		size_t n = nl ? (size_t)(nl - c) : strlen(c);
		ember__pb_int64(b, PROFILE_COMMENT, intern_n(st, c, n));
		c += n + (nl != NULL);
	}
}

static int encode(const ember__profile *p, ember__pbuf *b, strtab *st)
{
	int err = validate(p);
	if (err)
		return err;
	/* has_inline_frames: does any location of the mapping have inlines? */
	unsigned char *inl = calloc((size_t)p->nmappings + 1, 1);
	if (!inl)
		return ember__error_oom("pprof mapping flags");
	for (uint32_t i = 0; i < p->nlocations; i++)
		if (p->locations[i].nlines > 1)
			inl[p->locations[i].mapping] = 1;

	/* Roughly a few bytes per frame and per value; grows if short. */
	size_t guess = 4096;
	for (uint32_t i = 0; i < p->nsamples && guess < ((size_t)1 << 26); i++)
		guess += 8 + 3 * (size_t)p->samples[i].nlocs + 4 * (size_t)p->samples[i].nlabels;
	ember__pb_reserve(b, guess + 32 * (size_t)p->nlocations);

	for (uint32_t i = 0; i < p->nvalues; i++)
		put_value_type(b, st, PROFILE_SAMPLE_TYPE, &p->sample_type[i]);
	for (uint32_t i = 0; i < p->nsamples; i++)
		put_sample(b, st, p, &p->samples[i]);
	for (uint32_t i = 0; i < p->nmappings; i++)
		put_mapping(b, st, &p->mappings[i], i + 1, inl[i + 1]);
	for (uint32_t i = 0; i < p->nlocations; i++)
		put_location(b, &p->locations[i], i + 1);
	for (uint32_t i = 0; i < p->nfunctions; i++)
		put_function(b, st, &p->functions[i], i + 1);
	free(inl);

	ember__pb_int64_opt(b, PROFILE_TIME_NANOS, p->time_nanos);
	ember__pb_int64_opt(b, PROFILE_DURATION_NANOS, p->duration_nanos);
	if ((p->period_type.type && *p->period_type.type) ||
	    (p->period_type.unit && *p->period_type.unit))
		put_value_type(b, st, PROFILE_PERIOD_TYPE, &p->period_type);
	ember__pb_int64_opt(b, PROFILE_PERIOD, p->period);
	if (p->comment)
		put_comments(b, st, p->comment);
	if (p->default_sample_type)
		ember__pb_int64_opt(b, PROFILE_DEFAULT_SAMPLE_TYPE,
				    intern(st, p->default_sample_type));

	/* Everything is interned now: the table can go out. */
	if (!st->failed)
		for (uint32_t i = 0; i < st->n; i++)
			ember__pb_bytes(b, PROFILE_STRING_TABLE, st->ents[i].data, st->ents[i].len);
	if (st->failed)
		return ember__error_oom("pprof string table");
	if (ember__pb_failed(b))
		return ember__error_oom("pprof encoding buffer");
	return 0;
}

int ember__pprof_encode_raw(const ember__profile *p, uint8_t **out, size_t *out_len)
{
	if (!p || !out || !out_len)
		return ember__error(EMBER_ERR_INVALID, "pprof: NULL argument");
	*out = NULL;
	*out_len = 0;
	strtab st;
	if (ember__intern_init(&st, 256, 0)) {
		ember__intern_free(&st);
		return ember__error_oom("pprof string table");
	}
	ember__pbuf b = EMBER_PBUF_INIT;
	int err = encode(p, &b, &st);
	ember__intern_free(&st);
	if (err) {
		ember__pb_free(&b);
		return err;
	}
	if (!b.data) {
		/* An empty profile still yields a (one-string) table, but be safe. */
		b.data = malloc(1);
		if (!b.data)
			return ember__error_oom("pprof output");
	}
	*out = b.data;
	*out_len = b.len;
	return 0;
}

/* Compresses in[0..len) into a malloc'd gzip stream. */
int ember__gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	/* no zlib in the process (a container's filesystem without it): the
	 * same gzip, not compressed (the agent says so once) */
	if (ember__lazydep_load(&ember__zlib) < 0)
		return ember__gzip_stored(in, len, out, out_len);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: gzip framing. Best speed, as Go's runtime/pprof. */
	int zrc = deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	if (zrc == Z_MEM_ERROR) /* the only failure with these constant arguments */
		return ember__error_oom("zlib's deflate state (pprof)");
	if (zrc != Z_OK)
		return ember__error(EMBER_ERR_FORMAT, "pprof: deflateInit2 failed (%d)", zrc);
	size_t cap = deflateBound(&zs, len);
	uint8_t *buf = malloc(cap);
	if (!buf) {
		deflateEnd(&zs);
		return ember__error_oom("pprof gzip buffer");
	}
	size_t in_left = len;
	zs.next_in = (Bytef *)in;
	zs.next_out = buf;
	int ret;
	do {
		/* avail_* are 32-bit: feed in pieces. */
		if (zs.avail_in == 0) {
			zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
			in_left -= zs.avail_in;
		}
		size_t out_left = cap - (size_t)(zs.next_out - buf);
		zs.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
		ret = deflate(&zs, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
	} while (ret == Z_OK);
	size_t n = (size_t)(zs.next_out - buf);
	deflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(buf);
		return ember__error(EMBER_ERR_FORMAT, "pprof: deflate failed (%d)", ret);
	}
	*out = buf;
	*out_len = n;
	return 0;
}

int ember__pprof_encode(const ember__profile *p, uint8_t **out, size_t *out_len)
{
	if (!p || !out || !out_len)
		return ember__error(EMBER_ERR_INVALID, "pprof: NULL argument");
	*out = NULL;
	*out_len = 0;
	uint8_t *raw;
	size_t raw_len;
	int err = ember__pprof_encode_raw(p, &raw, &raw_len);
	if (err)
		return err;
	err = ember__gzip(raw, raw_len, out, out_len);
	free(raw);
	return err;
}

int ember__pprof_is_empty(const uint8_t *data, size_t len)
{
	if (!data || !len)
		return 1;
	uint8_t *unzipped = NULL;
	if (len >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		if (ember__gunzip(data, len, EMBER_PPROF_MAX_RAW, "pprof", &unzipped, &len) != 0)
			return 0;
		data = unzipped;
	}
	/* Profile.sample is field 2; any malformed field: not empty. */
	ember__pb_reader r;
	ember__pb_field f;
	ember__pb_reader_init(&r, data, len);
	int rc, empty = 1;
	while ((rc = ember__pb_next(&r, &f)) == 1)
		if (f.num == 2) {
			empty = 0;
			break;
		}
	if (rc < 0)
		empty = 0;
	free(unzipped);
	return empty;
}
