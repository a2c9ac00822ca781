/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hashmap.h - an open-addressing map from 64-bit keys to 64-bit values,
 * for the agent thread's bookkeeping (PC -> location, tid -> name, ...).
 * Grows by doubling at 70% load. Not for the signal handler (it mallocs).
 */
#ifndef EMBER_HASHMAP_H
#define EMBER_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ember__u64map_slot {
	uint64_t key, value;
	int used;
} ember__u64map_slot;

typedef struct ember__u64map {
	ember__u64map_slot *slots;
	size_t cap, n;
} ember__u64map;

#define EMBER_U64MAP_INIT {NULL, 0, 0}

/* A good 64-bit mix (splitmix64 finalizer). */
uint64_t ember__hash64(uint64_t x);
/* FNV-1a style hash of bytes, mixed. */
uint64_t ember__hash_bytes(const void *data, size_t len, uint64_t seed);

/* Pointer to the value for key, or NULL. */
uint64_t *ember__u64map_get(const ember__u64map *m, uint64_t key);
/* Pointer to the value for key, inserted as 0 (and *inserted = 1) if
 * absent. NULL on OOM. */
uint64_t *ember__u64map_put(ember__u64map *m, uint64_t key, int *inserted);
void ember__u64map_free(ember__u64map *m);

#endif
