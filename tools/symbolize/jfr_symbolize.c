/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_symbolize.c - `emberprof symbolize` for JFR recordings
 * (ember__symz_jfr in symbolize.h).
 *
 * What is named: a stack frame whose jdk.types.Method is a placeholder,
 * as emberprof's JFR writer (encode/jfr.h) leaves a frame it had no name
 * for: name "0xOFFSET" (the offset in the module's file), type the
 * module's java.lang.Class, with an emberprof.NativeMapping event of the
 * chunk for that module {module = the class name, path, buildId, start,
 * end, offset}. The placeholders become locations of a profile of those
 * mappings, named by the pprof path (symbolize.c: the same files, debug
 * dirs, sysroot, debuginfod and line policy), and each frame of such a
 * method becomes the frames its address resolves to, leaf first, one per
 * inlined function, as the writer gives a symbolizing run's frames:
 * method {the placeholder's class, descriptor, modifiers; name: the
 * demangled function}, lineNumber the function's line (the JFR model has
 * no file name: `jfr print` shows "line: N", as for a symbolizing run),
 * bytecodeIndex as it was, type "C++" for a demangled C++ symbol, else
 * "Native".
 *
 * How the chunk is re-emitted: every event but the checkpoints is copied
 * byte for byte. In a checkpoint, the jdk.types.StackTrace entries that
 * have a placeholder frame are rewritten; the new Method and Symbol
 * constants (new keys, after the chunk's largest) are appended to the
 * Method and Symbol pools of the checkpoint the header points at (a pool
 * added if it has none); every other pool and entry is copied. The
 * placeholder Method constants stay (nothing refers to them), so a second
 * run finds no frame to name and writes nothing. A checkpoint whose
 * contents or delta changed gets its new size; the checkpoint deltas and
 * the header's size, constant-pool and metadata offsets follow the
 * events' new places. Chunks with nothing to name are copied as they are.
 *
 * Only chunks with compressed integers (format 2, features bit 0: ours,
 * async-profiler's, the JDK's) are rewritten; another is kept and counted
 * unnamed. Input is hostile: every read is bounded by its event, the
 * values skipped are skipped by the reader (jfr_read.h: its nesting and
 * type checks), and the work is bounded by the chunk's size. Not
 * async-signal-safe.
 */
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "encode/jfr_varint.h"
#include "encode/protobuf.h"
#include "read/jfr_read.h"
#include "util/error.h"
#include "util/hashmap.h"

/* ---- reading and writing compressed values (the reader skips the rest) ---- */

typedef struct jr {
	const uint8_t *p, *end;
	uint64_t *budget; /* values left to skip in this chunk */
	int err;
} jr;

static uint8_t jr_u8(jr *r)
{
	if (r->p >= r->end) {
		r->err = 1;
		return 0;
	}
	return *r->p++;
}

static uint64_t jr_var(jr *r)
{
	return ember__jfr_varint(&r->p, r->end, &r->err);
}

static void put_var(ember__pbuf *b, uint64_t v)
{
	ember__jfr_put_varint(b, v);
}

static void put_raw(ember__pbuf *b, const uint8_t *from, const uint8_t *to)
{
	size_t n = (size_t)(to - from);
	if (n && ember__pb_reserve(b, n) == 0) {
		memcpy(b->data + b->len, from, n);
		b->len += n;
	}
}

/* ---- the chunk's state ---- */

typedef struct jmap {
	const char *module, *path, *build_id;
	uint64_t start, end, offset;
} jmap;

typedef struct jmethod {
	int64_t key, cls, name; /* its key, its type and name fields' keys */
	const uint8_t *at, *end; /* its value's bytes */
	uint32_t ph;             /* placeholder index + 1, 0: not one */
} jmethod;

typedef struct jframe {
	int64_t method, line, type;
} jframe;

typedef struct jph {
	uint32_t method;  /* index in methods */
	uint64_t offset;  /* in the module's file */
	const jmap *map;  /* the module's first mapping */
	jframe *frames;   /* resolved, leaf first (nframes 0: unnamed) */
	uint32_t nframes;
} jph;

typedef struct jnew {
	int64_t key;
	uint32_t from;    /* methods: the placeholder copied; symbols: - */
	int64_t name;     /* methods: the name's symbol key */
	const char *text; /* symbols: the string */
} jnew;

typedef struct jchunk {
	ember__symz *z;
	ember__jfr *j;
	size_t ci;
	const uint8_t *base;
	uint64_t size, budget;
	const ember__jfr_class *c_method, *c_symbol, *c_stack, *c_frame, *c_ftype;
	int f_method, f_line, f_type; /* StackFrame's fields: method, lineNumber, type */
	const jmap *maps;
	size_t nmaps;
	jmethod *methods;
	size_t nmethods, capmethods;
	ember__u64map method_ix;  /* key -> index + 1 */
	ember__u64map referenced; /* method keys some frame has */
	int64_t max_method, max_symbol, ft_native, ft_cpp;
	jph *phs;
	size_t nphs;
	ember__u64map sym_ix;     /* hash(string) (+probe) -> index + 1 in syms */
	struct { int64_t key; const char *s; } *syms;
	size_t nsyms, capsyms;
	ember__u64map named_ix;   /* hash(class, name) (+probe) -> method index + 1 */
	jnew *new_methods, *new_symbols;
	size_t nnew_methods, nnew_symbols;
	uint64_t target_cp;       /* the checkpoint new constants go to */
	int target_done;          /* it was written */
	ember__profile *p;
	int oom;
} jchunk;

/* Skips a value of field f (or of class cls) with the reader's checks. */
static void skip_field(jchunk *c, jr *r, const ember__jfr_field *f, const ember__jfr_class *cls)
{
	if (!r->err && ember__jfr_skip(c->j, c->ci, f, cls, &r->p, r->end, r->budget) != 0)
		r->err = 1;
	if (r->err)
		r->p = r->end;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 64;
	void *nv = realloc(*v, ncap * size);
	if (!nv)
		return -1;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* ---- walking a checkpoint ---- */

static int index_symbol(jchunk *c, int64_t key, const char *s);

/* The type field's and name field's keys of a Method entry, and its end. */
static void read_method(jchunk *c, jr *r, jmethod *m)
{
	m->at = r->p;
	for (uint32_t i = 0; i < c->c_method->nfields && !r->err; i++) {
		const ember__jfr_field *f = &c->c_method->fields[i];
		if (f->cp && !f->array && !strcmp(f->name, "type"))
			m->cls = (int64_t)jr_var(r);
		else if (f->cp && !f->array && !strcmp(f->name, "name"))
			m->name = (int64_t)jr_var(r);
		else
			skip_field(c, r, f, NULL);
	}
	m->end = r->p;
}

/* One StackFrame: where its fields start (f[i]..f[i+1]) and its method,
 * lineNumber and type values. */
typedef struct fparts {
	const uint8_t *at[16];
	int64_t method;
	int imethod, iline, itype;
} fparts;

static void read_frame(jchunk *c, jr *r, fparts *fp)
{
	const ember__jfr_class *fc = c->c_frame;
	fp->method = 0;
	for (uint32_t i = 0; i < fc->nfields && !r->err; i++) {
		fp->at[i] = r->p;
		const ember__jfr_field *f = &fc->fields[i];
		if ((int)i == fp->imethod)
			fp->method = (int64_t)jr_var(r);
		else
			skip_field(c, r, f, NULL);
	}
	fp->at[fc->nfields] = r->p;
}

static const jph *frame_ph(const jchunk *c, int64_t method)
{
	uint64_t *v = ember__u64map_get(&c->method_ix, (uint64_t)method);
	if (!v)
		return NULL;
	const jmethod *m = &c->methods[*v - 1];
	return m->ph && c->phs[m->ph - 1].nframes ? &c->phs[m->ph - 1] : NULL;
}

/* A StackTrace entry: indexes its methods (out NULL) or writes it with
 * its named placeholders expanded. *rewrite: it has one. */
static void stack_entry(jchunk *c, jr *r, ember__pbuf *out, int *rewrite)
{
	const ember__jfr_class *sc = c->c_stack;
	fparts fp = {.imethod = c->f_method, .iline = c->f_line, .itype = c->f_type};
	*rewrite = 0;
	for (uint32_t i = 0; i < sc->nfields && !r->err; i++) {
		const ember__jfr_field *f = &sc->fields[i];
		const uint8_t *at = r->p;
		if (!(f->array && !f->cp && f->type == c->c_frame)) {
			skip_field(c, r, f, NULL);
			if (out)
				put_raw(out, at, r->p);
			continue;
		}
		uint64_t n = jr_var(r);
		if (n > (uint64_t)(r->end - r->p)) {
			r->err = 1;
			break;
		}
		const uint8_t *first = r->p;
		uint64_t nout = 0;
		for (uint64_t k = 0; k < n && !r->err; k++) { /* the count, first */
			read_frame(c, r, &fp);
			const jph *ph = frame_ph(c, fp.method);
			nout += ph ? ph->nframes : 1;
			if (ph)
				*rewrite = 1;
			int ins;
			if (!out && !ember__u64map_put(&c->referenced, (uint64_t)fp.method, &ins))
				c->oom = 1;
		}
		if (!out || r->err)
			continue;
		put_var(out, nout);
		r->p = first;
		for (uint64_t k = 0; k < n && !r->err; k++) {
			read_frame(c, r, &fp);
			const jph *ph = frame_ph(c, fp.method);
			if (!ph) {
				put_raw(out, fp.at[0], r->p);
				continue;
			}
			for (uint32_t q = 0; q < ph->nframes; q++)
				for (uint32_t fi = 0; fi < c->c_frame->nfields; fi++) {
					const jframe *jf = &ph->frames[q];
					if ((int)fi == fp.imethod)
						put_var(out, (uint64_t)jf->method);
					else if ((int)fi == fp.iline)
						put_var(out, (uint64_t)(uint32_t)jf->line);
					else if ((int)fi == fp.itype && jf->type)
						put_var(out, (uint64_t)jf->type);
					else
						put_raw(out, fp.at[fi], fp.at[fi + 1]);
				}
		}
	}
}

/* A new Method constant: the placeholder's bytes with another name. */
static void put_new_method(jchunk *c, ember__pbuf *out, const jnew *n)
{
	const jmethod *m = &c->methods[n->from];
	put_var(out, (uint64_t)n->key);
	jr r = {m->at, m->end, &c->budget, 0};
	for (uint32_t i = 0; i < c->c_method->nfields && !r.err; i++) {
		const ember__jfr_field *f = &c->c_method->fields[i];
		const uint8_t *at = r.p;
		skip_field(c, &r, f, NULL);
		if (f->cp && !f->array && !strcmp(f->name, "name"))
			put_var(out, (uint64_t)n->name);
		else
			put_raw(out, at, r.p);
	}
}

static void put_new_symbol(ember__pbuf *out, const jnew *n)
{
	size_t len = strlen(n->text);
	put_var(out, (uint64_t)n->key);
	if (!len) {
		put_var(out, 1);
		return;
	}
	put_var(out, 3);
	put_var(out, len);
	put_raw(out, (const uint8_t *)n->text, (const uint8_t *)n->text + len);
}

static void put_new_pool(jchunk *c, ember__pbuf *out, int methods)
{
	size_t n = methods ? c->nnew_methods : c->nnew_symbols;
	put_var(out, (uint64_t)(methods ? c->c_method->id : c->c_symbol->id));
	put_var(out, n);
	for (size_t i = 0; i < n; i++)
		methods ? put_new_method(c, out, &c->new_methods[i])
			: put_new_symbol(out, &c->new_symbols[i]);
}

/*
 * One checkpoint's pools (body: after the size and type). out NULL: index
 * its Method, Symbol, FrameType and StackTrace constants. Else write the
 * event's body from start on, with delta, and the new constants when it
 * is the target; *same: nothing but maybe the delta differs.
 */
static int walk_checkpoint(jchunk *c, const uint8_t *body, const uint8_t *end, uint64_t pos,
			   ember__pbuf *out, uint64_t delta, int *same)
{
	jr r = {body, end, &c->budget, 0};
	const uint8_t *h = r.p;
	jr_var(&r); /* start */
	jr_var(&r); /* duration */
	const uint8_t *d = r.p;
	jr_var(&r); /* delta */
	const uint8_t *flags = r.p;
	jr_u8(&r);
	const uint8_t *np = r.p;
	uint64_t npools = jr_var(&r);
	if (r.err || npools > (uint64_t)(end - r.p))
		return -1;
	int target = out && pos == c->target_cp;
	c->target_done |= target;
	int has_m = 0, has_s = 0;
	if (out) {
		put_raw(out, h, d);
		put_var(out, delta);
		put_raw(out, flags, np);
		put_var(out, npools); /* patched below if pools are added */
	}
	size_t npools_at = out ? out->len : 0;
	*same = 1;
	for (uint64_t i = 0; i < npools && !r.err; i++) {
		int64_t id = (int64_t)jr_var(&r);
		uint64_t n = jr_var(&r);
		const ember__jfr_class *cls = ember__jfr_class_by_id(c->j, c->ci, id);
		if (!cls || n > (uint64_t)(end - r.p))
			return -1;
		int is_m = cls == c->c_method, is_s = cls == c->c_symbol;
		/* the new constants go to the first pool of their type */
		size_t add = !target       ? 0
			     : is_m && !has_m ? c->nnew_methods
			     : is_s && !has_s ? c->nnew_symbols
					      : 0;
		has_m |= is_m;
		has_s |= is_s;
		if (out) {
			put_var(out, (uint64_t)id);
			put_var(out, n + add);
			*same &= !add;
		}
		for (uint64_t k = 0; k < n && !r.err; k++) {
			const uint8_t *e = r.p;
			int64_t key = (int64_t)jr_var(&r);
			if (cls == c->c_stack) {
				int rw;
				size_t mark = out ? out->len : 0;
				if (out)
					put_var(out, (uint64_t)key);
				stack_entry(c, &r, out, &rw);
				if (out && !rw) { /* as it was, byte for byte */
					out->len = mark;
					put_raw(out, e, r.p);
				}
				*same &= !rw;
			} else if (is_m && !out) {
				jmethod m = {.key = key};
				read_method(c, &r, &m);
				int ins;
				uint64_t *v = ember__u64map_put(&c->method_ix, (uint64_t)key, &ins);
				if (!v || grow((void **)&c->methods, &c->capmethods, c->nmethods,
					       sizeof(*c->methods))) {
					c->oom = 1;
					return -1;
				}
				if (ins) { /* the first definition wins, as readers do */
					c->methods[c->nmethods++] = m;
					*v = c->nmethods;
				}
				c->max_method = key > c->max_method ? key : c->max_method;
			} else {
				skip_field(c, &r, NULL, cls);
				if (is_s && key > c->max_symbol)
					c->max_symbol = key;
				if (is_s && !out && !r.err) {
					ember__jfr_value v;
					const char *str;
					if (ember__jfr_constant(c->j, c->ci, id, key, &v) == 0 &&
					    (str = ember__jfr_get_str(&v, "string")) && index_symbol(c, key, str)) {
						c->oom = 1;
						return -1;
					}
				}
				if (cls == c->c_ftype && !out) {
					ember__jfr_value v;
					if (ember__jfr_constant(c->j, c->ci, id, key, &v) == 0) {
						const char *s = ember__jfr_get_str(&v, "description");
						if (s && !strcmp(s, "Native"))
							c->ft_native = key;
						if (s && !strcmp(s, "C++"))
							c->ft_cpp = key;
					}
				}
			}
			if (out && cls != c->c_stack)
				put_raw(out, e, r.p);
		}
		if (out && add)
			for (size_t q = 0; q < add; q++)
				is_m ? put_new_method(c, out, &c->new_methods[q])
				     : put_new_symbol(out, &c->new_symbols[q]);
	}
	if (r.err || r.p != end)
		return -1;
	if (target && ((!has_m && c->nnew_methods) || (!has_s && c->nnew_symbols))) {
		/* pools added: the count is rewritten (it precedes the pools) */
		ember__pbuf rest = EMBER_PBUF_INIT;
		put_raw(&rest, out->data + npools_at, out->data + out->len);
		out->len = npools_at - ember__pb_varint_size(npools);
		uint64_t extra = (!has_m && c->nnew_methods) + (!has_s && c->nnew_symbols);
		put_var(out, npools + extra);
		put_raw(out, rest.data, rest.data + rest.len);
		if (rest.failed)
			out->failed = 1;
		ember__pb_free(&rest);
		if (!has_m && c->nnew_methods)
			put_new_pool(c, out, 1);
		if (!has_s && c->nnew_symbols)
			put_new_pool(c, out, 0);
		*same = 0;
	}
	return 0;
}

/* ---- naming the placeholders ---- */

static const char *str_or_symbol(const ember__jfr_value *obj, const char *field)
{
	const ember__jfr_value *v = ember__jfr_get(obj, field);
	if (v && v->kind == EMBER_JFR_STRING)
		return v->u.s;
	if (v && v->kind == EMBER_JFR_OBJECT)
		return ember__jfr_get_str(v, "string");
	return NULL;
}

/* "0x" and hex digits: the offset; else -1. */
static int parse_offset(const char *s, uint64_t *off)
{
	if (!s || strncmp(s, "0x", 2) || !s[2] || strlen(s + 2) > 16 ||
	    strspn(s + 2, "0123456789abcdefABCDEF") != strlen(s + 2))
		return -1;
	*off = strtoull(s + 2, NULL, 16);
	return 0;
}

/* The chunk's mapping for module `cls` holding file offset off (else its
 * first); NULL when there is none, or two files have that name. */
static const jmap *map_for(const jchunk *c, const char *cls, uint64_t off)
{
	const jmap *first = NULL, *hit = NULL;
	for (size_t i = 0; i < c->nmaps; i++) {
		const jmap *m = &c->maps[i];
		if (strcmp(m->module, cls))
			continue;
		if (first && (strcmp(first->path, m->path) || strcmp(first->build_id, m->build_id)))
			return NULL; /* ambiguous: no name rather than a wrong one */
		if (!first)
			first = m;
		if (!hit && off >= m->offset && off - m->offset < m->end - m->start)
			hit = m;
	}
	return hit ? hit : first;
}

static uint64_t str_hash(const char *s, uint64_t seed)
{
	return ember__hash_bytes(s, strlen(s), seed);
}

/* Indexes symbol `key` = s (the first of a string wins). 0 or -1 (OOM). */
static int index_symbol(jchunk *c, int64_t key, const char *s)
{
	if (grow((void **)&c->syms, &c->capsyms, c->nsyms, sizeof(*c->syms)))
		return -1;
	for (uint64_t h = str_hash(s, 3);; h++) {
		int ins;
		uint64_t *v = ember__u64map_put(&c->sym_ix, h, &ins);
		if (!v)
			return -1;
		if (!ins) {
			if (strcmp(c->syms[*v - 1].s, s))
				continue;
			return 0;
		}
		c->syms[c->nsyms].key = key;
		c->syms[c->nsyms++].s = s;
		*v = c->nsyms;
		return 0;
	}
}

/* The symbol key of s (borrowed: it must outlive c), a new constant if
 * the chunk has none; 0 on OOM. */
static int64_t symbol_key(jchunk *c, const char *s)
{
	for (uint64_t h = str_hash(s, 3);; h++) {
		uint64_t *v = ember__u64map_get(&c->sym_ix, h);
		if (!v)
			break;
		if (!strcmp(c->syms[*v - 1].s, s))
			return c->syms[*v - 1].key;
	}
	jnew *nv = realloc(c->new_symbols, (c->nnew_symbols + 1) * sizeof(*nv));
	if (!nv)
		return 0;
	c->new_symbols = nv;
	int64_t key = c->max_symbol + 1;
	if (index_symbol(c, key, s))
		return 0;
	c->max_symbol = key;
	c->new_symbols[c->nnew_symbols++] = (jnew){.key = key, .text = s};
	return key;
}

static uint64_t pair_hash(int64_t cls, int64_t name)
{
	return ember__hash64((uint64_t)cls * 0x9e3779b97f4a7c15ULL ^ ember__hash64((uint64_t)name));
}

/* A method's (class, name) keys: value v of named_ix (see method_key). */
static void method_of(const jchunk *c, uint64_t v, int64_t *cls, int64_t *name, int64_t *key)
{
	if (v >> 32) {
		const jnew *n = &c->new_methods[(v & 0xffffffffu) - 1];
		*cls = c->methods[n->from].cls;
		*name = n->name;
		*key = n->key;
	} else {
		const jmethod *m = &c->methods[v - 1];
		*cls = m->cls;
		*name = m->name;
		*key = m->key;
	}
}

/*
 * The key of the method (placeholder from's class, name): an existing
 * one, else a new constant copied from it. named_ix values: a method's
 * index + 1, or 1 << 32 | (new method's index + 1). 0 on OOM.
 */
static int64_t method_key(jchunk *c, uint32_t from, int64_t name)
{
	int64_t cls = c->methods[from].cls;
	jnew *nv = realloc(c->new_methods, (c->nnew_methods + 1) * sizeof(*nv));
	if (!nv)
		return 0;
	c->new_methods = nv;
	for (uint64_t h = pair_hash(cls, name);; h++) {
		int ins;
		uint64_t *v = ember__u64map_put(&c->named_ix, h, &ins);
		if (!v)
			return 0;
		if (!ins) {
			int64_t oc, on, ok;
			method_of(c, *v, &oc, &on, &ok);
			if (oc != cls || on != name)
				continue;
			return ok;
		}
		c->new_methods[c->nnew_methods++] =
			(jnew){.key = ++c->max_method, .from = from, .name = name};
		*v = (uint64_t)1 << 32 | c->nnew_methods;
		return c->max_method;
	}
}

static int is_cpp(const ember__function *f)
{
	return f->system_name && f->system_name[0] == '_' && f->system_name[1] == 'Z' &&
	       strcmp(f->system_name, f->name ? f->name : "") != 0;
}

/* The placeholders some frame has, as a profile the pprof path names. */
static int find_placeholders(jchunk *c)
{
	ember__symz_stats *st = &c->z->st;
	c->phs = calloc(c->nmethods + 1, sizeof(*c->phs));
	if (!c->phs)
		return ember__error_oom("JFR placeholders");
	for (size_t i = 0; i < c->nmethods; i++) {
		jmethod *m = &c->methods[i];
		if (!ember__u64map_get(&c->referenced, (uint64_t)m->key))
			continue;
		ember__jfr_value v;
		int rc = ember__jfr_constant(c->j, c->ci, c->c_method->id, m->key, &v);
		if (rc)
			return rc;
		const char *name = str_or_symbol(&v, "name");
		const ember__jfr_value *cls = ember__jfr_get(&v, "type");
		const char *cname = cls && cls->kind == EMBER_JFR_OBJECT ? str_or_symbol(cls, "name")
									 : NULL;
		uint64_t off;
		if (parse_offset(name, &off) != 0) {
			st->kept++;
			continue;
		}
		const jmap *map = cname ? map_for(c, cname, off) : NULL;
		if (!map) {
			st->unnamed++;
			continue;
		}
		c->phs[c->nphs] = (jph){.method = (uint32_t)i, .offset = off, .map = map};
		m->ph = (uint32_t)++c->nphs;
	}
	return 0;
}

/* Names the placeholders through the pprof path; new constants made. */
static int name_placeholders(jchunk *c)
{
	if (!c->nphs)
		return 0;
	if (!(c->p = ember__profile_new()))
		return ember__error_oom("JFR placeholders");
	for (size_t i = 0; i < c->nmaps; i++) {
		const jmap *m = &c->maps[i];
		ember__mapping mp = {.start = m->start, .limit = m->end, .offset = m->offset,
				     .file = ember__profile_strdup(c->p, m->path),
				     .build_id = ember__profile_strdup(c->p, m->build_id)};
		if (!mp.file || !mp.build_id || !ember__profile_add_mapping(c->p, &mp))
			return ember__error_oom("JFR placeholders");
	}
	for (size_t i = 0; i < c->nphs; i++) {
		const jph *ph = &c->phs[i];
		ember__location l = {.address = ph->map->start + ph->offset - ph->map->offset,
				     .mapping = (uint32_t)(ph->map - c->maps) + 1};
		if (!ember__profile_add_location(c->p, &l))
			return ember__error_oom("JFR placeholders");
	}
	int changed;
	int rc = ember__symz_profile(c->z, c->p, &changed);
	if (rc)
		return rc;
	for (size_t i = 0; i < c->nphs; i++) {
		jph *ph = &c->phs[i];
		const ember__location *l = &c->p->locations[i];
		if (!l->nlines)
			continue;
		if (!(ph->frames = calloc(l->nlines, sizeof(*ph->frames))))
			return ember__error_oom("JFR frames");
		for (uint32_t k = 0; k < l->nlines; k++) {
			const ember__function *f = &c->p->functions[l->lines[k].function - 1];
			int64_t sym = symbol_key(c, f->name ? f->name : "");
			int64_t key = sym ? method_key(c, ph->method, sym) : 0;
			if (!key)
				return ember__error_oom("JFR constants");
			int64_t line = l->lines[k].line;
			ph->frames[k] = (jframe){key, line > 0 && line <= INT32_MAX ? line : 0,
						 is_cpp(f) ? c->ft_cpp : c->ft_native};
		}
		ph->nframes = l->nlines;
	}
	return 0;
}

/* ---- the chunk ---- */

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void set_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* Calls walk_checkpoint on every checkpoint (out NULL: indexing), or
 * writes the chunk to out with the named frames. 0, -1 (malformed), or
 * an ember_err. */
static int walk_chunk(jchunk *c, ember__pbuf *out)
{
	size_t start = out ? out->len : 0;
	ember__u64map newpos = EMBER_U64MAP_INIT; /* metadata and checkpoints: old -> new */
	int rc = 0;
	if (out)
		put_raw(out, c->base, c->base + EMBER_JFR_HEADER_SIZE);
	for (uint64_t pos = EMBER_JFR_HEADER_SIZE; pos < c->size && !rc;) {
		jr r = {c->base + pos, c->base + c->size, &c->budget, 0};
		uint64_t size = jr_var(&r), type = jr_var(&r);
		if (r.err || size < 1 || size > c->size - pos) {
			rc = -1;
			break;
		}
		const uint8_t *body = r.p, *end = c->base + pos + size;
		uint64_t np = out ? out->len - start : pos;
		int ins;
		uint64_t *v = type <= 1 ? ember__u64map_put(&newpos, pos + 1, &ins) : NULL;
		if (type <= 1 && !v) {
			rc = ember__error_oom("JFR chunk");
			break;
		}
		if (v)
			*v = np + 1;
		if (type == 1) {
			jr d = {body, end, &c->budget, 0};
			jr_var(&d);
			jr_var(&d);
			uint64_t delta = jr_var(&d), nd = 0;
			if (delta) {
				uint64_t *prev = ember__u64map_get(&newpos, pos + delta + 1);
				if (!prev) {
					rc = -1; /* not an earlier checkpoint */
					break;
				}
				nd = *prev - 1 - np;
			}
			ember__pbuf ev = EMBER_PBUF_INIT;
			int same = 1;
			if (out)
				put_var(&ev, 1);
			if (walk_checkpoint(c, body, end, pos, out ? &ev : NULL, nd, &same) != 0)
				rc = c->oom ? ember__error_oom("JFR constants") : -1;
			if (out && !rc) {
				if (same && nd == delta) {
					put_raw(out, c->base + pos, end);
				} else {
					size_t n = ev.len, s = 1;
					while (ember__pb_varint_size(n + s) > s)
						s++;
					put_var(out, n + s);
					put_raw(out, ev.data, ev.data + ev.len);
				}
				if (ev.failed)
					out->failed = 1;
			}
			ember__pb_free(&ev);
		} else if (out) {
			put_raw(out, c->base + pos, end);
		}
		pos += size;
	}
	if (!rc && out) {
		uint8_t *h = out->data + start;
		uint64_t cp = be64(c->base + 16), meta = be64(c->base + 24);
		uint64_t *ncp = ember__u64map_get(&newpos, cp + 1);
		uint64_t *nmeta = ember__u64map_get(&newpos, meta + 1);
		if (out->failed || !ncp || !nmeta) {
			rc = out->failed ? ember__error_oom("JFR chunk") : -1;
		} else {
			set_be64(h + 8, out->len - start);
			set_be64(h + 16, *ncp - 1);
			set_be64(h + 24, *nmeta - 1);
		}
	}
	ember__u64map_free(&newpos);
	return rc;
}

static void chunk_free(jchunk *c)
{
	free(c->methods);
	ember__u64map_free(&c->method_ix);
	ember__u64map_free(&c->referenced);
	for (size_t i = 0; c->phs && i < c->nphs; i++)
		free(c->phs[i].frames);
	free(c->phs);
	ember__u64map_free(&c->sym_ix);
	free(c->syms);
	ember__u64map_free(&c->named_ix);
	free(c->new_methods);
	free(c->new_symbols);
	ember__profile_free(c->p);
}

/* Indexes the symbols and the methods' (class, name) pairs. */
static int index_names(jchunk *c)
{
	for (size_t i = 0; i < c->nmethods; i++) {
		const jmethod *m = &c->methods[i];
		for (uint64_t h = pair_hash(m->cls, m->name);; h++) {
			int ins;
			uint64_t *v = ember__u64map_put(&c->named_ix, h, &ins);
			if (!v)
				return ember__error_oom("JFR methods");
			if (ins) {
				*v = i + 1;
				break;
			}
			int64_t oc, on, ok;
			method_of(c, *v, &oc, &on, &ok);
			if (oc == m->cls && on == m->name)
				break;
		}
	}
	return 0;
}

/*
 * Names chunk ci's placeholder frames into out (the chunk's bytes as they
 * were when it has nothing to name). *changed: it changed. 0 or an
 * ember_err.
 */
static int symbolize_chunk(ember__symz *z, ember__jfr *j, size_t ci, const uint8_t *data,
			   const jmap *maps, size_t nmaps, ember__pbuf *out, int *changed)
{
	const ember__jfr_chunk_info *info = ember__jfr_chunk(j, ci);
	jchunk c = {.z = z, .j = j, .ci = ci, .base = data + info->offset, .maps = maps,
		    .nmaps = nmaps, .size = info->size, .budget = 8 * info->size + 4096};
	c.c_method = ember__jfr_class_by_name(j, ci, "jdk.types.Method");
	c.c_symbol = ember__jfr_class_by_name(j, ci, "jdk.types.Symbol");
	c.c_stack = ember__jfr_class_by_name(j, ci, "jdk.types.StackTrace");
	c.c_frame = ember__jfr_class_by_name(j, ci, "jdk.types.StackFrame");
	c.c_ftype = ember__jfr_class_by_name(j, ci, "jdk.types.FrameType");
	c.target_cp = be64(c.base + 16);
	c.f_method = c.f_line = c.f_type = -1;
	for (uint32_t i = 0; c.c_frame && i < c.c_frame->nfields; i++) {
		const ember__jfr_field *f = &c.c_frame->fields[i];
		int prim = f->type ? f->type->prim : 0;
		if (!strcmp(f->name, "method") && f->cp && !f->array)
			c.f_method = (int)i;
		else if (!strcmp(f->name, "lineNumber") && !f->cp && !f->array &&
			 (prim == EMBER_JFR_P_INT || prim == EMBER_JFR_P_LONG))
			c.f_line = (int)i;
		else if (!strcmp(f->name, "type") && f->cp && !f->array)
			c.f_type = (int)i;
	}
	int rc = 0;
	*changed = 0;
	int usable = nmaps && c.c_method && c.c_symbol && c.c_stack && c.c_frame &&
		     c.c_frame->nfields < 16 && c.f_method >= 0 && c.f_line >= 0 && c.c_symbol->nfields == 1 &&
		     c.c_symbol->fields[0].type && c.c_symbol->fields[0].type->prim == EMBER_JFR_P_STRING;
	if (usable && !(info->major == 2 && (info->features & 1))) {
		/* fixed-width integers: frames left as they are (not written by us) */
		usable = 0;
		z->st.unnamed++;
	}
	if (usable) {
		rc = walk_chunk(&c, NULL);
		if (!rc)
			rc = find_placeholders(&c);
		if (!rc)
			rc = index_names(&c);
		if (!rc)
			rc = name_placeholders(&c);
	}
	int named = 0;
	for (size_t i = 0; i < c.nphs; i++)
		named |= c.phs[i].nframes > 0;
	if (!rc && named) {
		size_t at = out->len;
		c.budget = 8 * info->size + 4096;
		rc = walk_chunk(&c, out);
		if (!rc && !c.target_done)
			rc = -1; /* the header's constant pool offset is no checkpoint */
		if (!rc)
			*changed = out->len - at != info->size ||
				   memcmp(out->data + at, c.base, info->size) != 0;
		if (rc)
			out->len = at;
	} else if (!rc) {
		put_raw(out, c.base, c.base + info->size);
	}
	if (rc == -1)
		rc = ember__error(EMBER_ERR_FORMAT, "JFR chunk at byte %" PRIu64
				  ": a checkpoint this rewriter cannot follow", info->offset);
	chunk_free(&c);
	return rc;
}

/* The emberprof.NativeMapping events, by chunk (strings copied). */
static int read_maps(ember__jfr *j, jmap ***by_chunk, size_t **counts)
{
	size_t nch = ember__jfr_nchunks(j);
	*by_chunk = calloc(nch + 1, sizeof(**by_chunk));
	*counts = calloc(nch + 1, sizeof(**counts));
	if (!*by_chunk || !*counts)
		return ember__error_oom("JFR mappings");
	ember__jfr_event ev;
	int rc;
	while ((rc = ember__jfr_next_event(j, &ev)) == 1) {
		if (!ember__jfr_is(ev.type, "emberprof.NativeMapping"))
			continue;
		const char *mod = ember__jfr_get_str(ev.value, "module");
		const char *path = ember__jfr_get_str(ev.value, "path");
		const char *bid = ember__jfr_get_str(ev.value, "buildId");
		if (!mod || !path || path[0] != '/')
			continue;
		size_t n = (*counts)[ev.chunk];
		jmap *nv = realloc((*by_chunk)[ev.chunk], (n + 1) * sizeof(*nv));
		if (!nv)
			return ember__error_oom("JFR mappings");
		(*by_chunk)[ev.chunk] = nv;
		jmap *m = &nv[n];
		m->module = strdup(mod);
		m->path = strdup(path);
		m->build_id = strdup(bid ? bid : "");
		m->start = (uint64_t)ember__jfr_get_int(ev.value, "start");
		m->end = (uint64_t)ember__jfr_get_int(ev.value, "end");
		m->offset = (uint64_t)ember__jfr_get_int(ev.value, "offset");
		(*counts)[ev.chunk] = n + 1;
		if (!m->module || !m->path || !m->build_id)
			return ember__error_oom("JFR mappings");
		if (m->end < m->start)
			m->end = m->start;
	}
	ember__jfr_rewind(j);
	return rc;
}

int ember__symz_jfr(ember__symz *z, const uint8_t *data, size_t len, uint8_t **out,
		    size_t *out_len, int *changed)
{
	*out = NULL;
	*out_len = 0;
	*changed = 0;
	ember__jfr *j = NULL;
	int rc = ember__jfr_open(data, len, &j);
	if (rc)
		return rc;
	size_t nch = ember__jfr_nchunks(j);
	jmap **maps = NULL;
	size_t *nmaps = NULL;
	ember__pbuf b = EMBER_PBUF_INIT;
	rc = read_maps(j, &maps, &nmaps);
	uint64_t end = 0;
	for (size_t i = 0; !rc && i < nch; i++) {
		const ember__jfr_chunk_info *info = ember__jfr_chunk(j, i);
		if (info->offset > end) /* bytes between chunks, kept */
			put_raw(&b, data + end, data + info->offset);
		int ch = 0;
		rc = symbolize_chunk(z, j, i, data, maps[i], nmaps[i], &b, &ch);
		*changed |= ch;
		end = info->offset + info->size;
	}
	if (!rc && end < len)
		put_raw(&b, data + end, data + len);
	if (!rc && b.failed)
		rc = ember__error_oom("JFR recording");
	for (size_t i = 0; maps && i < nch; i++) {
		for (size_t k = 0; k < nmaps[i]; k++) {
			free((char *)maps[i][k].module);
			free((char *)maps[i][k].path);
			free((char *)maps[i][k].build_id);
		}
		free(maps[i]);
	}
	free(maps);
	free(nmaps);
	ember__jfr_free(j);
	if (!rc && *changed) {
		*out = b.data;
		*out_len = b.len;
		b.data = NULL;
	} else {
		*changed = 0;
	}
	ember__pb_free(&b);
	return rc;
}
