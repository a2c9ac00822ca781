/* SPDX-License-Identifier: Apache-2.0 */
/*
 * arena.h - a bump allocator for data that is freed all at once (a window's
 * profile, a module's symbol strings). Chunks come from malloc; not for use
 * in a signal handler.
 */
#ifndef EMBER_ARENA_H
#define EMBER_ARENA_H

#include <stddef.h>

typedef struct ember__arena_chunk ember__arena_chunk;

typedef struct ember__arena {
	ember__arena_chunk *head;
	size_t used;  /* bytes used in head */
	size_t total; /* bytes handed out, all chunks */
} ember__arena;

#define EMBER_ARENA_INIT {NULL, 0, 0}

/* Returns zeroed, 16-byte aligned memory owned by the arena, or NULL. */
void *ember__arena_alloc(ember__arena *a, size_t size);
/* Copies n bytes and adds a NUL. NULL on OOM. */
char *ember__arena_strndup(ember__arena *a, const char *s, size_t n);
char *ember__arena_strdup(ember__arena *a, const char *s);
/* Frees every chunk; the arena is empty and reusable afterwards. */
void ember__arena_release(ember__arena *a);

#endif
