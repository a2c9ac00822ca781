/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_profile.c - a JFR recording as an in-memory profile (jfr_profile.h).
 *
 * One pass over the events with the generic reader (jfr_read.c). Modules,
 * functions and locations are interned through 64-bit hashes of what
 * identifies them; a hit is compared with the entry it names, and a
 * collision probes the next key, so distinct entries never merge.
 */
#include "read/jfr_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "read/jfr_read.h"
#include "util/error.h"
#include "util/hashmap.h"

#define MAX_FILE ((size_t)1 << 30)
#define MAX_PROBES 64

enum { K_CPU, K_WALL, K_ALLOC, K_N };
static const char *const kind_event[K_N] = {"jdk.ExecutionSample", "profiler.WallClockSample",
					    "profiler.Malloc"};
static const char *const kind_type[K_N] = {"cpu", "wall", "alloc_space"};
static const char *const kind_unit[K_N] = {"count", "count", "bytes"};

typedef struct conv {
	ember__profile *p;
	int value_of[K_N]; /* value index of each kind, -1 until seen */
	ember__u64map mappings, functions, locations; /* key -> 1-based index */
	uint32_t *fmod;    /* function index - 1 -> its module's mapping index */
	size_t cap_fmod;
	uint32_t *stack;   /* the sample being built */
	size_t cap_stack;
} conv;

int ember__jfr_magic(const uint8_t *data, size_t len)
{
	return len >= 4 && memcmp(data, "FLR\0", 4) == 0;
}

/* A string field that may be a plain string or a symbol ({string}). */
static const char *str_or_symbol(const ember__jfr_value *obj, const char *field)
{
	const ember__jfr_value *v = ember__jfr_get(obj, field);
	if (!v)
		return "";
	if (v->kind == EMBER_JFR_STRING)
		return v->u.s ? v->u.s : "";
	if (v->kind == EMBER_JFR_OBJECT) {
		const char *s = ember__jfr_get_str(v, "string");
		return s ? s : "";
	}
	return "";
}

static int is_native(const ember__jfr_value *frame)
{
	const ember__jfr_value *t = ember__jfr_get(frame, "type");
	const char *d = t && t->kind == EMBER_JFR_OBJECT ? ember__jfr_get_str(t, "description")
		      : t && t->kind == EMBER_JFR_STRING ? t->u.s
							 : NULL;
	return d && (!strcmp(d, "Native") || !strcmp(d, "C++") || !strcmp(d, "Kernel"));
}

/*
 * The index that `key` names in m if same(c, index, a, b) holds for it;
 * else the first free key after it gets add(c, a, b), whose result (0 on
 * out-of-memory) is returned.
 */
static uint32_t intern(conv *c, ember__u64map *m, uint64_t key,
		       int (*same)(const conv *, uint32_t, const void *, const void *),
		       uint32_t (*add)(conv *, const void *, const void *), const void *a,
		       const void *b)
{
	for (int probe = 0; probe < MAX_PROBES; probe++, key = ember__hash64(key + 1)) {
		int inserted = 0;
		uint64_t *slot = ember__u64map_put(m, key, &inserted);
		if (!slot)
			return 0;
		if (!inserted) {
			if (same(c, (uint32_t)*slot, a, b))
				return (uint32_t)*slot;
			continue;
		}
		uint32_t idx = add(c, a, b);
		*slot = idx; /* 0 (out of memory) is never a valid index: the next lookup re-adds */
		return idx;
	}
	return 0;
}

static int same_mapping(const conv *c, uint32_t i, const void *file, const void *unused)
{
	(void)unused;
	return i && i <= c->p->nmappings && !strcmp(c->p->mappings[i - 1].file, file);
}

static uint32_t add_mapping(conv *c, const void *file, const void *unused)
{
	(void)unused;
	ember__mapping m = {0};
	m.file = ember__profile_strdup(c->p, file);
	m.build_id = "";
	m.has_functions = 1;
	return m.file ? ember__profile_add_mapping(c->p, &m) : 0;
}

static int same_function(const conv *c, uint32_t i, const void *name, const void *mod)
{
	return i && i <= c->p->nfunctions && c->fmod[i - 1] == *(const uint32_t *)mod &&
	       !strcmp(c->p->functions[i - 1].name, name);
}

static uint32_t add_function(conv *c, const void *name, const void *mod)
{
	if (c->p->nfunctions == c->cap_fmod) {
		size_t n = c->cap_fmod ? c->cap_fmod * 2 : 256;
		uint32_t *f = realloc(c->fmod, n * sizeof(*f));
		if (!f)
			return 0;
		c->fmod = f;
		c->cap_fmod = n;
	}
	ember__function f = {0};
	f.name = f.system_name = ember__profile_strdup(c->p, name);
	f.filename = "";
	uint32_t idx = f.name ? ember__profile_add_function(c->p, &f) : 0;
	if (idx)
		c->fmod[idx - 1] = *(const uint32_t *)mod;
	return idx;
}

typedef struct loc_key {
	uint32_t function, mapping;
	int64_t line;
} loc_key;

static int same_location(const conv *c, uint32_t i, const void *key, const void *unused)
{
	(void)unused;
	const loc_key *k = key;
	if (!i || i > c->p->nlocations)
		return 0;
	const ember__location *l = &c->p->locations[i - 1];
	return l->mapping == k->mapping && l->nlines == 1 && l->lines[0].function == k->function &&
	       l->lines[0].line == k->line;
}

static uint32_t add_location(conv *c, const void *key, const void *unused)
{
	(void)unused;
	const loc_key *k = key;
	ember__line *line = ember__arena_alloc(&c->p->arena, sizeof(*line));
	if (!line)
		return 0;
	line->function = k->function;
	line->line = k->line;
	ember__location l = {0};
	l.mapping = k->mapping;
	l.nlines = 1;
	l.lines = line;
	return ember__profile_add_location(c->p, &l);
}

static uint64_t str_hash(const char *s, uint64_t seed)
{
	return ember__hash_bytes(s, strlen(s), seed);
}

/* The location of one stack frame; 0 on out-of-memory. */
static uint32_t frame_location(conv *c, const ember__jfr_value *frame)
{
	const ember__jfr_value *method = ember__jfr_get(frame, "method");
	const char *name = method ? str_or_symbol(method, "name") : "";
	const ember__jfr_value *cls = method ? ember__jfr_get(method, "type") : NULL;
	const char *cname = cls && cls->kind == EMBER_JFR_OBJECT ? str_or_symbol(cls, "name") : "";
	char buf[1024];
	const char *module = "";
	if (is_native(frame)) {
		module = cname;
	} else if (*cname) {
		/* Java: Class.method, with the class name's '/' as '.' */
		snprintf(buf, sizeof(buf), "%s.%s", cname, name);
		for (char *q = buf; *q; q++)
			if (*q == '/')
				*q = '.';
		name = buf;
	}
	if (!*name)
		name = "[unknown]";
	uint32_t map = 0;
	if (*module && !(map = intern(c, &c->mappings, str_hash(module, 1), same_mapping,
				      add_mapping, module, NULL)))
		return 0;
	uint32_t fn = intern(c, &c->functions, str_hash(name, map), same_function, add_function,
			     name, &map);
	if (!fn)
		return 0;
	loc_key k = {fn, map, ember__jfr_get_int(frame, "lineNumber")};
	if (k.line < 0)
		k.line = 0;
	uint64_t h = ember__hash64(((uint64_t)fn << 32 | map) ^ ember__hash64((uint64_t)k.line));
	return intern(c, &c->locations, h, same_location, add_location, &k, NULL);
}

static int kind_of(const ember__jfr_class *type)
{
	for (int k = 0; k < K_N; k++)
		if (ember__jfr_is(type, kind_event[k]))
			return k;
	return -1;
}

/* Adds the event's sample. 0 or EMBER_ERR_NOMEM. */
static int add_event(conv *c, int kind, const ember__jfr_value *ev)
{
	int64_t v = 1;
	const ember__jfr_value *cnt = kind == K_WALL ? ember__jfr_get(ev, "samples") : NULL;
	if (cnt && cnt->kind == EMBER_JFR_INT)
		v = cnt->u.i; /* 0: its time went to the thread's next event (jfr.h) */
	else if (kind == K_ALLOC)
		v = ember__jfr_get_int(ev, "size");
	if (v <= 0)
		return 0;
	if (c->value_of[kind] < 0) {
		uint32_t i = c->p->nvalues++;
		c->p->sample_type[i].type = ember__profile_strdup(c->p, kind_type[kind]);
		c->p->sample_type[i].unit = ember__profile_strdup(c->p, kind_unit[kind]);
		if (!c->p->sample_type[i].type || !c->p->sample_type[i].unit)
			return ember__error_oom("JFR sample types");
		c->value_of[kind] = (int)i;
	}
	const ember__jfr_value *st = ember__jfr_get(ev, "stackTrace");
	const ember__jfr_value *frames = st && st->kind == EMBER_JFR_OBJECT
						 ? ember__jfr_get(st, "frames")
						 : NULL;
	uint32_t n = frames && frames->kind == EMBER_JFR_ARRAY ? frames->n : 0;
	if (n > c->cap_stack) {
		uint32_t *s = realloc(c->stack, (size_t)n * sizeof(*s));
		if (!s)
			return ember__error_oom("JFR stack");
		c->stack = s;
		c->cap_stack = n;
	}
	uint32_t depth = 0;
	for (uint32_t i = 0; i < n; i++) {
		const ember__jfr_value *f = &frames->u.items[i];
		if (f->kind != EMBER_JFR_OBJECT)
			continue;
		uint32_t loc = frame_location(c, f);
		if (!loc)
			return ember__error_oom("JFR frames");
		c->stack[depth++] = loc;
	}
	ember__sample s = {0};
	s.nlocs = depth;
	s.locs = ember__arena_alloc(&c->p->arena, (depth ? depth : 1) * sizeof(*s.locs));
	if (!s.locs)
		return ember__error_oom("JFR sample");
	if (depth)
		memcpy(s.locs, c->stack, depth * sizeof(*s.locs));
	s.values[c->value_of[kind]] = v;
	return ember__profile_add_sample(c->p, &s) ? 0 : ember__error_oom("JFR sample");
}

int ember__jfr_to_profile(const uint8_t *data, size_t len, ember__profile **out)
{
	*out = NULL;
	if (!ember__jfr_magic(data, len))
		return ember__error(EMBER_ERR_FORMAT, "not a JFR recording (no FLR magic)");
	ember__jfr *j = NULL;
	int rc = ember__jfr_open(data, len, &j);
	if (rc)
		return rc;
	conv c = {0};
	c.p = ember__profile_new();
	for (int k = 0; k < K_N; k++)
		c.value_of[k] = -1;
	if (!c.p)
		rc = ember__error_oom("profile");
	ember__jfr_event ev;
	while (rc == 0 && (rc = ember__jfr_next_event(j, &ev)) == 1) {
		rc = 0;
		int kind = kind_of(ev.type);
		if (kind >= 0)
			rc = add_event(&c, kind, ev.value);
	}
	/* The profile spans the recording's chunks. */
	int64_t first = INT64_MAX, last = INT64_MIN;
	for (size_t i = 0; i < ember__jfr_nchunks(j); i++) {
		const ember__jfr_chunk_info *ci = ember__jfr_chunk(j, i);
		if (!ci)
			continue;
		/* A damaged header can hold any numbers: saturate, never overflow. */
		int64_t end;
		if (__builtin_add_overflow(ci->start_nanos, ci->duration_nanos, &end))
			end = ci->duration_nanos > 0 ? INT64_MAX : INT64_MIN;
		if (ci->start_nanos < first)
			first = ci->start_nanos;
		if (end > last)
			last = end;
	}
	if (rc == 0 && c.p->nvalues == 0)
		rc = ember__error(EMBER_ERR_FORMAT, "the recording has no CPU, wall-clock or "
				  "allocation samples (jdk.ExecutionSample, profiler.WallClockSample, "
				  "profiler.Malloc)");
	if (rc == 0) {
		for (int k = K_N - 1; k >= 0; k--)
			if (c.value_of[k] >= 0)
				c.p->default_sample_type = c.p->sample_type[c.value_of[k]].type;
		int64_t span;
		if (first <= last && !__builtin_sub_overflow(last, first, &span)) {
			c.p->time_nanos = first;
			c.p->duration_nanos = span;
		}
	}
	ember__jfr_free(j);
	ember__u64map_free(&c.mappings);
	ember__u64map_free(&c.functions);
	ember__u64map_free(&c.locations);
	free(c.fmod);
	free(c.stack);
	if (rc) {
		ember__profile_free(c.p);
		return rc;
	}
	*out = c.p;
	return 0;
}

int ember__jfr_read_profile_file(const char *path, ember__profile **out)
{
	return ember__profile_read_file(path, MAX_FILE, ember__jfr_to_profile, out);
}
