/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_internal.h - what the JFR writer's two files share: jfr.c (the
 * chunk: header, settings, events, constant pools) and jfr_metadata.c
 * (the metadata event declaring every type the chunk uses). The type ids,
 * the output primitives on protobuf.h's growing buffer (compressed
 * integers, strings, event sizes patched in place) and the string table
 * both intern into. Private to these two files; not async-signal-safe
 * (allocates).
 */
#ifndef EMBER_ENCODE_JFR_INTERNAL_H
#define EMBER_ENCODE_JFR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/jfr_varint.h"
#include "encode/protobuf.h"
#include "util/arena.h"
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
	T_NATIVE_MAPPING = 151,
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

/* ---- output primitives (on protobuf.h's growing buffer) ---- */

static inline void put_u8(ember__pbuf *b, uint8_t v)
{
	if (ember__pb_reserve(b, 1) == 0)
		b->data[b->len++] = v;
}

static inline void put_be(ember__pbuf *b, uint64_t v, int bytes)
{
	if (ember__pb_reserve(b, (size_t)bytes))
		return;
	for (int i = bytes - 1; i >= 0; i--)
		b->data[b->len++] = (uint8_t)(v >> (8 * i));
}

/* A compressed integer: at most nine bytes, the ninth holding eight bits. */
static inline void put_var(ember__pbuf *b, uint64_t v)
{
	ember__jfr_put_varint(b, v);
}

static inline void put_bytes(ember__pbuf *b, const void *d, size_t n)
{
	if (n && ember__pb_reserve(b, n) == 0) {
		memcpy(b->data + b->len, d, n);
		b->len += n;
	}
}

/* A string field: null, empty, or UTF-8 with its byte length. */
static inline void put_str(ember__pbuf *b, const char *s)
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
static inline size_t reserve_size(ember__pbuf *b)
{
	size_t at = b->len;
	if (ember__pb_reserve(b, 5) == 0)
		b->len += 5;
	return at;
}

/* Writes len - at into the five bytes at `at`: a varint padded with
 * continuation bytes, which readers accept. Fails the buffer if it does
 * not fit the 31 bits an event size may have. */
static inline void patch_size(ember__pbuf *b, size_t at)
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
static inline void put_event(ember__pbuf *b, const ember__pbuf *ev)
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
static inline uint32_t intern(strtab *t, const char *s)
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

static inline void strtab_free(strtab *t)
{
	ember__u64map_free(&t->map);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* ---- the metadata event (jfr_metadata.c) ---- */

/* Appends the metadata event declaring every type the chunk uses; its
 * strings and element tree live in `arena`. 0 or EMBER_ERR_NOMEM. */
int ember__jfr_write_metadata(ember__pbuf *b, ember__arena *arena);

#endif
