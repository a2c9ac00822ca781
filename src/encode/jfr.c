/* SPDX-License-Identifier: Apache-2.0 */
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
 * The metadata event, which declares every type the chunk uses, is written
 * by jfr_metadata.c; the type ids, the output primitives and the string
 * table both files use are in jfr_internal.h. Not async-signal-safe
 * (allocates).
 */
#include "encode/jfr.h"
#include "encode/jfr_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "encode/protobuf.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/hashmap.h"

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
#define ACC_NATIVE 0x100

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
	/* the mappings address placeholders lie in, for emberprof.NativeMapping */
	const ember__mapping **unnamed_maps;
	const char **unnamed_mods; /* each one's module (class) name */
	uint32_t nunnamed_maps, cap_unnamed_maps;
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

/* Remembers that a placeholder lies in mapping m of module class `cls`
 * (the same file at the same place once, whichever profile has it). */
static void note_unnamed_map(enc *e, const ember__mapping *m, uint32_t cls)
{
	for (uint32_t i = 0; i < e->nunnamed_maps; i++) {
		const ember__mapping *o = e->unnamed_maps[i];
		if (o == m || (o->start == m->start && o->limit == m->limit &&
			       o->offset == m->offset && !strcmp(o->file ? o->file : "", m->file ? m->file : "")))
			return;
	}
	if (e->nunnamed_maps == e->cap_unnamed_maps) {
		uint32_t ncap = e->cap_unnamed_maps ? e->cap_unnamed_maps * 2 : 16;
		const ember__mapping **nm = realloc(e->unnamed_maps, ncap * sizeof(*nm));
		const char **nn = nm ? realloc(e->unnamed_mods, ncap * sizeof(*nn)) : NULL;
		if (nm)
			e->unnamed_maps = nm;
		if (!nn) {
			e->oom = 1;
			return;
		}
		e->unnamed_mods = nn;
		e->cap_unnamed_maps = ncap;
	}
	e->unnamed_maps[e->nunnamed_maps] = m;
	e->unnamed_mods[e->nunnamed_maps++] = cls ? e->classes.v[cls - 1] : "";
}

/*
 * A method for a location no symbol names: "0xOFFSET", its offset in the
 * module's file, in the module's class; its mapping is noted for an
 * emberprof.NativeMapping event (what `emberprof symbolize` reads).
 */
static uint32_t address_method(enc *e, const ember__profile *p, const ember__location *loc)
{
	uint64_t a = loc->address;
	uint32_t cls = module_class(e, p, loc);
	if (loc->mapping && loc->mapping <= p->nmappings) {
		const ember__mapping *m = &p->mappings[loc->mapping - 1];
		if (a >= m->start) {
			a = a - m->start + m->offset;
			if (m->file && m->file[0] == '/')
				note_unnamed_map(e, m, cls);
		}
	}
	char buf[24];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, a);
	char *s = ember__arena_strdup(&e->arena, buf);
	if (!s) {
		e->oom = 1;
		return 0;
	}
	return method_key(e, cls, s, FRAME_NATIVE);
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

/*
 * Is name only the symbolizer's stand-in for a function of a stripped
 * module, "<file name>+0xSTART" (known by its .eh_frame entry alone)? Such
 * a frame is written as an address (address_method) instead, which
 * `emberprof symbolize` can name from a debug file; the start alone could
 * give neither the line nor the inlined frames.
 */
static int start_placeholder(const ember__profile *p, const ember__location *loc,
			     const char *name)
{
	const char *file = loc->mapping && loc->mapping <= p->nmappings
				   ? p->mappings[loc->mapping - 1].file
				   : NULL;
	if (!file || file[0] != '/')
		return 0;
	const char *base = strrchr(file, '/') + 1;
	size_t n = strlen(base);
	return n && !strncmp(name, base, n) && !strncmp(name + n, "+0x", 3) && name[n + 3] &&
	       strspn(name + n + 3, "0123456789abcdef") == strlen(name + n + 3);
}

static int named(const ember__profile *p, const ember__location *loc, const ember__line *l)
{
	const char *name = l->function && l->function <= p->nfunctions
				   ? p->functions[l->function - 1].name
				   : NULL;
	return name && name[0] && !start_placeholder(p, loc, name);
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
			uint32_t m = l && named(p, loc, l) ? function_method(e, kind, p, loc, l->function)
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

/* The stack trace pool's entries into st, which interns the methods,
 * classes and symbols (and notes the mappings of placeholders). */
static void render_stacks(enc *e, ember__pbuf *st)
{
	st->len = 0;
	for (uint32_t i = 0; i < e->nstacks; i++) {
		put_var(st, i + 1);
		write_stack(e, st, e->stacks[i].kind, e->stacks[i].sample);
	}
}

/* One emberprof.NativeMapping event per mapping a placeholder lies in. */
static void write_unnamed_maps(enc *e, ember__pbuf *b, ember__pbuf *ev)
{
	for (uint32_t i = 0; i < e->nunnamed_maps; i++) {
		const ember__mapping *m = e->unnamed_maps[i];
		ev->len = 0;
		put_var(ev, T_NATIVE_MAPPING);
		put_var(ev, 0); /* startTicks: the window's start */
		put_str(ev, e->unnamed_mods[i]);
		put_str(ev, m->file);
		put_str(ev, m->build_id ? m->build_id : "");
		put_var(ev, m->start);
		put_var(ev, m->limit);
		put_var(ev, m->offset);
		if (ev->failed)
			b->failed = 1;
		put_event(b, ev);
	}
}

/* The checkpoint event: every pool the events refer to; st holds the
 * stack traces render_stacks wrote. */
static void write_cpool(enc *e, ember__pbuf *b, ember__pbuf *st)
{
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
	free(e->unnamed_maps);
	free(e->unnamed_mods);
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
	ember__pbuf b = EMBER_PBUF_INIT, ev = EMBER_PBUF_INIT, st = EMBER_PBUF_INIT;
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
	if ((rc = ember__jfr_write_metadata(&b, &e.arena)) != 0)
		goto done;
	write_settings(w, &b, &ev);
	for (size_t i = 0; i < nall; i++)
		if (ord[i].i < w->nevents)
			write_event(&e, &b, &ev, &w->events[ord[i].i]);
		else
			write_poll(&e, &b, &ev, &w->polls[ord[i].i - w->nevents]);
	render_stacks(&e, &st);
	write_unnamed_maps(&e, &b, &ev);
	size_t cpool_at = b.len;
	write_cpool(&e, &b, &st);
	if (st.failed)
		b.failed = 1;
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
	ember__pb_free(&st);
	ember__pb_free(&b);
	enc_free(&e);
	return rc;
}
