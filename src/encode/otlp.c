/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.c - the OTLP profiles encoder (see otlp.h for the contract).
 *
 * Every dictionary entry is first encoded on its own (a string is its
 * bytes, a mapping its Mapping message...) and interned by those bytes in
 * one table per kind, whose entry 0 is the empty encoding, i.e. the zero
 * value the specification asks for: equal entries encode equally (fields
 * are always written in the same order), so no entry is written twice
 * whatever profile it came from. The Profiles are written into their own
 * buffer while the tables fill up; the request is then assembled:
 * resource_profiles first, the dictionary last.
 */
#include "encode/otlp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "emberprof.h"
#include "encode/intern.h"
#include "encode/protobuf.h"
#include "util/error.h"
#include "util/hashmap.h"

/* ---- the encoder's state ---- */

typedef struct enc {
	ember__intern tab[EMBER_OTLP_DICT_NTABLES]; /* by EMBER_OTLP_DICT_* (0 unused) */
	ember__pbuf scratch;                  /* one entry being encoded */
	int failed;                           /* an interning failed */
} enc;

static int32_t intern_buf(enc *e, int table, const ember__pbuf *b)
{
	if (ember__pb_failed(b)) {
		e->failed = 1;
		return 0;
	}
	int32_t i = (int32_t)ember__intern_bytes(&e->tab[table], b->data, b->len);
	if (i < 0) {
		e->failed = 1;
		return 0;
	}
	return i;
}

static int32_t str(enc *e, const char *s)
{
	if (!s || !*s)
		return 0;
	int32_t i = (int32_t)ember__intern_bytes(&e->tab[EMBER_OTLP_DICT_STRING], s, strlen(s));
	if (i < 0) {
		e->failed = 1;
		return 0;
	}
	return i;
}

/* Encodes into b an AnyValue field holding a string or an integer. */
static void put_any(ember__pbuf *b, uint32_t field, const char *s, int64_t num)
{
	size_t m = ember__pb_begin(b, field);
	if (s)
		ember__pb_bytes(b, EMBER_OTLP_ANY_STRING, s, strlen(s));
	else
		ember__pb_int64(b, EMBER_OTLP_ANY_INT, num);
	ember__pb_end(b, m);
}

/* The attribute_table index of key = value (string, or integer with unit). */
static int32_t attr(enc *e, const char *key, const char *s, int64_t num, const char *unit)
{
	int32_t k = str(e, key), u = str(e, unit);
	ember__pbuf *b = &e->scratch;
	b->len = 0;
	ember__pb_int64_opt(b, EMBER_OTLP_KVU_KEY, k);
	put_any(b, EMBER_OTLP_KVU_VALUE, s, num);
	ember__pb_int64_opt(b, EMBER_OTLP_KVU_UNIT, u);
	return intern_buf(e, EMBER_OTLP_DICT_ATTRIBUTE, b);
}

static int32_t mapping(enc *e, const ember__mapping *m)
{
	int32_t bid = m->build_id && *m->build_id ? attr(e, EMBER_OTLP_BUILD_ID_KEY, m->build_id, 0,
							  NULL) : 0;
	int32_t file = str(e, m->file);
	ember__pbuf *b = &e->scratch;
	b->len = 0;
	ember__pb_uint64_opt(b, EMBER_OTLP_MAPPING_START, m->start);
	ember__pb_uint64_opt(b, EMBER_OTLP_MAPPING_LIMIT, m->limit);
	ember__pb_uint64_opt(b, EMBER_OTLP_MAPPING_OFFSET, m->offset);
	ember__pb_int64_opt(b, EMBER_OTLP_MAPPING_FILENAME, file);
	if (bid) {
		uint32_t v = (uint32_t)bid;
		ember__pb_packed_uint32(b, EMBER_OTLP_MAPPING_ATTRS, &v, 1);
	}
	return intern_buf(e, EMBER_OTLP_DICT_MAPPING, b);
}

static int32_t function(enc *e, const ember__function *f)
{
	int32_t n = str(e, f->name), sn = str(e, f->system_name), fn = str(e, f->filename);
	ember__pbuf *b = &e->scratch;
	b->len = 0;
	ember__pb_int64_opt(b, EMBER_OTLP_FUNCTION_NAME, n);
	ember__pb_int64_opt(b, EMBER_OTLP_FUNCTION_SYSTEM_NAME, sn);
	ember__pb_int64_opt(b, EMBER_OTLP_FUNCTION_FILENAME, fn);
	ember__pb_int64_opt(b, EMBER_OTLP_FUNCTION_START_LINE, f->start_line);
	return intern_buf(e, EMBER_OTLP_DICT_FUNCTION, b);
}

/* A location given its mapping's and its lines' functions' dictionary indices. */
static int32_t location(enc *e, const ember__location *l, int32_t map, const int32_t *fidx)
{
	ember__pbuf *b = &e->scratch;
	b->len = 0;
	ember__pb_int64_opt(b, EMBER_OTLP_LOCATION_MAPPING, map);
	ember__pb_uint64_opt(b, EMBER_OTLP_LOCATION_ADDRESS, l->address);
	for (uint32_t k = 0; k < l->nlines; k++) {
		size_t m = ember__pb_begin(b, EMBER_OTLP_LOCATION_LINES);
		ember__pb_int64_opt(b, EMBER_OTLP_LINE_FUNCTION,
				    l->lines[k].function ? fidx[l->lines[k].function - 1] : 0);
		ember__pb_int64_opt(b, EMBER_OTLP_LINE_LINE, l->lines[k].line);
		ember__pb_end(b, m);
	}
	return intern_buf(e, EMBER_OTLP_DICT_LOCATION, b);
}

/* ---- one profile of the model: its Profiles ---- */

static int check_refs(const ember__profile *p)
{
	if (p->nvalues > EMBER_PROFILE_MAX_VALUES)
		return ember__error(EMBER_ERR_INVALID, "OTLP: profile has %u sample types, at most %d",
				    p->nvalues, EMBER_PROFILE_MAX_VALUES);
	for (uint32_t i = 0; i < p->nlocations; i++) {
		const ember__location *l = &p->locations[i];
		if (l->mapping > p->nmappings || (l->nlines && !l->lines))
			return ember__error(EMBER_ERR_INVALID, "OTLP: location %u refers to mapping %u "
					    "of %u or has no line array", i + 1, l->mapping,
					    p->nmappings);
		for (uint32_t k = 0; k < l->nlines; k++)
			if (l->lines[k].function > p->nfunctions)
				return ember__error(EMBER_ERR_INVALID, "OTLP: location %u refers to "
						    "function %u of %u", i + 1,
						    l->lines[k].function, p->nfunctions);
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const ember__sample *s = &p->samples[i];
		if ((s->nlocs && !s->locs) || (s->nlabels && !s->labels))
			return ember__error(EMBER_ERR_INVALID, "OTLP: sample %u has a missing array",
					    i + 1);
		for (uint32_t k = 0; k < s->nlocs; k++)
			if (s->locs[k] == 0 || s->locs[k] > p->nlocations)
				return ember__error(EMBER_ERR_INVALID, "OTLP: sample %u refers to "
						    "location %u of %u", i + 1, s->locs[k],
						    p->nlocations);
	}
	return 0;
}

static void put_fixed64(ember__pbuf *b, uint32_t field, uint64_t v)
{
	ember__pb_key(b, field, EMBER_PB_FIXED64);
	if (ember__pb_reserve(b, 8))
		return;
	for (int i = 0; i < 8; i++)
		b->data[b->len++] = (uint8_t)(v >> (8 * i));
}

static void put_vt(enc *e, ember__pbuf *b, uint32_t field, const ember__value_type *vt)
{
	int32_t t = str(e, vt->type), u = str(e, vt->unit);
	size_t m = ember__pb_begin(b, field);
	ember__pb_int64_opt(b, EMBER_OTLP_VT_TYPE, t);
	ember__pb_int64_opt(b, EMBER_OTLP_VT_UNIT, u);
	ember__pb_end(b, m);
}

static void random_id(uint8_t id[16])
{
	for (size_t i = 0; i < 16; i++) /* no entropy source: still not all zeroes */
		id[i] = (uint8_t)(0x5a ^ i);
	size_t got = 0;
	while (got < 16) {
		ssize_t r = getrandom(id + got, 16 - got, 0);
		if (r > 0)
			got += (size_t)r;
		else if (r < 0 && errno != EINTR)
			break;
	}
}

/* Appends the Profiles of p (one per sample type) to `out`. */
static int put_profile(enc *e, ember__pbuf *out, const ember__profile *p, int ids)
{
	int rc = check_refs(p);
	if (rc)
		return rc;
	int32_t *midx = calloc((size_t)p->nmappings + 1, sizeof(*midx));
	int32_t *fidx = calloc((size_t)p->nfunctions + 1, sizeof(*fidx));
	int32_t *lidx = calloc((size_t)p->nlocations + 1, sizeof(*lidx));
	/* per sample: its stack index, then its attribute count and indices */
	size_t nattr = 0;
	for (uint32_t i = 0; i < p->nsamples; i++)
		nattr += p->samples[i].nlabels;
	int32_t *stack = calloc((size_t)p->nsamples + 1, sizeof(*stack));
	uint32_t *attrs = calloc(nattr + 1, sizeof(*attrs));
	uint32_t *locs = NULL;
	size_t maxlocs = 1;
	for (uint32_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].nlocs > maxlocs)
			maxlocs = p->samples[i].nlocs;
	locs = calloc(maxlocs, sizeof(*locs));
	if (!midx || !fidx || !lidx || !stack || !attrs || !locs) {
		rc = ember__error_oom("OTLP profile");
		goto out;
	}
	for (uint32_t i = 0; i < p->nmappings; i++)
		midx[i] = mapping(e, &p->mappings[i]);
	for (uint32_t i = 0; i < p->nfunctions; i++)
		fidx[i] = function(e, &p->functions[i]);
	for (uint32_t i = 0; i < p->nlocations; i++) {
		const ember__location *l = &p->locations[i];
		lidx[i] = location(e, l, l->mapping ? midx[l->mapping - 1] : 0, fidx);
	}
	size_t a = 0;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const ember__sample *s = &p->samples[i];
		for (uint32_t k = 0; k < s->nlocs; k++)
			locs[k] = (uint32_t)lidx[s->locs[k] - 1];
		e->scratch.len = 0;
		ember__pb_packed_uint32(&e->scratch, EMBER_OTLP_STACK_LOCATIONS, locs, s->nlocs);
		stack[i] = intern_buf(e, EMBER_OTLP_DICT_STACK, &e->scratch);
		for (uint32_t k = 0; k < s->nlabels; k++) {
			const ember__label *l = &s->labels[k];
			attrs[a++] = (uint32_t)attr(e, l->key, l->str, l->num, l->str ? NULL : l->num_unit);
		}
	}
	for (uint32_t t = 0; t < p->nvalues; t++) {
		size_t pm = ember__pb_begin(out, EMBER_OTLP_SP_PROFILES);
		put_vt(e, out, EMBER_OTLP_PROFILE_SAMPLE_TYPE, &p->sample_type[t]);
		a = 0;
		for (uint32_t i = 0; i < p->nsamples; i++) {
			const ember__sample *s = &p->samples[i];
			size_t sm = ember__pb_begin(out, EMBER_OTLP_PROFILE_SAMPLES);
			ember__pb_int64_opt(out, EMBER_OTLP_SAMPLE_STACK, stack[i]);
			ember__pb_packed_uint32(out, EMBER_OTLP_SAMPLE_ATTRS, attrs + a, s->nlabels);
			a += s->nlabels;
			ember__pb_packed_int64(out, EMBER_OTLP_SAMPLE_VALUES, &s->values[t], 1);
			ember__pb_end(out, sm);
		}
		if (p->time_nanos)
			put_fixed64(out, EMBER_OTLP_PROFILE_TIME, (uint64_t)p->time_nanos);
		ember__pb_uint64_opt(out, EMBER_OTLP_PROFILE_DURATION,
				     p->duration_nanos > 0 ? (uint64_t)p->duration_nanos : 0);
		if (p->period_type.type || p->period_type.unit)
			put_vt(e, out, EMBER_OTLP_PROFILE_PERIOD_TYPE, &p->period_type);
		ember__pb_int64_opt(out, EMBER_OTLP_PROFILE_PERIOD, p->period);
		if (ids) {
			uint8_t id[16];
			random_id(id);
			ember__pb_bytes(out, EMBER_OTLP_PROFILE_ID, id, sizeof(id));
		}
		ember__pb_end(out, pm);
	}
	if (e->failed)
		rc = ember__error(EMBER_ERR_NOMEM, "OTLP: out of memory or more than 2^31 dictionary "
				  "entries");
out:
	free(midx);
	free(fidx);
	free(lidx);
	free(stack);
	free(attrs);
	free(locs);
	return rc;
}

/* ---- the request ---- */

struct ember__otlp_enc {
	enc e;
	ember__pbuf profiles; /* the Profile fields written so far */
	size_t nprofiles;
};

void ember__otlp_enc_free(ember__otlp_enc *x)
{
	if (!x)
		return;
	ember__pb_free(&x->profiles);
	ember__pb_free(&x->e.scratch);
	for (int t = 1; t < EMBER_OTLP_DICT_NTABLES; t++)
		ember__intern_free(&x->e.tab[t]);
	free(x);
}

int ember__otlp_enc_new(ember__otlp_enc **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return ember__error_oom("OTLP encoder");
	for (int t = 1; t < EMBER_OTLP_DICT_NTABLES; t++)
		if (ember__intern_init(&(*out)->e.tab[t], 64, 1)) {
			ember__otlp_enc_free(*out);
			*out = NULL;
			return ember__error_oom("OTLP dictionary");
		}
	return 0;
}

int ember__otlp_enc_add(ember__otlp_enc *x, const ember__profile *p, int profile_ids)
{
	int rc = put_profile(&x->e, &x->profiles, p, profile_ids);
	if (rc == 0)
		x->nprofiles += p->nvalues;
	return rc;
}

size_t ember__otlp_enc_count(const ember__otlp_enc *x)
{
	return x ? x->nprofiles : 0;
}

int ember__otlp_enc_finish(ember__otlp_enc *x, const ember__otlp_attr *resource, size_t nresource,
			   const char *scope_name, const char *scope_version, uint8_t **out,
			   size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	ember__pbuf b = EMBER_PBUF_INIT;
	enc *e = &x->e;
	size_t rp = ember__pb_begin(&b, EMBER_OTLP_REQ_RESOURCE_PROFILES);
	size_t res = ember__pb_begin(&b, EMBER_OTLP_RP_RESOURCE);
	for (size_t i = 0; i < nresource; i++) {
		const ember__otlp_attr *at = &resource[i];
		size_t kv = ember__pb_begin(&b, EMBER_OTLP_RESOURCE_ATTRIBUTES);
		ember__pb_bytes(&b, EMBER_OTLP_KV_KEY, at->key, strlen(at->key));
		put_any(&b, EMBER_OTLP_KV_VALUE, at->str, at->num);
		ember__pb_end(&b, kv);
	}
	ember__pb_end(&b, res);
	size_t sp = ember__pb_begin(&b, EMBER_OTLP_RP_SCOPE_PROFILES);
	size_t sc = ember__pb_begin(&b, EMBER_OTLP_SP_SCOPE);
	if (scope_name)
		ember__pb_bytes(&b, EMBER_OTLP_SCOPE_NAME, scope_name, strlen(scope_name));
	if (scope_version)
		ember__pb_bytes(&b, EMBER_OTLP_SCOPE_VERSION, scope_version, strlen(scope_version));
	ember__pb_end(&b, sc);
	if (x->profiles.len && ember__pb_reserve(&b, x->profiles.len) == 0) {
		memcpy(b.data + b.len, x->profiles.data, x->profiles.len);
		b.len += x->profiles.len;
	}
	ember__pb_end(&b, sp);
	ember__pb_end(&b, rp);

	size_t d = ember__pb_begin(&b, EMBER_OTLP_REQ_DICTIONARY);
	for (int t = 1; t < EMBER_OTLP_DICT_NTABLES; t++)
		for (uint32_t i = 0; i < e->tab[t].n; i++)
			ember__pb_bytes(&b, (uint32_t)t, e->tab[t].ents[i].data, e->tab[t].ents[i].len);
	ember__pb_end(&b, d);
	if (ember__pb_failed(&b) || ember__pb_failed(&x->profiles)) {
		ember__pb_free(&b);
		return ember__error_oom("OTLP request");
	}
	*out = b.data;
	*out_len = b.len;
	return 0;
}

int ember__otlp_encode(const ember__otlp_window *w, uint8_t **out, size_t *out_len)
{
	ember__otlp_enc *x;
	*out = NULL;
	*out_len = 0;
	int rc = ember__otlp_enc_new(&x);
	for (size_t i = 0; i < w->nprofiles && rc == 0; i++)
		if (w->profiles[i])
			rc = ember__otlp_enc_add(x, w->profiles[i], w->profile_ids);
	if (rc == 0)
		rc = ember__otlp_enc_finish(x, w->resource, w->nresource, w->scope_name,
					    w->scope_version, out, out_len);
	ember__otlp_enc_free(x);
	return rc;
}
