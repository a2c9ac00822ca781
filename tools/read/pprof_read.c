/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof_read.c - the profile.proto decoder (see pprof.h for the contract).
 *
 * The input is untrusted. Decoding goes in steps so that nothing is
 * resolved before what it refers to is known, and so that every array is
 * sized from what the input really contains:
 *
 *   1. gunzip if the data starts with the gzip magic, stopping at
 *      EMBER_PPROF_MAX_RAW bytes;
 *   2. scan the top-level message twice: once to validate and count each
 *      repeated field, once to record where each entry lies;
 *   3. copy the string table into the profile's arena;
 *   4. decode mappings and functions, mapping their ids to 1-based indices,
 *      then locations (which refer to both), then samples (which refer to
 *      locations).
 *
 * Allocation is therefore proportional to the decompressed size: every
 * counted entry occupies at least two input bytes.
 */
#include "read/pprof_read.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emberprof.h"
#include "encode/protobuf.h"
#include "encode/gunzip.h"
#include "util/error.h"

/* ---- id -> index maps ---- */

typedef struct idmap {
	uint64_t *keys;
	uint32_t *vals; /* 0 = empty slot, else the 1-based index */
	size_t mask;
	uint64_t seed;  /* varies per map, so crafted ids cannot all collide */
} idmap;

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static int idmap_init(idmap *m, size_t count)
{
	size_t n = 16;
	while (n < count * 2)
		n *= 2;
	m->keys = malloc(n * sizeof(*m->keys));
	m->vals = calloc(n, sizeof(*m->vals));
	m->mask = n - 1;
	m->seed = mix64((uint64_t)(uintptr_t)m ^ (uint64_t)(uintptr_t)m->vals ^ (uint64_t)time(NULL));
	return m->keys && m->vals ? 0 : -1;
}

static void idmap_free(idmap *m)
{
	free(m->keys);
	free(m->vals);
}

/* Adds id -> idx; returns 1 if the id was already there. The map is never
 * filled beyond half, so probing ends. */
static int idmap_put(idmap *m, uint64_t id, uint32_t idx)
{
	size_t j = (size_t)mix64(id ^ m->seed) & m->mask;
	for (; m->vals[j]; j = (j + 1) & m->mask)
		if (m->keys[j] == id)
			return 1;
	m->keys[j] = id;
	m->vals[j] = idx;
	return 0;
}

static uint32_t idmap_get(const idmap *m, uint64_t id)
{
	size_t j = (size_t)mix64(id ^ m->seed) & m->mask;
	for (; m->vals[j]; j = (j + 1) & m->mask)
		if (m->keys[j] == id)
			return m->vals[j];
	return 0;
}

/* ---- decoder state ---- */

typedef struct slice {
	const uint8_t *p;
	size_t n;
} slice;

typedef struct dec {
	ember__profile *p;
	/* Counts from the first scan, then the entries from the second. */
	size_t nstrings, nsamples, nmappings, nlocations, nfunctions, ncomments;
	slice *strings, *samples, *mappings, *locations, *functions;
	int64_t *comments;
	const char **str; /* the string table, copied into the arena */
	slice sample_types[EMBER_PROFILE_MAX_VALUES];
	uint32_t nsample_types;
	slice period_type;
	int64_t default_sample_type;
	idmap mapping_ids, function_ids, location_ids;
} dec;

static const char *wire_name(unsigned wire)
{
	switch (wire) {
	case EMBER_PB_VARINT: return "varint";
	case EMBER_PB_FIXED64: return "fixed64";
	case EMBER_PB_LEN: return "length-delimited";
	case EMBER_PB_FIXED32: return "fixed32";
	default: return "?";
	}
}

/* Known fields must have the wire type profile.proto gives them. */
static int want_wire(const ember__pb_field *f, unsigned wire, const char *msg)
{
	if (f->wire == wire)
		return 0;
	return ember__error(EMBER_ERR_FORMAT, "pprof: %s field %u is %s, expected %s", msg, f->num,
			    wire_name(f->wire), wire_name(wire));
}

/* A repeated varint field may come packed or one value per field. */
static int want_repeated_varint(const ember__pb_field *f, const char *msg)
{
	if (f->wire == EMBER_PB_VARINT || f->wire == EMBER_PB_LEN)
		return 0;
	return ember__error(EMBER_ERR_FORMAT, "pprof: %s field %u is %s, expected varint", msg,
			    f->num, wire_name(f->wire));
}

/* Number of values in a repeated varint field occurrence, or an error. */
static int64_t repeated_count(const ember__pb_field *f, const char *msg)
{
	if (f->wire == EMBER_PB_VARINT)
		return 1;
	int64_t n = ember__pb_count_packed(f->data, f->len);
	if (n < 0)
		return ember__error(EMBER_ERR_FORMAT, "pprof: %s field %u: malformed packed varints",
				    msg, f->num);
	return n;
}

/* Calls fn(value, ctx) for each value of a repeated varint occurrence
 * already validated by repeated_count(). */
static int repeated_each(const ember__pb_field *f, int (*fn)(uint64_t, void *), void *ctx)
{
	if (f->wire == EMBER_PB_VARINT)
		return fn(f->u, ctx);
	const uint8_t *q = f->data, *end = f->data + f->len;
	while (q < end) {
		uint64_t v;
		if (ember__pb_read_varint(&q, end, &v))
			return EMBER_ERR_FORMAT;
		int err = fn(v, ctx);
		if (err)
			return err;
	}
	return 0;
}

/* Looks up a string index, with `what` naming the referrer for errors. */
static int get_str(const dec *d, uint64_t idx, const char **out, const char *what)
{
	if (idx >= d->nstrings)
		return ember__error(EMBER_ERR_FORMAT,
				    "pprof: %s refers to string %" PRIu64 ", table has %zu", what,
				    idx, d->nstrings);
	*out = d->str[idx];
	return 0;
}

static int append_comment(uint64_t v, void *ctx)
{
	dec *d = ctx;
	d->comments[d->ncomments++] = (int64_t)v;
	return 0;
}

/*
 * One scan of the top-level message. With fill == 0 it validates and
 * counts; with fill == 1 the arrays have been sized from the counts and it
 * records each entry.
 */
static int scan_top(dec *d, const uint8_t *raw, size_t len, int fill)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc;
	ember__pb_reader_init(&r, raw, len);
	size_t ns = 0, nsm = 0, nm = 0, nl = 0, nf = 0, nc = 0;
	d->nsample_types = 0;
	d->ncomments = 0;
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		slice s = {f.data, f.len};
		int err = 0;
		switch (f.num) {
		case 1: /* sample_type */
			if ((err = want_wire(&f, EMBER_PB_LEN, "Profile")))
				return err;
			if (d->nsample_types == EMBER_PROFILE_MAX_VALUES)
				return ember__error(EMBER_ERR_FORMAT,
						    "pprof: more than %d sample types",
						    EMBER_PROFILE_MAX_VALUES);
			d->sample_types[d->nsample_types++] = s;
			break;
		case 2: case 3: case 4: case 5: case 6: {
			/* sample, mapping, location, function, string_table */
			if ((err = want_wire(&f, EMBER_PB_LEN, "Profile")))
				return err;
			size_t *cnt = f.num == 2 ? &nsm : f.num == 3 ? &nm : f.num == 4 ? &nl
				    : f.num == 5 ? &nf : &ns;
			if (fill) {
				slice *tab = f.num == 2 ? d->samples : f.num == 3 ? d->mappings
					   : f.num == 4 ? d->locations : f.num == 5 ? d->functions
					   : d->strings;
				tab[*cnt] = s;
			}
			(*cnt)++;
			break;
		}
		case 7: case 8: case 9: case 10: case 12: case 14:
			/* drop_frames and keep_frames (7, 8) are not kept. */
			if ((err = want_wire(&f, EMBER_PB_VARINT, "Profile")))
				return err;
			if (f.num == 9)
				d->p->time_nanos = (int64_t)f.u;
			else if (f.num == 10)
				d->p->duration_nanos = (int64_t)f.u;
			else if (f.num == 12)
				d->p->period = (int64_t)f.u;
			else if (f.num == 14)
				d->default_sample_type = (int64_t)f.u;
			break;
		case 11: /* period_type */
			if ((err = want_wire(&f, EMBER_PB_LEN, "Profile")))
				return err;
			d->period_type = s;
			break;
		case 13: { /* comment */
			if ((err = want_repeated_varint(&f, "Profile")))
				return err;
			int64_t n = repeated_count(&f, "Profile");
			if (n < 0)
				return (int)n;
			if (fill && (err = repeated_each(&f, append_comment, d)))
				return err;
			nc += (size_t)n;
			break;
		}
		default:
			break; /* unknown field: skipped */
		}
	}
	if (rc < 0)
		return rc;
	d->nstrings = ns;
	d->nsamples = nsm;
	d->nmappings = nm;
	d->nlocations = nl;
	d->nfunctions = nf;
	if (!fill)
		d->ncomments = nc;
	return 0;
}

/* Decodes a ValueType message. */
static int read_value_type(const dec *d, slice s, ember__value_type *vt, const char *what)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc, err;
	uint64_t type = 0, unit = 0;
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		if (f.num != 1 && f.num != 2)
			continue;
		if ((err = want_wire(&f, EMBER_PB_VARINT, "ValueType")))
			return err;
		if (f.num == 1)
			type = f.u;
		else
			unit = f.u;
	}
	if (rc < 0)
		return rc;
	if ((err = get_str(d, type, &vt->type, what)) || (err = get_str(d, unit, &vt->unit, what)))
		return err;
	return 0;
}

static int read_strings(dec *d)
{
	if (d->nstrings == 0)
		return ember__error(EMBER_ERR_FORMAT, "pprof: no string table");
	if (d->strings[0].n != 0)
		return ember__error(EMBER_ERR_FORMAT, "pprof: string_table[0] is not empty");
	d->str = malloc(d->nstrings * sizeof(*d->str));
	if (!d->str)
		return ember__error_oom("pprof string table");
	for (size_t i = 0; i < d->nstrings; i++) {
		d->str[i] = ember__arena_strndup(&d->p->arena, (const char *)d->strings[i].p,
						 d->strings[i].n);
		if (!d->str[i])
			return ember__error_oom("pprof strings");
	}
	return 0;
}

static int read_mapping(dec *d, size_t i)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc, err;
	uint64_t id = 0, file = 0, build_id = 0;
	ember__mapping m;
	memset(&m, 0, sizeof(m));
	ember__pb_reader_init(&r, d->mappings[i].p, d->mappings[i].n);
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		if (f.num < 1 || f.num > 10)
			continue;
		if ((err = want_wire(&f, EMBER_PB_VARINT, "Mapping")))
			return err;
		switch (f.num) {
		case 1: id = f.u; break;
		case 2: m.start = f.u; break;
		case 3: m.limit = f.u; break;
		case 4: m.offset = f.u; break;
		case 5: file = f.u; break;
		case 6: build_id = f.u; break;
		case 7: m.has_functions = f.u != 0; break;
		case 8: m.has_filenames = f.u != 0; break;
		case 9: m.has_line_numbers = f.u != 0; break;
		default: break; /* has_inline_frames: not in the model */
		}
	}
	if (rc < 0)
		return rc;
	if ((err = get_str(d, file, &m.file, "mapping filename")) ||
	    (err = get_str(d, build_id, &m.build_id, "mapping build_id")))
		return err;
	if (id == 0)
		return ember__error(EMBER_ERR_FORMAT, "pprof: mapping %zu has id 0", i + 1);
	uint32_t idx = ember__profile_add_mapping(d->p, &m);
	if (!idx)
		return ember__error_oom("pprof mappings");
	if (idmap_put(&d->mapping_ids, id, idx))
		return ember__error(EMBER_ERR_FORMAT, "pprof: duplicate mapping id %" PRIu64, id);
	return 0;
}

static int read_function(dec *d, size_t i)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc, err;
	uint64_t id = 0, name = 0, sys = 0, file = 0;
	ember__function fn;
	memset(&fn, 0, sizeof(fn));
	ember__pb_reader_init(&r, d->functions[i].p, d->functions[i].n);
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		if (f.num < 1 || f.num > 5)
			continue;
		if ((err = want_wire(&f, EMBER_PB_VARINT, "Function")))
			return err;
		switch (f.num) {
		case 1: id = f.u; break;
		case 2: name = f.u; break;
		case 3: sys = f.u; break;
		case 4: file = f.u; break;
		default: fn.start_line = (int64_t)f.u; break;
		}
	}
	if (rc < 0)
		return rc;
	if ((err = get_str(d, name, &fn.name, "function name")) ||
	    (err = get_str(d, sys, &fn.system_name, "function system_name")) ||
	    (err = get_str(d, file, &fn.filename, "function filename")))
		return err;
	if (id == 0)
		return ember__error(EMBER_ERR_FORMAT, "pprof: function %zu has id 0", i + 1);
	uint32_t idx = ember__profile_add_function(d->p, &fn);
	if (!idx)
		return ember__error_oom("pprof functions");
	if (idmap_put(&d->function_ids, id, idx))
		return ember__error(EMBER_ERR_FORMAT, "pprof: duplicate function id %" PRIu64, id);
	return 0;
}

/* Decodes a Line message into *ln, resolving its function id. */
static int read_line(const dec *d, const ember__pb_field *lf, ember__line *ln, uint64_t loc_id)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc, err;
	uint64_t fid = 0;
	ember__pb_reader_init(&r, lf->data, lf->len);
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		if (f.num != 1 && f.num != 2)
			continue; /* column (3) and unknowns */
		if ((err = want_wire(&f, EMBER_PB_VARINT, "Line")))
			return err;
		if (f.num == 1)
			fid = f.u;
		else
			ln->line = (int64_t)f.u;
	}
	if (rc < 0)
		return rc;
	ln->function = 0;
	if (fid) {
		ln->function = idmap_get(&d->function_ids, fid);
		if (!ln->function)
			return ember__error(EMBER_ERR_FORMAT,
					    "pprof: location id %" PRIu64
					    " refers to missing function id %" PRIu64,
					    loc_id, fid);
	}
	return 0;
}

static int read_location(dec *d, size_t i)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc, err;
	uint64_t id = 0, mapping_id = 0;
	ember__location l;
	memset(&l, 0, sizeof(l));
	slice s = d->locations[i];
	/* First pass: scalars and the number of lines. */
	size_t nlines = 0;
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		if (f.num == 4) {
			if ((err = want_wire(&f, EMBER_PB_LEN, "Location")))
				return err;
			nlines++;
			continue;
		}
		if (f.num < 1 || f.num > 5)
			continue;
		if ((err = want_wire(&f, EMBER_PB_VARINT, "Location")))
			return err;
		if (f.num == 1)
			id = f.u;
		else if (f.num == 2)
			mapping_id = f.u;
		else if (f.num == 3)
			l.address = f.u;
		/* 5: is_folded, not in the model */
	}
	if (rc < 0)
		return rc;
	if (id == 0)
		return ember__error(EMBER_ERR_FORMAT, "pprof: location %zu has id 0", i + 1);
	if (nlines > UINT32_MAX)
		return ember__error(EMBER_ERR_FORMAT, "pprof: location id %" PRIu64 " has too many lines", id);
	if (mapping_id) {
		l.mapping = idmap_get(&d->mapping_ids, mapping_id);
		if (!l.mapping)
			return ember__error(EMBER_ERR_FORMAT,
					    "pprof: location id %" PRIu64
					    " refers to missing mapping id %" PRIu64,
					    id, mapping_id);
	}
	if (nlines) {
		l.lines = ember__arena_alloc(&d->p->arena, nlines * sizeof(*l.lines));
		if (!l.lines)
			return ember__error_oom("pprof lines");
		ember__pb_reader_init(&r, s.p, s.n);
		while ((rc = ember__pb_next(&r, &f)) > 0)
			if (f.num == 4 && (err = read_line(d, &f, &l.lines[l.nlines++], id)))
				return err;
		if (rc < 0)
			return rc;
	}
	uint32_t idx = ember__profile_add_location(d->p, &l);
	if (!idx)
		return ember__error_oom("pprof locations");
	if (idmap_put(&d->location_ids, id, idx))
		return ember__error(EMBER_ERR_FORMAT, "pprof: duplicate location id %" PRIu64, id);
	return 0;
}

static int read_label(const dec *d, const ember__pb_field *lf, ember__label *l, size_t sample)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc, err;
	uint64_t key = 0, str = 0, unit = 0;
	ember__pb_reader_init(&r, lf->data, lf->len);
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		if (f.num < 1 || f.num > 4)
			continue;
		if ((err = want_wire(&f, EMBER_PB_VARINT, "Label")))
			return err;
		if (f.num == 1)
			key = f.u;
		else if (f.num == 2)
			str = f.u;
		else if (f.num == 3)
			l->num = (int64_t)f.u;
		else
			unit = f.u;
	}
	if (rc < 0)
		return rc;
	char what[64];
	snprintf(what, sizeof(what), "label of sample %zu", sample);
	if ((err = get_str(d, key, &l->key, what)))
		return err;
	l->str = NULL;
	l->num_unit = NULL;
	if (str) {
		if ((err = get_str(d, str, &l->str, what)))
			return err;
		l->num = 0;
	} else if (unit && (err = get_str(d, unit, &l->num_unit, what))) {
		return err;
	}
	return 0;
}

/* Context for collecting one sample's location ids and values. */
typedef struct sample_ctx {
	const dec *d;
	ember__sample *s;
	size_t index;
	uint32_t nvalues; /* values stored so far */
} sample_ctx;

static int add_loc(uint64_t id, void *ctx)
{
	sample_ctx *c = ctx;
	uint32_t idx = idmap_get(&c->d->location_ids, id);
	if (!idx)
		return ember__error(EMBER_ERR_FORMAT,
				    "pprof: sample %zu refers to missing location id %" PRIu64,
				    c->index, id);
	c->s->locs[c->s->nlocs++] = idx;
	return 0;
}

static int add_value(uint64_t v, void *ctx)
{
	sample_ctx *c = ctx;
	/* The count was checked against the sample types before filling. */
	c->s->values[c->nvalues++] = (int64_t)v;
	return 0;
}

static int read_sample(dec *d, size_t i)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc, err;
	ember__sample s;
	memset(&s, 0, sizeof(s));
	slice sl = d->samples[i];
	size_t nlocs = 0, nvalues = 0, nlabels = 0;
	/* First pass: validate and count. */
	ember__pb_reader_init(&r, sl.p, sl.n);
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		if (f.num == 1 || f.num == 2) {
			if ((err = want_repeated_varint(&f, "Sample")))
				return err;
			int64_t n = repeated_count(&f, "Sample");
			if (n < 0)
				return (int)n;
			*(f.num == 1 ? &nlocs : &nvalues) += (size_t)n;
		} else if (f.num == 3) {
			if ((err = want_wire(&f, EMBER_PB_LEN, "Sample")))
				return err;
			nlabels++;
		}
	}
	if (rc < 0)
		return rc;
	if (nvalues != d->p->nvalues)
		return ember__error(EMBER_ERR_FORMAT,
				    "pprof: sample %zu has %zu values, profile has %u sample types",
				    i + 1, nvalues, d->p->nvalues);
	if (nlocs > UINT32_MAX || nlabels > UINT32_MAX)
		return ember__error(EMBER_ERR_FORMAT, "pprof: sample %zu is too large", i + 1);
	if (nlocs && !(s.locs = ember__arena_alloc(&d->p->arena, nlocs * sizeof(*s.locs))))
		return ember__error_oom("pprof sample locations");
	if (nlabels && !(s.labels = ember__arena_alloc(&d->p->arena, nlabels * sizeof(*s.labels))))
		return ember__error_oom("pprof sample labels");
	/* Second pass: locations and values, then labels. */
	sample_ctx c = {d, &s, i + 1, 0};
	ember__pb_reader_init(&r, sl.p, sl.n);
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		if (f.num == 1 && (err = repeated_each(&f, add_loc, &c)))
			return err;
		if (f.num == 2 && (err = repeated_each(&f, add_value, &c)))
			return err;
	}
	if (rc < 0)
		return rc;
	ember__pb_reader_init(&r, sl.p, sl.n);
	while ((rc = ember__pb_next(&r, &f)) > 0)
		if (f.num == 3 && (err = read_label(d, &f, &s.labels[s.nlabels++], i + 1)))
			return err;
	if (rc < 0)
		return rc;
	if (!ember__profile_add_sample(d->p, &s))
		return ember__error_oom("pprof samples");
	return 0;
}

/* Comments are informational; joined, they are cut at this many bytes so
 * that many references to one long string cannot blow up memory or time. */
#define COMMENT_MAX ((size_t)1 << 20)

static int join_comments(dec *d)
{
	size_t total = 0;
	for (size_t i = 0; i < d->ncomments; i++) {
		const char *c = "";
		int err = get_str(d, (uint64_t)d->comments[i], &c, "comment");
		if (err)
			return err;
		if (total <= COMMENT_MAX)
			total += (i > 0) + strnlen(c, COMMENT_MAX + 1);
	}
	if (total > COMMENT_MAX)
		total = COMMENT_MAX;
	char *out = ember__arena_alloc(&d->p->arena, total + 1);
	if (!out)
		return ember__error_oom("pprof comment");
	size_t at = 0;
	for (size_t i = 0; i < d->ncomments && at < total; i++) {
		if (i)
			out[at++] = '\n';
		const char *c = d->str[d->comments[i]];
		size_t n = strnlen(c, total - at);
		memcpy(out + at, c, n);
		at += n;
	}
	out[at] = '\0';
	d->p->comment = out;
	return 0;
}

/* Allocates an array of n elements of `size` bytes; at least one. */
static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int decode(dec *d, const uint8_t *raw, size_t len)
{
	int err;
	if ((err = scan_top(d, raw, len, 0)))
		return err;
	d->strings = alloc_array(d->nstrings, sizeof(slice));
	d->samples = alloc_array(d->nsamples, sizeof(slice));
	d->mappings = alloc_array(d->nmappings, sizeof(slice));
	d->locations = alloc_array(d->nlocations, sizeof(slice));
	d->functions = alloc_array(d->nfunctions, sizeof(slice));
	d->comments = alloc_array(d->ncomments, sizeof(int64_t));
	if (!d->strings || !d->samples || !d->mappings || !d->locations || !d->functions ||
	    !d->comments)
		return ember__error_oom("pprof decoder tables");
	if ((err = scan_top(d, raw, len, 1)))
		return err;
	if ((err = read_strings(d)))
		return err;

	ember__profile *p = d->p;
	p->nvalues = d->nsample_types;
	for (uint32_t i = 0; i < d->nsample_types; i++)
		if ((err = read_value_type(d, d->sample_types[i], &p->sample_type[i], "sample_type")))
			return err;
	p->period_type.type = p->period_type.unit = d->str[0];
	if (d->period_type.p &&
	    (err = read_value_type(d, d->period_type, &p->period_type, "period_type")))
		return err;
	if (d->default_sample_type) {
		if ((err = get_str(d, (uint64_t)d->default_sample_type, &p->default_sample_type,
				   "default_sample_type")))
			return err;
	}
	if (d->ncomments && (err = join_comments(d)))
		return err;

	if (idmap_init(&d->mapping_ids, d->nmappings) || idmap_init(&d->function_ids, d->nfunctions) ||
	    idmap_init(&d->location_ids, d->nlocations))
		return ember__error_oom("pprof id maps");
	for (size_t i = 0; i < d->nmappings; i++)
		if ((err = read_mapping(d, i)))
			return err;
	for (size_t i = 0; i < d->nfunctions; i++)
		if ((err = read_function(d, i)))
			return err;
	for (size_t i = 0; i < d->nlocations; i++)
		if ((err = read_location(d, i)))
			return err;
	for (size_t i = 0; i < d->nsamples; i++)
		if ((err = read_sample(d, i)))
			return err;
	return 0;
}

int ember__pprof_read(const uint8_t *data, size_t len, ember__profile **out)
{
	if (!out)
		return ember__error(EMBER_ERR_INVALID, "pprof: NULL argument");
	*out = NULL;
	if (!data && len)
		return ember__error(EMBER_ERR_INVALID, "pprof: NULL data");
	uint8_t *unzipped = NULL;
	const uint8_t *raw = data;
	size_t raw_len = len;
	int err;
	if (len >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		if ((err = ember__gunzip(data, len, EMBER_PPROF_MAX_RAW, "pprof", &unzipped, &raw_len)))
			return err;
		raw = unzipped;
	} else if (len > EMBER_PPROF_MAX_RAW) {
		return ember__error(EMBER_ERR_FORMAT, "pprof: profile exceeds %zu bytes",
				    EMBER_PPROF_MAX_RAW);
	}
	dec d;
	memset(&d, 0, sizeof(d));
	d.p = ember__profile_new();
	if (!d.p) {
		free(unzipped);
		return ember__error_oom("pprof profile");
	}
	err = decode(&d, raw, raw_len);
	free(d.strings);
	free(d.samples);
	free(d.mappings);
	free(d.locations);
	free(d.functions);
	free(d.comments);
	free(d.str);
	idmap_free(&d.mapping_ids);
	idmap_free(&d.function_ids);
	idmap_free(&d.location_ids);
	free(unzipped);
	if (err) {
		ember__profile_free(d.p);
		return err;
	}
	*out = d.p;
	return 0;
}

int ember__pprof_read_file(const char *path, ember__profile **out)
{
	if (!path || !out)
		return ember__error(EMBER_ERR_INVALID, "pprof: NULL argument");
	return ember__profile_read_file(path, EMBER_PPROF_MAX_RAW, ember__pprof_read, out);
}
