/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kring.c - reading the newest callchain record of a perf ring (kring.h).
 */
#include "sample/kring.h"

#include <linux/perf_event.h>
#include <stddef.h>

/* The 8-byte word at ring offset pos (wrapping at size, a power of two).
 * The kernel keeps records 8-byte aligned and sized, so a word never
 * straddles the end of the ring. */
typedef uint64_t __attribute__((may_alias)) ember__ring_word;

static uint64_t ring_word(const unsigned char *data, uint64_t size, uint64_t pos)
{
	return *(const ember__ring_word *)(const void *)(data + (pos & (size - 1)));
}

/* A record's header, from its first word (little- or big-endian alike:
 * the struct's own layout). */
static struct perf_event_header ring_header(const unsigned char *data, uint64_t size, uint64_t pos)
{
	union {
		uint64_t w;
		struct perf_event_header h;
	} u = {.w = ring_word(data, size, pos)};
	return u.h;
}

int ember__kring_take(void *ring, uint64_t *out, int max)
{
	struct perf_event_mmap_page *m = ring;
	uint64_t size = m->data_size;
	if (size < 8 || (size & (size - 1)) || (m->data_offset & 7))
		return -1;
	const unsigned char *data = (const unsigned char *)ring + m->data_offset;
	/* acquire: the records below head are written (the kernel's
	 * smp_wmb before it moves head) */
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = m->data_tail; /* ours alone to write */
	uint64_t newest = 0;
	int found = 0;
	for (uint64_t pos = tail; head - pos >= sizeof(struct perf_event_header);) {
		struct perf_event_header h = ring_header(data, size, pos);
		if (h.size < sizeof(h) || (h.size & 7) || h.size > head - pos)
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			newest = pos;
			found = 1;
		}
		pos += h.size;
	}
	int n = found ? 0 : -1;
	if (found) {
		struct perf_event_header h = ring_header(data, size, newest);
		uint64_t nr = h.size >= sizeof(h) + 8 ? ring_word(data, size, newest + sizeof(h)) : 0;
		if (nr > (h.size - sizeof(h) - 8) / 8)
			nr = 0; /* not the layout we asked for */
		for (uint64_t i = 0; i < nr && n < max; i++) {
			uint64_t ip = ring_word(data, size, newest + sizeof(h) + 8 + i * 8);
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
