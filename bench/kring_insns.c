/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kring_insns.c - instructions the signal handler spends on a sample's
 * kernel frames (ember__kring_take, src/sample/kring.c), counted by
 * bench/kring_insns.sh under valgrind --tool=callgrind.
 *
 *     ember_bench_kring_insns FRAMES N
 *
 * Lays out a ring as the kernel does (metadata page, one data page) with
 * one sample record of FRAMES kernel IPs after the PERF_CONTEXT_KERNEL
 * marker, as the perf engine's events record them, and takes it N times
 * (moving the tail back to the record before each take, one store). The
 * script runs N and 2N and divides the difference by N. A benchmark: it
 * prints what it took and judges nothing.
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/kring.h"

static union {
	struct perf_event_mmap_page meta;
	uint8_t bytes[8192];
} ring __attribute__((aligned(4096)));

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 8;
	long n = argc > 2 ? atol(argv[2]) : 1000;
	if (frames < 1 || frames > EMBER_KRING_MAX_FRAMES || n < 1) {
		fprintf(stderr, "usage: ember_bench_kring_insns FRAMES(1..%d) N\n",
			EMBER_KRING_MAX_FRAMES);
		return 2;
	}
	ring.meta.data_offset = 4096;
	ring.meta.data_size = 4096;
	uint64_t *w = (uint64_t *)(void *)(ring.bytes + 4096);
	struct perf_event_header h = {PERF_RECORD_SAMPLE, 0, (uint16_t)(8 * (3 + frames))};
	memcpy(&w[0], &h, 8);
	w[1] = (uint64_t)frames + 1;
	w[2] = (uint64_t)PERF_CONTEXT_KERNEL;
	for (int i = 0; i < frames; i++)
		w[3 + i] = 0xffffffff81000000ull + 16u * (unsigned)i;
	ring.meta.data_head = h.size;
	uint64_t out[EMBER_KRING_MAX_FRAMES], sum = 0;
	for (long i = 0; i < n; i++) {
		__atomic_store_n(&ring.meta.data_tail, 0, __ATOMIC_RELAXED);
		int k = ember__kring_take(&ring, out, EMBER_KRING_MAX_FRAMES);
		sum += (uint64_t)k + out[0];
	}
	printf("%ld takes of %d frames (checksum %llu)\n", n, frames, (unsigned long long)sum);
	return 0;
}
