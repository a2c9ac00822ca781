/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_kring.c - the kernel frames of a perf sample read from a perf ring
 * (sample/kring.h), on a ring laid out as the kernel lays it out (the
 * metadata page, then a power-of-two data area of 8-byte records): the
 * newest sample record is taken, context markers are dropped, records
 * that wrap the ring's end are read whole, the tail moves past every
 * record, and a ring without a sample record says so.
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "sample/kring.h"

#define DATA_SIZE 256u

static union {
	struct perf_event_mmap_page meta;
	uint8_t bytes[4096 + DATA_SIZE];
} ring __attribute__((aligned(4096)));

static void reset(uint64_t at)
{
	memset(&ring, 0, sizeof(ring));
	ring.meta.data_offset = 4096;
	ring.meta.data_size = DATA_SIZE;
	ring.meta.data_head = ring.meta.data_tail = at;
}

static void put_word(uint64_t pos, uint64_t w)
{
	memcpy(ring.bytes + 4096 + (pos % DATA_SIZE), &w, 8);
}

/* Appends a record at the head: a sample with a callchain of n entries,
 * or (type != SAMPLE) a record of n payload words. */
static void put_record(uint32_t type, const uint64_t *w, uint64_t n)
{
	uint64_t pos = ring.meta.data_head;
	int sample = type == PERF_RECORD_SAMPLE;
	struct perf_event_header h = {type, 0, (uint16_t)(8 * (1 + sample + n))};
	uint64_t hw;
	memcpy(&hw, &h, 8);
	put_word(pos, hw);
	if (sample)
		put_word(pos + 8, n);
	for (uint64_t i = 0; i < n; i++)
		put_word(pos + 8 * (1 + sample + i), w[i]);
	ring.meta.data_head = pos + h.size;
}

static void test_newest_sample(void)
{
	uint64_t out[8];
	reset(0);
	CHECK_EQ_INT(ember__kring_take(&ring, out, 8), -1); /* empty */
	uint64_t old[] = {(uint64_t)PERF_CONTEXT_KERNEL, 0xffffffff81000001ull};
	uint64_t lost[] = {1, 2};
	uint64_t now[] = {(uint64_t)PERF_CONTEXT_KERNEL, 0xffffffff81000010ull,
			  0xffffffff81000020ull, 0xffffffff81000030ull};
	put_record(PERF_RECORD_SAMPLE, old, 2);
	put_record(PERF_RECORD_LOST, lost, 2);
	put_record(PERF_RECORD_SAMPLE, now, 4);
	CHECK_EQ_INT(ember__kring_take(&ring, out, 8), 3);
	CHECK(out[0] == now[1] && out[1] == now[2] && out[2] == now[3]);
	CHECK_EQ_INT(ring.meta.data_tail, ring.meta.data_head);
	/* everything taken: nothing for the next overflow */
	CHECK_EQ_INT(ember__kring_take(&ring, out, 8), -1);
	/* a user-mode overflow: an empty callchain, zero frames */
	put_record(PERF_RECORD_SAMPLE, NULL, 0);
	CHECK_EQ_INT(ember__kring_take(&ring, out, 8), 0);
	/* no sample record, only another kind: none, and the tail moves on */
	put_record(PERF_RECORD_LOST, lost, 2);
	CHECK_EQ_INT(ember__kring_take(&ring, out, 8), -1);
	CHECK_EQ_INT(ring.meta.data_tail, ring.meta.data_head);
}

static void test_wrap_and_max(void)
{
	uint64_t out[8];
	reset(DATA_SIZE - 16); /* the record starts two words before the end */
	uint64_t ips[6];
	for (int i = 0; i < 6; i++)
		ips[i] = 0xffffffff82000000ull + (uint64_t)i;
	put_record(PERF_RECORD_SAMPLE, ips, 6);
	CHECK_EQ_INT(ember__kring_take(&ring, out, 8), 6);
	for (int i = 0; i < 6; i++)
		CHECK(out[i] == ips[i]);
	put_record(PERF_RECORD_SAMPLE, ips, 6);
	CHECK_EQ_INT(ember__kring_take(&ring, out, 2), 2); /* at most max */
	CHECK(out[0] == ips[0] && out[1] == ips[1]);
	/* a record cut short (its size past the head): not read */
	uint64_t pos = ring.meta.data_head;
	put_record(PERF_RECORD_SAMPLE, ips, 6);
	ring.meta.data_head = pos + 16;
	CHECK_EQ_INT(ember__kring_take(&ring, out, 8), -1);
}

int main(void)
{
	RUN(test_newest_sample);
	RUN(test_wrap_and_max);
	return CHECK_DONE();
}
