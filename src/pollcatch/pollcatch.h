/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pollcatch.h - long-poll detection ("pollcatch"), internal interface.
 *
 * An event loop marks each callback (or each turn of work) with
 * ember_poll_begin()/ember_poll_end() (include/emberprof.h). The calls
 * read a cycle counter and touch one thread-local block
 * (sample/polltls.h); the sampling handler stamps every sample taken
 * inside a poll with the poll's start. When a poll in which at least one
 * sample was taken ends, ember_poll_end() pushes one record (thread, start,
 * end, idle) into a fixed, lock-free ring (this file); the agent thread
 * drains it and labels the samples of polls that lasted at least the
 * threshold (pollcatch/resolve.c). A poll without samples costs two
 * counter reads and a few thread-local stores: no system call, no lock,
 * no allocation.
 *
 * With async-profiler as the sampler (src/asprof/), ember_poll_end()
 * instead compares async-profiler's per-thread sample_counter and emits
 * one `tokio.PollcatchV1` JFR user event (16 bytes: little-endian u64
 * start and end clock values), like async-profiler's Rust agent.
 */
#ifndef EMBER_POLLCATCH_H
#define EMBER_POLLCATCH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "util/ticks.h"

/* The poll clock: the cycle counter (util/ticks.h). Async-signal-safe. */
static inline uint64_t ember__poll_now(void)
{
	return ember__ticks_now();
}

/*
 * The poll clock's rate in ticks per second: exact on aarch64 (cntfrq_el0)
 * and for the CLOCK_MONOTONIC fallback; on x86-64 measured once per process
 * against CLOCK_MONOTONIC over 20 ms (the first call blocks that long).
 * Thread-safe; not async-signal-safe.
 */
double ember__poll_ticks_per_sec(void);

/* One ended poll in which the handler took at least one sample. */
typedef struct ember__poll_rec {
	int32_t tid;
	uint32_t reserved;
	uint64_t start;   /* poll clock at begin (the samples' key) */
	uint64_t end;     /* poll clock at end */
	uint64_t idle_ns; /* of it, time the loop said it waited (ember_poll_end_idle) */
} ember__poll_rec;

/* Ring capacity (records). A record is pushed only for a poll that got a
 * sample, so the ring fills at most as fast as samples are taken. */
#define EMBER__POLL_RING 4096

/* Takes the oldest record; 1 if one was taken, 0 if the ring is empty.
 * One consumer at a time (the agent thread). */
int ember__poll_records_take(ember__poll_rec *out);
/* Records dropped because the ring was full, since the process started. */
uint64_t ember__poll_records_dropped(void);

/*
 * async-profiler (path b): whenever a library is loaded through
 * src/asprof/ (the backend, or ember__asprof_attach()),
 * ember_poll_end() emits one tokio.PollcatchV1 user event per poll in
 * which async-profiler's per-thread sample_counter moved; the event type
 * is registered on first use; the first failure is written to stderr and
 * every failure counted.
 */
/* tokio.PollcatchV1 events emitted and failed, since the process started. */
uint64_t ember__pollcatch_asprof_events(void);
uint64_t ember__pollcatch_asprof_errors(void);

/* The JFR user event name and payload size of async-profiler's agent. */
#define EMBER__POLLCATCH_EVENT "tokio.PollcatchV1"
#define EMBER__POLLCATCH_PAYLOAD 16

/* Encodes and decodes the 16-byte payload (little-endian start, end). */
void ember__pollcatch_payload(uint8_t out[16], uint64_t start, uint64_t end);
/* 0, or EMBER_ERR_FORMAT when `len` is not 16. */
int ember__pollcatch_payload_decode(const uint8_t *data, size_t len, uint64_t *start,
				    uint64_t *end);

#endif
