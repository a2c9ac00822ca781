/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kring.c - reading the newest callchain record of a perf ring (kring.h).
 */
#include "sample/kring.h"

#include <linux/perf_event.h>
#include <stddef.h>

/* n bytes at ring offset pos (wrapping at size, a power of two) to dst. */
static void ring_copy(const unsigned char *data, uint64_t size, uint64_t pos, void *dst, size_t n)
{
	unsigned char *d = dst;
	for (size_t i = 0; i < n; i++)
		d[i] = data[(pos + i) & (size - 1)];
}

int ember__kring_take(void *ring, uint64_t *out, int max)
{
	struct perf_event_mmap_page *m = ring;
	uint64_t size = m->data_size;
	if (!size || (size & (size - 1)))
		return -1;
	const unsigned char *data = (const unsigned char *)ring + m->data_offset;
	/* acquire: the records below head are written (the kernel's
	 * smp_wmb before it moves head) */
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = m->data_tail; /* ours alone to write */
	uint64_t newest = 0;
	int found = 0;
	for (uint64_t pos = tail; head - pos >= sizeof(struct perf_event_header);) {
		struct perf_event_header h;
		ring_copy(data, size, pos, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - pos)
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			newest = pos;
			found = 1;
		}
		pos += h.size;
	}
	int n = found ? 0 : -1;
	if (found) {
		struct perf_event_header h;
		uint64_t nr = 0;
		ring_copy(data, size, newest, &h, sizeof(h));
		if (h.size >= sizeof(h) + sizeof(nr))
			ring_copy(data, size, newest + sizeof(h), &nr, sizeof(nr));
		if (nr > (h.size - sizeof(h) - sizeof(nr)) / sizeof(uint64_t))
			nr = 0; /* not the layout we asked for */
		for (uint64_t i = 0; i < nr && n < max; i++) {
			uint64_t ip;
			ring_copy(data, size, newest + sizeof(h) + sizeof(nr) + i * sizeof(ip), &ip,
				  sizeof(ip));
			if (ip >= (uint64_t)PERF_CONTEXT_MAX)
				continue; /* PERF_CONTEXT_KERNEL and the like */
			out[n++] = ip;
		}
	}
	/* release: our reads of the records are done before the kernel may
	 * write over them */
	__atomic_store_n(&m->data_tail, head, __ATOMIC_RELEASE);
	return n;
}
