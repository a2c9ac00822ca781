/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_read.c - the JFR reader (jfr_read.h).
 *
 * Format notes (JDK 17's jdk.jfr.internal, JMC's parser, async-profiler's
 * writer agree on these): chunk header fields are fixed big-endian; the
 * event stream starts right after the header and every event, metadata
 * and checkpoints included, begins with its size (an int) and type id (a
 * long), so the stream can be walked without following the checkpoint
 * chain. A checkpoint in format 2 has, after start, duration and delta,
 * one byte of flags, then the pools.
 */
#include "read/jfr_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/hashmap.h"

typedef struct cp_entry {
	int64_t class_id, index;
	uint64_t off, end; /* the value's bytes, relative to the chunk */
	int state;         /* 0: not decoded, 1: decoding, 2: decoded */
	ember__jfr_value value;
} cp_entry;

typedef struct chunk {
	ember__jfr_chunk_info info;
	const uint8_t *base;
	int compressed;
	ember__arena arena; /* metadata, classes, decoded pool values */
	ember__jfr_class *classes;
	uint32_t nclasses;
	ember__u64map class_index; /* id -> position + 1 */
	cp_entry *cps;
	size_t ncps, capcps;
	ember__u64map cp_index; /* hash(class, index) (+probe) -> position + 1 */
	const ember__jfr_class *string_class;
	uint64_t cp_budget;   /* values pool decoding may still read */
	uint64_t skip_budget; /* values indexing the pools may still skip */
} chunk;

struct ember__jfr {
	const uint8_t *data;
	size_t len;
	chunk *chunks;
	size_t nchunks;
	size_t cur_chunk;
	uint64_t cur_pos; /* in the current chunk */
	ember__arena ev_arena;
};

/* ---- primitive reads ---- */

typedef struct rd {
	const uint8_t *p, *end;
	const chunk *ch;
	int err;
} rd;

static int fail(const chunk *ch, const uint8_t *at, const char *what)
{
	long long off = ch && at ? (long long)(ch->info.offset + (uint64_t)(at - ch->base)) : -1;
	return ember__error(EMBER_ERR_FORMAT, "JFR: %s (at byte %lld)", what, off);
}

static int rd_fail(rd *r, const char *what)
{
	if (!r->err)
		r->err = fail(r->ch, r->p, what);
	r->p = r->end;
	return r->err;
}

static uint8_t get_u8(rd *r)
{
	if (r->p >= r->end) {
		rd_fail(r, "truncated value");
		return 0;
	}
	return *r->p++;
}

static uint64_t get_varint(rd *r)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++) {
		uint8_t b = get_u8(r);
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	return v | (uint64_t)get_u8(r) << 56; /* the 9th byte carries 8 bits */
}

static uint64_t get_be(rd *r, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | get_u8(r);
	return v;
}

static int64_t get_long(rd *r)
{
	return (int64_t)(r->ch->compressed ? get_varint(r) : get_be(r, 8));
}

static int32_t get_int(rd *r)
{
	return (int32_t)(r->ch->compressed ? get_varint(r) : get_be(r, 4));
}

static size_t left(const rd *r)
{
	return (size_t)(r->end - r->p);
}

/* ---- strings ---- */

/* Appends code point c as UTF-8. */
static size_t put_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | c >> 6);
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	o[0] = (char)(0xe0 | c >> 12);
	o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[2] = (char)(0x80 | (c & 0x3f));
	return 3;
}

static int resolve(chunk *ch, int64_t class_id, int64_t index, int depth, ember__jfr_value *out);

/* Reads a string into *out (kind STRING or NULL). `a` NULL: skip only. */
static int get_string(rd *r, ember__arena *a, int depth, ember__jfr_value *out)
{
	uint8_t enc = get_u8(r);
	if (out)
		memset(out, 0, sizeof(*out));
	switch (enc) {
	case 0:
		return r->err;
	case 1:
		if (out) {
			out->kind = EMBER_JFR_STRING;
			out->u.s = "";
		}
		return r->err;
	case 2: {
		int64_t idx = get_long(r);
		if (r->err || !out)
			return r->err;
		if (!r->ch->string_class)
			return rd_fail(r, "a string refers to a constant pool, but there is no java.lang.String class");
		return resolve((chunk *)r->ch, r->ch->string_class->id, idx, depth + 1, out);
	}
	case 3:
	case 5: {
		int32_t n = get_int(r);
		if (r->err)
			return r->err;
		if (n < 0 || (size_t)n > left(r))
			return rd_fail(r, "string length exceeds its event");
		if (out && a) {
			char *s = ember__arena_strndup(a, (const char *)r->p, (size_t)n);
			if (!s)
				return r->err = ember__error_oom("JFR string");
			out->kind = EMBER_JFR_STRING;
			out->latin1 = enc == 5;
			out->n = (uint32_t)n;
			out->u.s = s;
		}
		r->p += n;
		return r->err;
	}
	case 4: {
		int32_t n = get_int(r);
		if (r->err)
			return r->err;
		if (n < 0 || (size_t)n > left(r))
			return rd_fail(r, "string length exceeds its event");
		char *s = out && a ? ember__arena_alloc(a, (size_t)n * 3 + 1) : NULL;
		if (out && a && !s)
			return r->err = ember__error_oom("JFR string");
		size_t o = 0;
		for (int32_t i = 0; i < n && !r->err; i++) {
			uint32_t c = (uint32_t)get_varint(r) & 0xffff;
			if (s)
				o += put_utf8(s + o, c);
		}
		if (s) {
			s[o] = '\0';
			out->kind = EMBER_JFR_STRING;
			out->n = (uint32_t)o;
			out->u.s = s;
		}
		return r->err;
	}
	default:
		return rd_fail(r, "unknown string encoding");
	}
}

/* ---- values ---- */

typedef struct ctx {
	chunk *ch;
	ember__arena *a; /* NULL: skip, do not build values */
	uint64_t *budget;
} ctx;

static int decode_type(ctx *c, rd *r, const ember__jfr_class *cls, int depth, ember__jfr_value *out);

static ember__jfr_value *new_values(ctx *c, rd *r, uint64_t n)
{
	if (n > *c->budget) { /* each item will take one from the budget */
		rd_fail(r, "more values than the input can hold");
		return NULL;
	}
	ember__jfr_value *v = ember__arena_alloc(c->a, (size_t)(n ? n : 1) * sizeof(*v));
	if (!v)
		r->err = ember__error_oom("JFR values");
	return v;
}

/* One field's value: an array, a pool reference or an inline value. */
static int decode_field(ctx *c, rd *r, const ember__jfr_field *f, int depth, ember__jfr_value *out)
{
	if (depth > EMBER_JFR_MAX_DEPTH)
		return rd_fail(r, "values nested too deeply");
	if (!f->type)
		return rd_fail(r, "a field's type is not in the metadata");
	if (f->array) {
		int32_t n = get_int(r);
		if (r->err)
			return r->err;
		if (n < 0 || (size_t)n > left(r) + 16)
			return rd_fail(r, "array length exceeds its event");
		ember__jfr_value *items = NULL;
		if (c->a && !(items = new_values(c, r, (uint64_t)n)))
			return r->err;
		ember__jfr_field one = *f;
		one.array = 0;
		for (int32_t i = 0; i < n && !r->err; i++)
			decode_field(c, r, &one, depth + 1, items ? &items[i] : NULL);
		if (out && !r->err) {
			memset(out, 0, sizeof(*out));
			out->kind = EMBER_JFR_ARRAY;
			out->n = (uint32_t)n;
			out->u.items = items;
		}
		return r->err;
	}
	if (f->cp) {
		int64_t idx = get_long(r);
		if (r->err || !out || !c->a)
			return r->err;
		int rc = resolve(c->ch, f->type_id, idx, depth + 1, out);
		return rc ? (r->err = rc) : 0;
	}
	return decode_type(c, r, f->type, depth, out);
}

static int decode_type(ctx *c, rd *r, const ember__jfr_class *cls, int depth, ember__jfr_value *out)
{
	if (depth > EMBER_JFR_MAX_DEPTH)
		return rd_fail(r, "values nested too deeply");
	/* Every value read, built or skipped, takes one from the budget: types
	 * with no fields take no bytes, so bytes alone do not bound the work. */
	if (!*c->budget)
		return rd_fail(r, "more values than the input can hold");
	(*c->budget)--;
	ember__jfr_value tmp, *v = out && c->a ? out : &tmp;
	memset(v, 0, sizeof(*v));
	switch (cls->prim) {
	case EMBER_JFR_P_BOOLEAN:
	case EMBER_JFR_P_BYTE:
		v->kind = EMBER_JFR_INT;
		v->u.i = cls->prim == EMBER_JFR_P_BYTE ? (int8_t)get_u8(r) : get_u8(r);
		return r->err;
	case EMBER_JFR_P_CHAR:
	case EMBER_JFR_P_SHORT:
	case EMBER_JFR_P_INT:
		v->kind = EMBER_JFR_INT;
		v->u.i = get_int(r);
		return r->err;
	case EMBER_JFR_P_LONG:
		v->kind = EMBER_JFR_INT;
		v->u.i = get_long(r);
		return r->err;
	case EMBER_JFR_P_FLOAT: {
		uint32_t b = (uint32_t)get_be(r, 4);
		float f;
		memcpy(&f, &b, sizeof(f));
		v->kind = EMBER_JFR_FLOAT;
		v->u.f = f;
		return r->err;
	}
	case EMBER_JFR_P_DOUBLE: {
		uint64_t b = get_be(r, 8);
		double d;
		memcpy(&d, &b, sizeof(d));
		v->kind = EMBER_JFR_FLOAT;
		v->u.f = d;
		return r->err;
	}
	case EMBER_JFR_P_STRING:
		return get_string(r, c->a, depth, out && c->a ? v : NULL);
	default:
		break;
	}
	ember__jfr_value *items = NULL;
	if (c->a && !(items = new_values(c, r, cls->nfields)))
		return r->err;
	for (uint32_t i = 0; i < cls->nfields && !r->err; i++)
		decode_field(c, r, &cls->fields[i], depth + 1, items ? &items[i] : NULL);
	v->kind = EMBER_JFR_OBJECT;
	v->cls = cls;
	v->n = cls->nfields;
	v->u.items = items;
	return r->err;
}

static const ember__jfr_class *class_by_id(const chunk *ch, int64_t id)
{
	uint64_t *v = ember__u64map_get(&ch->class_index, (uint64_t)id);
	return v ? &ch->classes[*v - 1] : NULL;
}

static uint64_t cp_key(int64_t class_id, int64_t index)
{
	return ember__hash64((uint64_t)index * 0x9e3779b97f4a7c15ULL ^ (uint64_t)class_id);
}

static cp_entry *cp_find(const chunk *ch, int64_t class_id, int64_t index)
{
	for (uint64_t k = cp_key(class_id, index);; k++) {
		uint64_t *v = ember__u64map_get(&ch->cp_index, k);
		if (!v)
			return NULL;
		cp_entry *e = &ch->cps[*v - 1];
		if (e->class_id == class_id && e->index == index)
			return e;
	}
}

/* Decodes (once) and returns a pool entry; unknown entries and cycles are null. */
static int resolve(chunk *ch, int64_t class_id, int64_t index, int depth, ember__jfr_value *out)
{
	memset(out, 0, sizeof(*out));
	if (depth > EMBER_JFR_MAX_DEPTH)
		return fail(ch, NULL, "constant pool references nested too deeply");
	cp_entry *e = cp_find(ch, class_id, index);
	if (!e || e->state == 1)
		return 0; /* absent (index 0 is often null) or a cycle */
	if (e->state == 0) {
		const ember__jfr_class *cls = class_by_id(ch, class_id);
		if (!cls)
			return fail(ch, NULL, "a constant pool's type is not in the metadata");
		e->state = 1;
		rd r = {ch->base + e->off, ch->base + e->end, ch, 0};
		ctx c = {ch, &ch->arena, &ch->cp_budget};
		ember__jfr_value v;
		int rc = decode_type(&c, &r, cls, depth, &v);
		e = cp_find(ch, class_id, index); /* still valid: the table does not move */
		e->state = 2;
		if (rc)
			return rc;
		e->value = v;
	}
	*out = e->value;
	return 0;
}

/* ---- metadata ---- */

typedef struct meta {
	rd *r;
	chunk *ch;
	const char **strings;
	int32_t nstrings;
	/* the class being read, its fields collected here */
	ember__jfr_class *cls;
	ember__jfr_field *fields;
	uint32_t nfields, capfields;
	ember__jfr_class *classes;
	uint32_t nclasses, capclasses;
} meta;

static const char *meta_str(meta *m, int32_t i)
{
	if (i < 0 || i >= m->nstrings) {
		rd_fail(m->r, "metadata string index out of range");
		return NULL;
	}
	return m->strings[i] ? m->strings[i] : "";
}

static int prim_of(const char *name)
{
	static const char *const names[] = {"boolean", "byte", "char", "short", "int",
					    "long", "float", "double", "java.lang.String"};
	for (int i = 0; i < 9; i++)
		if (!strcmp(name, names[i]))
			return i + 1;
	return 0;
}

static int parse_int64(const char *s, int64_t *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int grow(void **p, uint32_t *cap, uint32_t n, size_t size)
{
	if (n < *cap)
		return 0;
	uint32_t ncap = *cap ? *cap * 2 : 16;
	void *np = realloc(*p, (size_t)ncap * size);
	if (!np)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

static void finish_class(meta *m)
{
	if (!m->cls)
		return;
	if (m->nfields) {
		m->cls->fields = ember__arena_alloc(&m->ch->arena, m->nfields * sizeof(*m->cls->fields));
		if (!m->cls->fields) {
			m->r->err = ember__error_oom("JFR metadata");
			return;
		}
		memcpy(m->cls->fields, m->fields, m->nfields * sizeof(*m->fields));
		m->cls->nfields = m->nfields;
	}
	m->cls = NULL;
	m->nfields = 0;
}

static int parse_element(meta *m, int depth, const char *parent)
{
	rd *r = m->r;
	if (depth > EMBER_JFR_MAX_DEPTH)
		return rd_fail(r, "metadata elements nested too deeply");
	const char *name = meta_str(m, get_int(r));
	int32_t nattr = get_int(r);
	if (r->err)
		return r->err;
	if (nattr < 0 || (size_t)nattr > left(r))
		return rd_fail(r, "metadata attribute count exceeds the event");
	const char *a_name = NULL, *a_id = NULL, *a_super = NULL, *a_class = NULL, *a_cp = NULL,
		   *a_dim = NULL;
	for (int32_t i = 0; i < nattr && !r->err; i++) {
		const char *k = meta_str(m, get_int(r));
		const char *v = meta_str(m, get_int(r));
		if (r->err)
			break;
		if (!strcmp(k, "name"))
			a_name = v;
		else if (!strcmp(k, "id"))
			a_id = v;
		else if (!strcmp(k, "superType"))
			a_super = v;
		else if (!strcmp(k, "class"))
			a_class = v;
		else if (!strcmp(k, "constantPool"))
			a_cp = v;
		else if (!strcmp(k, "dimension"))
			a_dim = v;
	}
	if (r->err)
		return r->err;
	int is_class = !strcmp(name, "class") && !strcmp(parent, "metadata");
	if (is_class) {
		int64_t id;
		if (!a_name || parse_int64(a_id, &id))
			return rd_fail(r, "metadata class without a name or numeric id");
		finish_class(m);
		if (grow((void **)&m->classes, &m->capclasses, m->nclasses, sizeof(*m->classes)))
			return r->err = ember__error_oom("JFR metadata");
		ember__jfr_class *c = &m->classes[m->nclasses++];
		memset(c, 0, sizeof(*c));
		c->id = id;
		c->name = a_name;
		c->super = a_super;
		c->prim = prim_of(a_name);
		m->cls = c;
	} else if (!strcmp(name, "field") && !strcmp(parent, "class") && m->cls) {
		ember__jfr_field f = {.name = a_name};
		if (!a_name || parse_int64(a_class, &f.type_id))
			return rd_fail(r, "metadata field without a name or numeric class");
		f.cp = a_cp && !strcmp(a_cp, "true");
		f.array = a_dim && strcmp(a_dim, "0") != 0;
		if (grow((void **)&m->fields, &m->capfields, m->nfields, sizeof(*m->fields)))
			return r->err = ember__error_oom("JFR metadata");
		m->fields[m->nfields++] = f;
	}
	int32_t nchild = get_int(r);
	if (r->err)
		return r->err;
	if (nchild < 0 || (size_t)nchild > left(r))
		return rd_fail(r, "metadata child count exceeds the event");
	for (int32_t i = 0; i < nchild && !r->err; i++)
		parse_element(m, depth + 1, name);
	if (is_class)
		finish_class(m);
	return r->err;
}

static int parse_metadata(chunk *ch, uint64_t off)
{
	if (off < EMBER_JFR_HEADER_SIZE || off >= ch->info.size)
		return fail(ch, ch->base, "metadata offset outside the chunk");
	rd r = {ch->base + off, ch->base + ch->info.size, ch, 0};
	const uint8_t *start = r.p;
	int32_t size = get_int(&r);
	if (!r.err && (size < 1 || (uint64_t)size > ch->info.size - off))
		return rd_fail(&r, "metadata event size outside the chunk");
	r.end = start + size;
	if (get_long(&r) != 0 && !r.err)
		return rd_fail(&r, "the metadata offset does not point to a metadata event");
	get_long(&r); /* start */
	get_long(&r); /* duration */
	get_long(&r); /* metadata id */
	int32_t n = get_int(&r);
	if (r.err)
		return r.err;
	if (n < 0 || (size_t)n > left(&r))
		return rd_fail(&r, "metadata string count exceeds the event");
	meta m = {.r = &r, .ch = ch, .nstrings = n};
	m.strings = calloc((size_t)n + 1, sizeof(*m.strings));
	if (!m.strings)
		return ember__error_oom("JFR metadata");
	for (int32_t i = 0; i < n && !r.err; i++) {
		ember__jfr_value v;
		if (get_string(&r, &ch->arena, 0, &v) == 0)
			m.strings[i] = v.kind == EMBER_JFR_STRING ? v.u.s : NULL;
	}
	if (!r.err)
		parse_element(&m, 0, "");
	finish_class(&m);
	free(m.strings);
	free(m.fields);
	if (r.err) {
		free(m.classes);
		return r.err;
	}
	ch->classes = ember__arena_alloc(&ch->arena, (m.nclasses ? m.nclasses : 1) * sizeof(*ch->classes));
	if (!ch->classes) {
		free(m.classes);
		return ember__error_oom("JFR metadata");
	}
	if (m.nclasses)
		memcpy(ch->classes, m.classes, m.nclasses * sizeof(*m.classes));
	ch->nclasses = m.nclasses;
	free(m.classes);
	for (uint32_t i = 0; i < ch->nclasses; i++) {
		int inserted;
		uint64_t *v = ember__u64map_put(&ch->class_index, (uint64_t)ch->classes[i].id, &inserted);
		if (!v)
			return ember__error_oom("JFR metadata");
		if (!inserted)
			return fail(ch, start, "two metadata classes have the same id");
		*v = i + 1;
	}
	for (uint32_t i = 0; i < ch->nclasses; i++) {
		ember__jfr_class *c = &ch->classes[i];
		if (c->prim == EMBER_JFR_P_STRING)
			ch->string_class = c;
		for (uint32_t k = 0; k < c->nfields; k++)
			c->fields[k].type = class_by_id(ch, c->fields[k].type_id);
	}
	return 0;
}

/* ---- constant pools ---- */

static int parse_checkpoint(chunk *ch, const uint8_t *p, const uint8_t *end)
{
	rd r = {p, end, ch, 0};
	get_long(&r); /* start */
	get_long(&r); /* duration */
	get_long(&r); /* delta to the previous checkpoint: the stream is walked instead */
	if (ch->info.major >= 2)
		get_u8(&r); /* flags */
	int32_t npools = get_int(&r);
	if (r.err)
		return r.err;
	if (npools < 0 || (size_t)npools > left(&r))
		return rd_fail(&r, "constant pool count exceeds the checkpoint");
	ctx c = {ch, NULL, &ch->skip_budget};
	for (int32_t i = 0; i < npools && !r.err; i++) {
		int64_t class_id = get_long(&r);
		int32_t n = get_int(&r);
		if (r.err)
			break;
		const ember__jfr_class *cls = class_by_id(ch, class_id);
		if (!cls)
			return rd_fail(&r, "a constant pool's type is not in the metadata");
		if (n < 0 || (size_t)n > left(&r))
			return rd_fail(&r, "constant count exceeds the checkpoint");
		for (int32_t k = 0; k < n && !r.err; k++) {
			int64_t index = get_long(&r);
			uint64_t off = (uint64_t)(r.p - ch->base);
			if (decode_type(&c, &r, cls, 0, NULL))
				break;
			if (cp_find(ch, class_id, index))
				continue; /* the first definition wins */
			if (ch->ncps == ch->capcps) {
				size_t ncap = ch->capcps ? ch->capcps * 2 : 256;
				cp_entry *ne = realloc(ch->cps, ncap * sizeof(*ne));
				if (!ne)
					return ember__error_oom("JFR constant pools");
				ch->cps = ne;
				ch->capcps = ncap;
			}
			cp_entry *e = &ch->cps[ch->ncps];
			memset(e, 0, sizeof(*e));
			e->class_id = class_id;
			e->index = index;
			e->off = off;
			e->end = (uint64_t)(r.p - ch->base);
			for (uint64_t key = cp_key(class_id, index);; key++) {
				int inserted;
				uint64_t *v = ember__u64map_put(&ch->cp_index, key, &inserted);
				if (!v)
					return ember__error_oom("JFR constant pools");
				if (inserted) {
					*v = ++ch->ncps;
					break;
				}
			}
		}
	}
	return r.err;
}

/* Reads an event's size and type at chunk offset pos. */
static int event_head(chunk *ch, uint64_t pos, int64_t *type, const uint8_t **body,
		      const uint8_t **end)
{
	rd r = {ch->base + pos, ch->base + ch->info.size, ch, 0};
	int32_t size = get_int(&r);
	if (r.err)
		return r.err;
	if (size < 1 || (uint64_t)size > ch->info.size - pos)
		return fail(ch, ch->base + pos, "event size outside the chunk");
	r.end = ch->base + pos + (uint64_t)size;
	*type = get_long(&r);
	*body = r.p;
	*end = r.end;
	return r.err;
}

static int load_chunk(ember__jfr *j, chunk *ch, uint64_t off)
{
	const uint8_t *h = j->data + off;
	memset(ch, 0, sizeof(*ch)); /* freed by the caller even when this fails */
	rd r = {h, j->data + j->len, NULL, 0};
	chunk hdr = {.base = h, .info.offset = off};
	r.ch = &hdr;
	if (j->len - off < EMBER_JFR_HEADER_SIZE)
		return fail(&hdr, h, "truncated chunk header");
	if (memcmp(h, "FLR\0", 4))
		return fail(&hdr, h, "not a JFR chunk (no FLR magic)");
	r.p += 4;
	ch->base = h;
	ch->info.offset = off;
	ch->info.major = (uint16_t)get_be(&r, 2);
	ch->info.minor = (uint16_t)get_be(&r, 2);
	ch->info.size = get_be(&r, 8);
	uint64_t cp_off = get_be(&r, 8);
	uint64_t meta_off = get_be(&r, 8);
	ch->info.start_nanos = (int64_t)get_be(&r, 8);
	ch->info.duration_nanos = (int64_t)get_be(&r, 8);
	ch->info.start_ticks = (int64_t)get_be(&r, 8);
	ch->info.ticks_per_second = (int64_t)get_be(&r, 8);
	ch->info.features = (uint32_t)get_be(&r, 4);
	(void)cp_off;
	if (ch->info.major != 2 && ch->info.major != 1)
		return fail(&hdr, h, "unsupported JFR version (only 1.x and 2.x)");
	if (ch->info.size < EMBER_JFR_HEADER_SIZE || ch->info.size > j->len - off)
		return fail(&hdr, h, "chunk size exceeds the file (an unfinished recording?)");
	ch->compressed = ch->info.major >= 2 && (ch->info.features & 1);
	ch->cp_budget = 4 * ch->info.size + 4096;
	ch->skip_budget = 8 * ch->info.size + 4096;
	int rc = parse_metadata(ch, meta_off);
	if (rc)
		return rc;
	for (uint64_t pos = EMBER_JFR_HEADER_SIZE; pos < ch->info.size;) {
		/* Initialized: gcc -O2/-O3 cannot see that event_head sets them
		 * whenever it returns 0. */
		int64_t type = 0;
		const uint8_t *body = NULL, *end = NULL;
		if ((rc = event_head(ch, pos, &type, &body, &end)))
			return rc;
		if (type == 1 && (rc = parse_checkpoint(ch, body, end)))
			return rc;
		pos = (uint64_t)(end - ch->base);
	}
	return 0;
}

static void free_chunk(chunk *ch)
{
	ember__arena_release(&ch->arena);
	ember__u64map_free(&ch->class_index);
	ember__u64map_free(&ch->cp_index);
	free(ch->cps);
}

int ember__jfr_open(const uint8_t *data, size_t len, ember__jfr **out)
{
	*out = NULL;
	if (!data && len)
		return ember__error(EMBER_ERR_INVALID, "JFR: no data");
	ember__jfr *j = calloc(1, sizeof(*j));
	if (!j)
		return ember__error_oom("JFR reader");
	j->data = data;
	j->len = len;
	if (len < EMBER_JFR_HEADER_SIZE) {
		free(j);
		return ember__error(EMBER_ERR_FORMAT, "JFR: %zu bytes is too short for a recording", len);
	}
	size_t cap = 0;
	int rc = 0;
	for (uint64_t off = 0; off < len && rc == 0;) {
		if (j->nchunks == cap) {
			size_t ncap = cap ? cap * 2 : 4;
			chunk *nc = realloc(j->chunks, ncap * sizeof(*nc));
			if (!nc) {
				rc = ember__error_oom("JFR chunks");
				break;
			}
			j->chunks = nc;
			cap = ncap;
		}
		chunk *ch = &j->chunks[j->nchunks];
		rc = load_chunk(j, ch, off);
		j->nchunks++;
		if (rc == 0)
			off += ch->info.size;
	}
	if (rc) {
		ember__jfr_free(j);
		return rc;
	}
	ember__jfr_rewind(j);
	*out = j;
	return 0;
}

void ember__jfr_free(ember__jfr *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->nchunks; i++)
		free_chunk(&j->chunks[i]);
	free(j->chunks);
	ember__arena_release(&j->ev_arena);
	free(j);
}

size_t ember__jfr_nchunks(const ember__jfr *j)
{
	return j->nchunks;
}

const ember__jfr_chunk_info *ember__jfr_chunk(const ember__jfr *j, size_t i)
{
	return i < j->nchunks ? &j->chunks[i].info : NULL;
}

const ember__jfr_class *ember__jfr_class_by_name(const ember__jfr *j, size_t chunk_i, const char *name)
{
	if (chunk_i >= j->nchunks)
		return NULL;
	const chunk *ch = &j->chunks[chunk_i];
	for (uint32_t i = 0; i < ch->nclasses; i++)
		if (!strcmp(ch->classes[i].name, name))
			return &ch->classes[i];
	return NULL;
}

uint64_t ember__jfr_varint(const uint8_t **p, const uint8_t *end, int *err)
{
	rd r = {*p, end, NULL, 0};
	uint64_t v = get_varint(&r);
	if (r.err)
		*err = 1;
	*p = r.p;
	return v;
}

int ember__jfr_skip(ember__jfr *j, size_t chunk_i, const ember__jfr_field *f,
		    const ember__jfr_class *cls, const uint8_t **p, const uint8_t *end,
		    uint64_t *budget)
{
	if (chunk_i >= j->nchunks || (!f && !cls))
		return ember__error(EMBER_ERR_FORMAT, "JFR: no such chunk or type to skip");
	chunk *ch = &j->chunks[chunk_i];
	rd r = {*p, end, ch, 0};
	ctx c = {ch, NULL, budget};
	int rc = f ? decode_field(&c, &r, f, 0, NULL) : decode_type(&c, &r, cls, 0, NULL);
	*p = r.p;
	return rc;
}

int ember__jfr_constant(ember__jfr *j, size_t chunk_i, int64_t class_id, int64_t index,
			ember__jfr_value *out)
{
	memset(out, 0, sizeof(*out));
	if (chunk_i >= j->nchunks)
		return 0;
	return resolve(&j->chunks[chunk_i], class_id, index, 0, out);
}

const ember__jfr_class *ember__jfr_class_by_id(const ember__jfr *j, size_t chunk_i, int64_t id)
{
	return chunk_i < j->nchunks ? class_by_id(&j->chunks[chunk_i], id) : NULL;
}

void ember__jfr_rewind(ember__jfr *j)
{
	j->cur_chunk = 0;
	j->cur_pos = EMBER_JFR_HEADER_SIZE;
}

int ember__jfr_next_event(ember__jfr *j, ember__jfr_event *ev)
{
	ember__arena_release(&j->ev_arena);
	while (j->cur_chunk < j->nchunks) {
		chunk *ch = &j->chunks[j->cur_chunk];
		if (j->cur_pos >= ch->info.size) {
			j->cur_chunk++;
			j->cur_pos = EMBER_JFR_HEADER_SIZE;
			continue;
		}
		int64_t type = 0; /* set by event_head on success (see load_chunk) */
		const uint8_t *body = NULL, *end = NULL;
		int rc = event_head(ch, j->cur_pos, &type, &body, &end);
		if (rc)
			return rc;
		uint64_t at = j->cur_pos;
		j->cur_pos = (uint64_t)(end - ch->base);
		if (type == 0 || type == 1)
			continue;
		const ember__jfr_class *cls = class_by_id(ch, type);
		if (!cls)
			return fail(ch, ch->base + at, "an event's type is not in the metadata");
		uint64_t budget = 4 * (uint64_t)(end - body) + 256;
		ctx c = {ch, &j->ev_arena, &budget};
		rd r = {body, end, ch, 0};
		ember__jfr_value *v = ember__arena_alloc(&j->ev_arena, sizeof(*v));
		if (!v)
			return ember__error_oom("JFR event");
		if ((rc = decode_type(&c, &r, cls, 0, v)))
			return rc;
		ev->type = cls;
		ev->chunk = j->cur_chunk;
		ev->offset = ch->info.offset + at;
		ev->value = v;
		return 1;
	}
	return 0;
}

const ember__jfr_value *ember__jfr_get(const ember__jfr_value *obj, const char *field)
{
	if (!obj || obj->kind != EMBER_JFR_OBJECT || !obj->cls || !obj->u.items)
		return NULL;
	for (uint32_t i = 0; i < obj->n && i < obj->cls->nfields; i++)
		if (obj->cls->fields[i].name && !strcmp(obj->cls->fields[i].name, field))
			return &obj->u.items[i];
	return NULL;
}

int64_t ember__jfr_get_int(const ember__jfr_value *obj, const char *field)
{
	const ember__jfr_value *v = ember__jfr_get(obj, field);
	return v && v->kind == EMBER_JFR_INT ? v->u.i : 0;
}

const char *ember__jfr_get_str(const ember__jfr_value *obj, const char *field)
{
	const ember__jfr_value *v = ember__jfr_get(obj, field);
	return v && v->kind == EMBER_JFR_STRING ? v->u.s : NULL;
}

int ember__jfr_is(const ember__jfr_class *c, const char *name)
{
	return c && ((c->name && !strcmp(c->name, name)) || (c->super && !strcmp(c->super, name)));
}
