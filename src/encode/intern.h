/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intern.h - a table of distinct byte strings, each with the index of its
 * first appearance: pprof's string table and the OTLP dictionary's tables
 * (strings, functions, locations... as encoded messages). Open addressing
 * over a power-of-two slot array, at most half full. Index 0 is the empty
 * string, as both formats require.
 *
 * Owned by one encoder; not thread-safe, not async-signal-safe.
 */
#ifndef EMBER_INTERN_H
#define EMBER_INTERN_H

#include <stddef.h>
#include <stdint.h>

typedef struct ember__intern_ent {
	const uint8_t *data; /* borrowed, or the table's copy (owns) */
	size_t len;
	uint64_t hash;
} ember__intern_ent;

typedef struct ember__intern {
	ember__intern_ent *ents; /* index -> bytes; ents[0] is "" */
	uint32_t n, cap;
	uint32_t *slots; /* 0 = empty, else index + 1 */
	size_t nslots;
	int owns;        /* the table copies what it adds (else the caller's bytes must outlive it) */
	int failed;      /* out of memory: indices returned since are meaningless */
} ember__intern;

/* An empty table (just "") with room for `cap` entries before it grows;
 * `owns`: copy the bytes added. 0 or -1 (out of memory: free it anyway). */
int ember__intern_init(ember__intern *t, uint32_t cap, int owns);

/* Frees the table (and its copies). */
void ember__intern_free(ember__intern *t);

/* The index of d[0..len), added if new; -1, and t->failed set, on out of
 * memory or past INT32_MAX entries. */
int64_t ember__intern_bytes(ember__intern *t, const void *d, size_t len);

#endif
