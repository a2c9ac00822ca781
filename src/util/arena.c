/* SPDX-License-Identifier: Apache-2.0 */
/*
 * arena.c - bump allocation in malloc'd chunks. Large requests get a chunk
 * of their own so that a big array does not waste the tail of a chunk.
 */
#include "util/arena.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK 16384u

struct ember__arena_chunk {
	ember__arena_chunk *next;
	size_t size;
	_Alignas(16) unsigned char data[];
};

void *ember__arena_alloc(ember__arena *a, size_t size)
{
	size = (size + 15u) & ~(size_t)15u;
	if (size == 0)
		size = 16;
	if (!a->head || a->head->size - a->used < size) {
		size_t csize = size > ARENA_CHUNK / 4 ? size : ARENA_CHUNK;
		ember__arena_chunk *c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->size = csize;
		if (csize != ARENA_CHUNK && a->head) {
			/* Oversized: link behind the head so the head keeps its tail. */
			c->next = a->head->next;
			a->head->next = c;
			memset(c->data, 0, size);
			a->total += size;
			return c->data;
		}
		c->next = a->head;
		a->head = c;
		a->used = 0;
	}
	void *p = a->head->data + a->used;
	a->used += size;
	a->total += size;
	memset(p, 0, size);
	return p;
}

char *ember__arena_strndup(ember__arena *a, const char *s, size_t n)
{
	char *d = ember__arena_alloc(a, n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *ember__arena_strdup(ember__arena *a, const char *s)
{
	return ember__arena_strndup(a, s ? s : "", s ? strlen(s) : 0);
}

void ember__arena_release(ember__arena *a)
{
	ember__arena_chunk *c = a->head;
	while (c) {
		ember__arena_chunk *n = c->next;
		free(c);
		c = n;
	}
	a->head = NULL;
	a->used = 0;
	a->total = 0;
}
