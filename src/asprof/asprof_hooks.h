/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asprof_hooks.h - async-profiler's optional C API (asprof.h, "UNSTABLE"
 * upstream) for code that has no agent pointer: the pollcatch helpers run
 * on application threads, around each poll of an event loop.
 *
 * The library is the one the async-profiler backend loaded
 * (src/asprof/asprof.c), published through one atomic pointer; or, with no
 * agent running, the one ember__asprof_attach() loads (e.g. a program that
 * LD_PRELOADs libasyncProfiler.so and starts it with ASPROF_COMMAND). It is
 * never unloaded, so the pointers below stay valid for the process's life.
 *
 * None of these is async-signal-safe: async-profiler may allocate the
 * thread's data on the first asprof_get_thread_local_data() call. Call them
 * from normal thread context; all are safe to call concurrently with the
 * agent starting and stopping async-profiler.
 */
#ifndef EMBER_ASPROF_HOOKS_H
#define EMBER_ASPROF_HOOKS_H

#include <stddef.h>
#include <stdint.h>

/* Upstream's limit on one user event's payload (ASPROF_MAX_JFR_EVENT_LENGTH). */
#define EMBER__ASPROF_MAX_EVENT_LEN 2048

/*
 * Loads async-profiler for these hooks without starting anything: `library`
 * is an absolute path, or NULL for "libasyncProfiler.so" through the
 * dynamic loader's search path (an already loaded copy, LD_LIBRARY_PATH,
 * RPATH, the system directories; never the current directory). Loading
 * twice is harmless. 0, or a negative ember_err with a message
 * (EMBER_ERR_UNSUPPORTED when the library or a required symbol is missing).
 */
int ember__asprof_attach(const char *library);

/* Whether a library is loaded; bit 1: has asprof_get_thread_local_data,
 * bit 2: asprof_register_jfr_event and asprof_emit_jfr_event. 0: none. */
#define EMBER__ASPROF_HAS_LIB 0x1u
#define EMBER__ASPROF_HAS_THREAD_DATA 0x2u
#define EMBER__ASPROF_HAS_USER_EVENTS 0x4u
unsigned ember__asprof_features(void);

/*
 * The calling thread's sample counter: the timestamp of async-profiler's
 * latest sample on this thread (it changes whenever a sample is taken here),
 * 0 before the first one, or when no library with
 * asprof_get_thread_local_data is loaded, or it returned NULL.
 */
uint64_t ember__asprof_thread_sample_counter(void);

/*
 * The same counter's address, to keep per thread and read without a call
 * (the struct lives as long as the thread). NULL when unavailable (then
 * try again later: async-profiler returns NULL before it is initialized).
 */
const volatile uint64_t *ember__asprof_thread_sample_counter_ptr(void);

/*
 * Registers a user JFR event type by name (valid UTF-8, e.g.
 * "tokio.PollcatchV1"): its key (>= 0), or a negative ember_err with a
 * message: EMBER_ERR_UNSUPPORTED if the library lacks the user-event API,
 * EMBER_ERR_SYS if async-profiler refused (it returned -1).
 */
int ember__asprof_register_event(const char *name);

/*
 * Emits one user event (JFR profiler.UserEvent, `data` stored as a Latin-1
 * string) with the key from ember__asprof_register_event(); len at most
 * EMBER__ASPROF_MAX_EVENT_LEN. 0, or a negative ember_err with a message
 * (async-profiler's own error text for EMBER_ERR_SYS).
 */
int ember__asprof_emit(int key, const uint8_t *data, size_t len);

#endif
