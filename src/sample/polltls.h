/* SPDX-License-Identifier: Apache-2.0 */
/*
 * polltls.h - the per-thread poll state of pollcatch (src/pollcatch/) as
 * the signal handler sees it.
 *
 * ember_poll_begin()/ember_poll_end() run on the application thread and
 * write the thread's own block; the sampling handler interrupts that same
 * thread and reads it. The block is a plain initial-exec thread-local
 * struct (no allocation, ever). Ordering within one thread needs only
 * signal fences: begin writes `start` before raising `depth`; end clears
 * `depth` before it reads `samples`.
 */
#ifndef EMBER_POLLTLS_H
#define EMBER_POLLTLS_H

#include <stdint.h>

typedef struct ember__polltls {
	uint64_t start;          /* poll clock at the outermost begin */
	uint32_t depth;          /* nesting depth; 0: not in a poll */
	uint32_t samples;        /* bumped by the handler for each sample taken in a poll */
	uint32_t begin_samples;  /* `samples` at the outermost begin */
	int32_t tid;             /* written by the handler with each such sample */
	uint64_t asprof_before;  /* async-profiler's sample_counter at begin */
	const volatile uint64_t *asprof_ctr; /* that counter, once async-profiler hands it out */
	uint32_t asprof_armed;   /* the counter was read at begin */
	uint32_t reserved;
} ember__polltls;

extern __thread ember__polltls ember__tls_poll __attribute__((tls_model("initial-exec")));

/*
 * Called by the handler for every sample it records on this thread:
 * returns the poll clock value at the start of the poll the thread is in
 * (the key the agent matches with the poll's end record), or 0 when it is
 * in none, and counts the sample for ember_poll_end(). Async-signal-safe.
 */
static inline uint64_t ember__poll_on_sample(int32_t tid)
{
	ember__polltls *p = &ember__tls_poll;
	if (!p->depth)
		return 0;
	__atomic_signal_fence(__ATOMIC_ACQUIRE);
	p->tid = tid;
	p->samples++;
	return p->start;
}

#endif
