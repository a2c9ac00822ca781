/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_metadata.c - the metadata event of the chunk the JFR writer makes
 * (jfr_internal.h; the chunk itself: jfr.c).
 *
 * The metadata event is a string table and a tree of elements (root ->
 * metadata -> class -> field -> annotation, and root -> region), each an
 * index into the string table, attributes as (key, value) index pairs, and
 * children. It declares every type the chunk uses, with the annotations
 * (Label, Category, Timestamp, DataAmount...) the jfr tool and JMC read.
 * The types are the table classes[] below; the tree is built from it in
 * the encoder's arena for each chunk. Not async-signal-safe (allocates).
 */
#include "encode/jfr_internal.h"

#include <stdio.h>
#include <string.h>

#include "emberprof.h"
#include "util/arena.h"

#define METADATA_ID 0x7fffffff /* any id; distinct from the JDK's own */

/* ---- the metadata, as tables ---- */

enum { F_CPOOL = 1, F_ARRAY = 2, F_TICKS = 4, F_BYTES = 8, F_ADDRESS = 16, F_SPAN = 32 };
enum { C_PLAIN = 0, C_SIMPLE, C_EVENT, C_ANNOTATION };

/* The strings are arrays, not pointers: a table of pointers needs a
 * relocation each, which the loader applies in every process the library
 * is loaded into, writing 8 KiB of pages for a table most processes never
 * read (util/hotpage.h says what a page costs there). An empty string is
 * "none". At most JFR_STR - 1 bytes each (the longest here is 24): the
 * compiler warns about a longer one, but not about one of exactly
 * JFR_STR, which would lose its terminator. */
#define JFR_STR 32

typedef struct fdef {
	char name[JFR_STR];
	int type;
	unsigned flags;
	char label[JFR_STR];
} fdef;

typedef struct cdef {
	char name[JFR_STR];
	int id;
	int kind;
	char label[JFR_STR];
	int content_type; /* carries @ContentType: a unit annotation */
	char cat[2][JFR_STR];
	fdef fields[8];
} cdef;

#define START_TIME {"startTime", T_LONG, F_TICKS, "Start Time"}

static const cdef classes[] = {
	{"boolean", T_BOOLEAN, 0, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"char", T_CHAR, 0, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"float", T_FLOAT, 0, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"double", T_DOUBLE, 0, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"byte", T_BYTE, 0, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"short", T_SHORT, 0, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"int", T_INT, 0, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"long", T_LONG, 0, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"java.lang.String", T_STRING, 0, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"java.lang.Class", T_CLASS, 0, "Java Class", 0, {"", ""},
	 {{"classLoader", T_CLASS_LOADER, F_CPOOL, "Class Loader"},
	  {"name", T_SYMBOL, F_CPOOL, "Name"},
	  {"package", T_PACKAGE, F_CPOOL, "Package"},
	  {"modifiers", T_INT, 0, "Access Modifiers"}}},
	{"java.lang.Thread", T_THREAD, 0, "Thread", 0, {"", ""},
	 {{"osName", T_STRING, 0, "OS Thread Name"},
	  {"osThreadId", T_LONG, 0, "OS Thread Id"},
	  {"javaName", T_STRING, 0, "Java Thread Name"},
	  {"javaThreadId", T_LONG, 0, "Java Thread Id"},
	  {"group", T_THREAD_GROUP, F_CPOOL, "Java Thread Group"}}},
	{"jdk.types.ThreadGroup", T_THREAD_GROUP, 0, "Thread Group", 0, {"", ""},
	 {{"parent", T_THREAD_GROUP, F_CPOOL, "Parent"}, {"name", T_STRING, 0, "Name"}}},
	{"jdk.types.ClassLoader", T_CLASS_LOADER, 0, "Java Class Loader", 0, {"", ""},
	 {{"type", T_CLASS, F_CPOOL, "Type"}, {"name", T_SYMBOL, F_CPOOL, "Name"}}},
	{"jdk.types.FrameType", T_FRAME_TYPE, C_SIMPLE, "Frame type", 0, {"", ""},
	 {{"description", T_STRING, 0, "Description"}}},
	{"jdk.types.ThreadState", T_THREAD_STATE, C_SIMPLE, "Java Thread State", 0, {"", ""},
	 {{"name", T_STRING, 0, "Name"}}},
	{"jdk.types.StackTrace", T_STACK_TRACE, 0, "Stacktrace", 0, {"", ""},
	 {{"truncated", T_BOOLEAN, 0, "Truncated"},
	  {"frames", T_STACK_FRAME, F_ARRAY, "Stack Frames"}}},
	{"jdk.types.StackFrame", T_STACK_FRAME, 0, "", 0, {"", ""},
	 {{"method", T_METHOD, F_CPOOL, "Java Method"},
	  {"lineNumber", T_INT, 0, "Line Number"},
	  {"bytecodeIndex", T_INT, 0, "Bytecode Index"},
	  {"type", T_FRAME_TYPE, F_CPOOL, "Frame Type"}}},
	{"jdk.types.Method", T_METHOD, 0, "Java Method", 0, {"", ""},
	 {{"type", T_CLASS, F_CPOOL, "Type"},
	  {"name", T_SYMBOL, F_CPOOL, "Name"},
	  {"descriptor", T_SYMBOL, F_CPOOL, "Descriptor"},
	  {"modifiers", T_INT, 0, "Access Modifiers"},
	  {"hidden", T_BOOLEAN, 0, "Hidden"}}},
	{"jdk.types.Package", T_PACKAGE, 0, "Package", 0, {"", ""}, {{"name", T_SYMBOL, F_CPOOL, "Name"}}},
	{"jdk.types.Symbol", T_SYMBOL, C_SIMPLE, "Symbol", 0, {"", ""}, {{"string", T_STRING, 0, "String"}}},
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
	{"profiler.Malloc", T_MALLOC, C_EVENT, "Malloc", 0, {"Java Application", ""},
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
	/* The mapping of a module some frame without a name lies in (jfr.h):
	 * what `emberprof symbolize` needs to name it later */
	{"emberprof.NativeMapping", T_NATIVE_MAPPING, C_EVENT, "Native Mapping", 0,
	 {"emberprof", "Symbolization"},
	 {START_TIME,
	  {"module", T_STRING, 0, "Module"},
	  {"path", T_STRING, 0, "Path"},
	  {"buildId", T_STRING, 0, "Build Id"},
	  {"start", T_LONG, F_ADDRESS, "Start Address"},
	  {"end", T_LONG, F_ADDRESS, "End Address"},
	  {"offset", T_LONG, 0, "File Offset"}}},
	/* The recording and its settings, as async-profiler writes them: its
	 * converter reads jdk.ActiveSetting {name, value} (JfrReader
	 * readActiveSetting: the fields up to `id` are numbers). */
	{"jdk.ActiveRecording", T_ACTIVE_RECORDING, C_EVENT, "Flight Recording", 0,
	 {"Flight Recorder", ""},
	 {START_TIME,
	  {"id", T_LONG, 0, "Id"},
	  {"name", T_STRING, 0, "Name"},
	  {"destination", T_STRING, 0, "Destination"},
	  {"maxAge", T_LONG, 0, "Max Age"},
	  {"maxSize", T_LONG, F_BYTES, "Max Size"},
	  {"recordingStart", T_LONG, 0, "Start Time"},
	  {"recordingDuration", T_LONG, 0, "Recording Duration"}}},
	{"jdk.ActiveSetting", T_ACTIVE_SETTING, C_EVENT, "Recording Setting", 0,
	 {"Flight Recorder", ""},
	 {START_TIME,
	  {"id", T_LONG, 0, "Event Id"},
	  {"name", T_STRING, 0, "Setting Name"},
	  {"value", T_STRING, 0, "Setting Value"}}},
	{"jdk.jfr.Label", T_LABEL, C_ANNOTATION, "", 0, {"", ""}, {{"value", T_STRING, 0, ""}}},
	{"jdk.jfr.Category", T_CATEGORY, C_ANNOTATION, "", 0, {"", ""},
	 {{"value", T_STRING, F_ARRAY, ""}}},
	{"jdk.jfr.ContentType", T_CONTENT_TYPE, C_ANNOTATION, "", 0, {"", ""}, {{"", 0, 0, ""}}},
	{"jdk.jfr.Timestamp", T_TIMESTAMP, C_ANNOTATION, "Timestamp", 1, {"", ""},
	 {{"value", T_STRING, 0, ""}}},
	{"jdk.jfr.Timespan", T_TIMESPAN, C_ANNOTATION, "Timespan", 1, {"", ""},
	 {{"value", T_STRING, 0, ""}}},
	{"jdk.jfr.DataAmount", T_DATA_AMOUNT, C_ANNOTATION, "Data Amount", 1, {"", ""},
	 {{"value", T_STRING, 0, ""}}},
	{"jdk.jfr.MemoryAddress", T_MEMORY_ADDRESS, C_ANNOTATION, "Memory Address", 1, {"", ""}, {{"", 0, 0, ""}}},
	{"jdk.jfr.Unsigned", T_UNSIGNED, C_ANNOTATION, "Unsigned Value", 1, {"", ""}, {{"", 0, 0, ""}}},
};

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
	if (f->label[0])
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
	if (c->label[0])
		annotation(m, e, T_LABEL, c->label);
	if (c->content_type)
		annotation(m, e, T_CONTENT_TYPE, NULL);
	if (c->cat[0][0]) {
		mnode *a = node(m, e, "annotation");
		attr_int(m, a, "class", T_CATEGORY);
		attr(m, a, "value-0", c->cat[0]);
		if (c->cat[1][0])
			attr(m, a, "value-1", c->cat[1]);
	}
	for (const fdef *f = c->fields; f < c->fields + 8 && f->name[0]; f++)
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

int ember__jfr_write_metadata(ember__pbuf *b, ember__arena *arena)
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
