/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_perf.h - the perf_events sampling engine: one software task-clock
 * event per thread, whose overflow the kernel turns into a signal to that
 * very thread (O_ASYNC, F_SETSIG, F_SETOWN_EX with F_OWNER_TID).
 *
 * Unlike CPU-time timers, which fire at most once per kernel tick (250 Hz
 * here), a task-clock event overflows after exactly its period of the
 * thread's CPU time, at any rate. The handler (src/sample/handler.c) reads
 * the event's count to weigh each sample by the CPU time it stands for.
 *
 * threads.c and threads_arm.c call these on the agent thread, or on a new
 * thread in the pthread_create hook, under the registry's mutex. None is
 * async-signal-safe.
 */
#ifndef EMBER_ENGINE_PERF_H
#define EMBER_ENGINE_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "sample/kring.h"

/*
 * Whether the kernel lets this process sample its own threads with a
 * task-clock event: opens one on the calling thread (with the signal set up
 * as for real) and closes it. Tries to include kernel time first and falls
 * back to user time only (perf_event_paranoid >= 2 without CAP_PERFMON);
 * *exclude_kernel says which worked. `refuse` (the
 * EMBERPROF_ENGINE_PERF_DISABLE test knob) makes it fail as a refusing
 * kernel would. Returns 0, or a negative errno with a sentence in `why`.
 */
int ember__perf_probe(int signo, int64_t period_ns, int refuse, int *exclude_kernel, char *why,
		      size_t whylen);

/*
 * Opens a task-clock event on thread `tid` that overflows every
 * `period_ns` of its CPU time and then signals `signo` to that thread.
 * `kernel_chain` (ignored with exclude_kernel): each overflow also records
 * the kernel's callchain (at most EMBER_KRING_MAX_FRAMES frames) for a
 * ring mapped with ember__perf_map_ring. The
 * descriptor is close-on-exec, at 256 or above when the limit allows (see
 * open_tasks in threads.c), and disabled: ember__perf_enable() starts it.
 * Returns the descriptor (the caller's, to close) or a negative errno.
 */
int ember__perf_open(int32_t tid, int signo, int64_t period_ns, int exclude_kernel,
		     int kernel_chain);

/*
 * Maps the ring of an event opened with kernel_chain: the metadata page
 * and one data page (ember__perf_ring_len bytes), which count against
 * perf_event_mlock_kb (per user) and RLIMIT_MEMLOCK. The mapping (the
 * caller's, for ember__perf_unmap_ring) or NULL with *err an errno.
 */
size_t ember__perf_ring_len(void);
void *ember__perf_map_ring(int fd, int *err);
void ember__perf_unmap_ring(void *ring);

/* Resets the count to 0 and starts counting; 0 or a negative errno. */
int ember__perf_enable(int fd);
/* Stops the event (no more overflows or signals); the fd stays open. */
void ember__perf_disable(int fd);

/*
 * The event's kernel id (PERF_EVENT_IOC_ID), unique per event; 0 if fd is
 * not a perf event. ember__perf_is_ours(): does fd still hold the event
 * with this id, signalling signo? A program that closes every descriptor
 * (a daemon) frees our events, and may reuse their numbers for its own
 * files: such a number must never be read, disabled or closed by us.
 */
uint64_t ember__perf_id(int fd);
int ember__perf_is_ours(int fd, int signo, uint64_t id);

/* The value of /proc/sys/kernel/perf_event_paranoid, or -100 if unknown. */
int ember__perf_paranoid(void);

#endif
