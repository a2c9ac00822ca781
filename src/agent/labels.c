/* SPDX-License-Identifier: Apache-2.0 */
/*
 * labels.c - the public per-thread label API: ember_labels_push/pop.
 *
 * Runs on application threads. The first push on a thread allocates its
 * label block (once); after that a push is a bounded copy into the block
 * and a pop is a decrement: no system call, no lock. A thread-specific
 * destructor frees the block at thread exit, after unpublishing it, so a
 * signal arriving during the exit never reads freed memory.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "sample/labels.h"
#include "util/error.h"

static pthread_key_t free_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void free_block(void *p)
{
	ember__tls_labels = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	free(p);
}

static void make_key(void)
{
	pthread_key_create(&free_key, free_block);
}

static ember__tlabels *block(void)
{
	ember__tlabels *t = ember__tls_labels;
	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_once(&key_once, make_key);
	pthread_setspecific(free_key, t);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ember__tls_labels = t;
	return t;
}

EMBER_API int ember_labels_push(const char *key, const char *value)
{
	if (!key || !*key || !value)
		return ember__error(EMBER_ERR_INVALID, "a label needs a non-empty key and a value");
	size_t kl = strlen(key), vl = strlen(value);
	if (kl > EMBER__LABEL_KEY_MAX || vl > EMBER__LABEL_VALUE_MAX)
		return ember__error(EMBER_ERR_INVALID,
				    "label %.40s is too long (key at most %d bytes, value at most %d)",
				    key, EMBER__LABEL_KEY_MAX, EMBER__LABEL_VALUE_MAX);
	ember__tlabels *t = block();
	if (!t)
		return ember__error_oom("thread labels");
	uint32_t n = t->n;
	if (n >= EMBER__LABELS_MAX)
		return ember__error(EMBER_ERR_INVALID, "more than %d labels set on this thread",
				    EMBER__LABELS_MAX);
	ember__label_ent *e = &t->e[n];
	memcpy(e->key, key, kl);
	memcpy(e->value, value, vl);
	e->klen = (uint8_t)kl;
	e->vlen = (uint8_t)vl;
	/* The entry is complete before the handler can count it. */
	__atomic_signal_fence(__ATOMIC_RELEASE);
	t->n = n + 1;
	return 0;
}

EMBER_API void ember_labels_pop(void)
{
	ember__tlabels *t = ember__tls_labels;
	if (t && t->n > 0)
		t->n = t->n - 1;
}

EMBER_API unsigned ember_labels_depth(void)
{
	ember__tlabels *t = ember__tls_labels;
	return t ? t->n : 0;
}

EMBER_API void ember_labels_pop_to(unsigned depth)
{
	ember__tlabels *t = ember__tls_labels;
	if (t && t->n > depth)
		t->n = depth;
}
