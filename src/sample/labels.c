/* SPDX-License-Identifier: Apache-2.0 */
/*
 * labels.c - the handler's view of per-thread labels (labels.h).
 * Async-signal-safe: reads only the calling thread's own block.
 */
#include "sample/labels.h"

__thread ember__tlabels *ember__tls_labels __attribute__((tls_model("initial-exec")));

size_t ember__labels_snapshot(uint8_t *dst, size_t cap, int *truncated)
{
	ember__tlabels *t = ember__tls_labels;
	if (!t)
		return 0;
	uint32_t n = t->n;
	__atomic_signal_fence(__ATOMIC_ACQUIRE);
	if (n > EMBER__LABELS_MAX)
		n = EMBER__LABELS_MAX;
	size_t used = 0;
	for (uint32_t i = 0; i < n; i++) {
		const ember__label_ent *e = &t->e[i];
		size_t need = 2u + e->klen + e->vlen;
		if (e->klen > EMBER__LABEL_KEY_MAX || e->vlen > EMBER__LABEL_VALUE_MAX ||
		    used + need > cap) {
			*truncated = 1;
			break;
		}
		dst[used++] = e->klen;
		for (uint8_t k = 0; k < e->klen; k++)
			dst[used++] = (uint8_t)e->key[k];
		dst[used++] = e->vlen;
		for (uint8_t k = 0; k < e->vlen; k++)
			dst[used++] = (uint8_t)e->value[k];
	}
	return used;
}
