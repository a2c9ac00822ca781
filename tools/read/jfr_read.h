/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_read.h - a reader for Java Flight Recorder files (format 2.x), as
 * written by the JDK (17 here) and by async-profiler, generic enough to
 * read any event type: it follows the recording's own metadata.
 *
 * A recording is a sequence of chunks. Each chunk holds a 68-byte header
 * (big-endian: magic "FLR\0", version, size, constant pool and metadata
 * offsets, start time in ns and ticks, ticksPerSecond, features), then
 * events: a size, a type id and the fields of that type in the order the
 * metadata declares. Type 0 is the metadata event (a string table and a
 * tree of elements: classes with their fields), type 1 a checkpoint
 * (constant pools: per type, index -> value; checkpoints are chained
 * backwards from the header's offset by relative deltas). Integers are
 * LEB128 varints when the features bit 0 says so, else fixed big-endian.
 * Strings: 0 null, 1 "", 2 constant pool reference, 3 UTF-8, 4 UTF-16
 * chars (varints), 5 Latin-1.
 *
 * The reader indexes each chunk's metadata and constant pools at open
 * (constant pool values are located, not decoded); an event is decoded on
 * demand into a tree of values with constant pool references resolved
 * (each pool entry decoded once and cached). Input is hostile: every
 * length and offset is checked against its event and chunk, recursion is
 * bounded (EMBER_JFR_MAX_DEPTH), reference cycles become null, and the
 * values read (decoded or skipped) are bounded in proportion to the bytes
 * of their event or chunk, so types without fields cannot multiply work. Errors
 * are EMBER_ERR_FORMAT with a message naming the chunk offset and the
 * problem. Not async-signal-safe; not thread-safe per reader.
 */
#ifndef EMBER_JFR_READ_H
#define EMBER_JFR_READ_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_JFR_MAX_DEPTH 32
#define EMBER_JFR_HEADER_SIZE 68

typedef struct ember__jfr ember__jfr;
typedef struct ember__jfr_class ember__jfr_class;

typedef struct ember__jfr_field {
	const char *name;
	int64_t type_id;
	const ember__jfr_class *type; /* NULL if the metadata lacks it (an error at decode) */
	int cp;    /* the value is a constant pool index */
	int array; /* dimension 1 */
} ember__jfr_field;

struct ember__jfr_class {
	int64_t id;
	const char *name;
	const char *super; /* NULL if none */
	int prim;          /* EMBER_JFR_P_* for primitives and java.lang.String, else 0 */
	ember__jfr_field *fields;
	uint32_t nfields;
};

enum {
	EMBER_JFR_P_NONE = 0,
	EMBER_JFR_P_BOOLEAN,
	EMBER_JFR_P_BYTE,
	EMBER_JFR_P_CHAR,
	EMBER_JFR_P_SHORT,
	EMBER_JFR_P_INT,
	EMBER_JFR_P_LONG,
	EMBER_JFR_P_FLOAT,
	EMBER_JFR_P_DOUBLE,
	EMBER_JFR_P_STRING
};

typedef enum ember__jfr_kind {
	EMBER_JFR_NULL = 0,
	EMBER_JFR_INT,    /* boolean, byte, char, short, int, long */
	EMBER_JFR_FLOAT,  /* float, double */
	EMBER_JFR_STRING,
	EMBER_JFR_OBJECT, /* fields in the class's order */
	EMBER_JFR_ARRAY
} ember__jfr_kind;

typedef struct ember__jfr_value {
	ember__jfr_kind kind;
	uint8_t latin1;   /* strings: the bytes are Latin-1 (encoding 5); else UTF-8 */
	uint32_t n;       /* string bytes, object fields or array items */
	const ember__jfr_class *cls; /* objects */
	union {
		int64_t i;
		double f;
		const char *s; /* NUL-terminated, may also hold NULs (Latin-1 data) */
		const struct ember__jfr_value *items;
	} u;
} ember__jfr_value;

typedef struct ember__jfr_chunk_info {
	uint16_t major, minor;
	uint64_t offset, size;
	int64_t start_nanos, duration_nanos, start_ticks, ticks_per_second;
	uint32_t features;
} ember__jfr_chunk_info;

typedef struct ember__jfr_event {
	const ember__jfr_class *type;
	size_t chunk;               /* index of its chunk */
	uint64_t offset;            /* in the file */
	const ember__jfr_value *value; /* an object of `type`; valid until the next event */
} ember__jfr_event;

/*
 * Parses the headers, metadata and constant pool index of every chunk of
 * data[0..len) (borrowed: it must outlive the reader). On success *out is
 * the caller's (ember__jfr_free). EMBER_ERR_FORMAT or EMBER_ERR_NOMEM.
 */
int ember__jfr_open(const uint8_t *data, size_t len, ember__jfr **out);
void ember__jfr_free(ember__jfr *j);

size_t ember__jfr_nchunks(const ember__jfr *j);
const ember__jfr_chunk_info *ember__jfr_chunk(const ember__jfr *j, size_t i);
/* The class named `name` in chunk i, or NULL. */
const ember__jfr_class *ember__jfr_class_by_name(const ember__jfr *j, size_t chunk, const char *name);
/* The class with type id `id` in chunk i, or NULL. */
const ember__jfr_class *ember__jfr_class_by_id(const ember__jfr *j, size_t chunk, int64_t id);

/*
 * The constant of type class_id with key `index` in chunk i's pools,
 * references resolved (decoded once, kept while the reader lives) into
 * *out; a key no pool has is null. The first definition of a key wins.
 * 0, EMBER_ERR_FORMAT or EMBER_ERR_NOMEM.
 */
int ember__jfr_constant(ember__jfr *j, size_t chunk, int64_t class_id, int64_t index,
			ember__jfr_value *out);

/* One compressed integer at *p (before end): LEB128, the ninth byte
 * holding eight bits; *p moves past it. Truncated: *err set to 1, 0. */
uint64_t ember__jfr_varint(const uint8_t **p, const uint8_t *end, int *err);

/*
 * Skips one value at *p, bytes of chunk i's in [*p, end): of field f (an
 * array, a pool key or an inline value) when f is given, else of class
 * cls; *p moves past it. Each value skipped takes one from *budget (the
 * caller's bound on the work). 0 or EMBER_ERR_FORMAT. For rewriters
 * (tools/symbolize/jfr_symbolize.c) that copy what they do not change.
 */
int ember__jfr_skip(ember__jfr *j, size_t chunk, const ember__jfr_field *f,
		    const ember__jfr_class *cls, const uint8_t **p, const uint8_t *end,
		    uint64_t *budget);

/*
 * Decodes the next event (metadata and checkpoints are skipped) into *ev.
 * 1: an event; 0: no more; negative: EMBER_ERR_FORMAT or EMBER_ERR_NOMEM
 * (the reader stops there). Start again with ember__jfr_rewind().
 */
int ember__jfr_next_event(ember__jfr *j, ember__jfr_event *ev);
void ember__jfr_rewind(ember__jfr *j);

/* Field access on an object value; NULL if absent or not an object. */
const ember__jfr_value *ember__jfr_get(const ember__jfr_value *obj, const char *field);
/* An integer field (0 if absent or another kind), a string field (NULL). */
int64_t ember__jfr_get_int(const ember__jfr_value *obj, const char *field);
const char *ember__jfr_get_str(const ember__jfr_value *obj, const char *field);
/* Does class `c` or its super type have the name `name`? */
int ember__jfr_is(const ember__jfr_class *c, const char *name);

#endif
