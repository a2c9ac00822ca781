/*
 * jfr.c - the JFR writer declared in jfr.h.
 *
 * A chunk is laid out as
 *     header (68 bytes) | metadata event | sample events | checkpoint event
 * with the header's offsets pointing at the metadata and at the one
 * checkpoint (constant pool) event. Everything after the header is events:
 * a size (which counts itself), a type id, then the fields in the order
 * the metadata declares them. Integers are compressed (the header's
 * feature bit 0): LEB128, seven bits a byte with the high bit saying
 * "more", except that the ninth byte of a 64-bit value carries eight bits
 * (the JDK's RecordingInput.readLong). Strings are an encoding byte
 * (0 null, 1 empty, 3 UTF-8 with a byte length). A constant-pool field
 * holds the key of an entry in its type's pool; key 0 is null.
 *
 * The metadata event is a string table and a tree of elements (root ->
 * metadata -> class -> field -> annotation, and root -> region), each an
 * index into the string table, attributes as (key, value) index pairs, and
 * children. It declares every type the chunk uses, with the annotations
 * (Label, Category, Timestamp, DataAmount...) the jfr tool and JMC read.
 */
#include "encode/jfr.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "encode/protobuf.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/hashmap.h"

/* ---- type ids (ours: the metadata maps them to names) ---- */

enum {
	T_METADATA = 0,
	T_CPOOL = 1,
	T_BOOLEAN = 4,
	T_CHAR = 5,
	T_FLOAT = 6,
	T_DOUBLE = 7,
	T_BYTE = 8,
	T_SHORT = 9,
	T_INT = 10,
	T_LONG = 11,
	T_STRING = 20,
	T_CLASS = 21,
	T_THREAD = 22,
	T_CLASS_LOADER = 23,
	T_FRAME_TYPE = 24,
	T_THREAD_STATE = 25,
	T_STACK_TRACE = 26,
	T_STACK_FRAME = 27,
	T_METHOD = 28,
	T_PACKAGE = 30,
	T_SYMBOL = 31,
	T_THREAD_GROUP = 32,
	T_EXECUTION_SAMPLE = 101,
	T_WALL_CLOCK_SAMPLE = 118,
	T_MALLOC = 119,
	T_LONG_POLL = 150,
	T_ACTIVE_RECORDING = 160, /* as async-profiler declares them (jfrMetadata.cpp) */
	T_ACTIVE_SETTING = 161,
	T_LABEL = 201,
	T_CATEGORY = 202,
	T_CONTENT_TYPE = 203,
	T_TIMESTAMP = 204,
	T_TIMESPAN = 205,
	T_DATA_AMOUNT = 206,
	T_MEMORY_ADDRESS = 207,
	T_UNSIGNED = 208,
};

/* Constant-pool keys of the fixed pools (0 would read as null). */
enum { FRAME_NATIVE = 4, FRAME_CPP = 5 };
static const char *const frame_types[] = {"Interpreted", "JIT compiled", "Inlined", "Native",
					  "C++", "Kernel"};
/*
 * jdk.types.ThreadState, keys 1..3. async-profiler's converter (JfrConverter
 * getThreadStates) takes STATE_DEFAULT for a CPU sample and every other
 * state for a wall-clock one, so, as async-profiler writes them, CPU
 * samples are STATE_DEFAULT and wall samples RUNNABLE or SLEEPING.
 */
enum { TS_DEFAULT = 1, TS_RUNNABLE = 2, TS_SLEEPING = 3 };
static const char *const thread_states[] = {"STATE_DEFAULT", "STATE_RUNNABLE", "STATE_SLEEPING"};

#define HEADER_SIZE 68
#define METADATA_ID 0x7fffffff /* any id; distinct from the JDK's own */
#define ACC_NATIVE 0x100

/* ---- the metadata, as tables ---- */

enum { F_CPOOL = 1, F_ARRAY = 2, F_TICKS = 4, F_BYTES = 8, F_ADDRESS = 16, F_SPAN = 32 };
enum { C_PLAIN = 0, C_SIMPLE, C_EVENT, C_ANNOTATION };

typedef struct fdef {
	const char *name;
	int type;
	unsigned flags;
	const char *label;
} fdef;

typedef struct cdef {
	const char *name;
	int id;
	int kind;
	const char *label;
	int content_type; /* carries @ContentType: a unit annotation */
	const char *cat[2];
	fdef fields[8];
} cdef;

#define START_TIME {"startTime", T_LONG, F_TICKS, "Start Time"}

static const cdef classes[] = {
	{"boolean", T_BOOLEAN, 0, NULL, 0, {0}, {{0}}},
	{"char", T_CHAR, 0, NULL, 0, {0}, {{0}}},
	{"float", T_FLOAT, 0, NULL, 0, {0}, {{0}}},
	{"double", T_DOUBLE, 0, NULL, 0, {0}, {{0}}},
	{"byte", T_BYTE, 0, NULL, 0, {0}, {{0}}},
	{"short", T_SHORT, 0, NULL, 0, {0}, {{0}}},
	{"int", T_INT, 0, NULL, 0, {0}, {{0}}},
	{"long", T_LONG, 0, NULL, 0, {0}, {{0}}},
	{"java.lang.String", T_STRING, 0, NULL, 0, {0}, {{0}}},
	{"java.lang.Class", T_CLASS, 0, "Java Class", 0, {0},
	 {{"classLoader", T_CLASS_LOADER, F_CPOOL, "Class Loader"},
	  {"name", T_SYMBOL, F_CPOOL, "Name"},
	  {"package", T_PACKAGE, F_CPOOL, "Package"},
	  {"modifiers", T_INT, 0, "Access Modifiers"}}},
	{"java.lang.Thread", T_THREAD, 0, "Thread", 0, {0},
	 {{"osName", T_STRING, 0, "OS Thread Name"},
	  {"osThreadId", T_LONG, 0, "OS Thread Id"},
	  {"javaName", T_STRING, 0, "Java Thread Name"},
	  {"javaThreadId", T_LONG, 0, "Java Thread Id"},
	  {"group", T_THREAD_GROUP, F_CPOOL, "Java Thread Group"}}},
	{"jdk.types.ThreadGroup", T_THREAD_GROUP, 0, "Thread Group", 0, {0},
	 {{"parent", T_THREAD_GROUP, F_CPOOL, "Parent"}, {"name", T_STRING, 0, "Name"}}},
	{"jdk.types.ClassLoader", T_CLASS_LOADER, 0, "Java Class Loader", 0, {0},
	 {{"type", T_CLASS, F_CPOOL, "Type"}, {"name", T_SYMBOL, F_CPOOL, "Name"}}},
	{"jdk.types.FrameType", T_FRAME_TYPE, C_SIMPLE, "Frame type", 0, {0},
	 {{"description", T_STRING, 0, "Description"}}},
	{"jdk.types.ThreadState", T_THREAD_STATE, C_SIMPLE, "Java Thread State", 0, {0},
	 {{"name", T_STRING, 0, "Name"}}},
	{"jdk.types.StackTrace", T_STACK_TRACE, 0, "Stacktrace", 0, {0},
	 {{"truncated", T_BOOLEAN, 0, "Truncated"},
	  {"frames", T_STACK_FRAME, F_ARRAY, "Stack Frames"}}},
	{"jdk.types.StackFrame", T_STACK_FRAME, 0, NULL, 0, {0},
	 {{"method", T_METHOD, F_CPOOL, "Java Method"},
	  {"lineNumber", T_INT, 0, "Line Number"},
	  {"bytecodeIndex", T_INT, 0, "Bytecode Index"},
	  {"type", T_FRAME_TYPE, F_CPOOL, "Frame Type"}}},
	{"jdk.types.Method", T_METHOD, 0, "Java Method", 0, {0},
	 {{"type", T_CLASS, F_CPOOL, "Type"},
	  {"name", T_SYMBOL, F_CPOOL, "Name"},
	  {"descriptor", T_SYMBOL, F_CPOOL, "Descriptor"},
	  {"modifiers", T_INT, 0, "Access Modifiers"},
	  {"hidden", T_BOOLEAN, 0, "Hidden"}}},
	{"jdk.types.Package", T_PACKAGE, 0, "Package", 0, {0}, {{"name", T_SYMBOL, F_CPOOL, "Name"}}},
	{"jdk.types.Symbol", T_SYMBOL, C_SIMPLE, "Symbol", 0, {0}, {{"string", T_STRING, 0, "String"}}},
	{"jdk.ExecutionSample", T_EXECUTION_SAMPLE, C_EVENT, "Method Profiling Sample", 0,
	 {"Java Virtual Machine", "Profiling"},
	 {START_TIME,
	  {"sampledThread", T_THREAD, F_CPOOL, "Thread"},
	  {"stackTrace", T_STACK_TRACE, F_CPOOL, "Stack Trace"},
	  {"state", T_THREAD_STATE, F_CPOOL, "Thread State"}}},
	{"profiler.WallClockSample", T_WALL_CLOCK_SAMPLE, C_EVENT, "Wall Clock Sample", 0,
	 {"Java Virtual Machine", "Profiling"},
	 {START_TIME,
	  {"sampledThread", T_THREAD, F_CPOOL, "Thread"},
	  {"stackTrace", T_STACK_TRACE, F_CPOOL, "Stack Trace"},
	  {"state", T_THREAD_STATE, F_CPOOL, "Thread State"},
	  {"samples", T_INT, 0, "Samples"}}},
	{"profiler.Malloc", T_MALLOC, C_EVENT, "Malloc", 0, {"Java Application", NULL},
	 {START_TIME,
	  {"eventThread", T_THREAD, F_CPOOL, "Event Thread"},
	  {"stackTrace", T_STACK_TRACE, F_CPOOL, "Stack Trace"},
	  {"address", T_LONG, F_ADDRESS, "Address"},
	  {"size", T_LONG, F_BYTES, "Size"}}},
	/* pollcatch's long polls (emberprof's own type; no stack: see jfr.h) */
	{"emberprof.LongPoll", T_LONG_POLL, C_EVENT, "Long Poll", 0, {"emberprof", "Event Loop"},
	 {START_TIME,
	  {"duration", T_LONG, F_SPAN, "Duration"},
	  {"eventThread", T_THREAD, F_CPOOL, "Event Thread"},
	  {"pollId", T_LONG, 0, "Poll Id"},
	  {"open", T_BOOLEAN, 0, "Still Running"}}},
	/* The recording and its settings, as async-profiler writes them: its
	 * converter reads jdk.ActiveSetting {name, value} (JfrReader
	 * readActiveSetting: the fields up to `id` are numbers). */
	{"jdk.ActiveRecording", T_ACTIVE_RECORDING, C_EVENT, "Flight Recording", 0,
	 {"Flight Recorder", NULL},
	 {START_TIME,
	  {"id", T_LONG, 0, "Id"},
	  {"name", T_STRING, 0, "Name"},
	  {"destination", T_STRING, 0, "Destination"},
	  {"maxAge", T_LONG, 0, "Max Age"},
	  {"maxSize", T_LONG, F_BYTES, "Max Size"},
	  {"recordingStart", T_LONG, 0, "Start Time"},
	  {"recordingDuration", T_LONG, 0, "Recording Duration"}}},
	{"jdk.ActiveSetting", T_ACTIVE_SETTING, C_EVENT, "Recording Setting", 0,
	 {"Flight Recorder", NULL},
	 {START_TIME,
	  {"id", T_LONG, 0, "Event Id"},
	  {"name", T_STRING, 0, "Setting Name"},
	  {"value", T_STRING, 0, "Setting Value"}}},
	{"jdk.jfr.Label", T_LABEL, C_ANNOTATION, NULL, 0, {0}, {{"value", T_STRING, 0, NULL}}},
	{"jdk.jfr.Category", T_CATEGORY, C_ANNOTATION, NULL, 0, {0},
	 {{"value", T_STRING, F_ARRAY, NULL}}},
	{"jdk.jfr.ContentType", T_CONTENT_TYPE, C_ANNOTATION, NULL, 0, {0}, {{0}}},
	{"jdk.jfr.Timestamp", T_TIMESTAMP, C_ANNOTATION, "Timestamp", 1, {0},
	 {{"value", T_STRING, 0, NULL}}},
	{"jdk.jfr.Timespan", T_TIMESPAN, C_ANNOTATION, "Timespan", 1, {0},
	 {{"value", T_STRING, 0, NULL}}},
	{"jdk.jfr.DataAmount", T_DATA_AMOUNT, C_ANNOTATION, "Data Amount", 1, {0},
	 {{"value", T_STRING, 0, NULL}}},
	{"jdk.jfr.MemoryAddress", T_MEMORY_ADDRESS, C_ANNOTATION, "Memory Address", 1, {0}, {{0}}},
	{"jdk.jfr.Unsigned", T_UNSIGNED, C_ANNOTATION, "Unsigned Value", 1, {0}, {{0}}},
};

/* ---- output primitives (on protobuf.h's growing buffer) ---- */

static void put_u8(ember__pbuf *b, uint8_t v)
{
	if (ember__pb_reserve(b, 1) == 0)
		b->data[b->len++] = v;
}

static void put_be(ember__pbuf *b, uint64_t v, int bytes)
{
	if (ember__pb_reserve(b, (size_t)bytes))
		return;
	for (int i = bytes - 1; i >= 0; i--)
		b->data[b->len++] = (uint8_t)(v >> (8 * i));
}

/* A compressed integer: at most nine bytes, the ninth holding eight bits. */
static void put_var(ember__pbuf *b, uint64_t v)
{
	if (ember__pb_reserve(b, 9))
		return;
	uint8_t *p = b->data + b->len;
	int i = 0;
	for (; i < 8 && v > 0x7f; i++, v >>= 7)
		p[i] = (uint8_t)(v | 0x80);
	p[i++] = (uint8_t)v;
	b->len += (size_t)i;
}

static void put_bytes(ember__pbuf *b, const void *d, size_t n)
{
	if (n && ember__pb_reserve(b, n) == 0) {
		memcpy(b->data + b->len, d, n);
		b->len += n;
	}
}

/* A string field: null, empty, or UTF-8 with its byte length. */
static void put_str(ember__pbuf *b, const char *s)
{
	if (!s) {
		put_u8(b, 0);
	} else if (!*s) {
		put_u8(b, 1);
	} else {
		size_t n = strlen(s);
		put_u8(b, 3);
		put_var(b, n);
		put_bytes(b, s, n);
	}
}

/* Reserves five bytes for a size patched later by patch_size(). */
static size_t reserve_size(ember__pbuf *b)
{
	size_t at = b->len;
	if (ember__pb_reserve(b, 5) == 0)
		b->len += 5;
	return at;
}

/* Writes len - at into the five bytes at `at`: a varint padded with
 * continuation bytes, which readers accept. Fails the buffer if it does
 * not fit the 31 bits an event size may have. */
static void patch_size(ember__pbuf *b, size_t at)
{
	if (b->failed)
		return;
	uint64_t v = b->len - at;
	if (v > 0x7fffffff) {
		b->failed = 1;
		return;
	}
	for (int i = 0; i < 4; i++)
		b->data[at + (size_t)i] = (uint8_t)(((v >> (7 * i)) & 0x7f) | 0x80);
	b->data[at + 4] = (uint8_t)(v >> 28);
}

/* Appends one small event whose body (type id onwards) is in ev. */
static void put_event(ember__pbuf *b, const ember__pbuf *ev)
{
	size_t n = ev->len, s = 1;
	while (ember__pb_varint_size(n + s) > s)
		s++;
	put_var(b, n + s);
	put_bytes(b, ev->data, n);
}

/* ---- string interning ---- */

typedef struct strtab {
	ember__u64map map; /* hash, probed on -> index + 1 */
	const char **v;    /* borrowed: static, the profiles', or the encoder's arena */
	uint32_t n, cap;
} strtab;

/* The 1-based id of s in t, adding it; 0 on OOM. `s` must outlive t. */
static uint32_t intern(strtab *t, const char *s)
{
	if (t->n == t->cap) { /* room first, so that a failure leaves no dead entry */
		uint32_t ncap = t->cap ? t->cap * 2 : 64;
		const char **nv = realloc(t->v, ncap * sizeof(*nv));
		if (!nv)
			return 0;
		t->v = nv;
		t->cap = ncap;
	}
	uint64_t h = ember__hash_bytes(s, strlen(s), 7);
	for (;; h++) {
		int inserted;
		uint64_t *slot = ember__u64map_put(&t->map, h, &inserted);
		if (!slot)
			return 0;
		if (!inserted) {
			if (!strcmp(t->v[*slot - 1], s))
				return (uint32_t)*slot;
			continue; /* another string with this hash: probe on */
		}
		t->v[t->n++] = s;
		*slot = t->n;
		return t->n;
	}
}

static void strtab_free(strtab *t)
{
	ember__u64map_free(&t->map);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* ---- the metadata event ---- */

typedef struct meta {
	ember__arena *arena;
	strtab strs;
	int failed;
} meta;

static uint32_t mstr(meta *m, const char *s)
{
	uint32_t id = intern(&m->strs, s);
	if (!id)
		m->failed = 1;
	return id ? id - 1 : 0; /* the metadata's string indices are 0-based */
}

typedef struct mnode {
	uint32_t name, nattr, attr[8][2];
	struct mnode **kids;
	uint32_t nkids, cap;
} mnode;

static mnode *node(meta *m, mnode *parent, const char *name)
{
	mnode *e = ember__arena_alloc(m->arena, sizeof(*e));
	if (!e) {
		m->failed = 1;
		return NULL;
	}
	e->name = mstr(m, name);
	if (parent) {
		if (parent->nkids == parent->cap) {
			uint32_t ncap = parent->cap ? parent->cap * 2 : 8;
			mnode **k = ember__arena_alloc(m->arena, ncap * sizeof(*k));
			if (!k) {
				m->failed = 1;
				return NULL;
			}
			if (parent->nkids)
				memcpy(k, parent->kids, parent->nkids * sizeof(*k));
			parent->kids = k;
			parent->cap = ncap;
		}
		parent->kids[parent->nkids++] = e;
	}
	return e;
}

static void attr(meta *m, mnode *e, const char *k, const char *v)
{
	if (!e || e->nattr == 8)
		return;
	e->attr[e->nattr][0] = mstr(m, k);
	e->attr[e->nattr][1] = mstr(m, v);
	e->nattr++;
}

static void attr_int(meta *m, mnode *e, const char *k, long v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%ld", v);
	char *s = ember__arena_strdup(m->arena, buf);
	if (!s) {
		m->failed = 1;
		return;
	}
	attr(m, e, k, s);
}

static void annotation(meta *m, mnode *parent, int type, const char *value)
{
	mnode *a = node(m, parent, "annotation");
	attr_int(m, a, "class", type);
	if (value)
		attr(m, a, "value", value);
}

static void field_node(meta *m, mnode *cls, const fdef *f)
{
	mnode *e = node(m, cls, "field");
	attr(m, e, "name", f->name);
	attr_int(m, e, "class", f->type);
	if (f->flags & F_CPOOL)
		attr(m, e, "constantPool", "true");
	if (f->flags & F_ARRAY)
		attr(m, e, "dimension", "1");
	if (f->label)
		annotation(m, e, T_LABEL, f->label);
	if (f->flags & F_TICKS)
		annotation(m, e, T_TIMESTAMP, "TICKS");
	if (f->flags & F_SPAN)
		annotation(m, e, T_TIMESPAN, "TICKS");
	if (f->flags & F_BYTES) {
		annotation(m, e, T_UNSIGNED, NULL);
		annotation(m, e, T_DATA_AMOUNT, "BYTES");
	}
	if (f->flags & F_ADDRESS) {
		annotation(m, e, T_UNSIGNED, NULL);
		annotation(m, e, T_MEMORY_ADDRESS, NULL);
	}
}

static void class_node(meta *m, mnode *parent, const cdef *c)
{
	mnode *e = node(m, parent, "class");
	attr(m, e, "name", c->name);
	attr_int(m, e, "id", c->id);
	if (c->kind == C_SIMPLE)
		attr(m, e, "simpleType", "true");
	else if (c->kind == C_EVENT)
		attr(m, e, "superType", "jdk.jfr.Event");
	else if (c->kind == C_ANNOTATION)
		attr(m, e, "superType", "java.lang.annotation.Annotation");
	if (c->label)
		annotation(m, e, T_LABEL, c->label);
	if (c->content_type)
		annotation(m, e, T_CONTENT_TYPE, NULL);
	if (c->cat[0]) {
		mnode *a = node(m, e, "annotation");
		attr_int(m, a, "class", T_CATEGORY);
		attr(m, a, "value-0", c->cat[0]);
		if (c->cat[1])
			attr(m, a, "value-1", c->cat[1]);
	}
	for (const fdef *f = c->fields; f < c->fields + 8 && f->name; f++)
		field_node(m, e, f);
}

static void put_node(ember__pbuf *b, const mnode *e)
{
	put_var(b, e->name);
	put_var(b, e->nattr);
	for (uint32_t i = 0; i < e->nattr; i++) {
		put_var(b, e->attr[i][0]);
		put_var(b, e->attr[i][1]);
	}
	put_var(b, e->nkids);
	for (uint32_t i = 0; i < e->nkids; i++)
		put_node(b, e->kids[i]);
}

static int write_metadata(ember__pbuf *b, ember__arena *arena)
{
	meta m = {.arena = arena};
	mnode *root = node(&m, NULL, "root");
	mnode *md = node(&m, root, "metadata");
	for (size_t i = 0; md && i < sizeof(classes) / sizeof(classes[0]); i++)
		class_node(&m, md, &classes[i]);
	mnode *region = node(&m, root, "region");
	attr(&m, region, "locale", "en_US");
	attr(&m, region, "gmtOffset", "0");
	if (m.failed) {
		strtab_free(&m.strs);
		return EMBER_ERR_NOMEM;
	}
	size_t at = reserve_size(b);
	put_var(b, T_METADATA);
	put_var(b, 0); /* start ticks */
	put_var(b, 0); /* duration */
	put_var(b, METADATA_ID);
	put_var(b, m.strs.n);
	for (uint32_t i = 0; i < m.strs.n; i++)
		put_str(b, m.strs.v[i]);
	put_node(b, root);
	patch_size(b, at);
	strtab_free(&m.strs);
	return 0;
}

/* ---- constant pools ---- */

typedef struct method {
	uint32_t cls;  /* class key: 1-based index in enc.classes */
	uint32_t name; /* symbol key */
	uint8_t type;  /* FRAME_* */
} method;

typedef struct enc {
	const ember__jfr_window *w;
	ember__arena arena;
	strtab symbols; /* key = id */
	strtab classes; /* class names; key = id, name symbol interned separately */
	uint32_t *class_sym;   /* class key - 1 -> symbol key */
	uint32_t nclass_sym;
	ember__u64map methods; /* (class << 32 | name) -> method key */
	method *mv;
	uint32_t nmethods, cap_methods;
	uint32_t *fn_method[EMBER_JFR_NKINDS]; /* per profile: function index -> method key */
	uint32_t *stack_key[EMBER_JFR_NKINDS]; /* per profile: sample index -> stack key */
	struct { uint8_t kind; uint32_t sample; } *stacks; /* key - 1 -> sample */
	uint32_t nstacks, cap_stacks;
	ember__u64map tids;  /* threads with events (-> wall carry without w->wall_carry) */
	ember__u64map names; /* tid -> index + 1 in w->threads */
	uint32_t descriptor; /* symbol key of "()L;" */
	int oom;
} enc;

static uint32_t sym(enc *e, const char *s)
{
	uint32_t k = intern(&e->symbols, s);
	if (!k)
		e->oom = 1;
	return k;
}

static uint32_t class_key(enc *e, const char *name)
{
	uint32_t k = intern(&e->classes, name);
	if (!k) {
		e->oom = 1;
		return 0;
	}
	if (k > e->nclass_sym) {
		uint32_t *n = realloc(e->class_sym, (size_t)k * sizeof(*n));
		if (!n) {
			e->oom = 1;
			return 0;
		}
		e->class_sym = n;
		e->nclass_sym = k;
		e->class_sym[k - 1] = sym(e, name);
	}
	return k;
}

static uint32_t method_key(enc *e, uint32_t cls, const char *name, uint8_t type)
{
	uint32_t nk = sym(e, name);
	if (!nk || !cls)
		return 0;
	int inserted;
	uint64_t *v = ember__u64map_put(&e->methods, (uint64_t)cls << 32 | nk, &inserted);
	if (!v) {
		e->oom = 1;
		return 0;
	}
	if (!inserted)
		return (uint32_t)*v;
	if (e->nmethods == e->cap_methods) {
		uint32_t ncap = e->cap_methods ? e->cap_methods * 2 : 256;
		method *n = realloc(e->mv, ncap * sizeof(*n));
		if (!n) {
			e->oom = 1;
			return 0;
		}
		e->mv = n;
		e->cap_methods = ncap;
	}
	e->mv[e->nmethods++] = (method){cls, nk, type};
	*v = e->nmethods;
	return e->nmethods;
}

/* The module's file name: the "class" of a native frame. */
static uint32_t module_class(enc *e, const ember__profile *p, const ember__location *loc)
{
	const char *file = loc->mapping && loc->mapping <= p->nmappings
				   ? p->mappings[loc->mapping - 1].file
				   : NULL;
	if (!file || !*file)
		return class_key(e, "[unknown]");
	const char *slash = strrchr(file, '/');
	return class_key(e, slash && slash[1] ? slash + 1 : file);
}

/* A method for a location no symbol names: its address in the module. */
static uint32_t address_method(enc *e, const ember__profile *p, const ember__location *loc)
{
	uint64_t a = loc->address;
	if (loc->mapping && loc->mapping <= p->nmappings) {
		const ember__mapping *m = &p->mappings[loc->mapping - 1];
		if (a >= m->start)
			a = a - m->start + m->offset;
	}
	char buf[24];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, a);
	char *s = ember__arena_strdup(&e->arena, buf);
	if (!s) {
		e->oom = 1;
		return 0;
	}
	return method_key(e, module_class(e, p, loc), s, FRAME_NATIVE);
}

static int is_cpp(const ember__function *f)
{
	return f->system_name && f->system_name[0] == '_' && f->system_name[1] == 'Z' &&
	       strcmp(f->system_name, f->name ? f->name : "") != 0;
}

static uint32_t function_method(enc *e, int kind, const ember__profile *p,
				const ember__location *loc, uint32_t fn)
{
	uint32_t *cache = e->fn_method[kind];
	if (cache[fn])
		return cache[fn];
	const ember__function *f = &p->functions[fn - 1];
	uint32_t k = method_key(e, module_class(e, p, loc), f->name,
				is_cpp(f) ? FRAME_CPP : FRAME_NATIVE);
	cache[fn] = k;
	return k;
}

static int named(const ember__profile *p, const ember__line *l)
{
	return l->function && l->function <= p->nfunctions && p->functions[l->function - 1].name &&
	       p->functions[l->function - 1].name[0];
}

static void write_stack(enc *e, ember__pbuf *b, int kind, uint32_t sample)
{
	const ember__profile *p = e->w->profiles[kind];
	const ember__sample *s = &p->samples[sample];
	uint64_t nframes = 0;
	for (uint32_t d = 0; d < s->nlocs; d++) {
		const ember__location *loc = &p->locations[s->locs[d] - 1];
		nframes += loc->nlines ? loc->nlines : 1;
	}
	put_u8(b, e->w->max_depth && s->nlocs >= e->w->max_depth); /* truncated */
	put_var(b, nframes);
	for (uint32_t d = 0; d < s->nlocs; d++) {
		const ember__location *loc = &p->locations[s->locs[d] - 1];
		for (uint32_t i = 0; i < (loc->nlines ? loc->nlines : 1); i++) {
			const ember__line *l = loc->nlines ? &loc->lines[i] : NULL;
			uint32_t m = l && named(p, l) ? function_method(e, kind, p, loc, l->function)
						      : address_method(e, p, loc);
			int64_t line = l ? l->line : 0;
			put_var(b, m);
			put_var(b, (uint32_t)(line > 0 && line <= INT32_MAX ? line : 0));
			put_var(b, 0); /* bytecodeIndex */
			put_var(b, m ? e->mv[m - 1].type : FRAME_NATIVE);
		}
	}
}

static uint32_t stack_key(enc *e, int kind, uint32_t sample)
{
	uint32_t *k = &e->stack_key[kind][sample];
	if (*k)
		return *k;
	if (e->nstacks == e->cap_stacks) {
		uint32_t ncap = e->cap_stacks ? e->cap_stacks * 2 : 256;
		void *n = realloc(e->stacks, ncap * sizeof(*e->stacks));
		if (!n) {
			e->oom = 1;
			return 0;
		}
		e->stacks = n;
		e->cap_stacks = ncap;
	}
	e->stacks[e->nstacks].kind = (uint8_t)kind;
	e->stacks[e->nstacks].sample = sample;
	*k = ++e->nstacks;
	return *k;
}

static void write_thread(enc *e, ember__pbuf *b, int32_t tid)
{
	uint64_t *ix = ember__u64map_get(&e->names, (uint64_t)(uint32_t)tid);
	const char *name = ix ? e->w->threads[*ix - 1].name : NULL;
	char buf[32];
	if (!name) {
		snprintf(buf, sizeof(buf), "[tid=%d]", (int)tid);
		name = buf;
	}
	put_var(b, (uint32_t)tid); /* key */
	put_str(b, name);          /* osName */
	put_var(b, (uint32_t)tid); /* osThreadId */
	put_str(b, NULL);          /* javaName: not a Java thread */
	put_var(b, 0);             /* javaThreadId */
	put_var(b, 0);             /* group: none */
}

/* The checkpoint event: every pool the events refer to. Stacks are
 * written first, since they intern the methods, classes and symbols. */
static void write_cpool(enc *e, ember__pbuf *b, ember__pbuf *scratch)
{
	/* Stack traces into scratch, so their methods are known. */
	ember__pbuf *st = scratch;
	st->len = 0;
	for (uint32_t i = 0; i < e->nstacks; i++) {
		put_var(st, i + 1);
		write_stack(e, st, e->stacks[i].kind, e->stacks[i].sample);
	}
	size_t at = reserve_size(b);
	put_var(b, T_CPOOL);
	put_var(b, 0); /* start ticks */
	put_var(b, 0); /* duration */
	put_var(b, 0); /* delta to the previous checkpoint: none */
	put_u8(b, 1);  /* flush */
	uint32_t npools = 2 + (e->tids.n ? 1u : 0u) + (e->nstacks ? 4u : 0u);
	put_var(b, npools);

	put_var(b, T_FRAME_TYPE);
	put_var(b, sizeof(frame_types) / sizeof(frame_types[0]));
	for (size_t i = 0; i < sizeof(frame_types) / sizeof(frame_types[0]); i++) {
		put_var(b, i + 1);
		put_str(b, frame_types[i]);
	}
	put_var(b, T_THREAD_STATE);
	put_var(b, sizeof(thread_states) / sizeof(thread_states[0]));
	for (size_t i = 0; i < sizeof(thread_states) / sizeof(thread_states[0]); i++) {
		put_var(b, i + 1);
		put_str(b, thread_states[i]);
	}
	if (e->tids.n) {
		put_var(b, T_THREAD);
		put_var(b, e->tids.n);
		for (size_t i = 0; i < e->tids.cap; i++)
			if (e->tids.slots[i].used)
				write_thread(e, b, (int32_t)e->tids.slots[i].key);
	}
	if (e->nstacks) {
		put_var(b, T_STACK_TRACE);
		put_var(b, e->nstacks);
		put_bytes(b, st->data, st->len);
		if (st->failed)
			b->failed = 1;

		put_var(b, T_METHOD);
		put_var(b, e->nmethods);
		for (uint32_t i = 0; i < e->nmethods; i++) {
			put_var(b, i + 1);
			put_var(b, e->mv[i].cls);
			put_var(b, e->mv[i].name);
			put_var(b, e->descriptor);
			put_var(b, ACC_NATIVE);
			put_u8(b, 0); /* hidden */
		}
		put_var(b, T_CLASS);
		put_var(b, e->classes.n);
		for (uint32_t i = 0; i < e->classes.n; i++) {
			put_var(b, i + 1);
			put_var(b, 0); /* classLoader */
			put_var(b, e->class_sym[i]);
			put_var(b, 0); /* package */
			put_var(b, 0); /* modifiers */
		}
		put_var(b, T_SYMBOL);
		put_var(b, e->symbols.n);
		for (uint32_t i = 0; i < e->symbols.n; i++) {
			put_var(b, i + 1);
			put_str(b, e->symbols.v[i]);
		}
	}
	patch_size(b, at);
}

/* ---- events ---- */

typedef struct order {
	int64_t t;
	size_t i;
} order;

static int cmp_order(const void *a, const void *b)
{
	const order *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static void write_event(enc *e, ember__pbuf *b, ember__pbuf *ev, const ember__jfr_event *x)
{
	const ember__jfr_window *w = e->w;
	ev->len = 0;
	uint32_t stack = stack_key(e, x->kind, x->sample);
	int inserted;
	if (!ember__u64map_put(&e->tids, (uint64_t)(uint32_t)x->tid, &inserted))
		e->oom = 1;
	uint64_t ticks = (uint64_t)(x->time_ns - w->start_ns);
	/* CPU: STATE_DEFAULT; wall: SLEEPING, else RUNNABLE (see thread_states) */
	uint32_t state = x->kind == EMBER_JFR_CPU ? TS_DEFAULT
			 : x->state == EMBER_JFR_STATE_SLEEPING ? TS_SLEEPING : TS_RUNNABLE;
	switch (x->kind) {
	case EMBER_JFR_CPU:
		put_var(ev, T_EXECUTION_SAMPLE);
		put_var(ev, ticks);
		put_var(ev, (uint32_t)x->tid);
		put_var(ev, stack);
		put_var(ev, state);
		break;
	case EMBER_JFR_WALL: {
		uint64_t n = 1;
		if (w->wall_interval_ns > 0) {
			/* the thread's carry plus this weight, in whole intervals
			 * (rounded; 0 for an event that stands for less than
			 * half of one), the rest carried to its next event */
			int64_t iv = w->wall_interval_ns;
			ember__u64map *cm = w->wall_carry ? w->wall_carry : &e->tids;
			int ins = 0;
			uint64_t *carry = ember__u64map_put(cm, (uint64_t)(uint32_t)x->tid, &ins);
			int64_t have = (int64_t)(x->weight > (uint64_t)INT64_MAX / 2 ? (uint64_t)INT64_MAX / 2
										   : x->weight);
			if (carry && !ins)
				have += (int64_t)*carry;
			int64_t q = have > 0 ? (have + iv / 2) / iv : 0;
			if (q > INT32_MAX)
				q = INT32_MAX;
			if (carry)
				*carry = (uint64_t)(have - q * iv);
			else
				e->oom = 1;
			n = (uint64_t)q;
		}
		put_var(ev, T_WALL_CLOCK_SAMPLE);
		put_var(ev, ticks);
		put_var(ev, (uint32_t)x->tid);
		put_var(ev, stack);
		put_var(ev, state);
		put_var(ev, n);
		break;
	}
	default: /* EMBER_JFR_MALLOC */
		put_var(ev, T_MALLOC);
		put_var(ev, ticks);
		put_var(ev, (uint32_t)x->tid);
		put_var(ev, stack);
		put_var(ev, x->address);
		put_var(ev, x->weight);
		break;
	}
	if (ev->failed)
		b->failed = 1;
	put_event(b, ev);
}

/* One emberprof.LongPoll event. */
static void write_poll(enc *e, ember__pbuf *b, ember__pbuf *ev, const ember__jfr_poll *p)
{
	ev->len = 0;
	int inserted;
	if (!ember__u64map_put(&e->tids, (uint64_t)(uint32_t)p->tid, &inserted))
		e->oom = 1;
	put_var(ev, T_LONG_POLL);
	put_var(ev, (uint64_t)(p->start_ns - e->w->start_ns)); /* may be negative: nine bytes */
	put_var(ev, (uint64_t)p->duration_ns);
	put_var(ev, (uint32_t)p->tid);
	put_var(ev, p->id);
	put_u8(ev, p->open != 0);
	if (ev->failed)
		b->failed = 1;
	put_event(b, ev);
}

/* One jdk.ActiveSetting {startTime, id: the event type it configures, name, value}. */
static void write_setting(ember__pbuf *b, ember__pbuf *ev, int type, const char *name,
			  const char *value)
{
	ev->len = 0;
	put_var(ev, T_ACTIVE_SETTING);
	put_var(ev, 0); /* startTicks: the window's start */
	put_var(ev, (uint64_t)type);
	put_str(ev, name);
	put_str(ev, value);
	if (ev->failed)
		b->failed = 1;
	put_event(b, ev);
}

static void write_setting_int(ember__pbuf *b, ember__pbuf *ev, int type, const char *name,
			      uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	write_setting(b, ev, type, name, buf);
}

/*
 * jdk.ActiveRecording and the jdk.ActiveSetting events async-profiler
 * writes at the start of each chunk (flightRecorder.cpp writeSettings),
 * those that apply: which events are on and their intervals ("interval"
 * in ns of CPU time, "wall" in ns, "nativemem" in bytes), which its
 * converter reads for a profile's period (JfrToOtlp getPeriod).
 */
static void write_settings(const ember__jfr_window *w, ember__pbuf *b, ember__pbuf *ev)
{
	char version[32];
	snprintf(version, sizeof(version), "%d.%d.%d", EMBER_VERSION_MAJOR, EMBER_VERSION_MINOR,
		 EMBER_VERSION_PATCH);
	char name[48];
	snprintf(name, sizeof(name), "emberprof %s", version);
	ev->len = 0;
	put_var(ev, T_ACTIVE_RECORDING);
	put_var(ev, 0);                              /* startTicks */
	put_var(ev, 1);                              /* id */
	put_str(ev, name);                           /* name */
	put_str(ev, "emberprof.jfr");                /* destination */
	put_var(ev, (uint64_t)INT64_MAX);            /* maxAge */
	put_var(ev, 0);                              /* maxSize */
	put_var(ev, (uint64_t)(w->start_ns / 1000000)); /* recordingStart, ms */
	put_var(ev, (uint64_t)((w->end_ns - w->start_ns) / 1000000)); /* recordingDuration, ms */
	if (ev->failed)
		b->failed = 1;
	put_event(b, ev);

	write_setting(b, ev, T_ACTIVE_RECORDING, "version", version);
	write_setting(b, ev, T_ACTIVE_RECORDING, "engine", w->engine ? w->engine : "emberprof");
	if (w->cpu_interval_ns > 0)
		write_setting(b, ev, T_ACTIVE_RECORDING, "event", "cpu");
	write_setting(b, ev, T_EXECUTION_SAMPLE, "enabled", w->cpu_interval_ns > 0 ? "true" : "false");
	if (w->cpu_interval_ns > 0)
		write_setting_int(b, ev, T_EXECUTION_SAMPLE, "interval", (uint64_t)w->cpu_interval_ns);
	if (w->wall_interval_ns > 0)
		write_setting_int(b, ev, T_EXECUTION_SAMPLE, "wall", (uint64_t)w->wall_interval_ns);
	if (w->alloc_interval > 0)
		write_setting_int(b, ev, T_MALLOC, "nativemem", w->alloc_interval);
}

static int check_window(const ember__jfr_window *w)
{
	if (w->nevents && !w->events)
		return ember__error(EMBER_ERR_INVALID, "jfr: events missing");
	for (size_t i = 0; i < w->nevents; i++) {
		const ember__jfr_event *x = &w->events[i];
		if (x->kind >= EMBER_JFR_NKINDS || !w->profiles[x->kind])
			return ember__error(EMBER_ERR_INVALID, "jfr: event %zu has kind %u without a profile",
					    i, (unsigned)x->kind);
		if (x->sample >= w->profiles[x->kind]->nsamples)
			return ember__error(EMBER_ERR_INVALID,
					    "jfr: event %zu names sample %" PRIu32 " of %" PRIu32, i,
					    x->sample, w->profiles[x->kind]->nsamples);
		if (x->tid <= 0)
			return ember__error(EMBER_ERR_INVALID, "jfr: event %zu has tid %d", i, (int)x->tid);
	}
	if (w->npolls && !w->polls)
		return ember__error(EMBER_ERR_INVALID, "jfr: polls missing");
	for (size_t i = 0; i < w->npolls; i++)
		if (w->polls[i].tid <= 0 || w->polls[i].duration_ns < 0)
			return ember__error(EMBER_ERR_INVALID, "jfr: poll %zu has tid %d, duration %lld ns",
					    i, (int)w->polls[i].tid, (long long)w->polls[i].duration_ns);
	for (int k = 0; k < EMBER_JFR_NKINDS; k++) {
		const ember__profile *p = w->profiles[k];
		for (uint32_t s = 0; p && s < p->nsamples; s++)
			for (uint32_t d = 0; d < p->samples[s].nlocs; d++) {
				uint32_t l = p->samples[s].locs[d];
				if (!l || l > p->nlocations)
					return ember__error(EMBER_ERR_INVALID,
							    "jfr: sample %" PRIu32 " names location %" PRIu32, s, l);
				const ember__location *loc = &p->locations[l - 1];
				for (uint32_t i = 0; i < loc->nlines; i++)
					if (loc->lines[i].function > p->nfunctions)
						return ember__error(EMBER_ERR_INVALID,
								    "jfr: location %" PRIu32
								    " names a missing function", l);
			}
	}
	return 0;
}

static void enc_free(enc *e)
{
	ember__arena_release(&e->arena);
	strtab_free(&e->symbols);
	strtab_free(&e->classes);
	free(e->class_sym);
	ember__u64map_free(&e->methods);
	free(e->mv);
	for (int k = 0; k < EMBER_JFR_NKINDS; k++) {
		free(e->fn_method[k]);
		free(e->stack_key[k]);
	}
	free(e->stacks);
	ember__u64map_free(&e->tids);
	ember__u64map_free(&e->names);
}

static int enc_init(enc *e, const ember__jfr_window *w)
{
	memset(e, 0, sizeof(*e));
	e->w = w;
	for (int k = 0; k < EMBER_JFR_NKINDS; k++) {
		const ember__profile *p = w->profiles[k];
		if (!p)
			continue;
		e->fn_method[k] = calloc((size_t)p->nfunctions + 1, sizeof(uint32_t));
		e->stack_key[k] = calloc((size_t)p->nsamples + 1, sizeof(uint32_t));
		if (!e->fn_method[k] || !e->stack_key[k])
			return EMBER_ERR_NOMEM;
	}
	for (size_t i = 0; i < w->nthreads; i++) {
		int inserted;
		uint64_t *v = ember__u64map_put(&e->names, (uint64_t)(uint32_t)w->threads[i].tid,
						&inserted);
		if (!v)
			return EMBER_ERR_NOMEM;
		if (inserted)
			*v = i + 1;
	}
	e->descriptor = sym(e, "()L;");
	return e->oom ? EMBER_ERR_NOMEM : 0;
}

int ember__jfr_encode(const ember__jfr_window *w, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	int rc = check_window(w);
	if (rc)
		return rc;
	enc e;
	ember__pbuf b = EMBER_PBUF_INIT, ev = EMBER_PBUF_INIT;
	order *ord = NULL;
	if ((rc = enc_init(&e, w)) != 0)
		goto done;
	/* samples and polls by time; ord[].i >= nevents: poll i - nevents */
	size_t nall = w->nevents + w->npolls;
	ord = malloc((nall ? nall : 1) * sizeof(*ord));
	if (!ord) {
		rc = EMBER_ERR_NOMEM;
		goto done;
	}
	for (size_t i = 0; i < w->nevents; i++)
		ord[i] = (order){w->events[i].time_ns, i};
	for (size_t i = 0; i < w->npolls; i++)
		ord[w->nevents + i] = (order){w->polls[i].start_ns, w->nevents + i};
	qsort(ord, nall, sizeof(*ord), cmp_order);

	/* Header, with sizes and offsets patched at the end. */
	put_bytes(&b, "FLR\0", 4);
	put_be(&b, 2, 2); /* major */
	put_be(&b, 0, 2); /* minor */
	put_be(&b, 0, 8); /* chunk size */
	put_be(&b, 0, 8); /* constant pool offset */
	put_be(&b, 0, 8); /* metadata offset */
	put_be(&b, (uint64_t)w->start_ns, 8);
	put_be(&b, (uint64_t)(w->end_ns - w->start_ns), 8);
	put_be(&b, 0, 8);          /* start ticks */
	put_be(&b, 1000000000, 8); /* ticks per second: ns */
	put_be(&b, 1, 4);          /* features: compressed integers */

	size_t meta_at = b.len;
	if ((rc = write_metadata(&b, &e.arena)) != 0)
		goto done;
	write_settings(w, &b, &ev);
	for (size_t i = 0; i < nall; i++)
		if (ord[i].i < w->nevents)
			write_event(&e, &b, &ev, &w->events[ord[i].i]);
		else
			write_poll(&e, &b, &ev, &w->polls[ord[i].i - w->nevents]);
	size_t cpool_at = b.len;
	write_cpool(&e, &b, &ev);
	if (e.oom || b.failed) {
		rc = EMBER_ERR_NOMEM;
		goto done;
	}
	uint8_t *h = b.data + 8;
	for (int i = 0; i < 3; i++) {
		uint64_t v = i == 0 ? b.len : i == 1 ? cpool_at : meta_at;
		for (int j = 0; j < 8; j++)
			h[i * 8 + j] = (uint8_t)(v >> (56 - 8 * j));
	}
	*out = b.data;
	*out_len = b.len;
	b.data = NULL;
done:
	if (rc == EMBER_ERR_NOMEM)
		ember__error_oom("JFR recording");
	free(ord);
	ember__pb_free(&ev);
	ember__pb_free(&b);
	enc_free(&e);
	return rc;
}
