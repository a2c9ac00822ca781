/* SPDX-License-Identifier: Apache-2.0 */
/*
 * labels.h - per-thread dynamic labels (ember_labels_push/pop) as the
 * signal handler sees them.
 *
 * Each thread that sets a label gets a fixed-size block holding a stack of
 * key/value pairs, reached through one initial-exec thread-local pointer.
 * The owning thread is the only writer: it writes an entry completely,
 * then publishes it by raising the count behind a signal fence, so the
 * handler (which interrupts that same thread) always sees whole entries.
 * The handler copies the active entries, packed, into the sample's slot.
 */
#ifndef EMBER_LABELS_H
#define EMBER_LABELS_H

#include <stddef.h>
#include <stdint.h>

#define EMBER__LABELS_MAX 8
#define EMBER__LABEL_KEY_MAX 63
#define EMBER__LABEL_VALUE_MAX 127
/* Bytes a sample slot reserves for packed labels. */
#define EMBER__LABEL_BYTES 256

typedef struct ember__label_ent {
	uint8_t klen, vlen;
	char key[EMBER__LABEL_KEY_MAX];
	char value[EMBER__LABEL_VALUE_MAX];
} ember__label_ent;

typedef struct ember__tlabels {
	volatile uint32_t n; /* active entries, innermost last */
	ember__label_ent e[EMBER__LABELS_MAX];
} ember__tlabels;

extern __thread ember__tlabels *ember__tls_labels __attribute__((tls_model("initial-exec")));

/*
 * Copies the calling thread's active labels into dst as a sequence of
 * [klen][key][vlen][value] records, stopping before a record that would
 * not fit. Returns the bytes written; sets *truncated if any label was
 * left out. Async-signal-safe.
 */
size_t ember__labels_snapshot(uint8_t *dst, size_t cap, int *truncated);

#endif
