/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_read.c - the OTLP profiles decoder (see otlp_read.h).
 *
 * Steps: the request's top level gives the ResourceProfiles and the
 * dictionary; the dictionary's tables are cut into slices (one per entry,
 * decoded when a profile refers to it); each Profile is read into a flat
 * form (sample type, period, samples with stack, attributes and value);
 * aligned Profiles are joined; each group is built into a model profile,
 * the dictionary entries it uses being added once per profile.
 */
#include "convert/otlp_read.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "encode/gunzip.h"
#include "encode/otlp.h"
#include "encode/pprof.h"
#include "encode/protobuf.h"
#include "util/error.h"

typedef struct slice {
	const uint8_t *p;
	size_t n;
} slice;

typedef struct sarr {
	slice *v;
	size_t n, cap;
} sarr;

static int sarr_push(sarr *a, const uint8_t *p, size_t n)
{
	if (a->n == a->cap) {
		size_t c = a->cap ? a->cap * 2 : 16;
		slice *v = realloc(a->v, c * sizeof(*v));
		if (!v)
			return ember__error_oom("OTLP reader");
		a->v = v;
		a->cap = c;
	}
	a->v[a->n++] = (slice){p, n};
	return 0;
}

/* repeated int32/int64, packed or not */
typedef struct iarr {
	int64_t *v;
	size_t n, cap;
} iarr;

static int iarr_push(iarr *a, int64_t x)
{
	if (a->n == a->cap) {
		size_t c = a->cap ? a->cap * 2 : 8;
		int64_t *v = realloc(a->v, c * sizeof(*v));
		if (!v)
			return ember__error_oom("OTLP reader");
		a->v = v;
		a->cap = c;
	}
	a->v[a->n++] = x;
	return 0;
}

static int read_repeated(const ember__pb_field *f, iarr *a)
{
	if (f->wire == EMBER_PB_VARINT)
		return iarr_push(a, (int64_t)f->u);
	if (f->wire != EMBER_PB_LEN)
		return ember__error(EMBER_ERR_FORMAT, "OTLP: repeated integer field %u has wire type %u",
				    f->num, f->wire);
	const uint8_t *p = f->data, *end = f->data + f->len;
	while (p < end) {
		uint64_t v;
		int rc = ember__pb_read_varint(&p, end, &v);
		if (rc || (rc = iarr_push(a, (int64_t)v)))
			return rc;
	}
	return 0;
}

typedef struct osample {
	int64_t stack;
	iarr attrs;
	int64_t value;
} osample;

typedef struct oprofile {
	int64_t type, unit, ptype, punit;
	int has_period_type;
	int64_t period;
	uint64_t time, duration;
	osample *s;
	size_t n, cap;
} oprofile;

typedef struct dec {
	sarr tab[EMBER_OTLP_DICT_NTABLES];
	oprofile *prof;
	size_t nprof, capprof;
	ember__otlp_read_result *out;
} dec;

static int want(const ember__pb_field *f, unsigned wire, const char *what)
{
	if (f->wire != wire)
		return ember__error(EMBER_ERR_FORMAT, "OTLP: %s (field %u) has wire type %u, expected %u",
				    what, f->num, f->wire, wire);
	return 0;
}

static int get_str(const dec *d, int64_t i, const char **s, size_t *n)
{
	const sarr *t = &d->tab[EMBER_OTLP_DICT_STRING];
	if (i < 0 || (size_t)i >= t->n) {
		if (i == 0) {
			*s = "";
			*n = 0;
			return 0;
		}
		return ember__error(EMBER_ERR_FORMAT, "OTLP: string index %" PRId64 " of %zu", i, t->n);
	}
	*s = (const char *)t->v[i].p;
	*n = t->v[i].n;
	return 0;
}

static int check_index(const dec *d, int table, int64_t i, const char *what)
{
	if (i < 0 || (i > 0 && (size_t)i >= d->tab[table].n))
		return ember__error(EMBER_ERR_FORMAT, "OTLP: %s index %" PRId64 " of %zu", what, i,
				    d->tab[table].n);
	return 0;
}

static int read_value_type(const dec *d, slice s, int64_t *type, int64_t *unit)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc;
	ember__pb_reader_init(&r, s.p, s.n);
	*type = *unit = 0;
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num == EMBER_OTLP_VT_TYPE && f.wire == EMBER_PB_VARINT)
			*type = (int32_t)f.u;
		else if (f.num == EMBER_OTLP_VT_UNIT && f.wire == EMBER_PB_VARINT)
			*unit = (int32_t)f.u;
	}
	if (rc)
		return rc;
	const char *x = NULL;
	size_t n = 0;
	if ((rc = get_str(d, *type, &x, &n)) || (rc = get_str(d, *unit, &x, &n)))
		return rc;
	return 0;
}

static int read_sample(dec *d, oprofile *o, slice s)
{
	if (o->n == o->cap) {
		size_t c = o->cap ? o->cap * 2 : 64;
		osample *v = realloc(o->s, c * sizeof(*v));
		if (!v)
			return ember__error_oom("OTLP reader");
		o->s = v;
		o->cap = c;
	}
	osample *x = &o->s[o->n++];
	memset(x, 0, sizeof(*x));
	iarr values = {0}, ts = {0};
	ember__pb_reader r;
	ember__pb_field f;
	int rc;
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num == EMBER_OTLP_SAMPLE_STACK)
			rc = want(&f, EMBER_PB_VARINT, "Sample.stack_index"), x->stack = (int32_t)f.u;
		else if (f.num == EMBER_OTLP_SAMPLE_ATTRS)
			rc = read_repeated(&f, &x->attrs);
		else if (f.num == EMBER_OTLP_SAMPLE_VALUES)
			rc = read_repeated(&f, &values);
		else if (f.num == 5) /* timestamps_unix_nano: fixed64, packed or not */
			rc = iarr_push(&ts, 0);
		if (rc < 0)
			break;
	}
	if (rc == 0)
		rc = check_index(d, EMBER_OTLP_DICT_STACK, x->stack, "Sample.stack");
	for (size_t i = 0; rc == 0 && i < x->attrs.n; i++)
		rc = check_index(d, EMBER_OTLP_DICT_ATTRIBUTE, x->attrs.v[i], "Sample.attribute");
	if (rc == 0 && values.n > 1)
		rc = ember__error(EMBER_ERR_FORMAT, "OTLP: a sample has %zu values for one sample type",
				  values.n);
	/* no value: each timestamp counts one (as the specification says) */
	x->value = values.n ? values.v[0] : (int64_t)ts.n;
	free(values.v);
	free(ts.v);
	return rc;
}

static int read_profile(dec *d, slice s)
{
	if (d->nprof == d->capprof) {
		size_t c = d->capprof ? d->capprof * 2 : 8;
		oprofile *v = realloc(d->prof, c * sizeof(*v));
		if (!v)
			return ember__error_oom("OTLP reader");
		d->prof = v;
		d->capprof = c;
	}
	oprofile *o = &d->prof[d->nprof++];
	memset(o, 0, sizeof(*o));
	ember__pb_reader r;
	ember__pb_field f;
	int rc;
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		slice v = {f.data, f.len};
		switch (f.num) {
		case EMBER_OTLP_PROFILE_SAMPLE_TYPE:
			if (!(rc = want(&f, EMBER_PB_LEN, "Profile.sample_type")))
				rc = read_value_type(d, v, &o->type, &o->unit);
			break;
		case EMBER_OTLP_PROFILE_SAMPLES:
			if (!(rc = want(&f, EMBER_PB_LEN, "Profile.samples")))
				rc = read_sample(d, o, v);
			break;
		case EMBER_OTLP_PROFILE_TIME:
			rc = want(&f, EMBER_PB_FIXED64, "Profile.time_unix_nano");
			o->time = f.u;
			break;
		case EMBER_OTLP_PROFILE_DURATION:
			rc = want(&f, EMBER_PB_VARINT, "Profile.duration_nano");
			o->duration = f.u;
			break;
		case EMBER_OTLP_PROFILE_PERIOD_TYPE:
			if (!(rc = want(&f, EMBER_PB_LEN, "Profile.period_type")))
				rc = read_value_type(d, v, &o->ptype, &o->punit);
			o->has_period_type = 1;
			break;
		case EMBER_OTLP_PROFILE_PERIOD:
			rc = want(&f, EMBER_PB_VARINT, "Profile.period");
			o->period = (int64_t)f.u;
			break;
		default:
			break;
		}
		if (rc < 0)
			return rc;
	}
	return rc;
}

static char *dupn(const void *p, size_t n)
{
	char *s = malloc(n + 1);
	if (s) {
		if (n)
			memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

/* An AnyValue as a string (string, strindex, int, bool); *is_num for int. */
static int any_value(const dec *d, slice v, char **str, int64_t *num, int *is_num)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc;
	*str = NULL;
	*num = 0;
	*is_num = 0;
	ember__pb_reader_init(&r, v.p, v.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		free(*str);
		*str = NULL;
		*is_num = 0;
		if (f.num == EMBER_OTLP_ANY_STRING && f.wire == EMBER_PB_LEN) {
			*str = dupn(f.data, f.len);
		} else if (f.num == EMBER_OTLP_ANY_STRINDEX && f.wire == EMBER_PB_VARINT) {
			const char *s = NULL;
			size_t n = 0;
			if ((rc = get_str(d, (int32_t)f.u, &s, &n)))
				return rc;
			*str = dupn(s, n);
		} else if ((f.num == EMBER_OTLP_ANY_INT || f.num == EMBER_OTLP_ANY_BOOL) &&
			   f.wire == EMBER_PB_VARINT) {
			*num = (int64_t)f.u;
			*is_num = 1;
			continue;
		} else {
			continue; /* double, array, kvlist, bytes: not labels */
		}
		if (!*str)
			return ember__error_oom("OTLP reader");
	}
	return rc;
}

/* ---- building a model profile from a group of aligned Profiles ---- */

typedef struct build {
	const dec *d;
	ember__profile *p;
	uint32_t *map_of, *fn_of, *loc_of; /* dictionary index -> model index + 0 */
} build;

static const char *pstr(build *b, int64_t i)
{
	const char *s = "";
	size_t n = 0;
	if (get_str(b->d, i, &s, &n))
		return NULL;
	char *c = ember__arena_strndup(&b->p->arena, s, n);
	return c;
}

static int add_mapping(build *b, int64_t i, uint32_t *out)
{
	int rc;
	if (i == 0) {
		*out = 0;
		return 0;
	}
	if (b->map_of[i]) {
		*out = b->map_of[i];
		return 0;
	}
	ember__mapping m;
	memset(&m, 0, sizeof(m));
	m.file = "";
	m.build_id = "";
	iarr attrs = {0};
	ember__pb_reader r;
	ember__pb_field f;
	slice s = b->d->tab[EMBER_OTLP_DICT_MAPPING].v[i];
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num == EMBER_OTLP_MAPPING_START)
			m.start = f.u;
		else if (f.num == EMBER_OTLP_MAPPING_LIMIT)
			m.limit = f.u;
		else if (f.num == EMBER_OTLP_MAPPING_OFFSET)
			m.offset = f.u;
		else if (f.num == EMBER_OTLP_MAPPING_FILENAME && !(m.file = pstr(b, (int32_t)f.u)))
			rc = EMBER_ERR_FORMAT;
		else if (f.num == EMBER_OTLP_MAPPING_ATTRS)
			rc = read_repeated(&f, &attrs);
		if (rc < 0)
			break;
	}
	for (size_t k = 0; rc == 0 && k < attrs.n; k++) {
		if ((rc = check_index(b->d, EMBER_OTLP_DICT_ATTRIBUTE, attrs.v[k], "Mapping.attribute")))
			break;
		slice a = b->d->tab[EMBER_OTLP_DICT_ATTRIBUTE].v[attrs.v[k]];
		ember__pb_reader ar;
		ember__pb_reader_init(&ar, a.p, a.n);
		int64_t key = 0;
		slice val = {NULL, 0};
		while ((rc = ember__pb_next(&ar, &f)) == 1) {
			if (f.num == EMBER_OTLP_KVU_KEY)
				key = (int32_t)f.u;
			else if (f.num == EMBER_OTLP_KVU_VALUE)
				val = (slice){f.data, f.len};
		}
		const char *ks = NULL;
		size_t kn = 0;
		if (rc || (rc = get_str(b->d, key, &ks, &kn)))
			break;
		if (kn == strlen(EMBER_OTLP_BUILD_ID_KEY) && !memcmp(ks, EMBER_OTLP_BUILD_ID_KEY, kn)) {
			char *v;
			int64_t num;
			int isnum;
			if ((rc = any_value(b->d, val, &v, &num, &isnum)))
				break;
			m.build_id = ember__profile_strdup(b->p, v ? v : "");
			free(v);
		}
	}
	free(attrs.v);
	if (rc)
		return rc;
	if (!(*out = b->map_of[i] = ember__profile_add_mapping(b->p, &m)))
		return ember__error_oom("OTLP reader");
	return 0;
}

static int add_function(build *b, int64_t i, uint32_t *out)
{
	int rc = check_index(b->d, EMBER_OTLP_DICT_FUNCTION, i, "Line.function");
	if (rc)
		return rc;
	if (b->fn_of[i]) {
		*out = b->fn_of[i];
		return 0;
	}
	ember__function fn = {"", "", "", 0};
	ember__pb_reader r;
	ember__pb_field f;
	slice s = b->d->tab[EMBER_OTLP_DICT_FUNCTION].v[i];
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		const char **dst = f.num == EMBER_OTLP_FUNCTION_NAME ? &fn.name
				   : f.num == EMBER_OTLP_FUNCTION_SYSTEM_NAME ? &fn.system_name
				   : f.num == EMBER_OTLP_FUNCTION_FILENAME ? &fn.filename : NULL;
		if (dst && !(*dst = pstr(b, (int32_t)f.u)))
			return EMBER_ERR_FORMAT;
		if (f.num == EMBER_OTLP_FUNCTION_START_LINE)
			fn.start_line = (int64_t)f.u;
	}
	if (rc)
		return rc;
	if (!(*out = b->fn_of[i] = ember__profile_add_function(b->p, &fn)))
		return ember__error_oom("OTLP reader");
	return 0;
}

static int add_location(build *b, int64_t i, uint32_t *out)
{
	int rc = check_index(b->d, EMBER_OTLP_DICT_LOCATION, i, "Stack.location");
	if (rc)
		return rc;
	if (b->loc_of[i]) {
		*out = b->loc_of[i];
		return 0;
	}
	ember__location l;
	memset(&l, 0, sizeof(l));
	ember__pb_reader r;
	ember__pb_field f;
	slice s = b->d->tab[EMBER_OTLP_DICT_LOCATION].v[i];
	size_t nlines = 0;
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) == 1)
		nlines += f.num == EMBER_OTLP_LOCATION_LINES;
	if (rc)
		return rc;
	l.lines = ember__arena_alloc(&b->p->arena, (nlines ? nlines : 1) * sizeof(*l.lines));
	if (!l.lines)
		return ember__error_oom("OTLP reader");
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num == EMBER_OTLP_LOCATION_MAPPING) {
			if ((rc = check_index(b->d, EMBER_OTLP_DICT_MAPPING, (int32_t)f.u,
					      "Location.mapping")) ||
			    (rc = add_mapping(b, (int32_t)f.u, &l.mapping)))
				return rc;
		} else if (f.num == EMBER_OTLP_LOCATION_ADDRESS) {
			l.address = f.u;
		} else if (f.num == EMBER_OTLP_LOCATION_LINES && f.wire == EMBER_PB_LEN) {
			ember__pb_reader lr;
			ember__pb_field lf;
			ember__line *ln = &l.lines[l.nlines++];
			memset(ln, 0, sizeof(*ln));
			ember__pb_reader_init(&lr, f.data, f.len);
			while ((rc = ember__pb_next(&lr, &lf)) == 1) {
				if (lf.num == EMBER_OTLP_LINE_FUNCTION && lf.u &&
				    (rc = add_function(b, (int32_t)lf.u, &ln->function)))
					return rc;
				if (lf.num == EMBER_OTLP_LINE_LINE)
					ln->line = (int64_t)lf.u;
			}
			if (rc)
				return rc;
		}
	}
	if (rc)
		return rc;
	if (!(*out = b->loc_of[i] = ember__profile_add_location(b->p, &l)))
		return ember__error_oom("OTLP reader");
	return 0;
}

static int add_label(build *b, int64_t ai, ember__label *l)
{
	slice a = b->d->tab[EMBER_OTLP_DICT_ATTRIBUTE].v[ai];
	ember__pb_reader r;
	ember__pb_field f;
	int64_t key = 0, unit = 0;
	slice val = {NULL, 0};
	int rc;
	ember__pb_reader_init(&r, a.p, a.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num == EMBER_OTLP_KVU_KEY)
			key = (int32_t)f.u;
		else if (f.num == EMBER_OTLP_KVU_VALUE)
			val = (slice){f.data, f.len};
		else if (f.num == EMBER_OTLP_KVU_UNIT)
			unit = (int32_t)f.u;
	}
	char *v;
	int isnum;
	memset(l, 0, sizeof(*l));
	if (rc || (rc = any_value(b->d, val, &v, &l->num, &isnum)))
		return rc;
	if (!(l->key = pstr(b, key))) {
		free(v);
		return EMBER_ERR_FORMAT;
	}
	if (isnum) {
		l->num_unit = unit ? pstr(b, unit) : NULL;
	} else {
		l->str = ember__profile_strdup(b->p, v ? v : "");
	}
	free(v);
	return 0;
}

/* Builds the model profile of d->prof[from..to). */
static int build_profile(dec *d, size_t from, size_t to, ember__profile **out)
{
	build b = {.d = d};
	int rc = 0;
	*out = NULL;
	if (!(b.p = ember__profile_new()))
		return ember__error_oom("OTLP reader");
	b.map_of = calloc(d->tab[EMBER_OTLP_DICT_MAPPING].n + 1, sizeof(uint32_t));
	b.fn_of = calloc(d->tab[EMBER_OTLP_DICT_FUNCTION].n + 1, sizeof(uint32_t));
	b.loc_of = calloc(d->tab[EMBER_OTLP_DICT_LOCATION].n + 1, sizeof(uint32_t));
	if (!b.map_of || !b.fn_of || !b.loc_of) {
		rc = ember__error_oom("OTLP reader");
		goto fail;
	}
	const oprofile *o0 = &d->prof[from];
	ember__profile *p = b.p;
	p->nvalues = (uint32_t)(to - from);
	for (size_t k = from; k < to; k++)
		p->sample_type[k - from] = (ember__value_type){pstr(&b, d->prof[k].type),
							       pstr(&b, d->prof[k].unit)};
	if (o0->has_period_type)
		p->period_type = (ember__value_type){pstr(&b, o0->ptype), pstr(&b, o0->punit)};
	p->period = o0->period;
	p->time_nanos = (int64_t)o0->time;
	p->duration_nanos = (int64_t)o0->duration;
	p->default_sample_type = p->sample_type[p->nvalues - 1].type;
	for (size_t i = 0; i < o0->n; i++) {
		const osample *os = &o0->s[i];
		ember__sample s;
		memset(&s, 0, sizeof(s));
		slice st = {NULL, 0};
		if (os->stack > 0 && (size_t)os->stack < d->tab[EMBER_OTLP_DICT_STACK].n)
			st = d->tab[EMBER_OTLP_DICT_STACK].v[os->stack];
		iarr locs = {0};
		ember__pb_reader r;
		ember__pb_field f;
		ember__pb_reader_init(&r, st.p, st.n);
		while ((rc = ember__pb_next(&r, &f)) == 1)
			if (f.num == EMBER_OTLP_STACK_LOCATIONS && (rc = read_repeated(&f, &locs)))
				break;
		if (rc == 0 && locs.n) {
			s.locs = ember__arena_alloc(&p->arena, locs.n * sizeof(*s.locs));
			if (!s.locs)
				rc = ember__error_oom("OTLP reader");
		}
		for (size_t k = 0; rc == 0 && k < locs.n; k++) {
			if (locs.v[k] == 0)
				rc = ember__error(EMBER_ERR_FORMAT, "OTLP: a stack refers to location 0");
			else
				rc = add_location(&b, locs.v[k], &s.locs[s.nlocs++]);
		}
		free(locs.v);
		if (rc == 0 && os->attrs.n) {
			s.labels = ember__arena_alloc(&p->arena, os->attrs.n * sizeof(*s.labels));
			if (!s.labels)
				rc = ember__error_oom("OTLP reader");
		}
		for (size_t k = 0; rc == 0 && k < os->attrs.n; k++)
			if (os->attrs.v[k] && (rc = add_label(&b, os->attrs.v[k], &s.labels[s.nlabels])) == 0)
				s.nlabels++;
		for (size_t k = from; k < to; k++)
			s.values[k - from] = d->prof[k].s[i].value;
		if (rc)
			goto fail;
		if (!ember__profile_add_sample(p, &s)) {
			rc = ember__error_oom("OTLP reader");
			goto fail;
		}
	}
	*out = b.p;
	b.p = NULL;
fail:
	ember__profile_free(b.p);
	free(b.map_of);
	free(b.fn_of);
	free(b.loc_of);
	return rc;
}

/* Whether Profile b can join the group of Profile a (same window, same samples). */
static int aligned(const oprofile *a, const oprofile *b)
{
	if (a->time != b->time || a->duration != b->duration || a->period != b->period ||
	    a->has_period_type != b->has_period_type || a->ptype != b->ptype ||
	    a->punit != b->punit || a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		if (a->s[i].stack != b->s[i].stack || a->s[i].attrs.n != b->s[i].attrs.n)
			return 0;
		if (a->s[i].attrs.n &&
		    memcmp(a->s[i].attrs.v, b->s[i].attrs.v, a->s[i].attrs.n * sizeof(int64_t)))
			return 0;
	}
	return 1;
}

/* ---- top level ---- */

static int read_scope(dec *d, slice s, int first)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc;
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num == EMBER_OTLP_SP_SCOPE && f.wire == EMBER_PB_LEN && first) {
			ember__pb_reader sr;
			ember__pb_field sf;
			ember__pb_reader_init(&sr, f.data, f.len);
			while ((rc = ember__pb_next(&sr, &sf)) == 1) {
				char **dst = sf.num == EMBER_OTLP_SCOPE_NAME ? &d->out->scope_name
					     : sf.num == EMBER_OTLP_SCOPE_VERSION ? &d->out->scope_version
					     : NULL;
				if (dst && sf.wire == EMBER_PB_LEN) {
					free(*dst);
					if (!(*dst = dupn(sf.data, sf.len)))
						return ember__error_oom("OTLP reader");
				}
			}
			if (rc)
				return rc;
		} else if (f.num == EMBER_OTLP_SP_PROFILES) {
			if ((rc = want(&f, EMBER_PB_LEN, "ScopeProfiles.profiles")) ||
			    (rc = read_profile(d, (slice){f.data, f.len})))
				return rc;
		}
	}
	return rc;
}

static int read_resource(dec *d, slice s)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc;
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num != EMBER_OTLP_RESOURCE_ATTRIBUTES || f.wire != EMBER_PB_LEN)
			continue;
		ember__pb_reader kr;
		ember__pb_field kf;
		char *key = NULL, *val = NULL;
		int64_t num = 0;
		int isnum = 0;
		ember__pb_reader_init(&kr, f.data, f.len);
		while ((rc = ember__pb_next(&kr, &kf)) == 1) {
			if (kf.num == EMBER_OTLP_KV_KEY && kf.wire == EMBER_PB_LEN) {
				free(key);
				key = dupn(kf.data, kf.len);
			} else if (kf.num == EMBER_OTLP_KV_VALUE && kf.wire == EMBER_PB_LEN) {
				free(val);
				rc = any_value(d, (slice){kf.data, kf.len}, &val, &num, &isnum);
				if (rc)
					break;
			}
		}
		if (rc == 0 && isnum && !val && asprintf(&val, "%" PRId64, num) < 0)
			val = NULL;
		ember__otlp_kv *v = realloc(d->out->resource, (d->out->nresource + 1) * sizeof(*v));
		if (rc == 0 && (!key || !val || !v))
			rc = ember__error_oom("OTLP reader");
		if (v)
			d->out->resource = v;
		if (rc) {
			free(key);
			free(val);
			return rc;
		}
		v[d->out->nresource++] = (ember__otlp_kv){key, val};
	}
	return rc;
}

static int read_rp(dec *d, slice s, int first)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc, nscope = 0;
	ember__pb_reader_init(&r, s.p, s.n);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num == EMBER_OTLP_RP_RESOURCE && f.wire == EMBER_PB_LEN && first)
			rc = read_resource(d, (slice){f.data, f.len});
		else if (f.num == EMBER_OTLP_RP_SCOPE_PROFILES && f.wire == EMBER_PB_LEN)
			rc = read_scope(d, (slice){f.data, f.len}, first && nscope++ == 0);
		if (rc < 0)
			return rc;
	}
	return rc;
}

static int decode(dec *d, const uint8_t *data, size_t len)
{
	ember__pb_reader r;
	ember__pb_field f;
	sarr rps = {0};
	slice dict = {NULL, 0};
	int rc;
	ember__pb_reader_init(&r, data, len);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num == EMBER_OTLP_REQ_RESOURCE_PROFILES) {
			if ((rc = want(&f, EMBER_PB_LEN, "resource_profiles")) ||
			    (rc = sarr_push(&rps, f.data, f.len)))
				break;
		} else if (f.num == EMBER_OTLP_REQ_DICTIONARY) {
			if ((rc = want(&f, EMBER_PB_LEN, "dictionary")))
				break;
			dict = (slice){f.data, f.len};
		}
	}
	if (rc == 0 && dict.p) {
		ember__pb_reader_init(&r, dict.p, dict.n);
		while ((rc = ember__pb_next(&r, &f)) == 1)
			if (f.num >= 1 && f.num < EMBER_OTLP_DICT_NTABLES &&
			    ((rc = want(&f, EMBER_PB_LEN, "a dictionary entry")) ||
			     (rc = sarr_push(&d->tab[f.num], f.data, f.len))))
				break;
	}
	for (int t = 1; rc == 0 && t < EMBER_OTLP_DICT_NTABLES; t++)
		d->out->table_len[t] = d->tab[t].n;
	for (size_t i = 0; rc == 0 && i < rps.n; i++)
		rc = read_rp(d, rps.v[i], i == 0);
	free(rps.v);
	if (rc)
		return rc;
	d->out->notlp_profiles = d->nprof;
	d->out->profiles = calloc(d->nprof ? d->nprof : 1, sizeof(*d->out->profiles));
	if (!d->out->profiles)
		return ember__error_oom("OTLP reader");
	for (size_t i = 0; i < d->nprof;) {
		size_t j = i + 1;
		while (j < d->nprof && j - i < EMBER_PROFILE_MAX_VALUES && aligned(&d->prof[i], &d->prof[j]))
			j++;
		if ((rc = build_profile(d, i, j, &d->out->profiles[d->out->nprofiles])))
			return rc;
		d->out->nprofiles++;
		i = j;
	}
	return 0;
}

int ember__otlp_read(const uint8_t *data, size_t len, ember__otlp_read_result *out)
{
	memset(out, 0, sizeof(*out));
	if (!data && len)
		return ember__error(EMBER_ERR_INVALID, "OTLP reader: no data");
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	if (len >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		int rc = ember__gunzip(data, len, EMBER_PPROF_MAX_RAW, "OTLP request", &raw, &rawlen);
		if (rc)
			return rc;
		data = raw;
		len = rawlen;
	}
	dec d;
	memset(&d, 0, sizeof(d));
	d.out = out;
	int rc = decode(&d, data, len);
	for (int t = 0; t < EMBER_OTLP_DICT_NTABLES; t++)
		free(d.tab[t].v);
	for (size_t i = 0; i < d.nprof; i++) {
		for (size_t k = 0; k < d.prof[i].n; k++)
			free(d.prof[i].s[k].attrs.v);
		free(d.prof[i].s);
	}
	free(d.prof);
	free(raw);
	return rc;
}

void ember__otlp_read_free(ember__otlp_read_result *r)
{
	for (size_t i = 0; r->profiles && i < r->nprofiles; i++)
		ember__profile_free(r->profiles[i]);
	free(r->profiles);
	for (size_t i = 0; i < r->nresource; i++) {
		free(r->resource[i].key);
		free(r->resource[i].value);
	}
	free(r->resource);
	free(r->scope_name);
	free(r->scope_version);
	memset(r, 0, sizeof(*r));
}
