/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kring.h - the kernel frames of a perf-event sample, read in the signal
 * handler from the thread's own perf ring (engine/engine_perf.h maps it;
 * the event records PERF_SAMPLE_CALLCHAIN with the user part excluded).
 *
 * The kernel writes the overflow's record before it queues the signal, so
 * when the handler runs, the newest sample record of the thread's ring is
 * the one of the overflow being handled (older ones: overflows whose
 * signals merged into this one). The handler takes it and frees every
 * record up to the head: the ring is empty again for the next overflow.
 */
#ifndef EMBER_KRING_H
#define EMBER_KRING_H

#include <stdint.h>

/* Most kernel frames a sample takes (the event's sample_max_stack). */
#define EMBER_KRING_MAX_FRAMES 48

/*
 * Copies the kernel IPs of the newest sample record in `ring` (the mapped
 * metadata page and its data pages) into out[0..max), innermost first,
 * without the kernel's context markers, and advances the ring's tail past
 * every record there. Returns the number of frames (0: the overflow came
 * in user mode), or -1 when no sample record was there (the kernel could
 * not write it: the ring was full, or the record is late). The ring is
 * the calling thread's own. Async-signal-safe: plain memory reads and
 * stores with the ring protocol's barriers, no system call.
 */
int ember__kring_take(void *ring, uint64_t *out, int max);

#endif
