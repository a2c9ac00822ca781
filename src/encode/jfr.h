/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr.h - encodes one reporting window as a JDK Flight Recorder recording
 * (one chunk, format 2.0, compressed integers), readable by the JDK's
 * `jfr` tool, JMC and async-profiler's converters.
 *
 * Input: the window's symbolized profiles (profile.h), one per event kind,
 * and a list of events, each naming the sample of its kind's profile whose
 * stack it has. Every event becomes one JFR event with its own timestamp
 * and thread:
 *
 *   EMBER_JFR_CPU    jdk.ExecutionSample      {startTime, sampledThread,
 *                                              stackTrace, state}
 *   EMBER_JFR_WALL   profiler.WallClockSample {startTime, sampledThread,
 *                                              stackTrace, state, samples}
 *                    (async-profiler's type; `samples` = the event's weight
 *                    in wall-clock intervals, rounded with the rest carried
 *                    to the thread's next event (wall_carry), so 0 for an
 *                    event worth less than the carry leaves to round up)
 *   EMBER_JFR_MALLOC profiler.Malloc          {startTime, eventThread,
 *                                              stackTrace, address, size}
 *                    (async-profiler's native-allocation type, which its
 *                    converters turn into allocation flame graphs; `size`
 *                    is the event's weight in bytes)
 *
 * and, from the window's `polls` (pollcatch's long polls, see
 * pollcatch/resolve.h), one event each of emberprof's own type:
 *
 *   emberprof.LongPoll {startTime, duration, eventThread, pollId, open}
 *                    (a poll of at least the threshold on a thread: its
 *                    busy part starts at startTime and lasts `duration`
 *                    (@Timespan TICKS); `pollId` is the agent's poll id,
 *                    the poll_id label of the same poll in pprof; `open`:
 *                    it had not ended when the window closed, the duration
 *                    is the time so far. No stack: the samples inside it
 *                    are the ExecutionSample / WallClockSample events on
 *                    its thread in [startTime, startTime + duration].)
 *
 * Stacks become jdk.types.StackTrace {truncated, frames[]} of
 * jdk.types.StackFrame {method, lineNumber, bytecodeIndex, type}, leaf
 * first, one frame per (inlined) function. As async-profiler does for
 * native code, a frame's method is jdk.types.Method {type: the module's
 * file name as a java.lang.Class, name: the demangled function name,
 * descriptor "()L;", modifiers ACC_NATIVE} and its type "C++" for a
 * demangled C++ symbol, else "Native". Threads are java.lang.Thread
 * {osName, osThreadId = the tid, javaName null, javaThreadId 0, group null}.
 *
 * A frame no symbol names (symbolization off, EMBERPROF_SYMBOLIZE=0, or
 * code of a stripped module, which the symbolizer calls "<file
 * name>+0xSTART" after its .eh_frame entry) has the method {type: the
 * module's class, name "0xOFFSET": the address's offset in the module's
 * file, lowercase hex}, type Native and lineNumber 0: one method per
 * address, not per function, so that the address survives for `emberprof
 * symbolize`. For each mapping such a frame lies in the
 * chunk holds one event of emberprof's own type
 *
 *   emberprof.NativeMapping {startTime, module, path, buildId, start, end,
 *                    offset}
 *                    (module: the class name its frames have; path: the
 *                    mapped file; buildId: its GNU build id, lowercase
 *                    hex, "" unknown; start, end: the mapping's addresses;
 *                    offset: its file offset), written after the samples,
 *                    before the checkpoint. `emberprof symbolize`
 *                    (tools/symbolize/jfr_symbolize.c) reads these to name
 *                    such frames later. A chunk whose frames all have names
 *                    has none.
 *
 * Every chunk starts, as async-profiler's do, with one jdk.ActiveRecording
 * {startTime, id, name, destination, maxAge, maxSize, recordingStart,
 * recordingDuration} and jdk.ActiveSetting {startTime, id, name, value}
 * events (version, engine, event, enabled, interval, wall, nativemem).
 * Thread states: CPU samples are STATE_DEFAULT and wall samples
 * STATE_RUNNABLE or STATE_SLEEPING (an unknown wall state is written as
 * RUNNABLE), which is how async-profiler's converter tells them apart.
 *
 * Times: ticks are nanoseconds (ticksPerSecond 1e9) counted from the
 * window's start (startTicks 0, startNanos = the window's start), so a
 * reader's usual conversion gives CLOCK_REALTIME nanoseconds back exactly.
 *
 * Not async-signal-safe: agent thread (or tests) only.
 */
#ifndef EMBER_JFR_H
#define EMBER_JFR_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* Event kinds; each has its own profile in ember__jfr_window.profiles. */
enum {
	EMBER_JFR_CPU = 0,
	EMBER_JFR_WALL = 1,
	EMBER_JFR_MALLOC = 2,
	EMBER_JFR_NKINDS = 3
};

/* Thread states (jdk.types.ThreadState "STATE_DEFAULT", "STATE_RUNNABLE", "STATE_SLEEPING"). */
enum {
	EMBER_JFR_STATE_DEFAULT = 0,  /* unknown */
	EMBER_JFR_STATE_RUNNABLE = 1,
	EMBER_JFR_STATE_SLEEPING = 2
};

typedef struct ember__jfr_event {
	int64_t time_ns;  /* CLOCK_REALTIME, ns since the epoch */
	uint64_t weight;  /* CPU and wall: ns the sample stands for; MALLOC: bytes (the `size` field) */
	uint64_t address; /* MALLOC: the allocation's address; else unused */
	uint32_t sample;  /* 0-based index into profiles[kind]->samples: the stack */
	int32_t tid;      /* the thread, > 0 */
	uint8_t kind;     /* EMBER_JFR_* */
	uint8_t state;    /* EMBER_JFR_STATE_* (CPU and wall) */
} ember__jfr_event;

/* One long poll (emberprof.LongPoll). Its start may lie before the window
 * (a poll that began in an earlier one). */
typedef struct ember__jfr_poll {
	int64_t start_ns;    /* CLOCK_REALTIME */
	int64_t duration_ns; /* >= 0 */
	uint64_t id;         /* the agent's poll id */
	int32_t tid;         /* > 0 */
	uint8_t open;        /* 1: still running when the window closed */
} ember__jfr_poll;

typedef struct ember__jfr_thread {
	int32_t tid;
	const char *name; /* NULL: "[tid=N]" */
} ember__jfr_thread;

typedef struct ember__jfr_window {
	int64_t start_ns, end_ns; /* the window, CLOCK_REALTIME ns */
	/* The profile each kind's events refer to; NULL when a kind has no events. */
	const ember__profile *profiles[EMBER_JFR_NKINDS];
	const ember__jfr_event *events; /* any order; written sorted by time */
	size_t nevents;
	const ember__jfr_thread *threads; /* names; a tid not listed gets "[tid=N]" */
	size_t nthreads;
	const ember__jfr_poll *polls; /* any order; written among the events by start */
	size_t npolls;
	int64_t wall_interval_ns;  /* for profiler.WallClockSample.samples; 0: always 1 */
	/* jdk.ActiveSetting values (async-profiler's names): "interval" of
	 * CPU sampling in ns (0: CPU profiling off), "nativemem" in bytes
	 * (0: off), and the "engine" (NULL: "emberprof"). "wall" is
	 * wall_interval_ns (0: off). */
	int64_t cpu_interval_ns;
	uint64_t alloc_interval;
	const char *engine;
	uint32_t max_depth;        /* stacks this deep are marked truncated; 0: never */
	/*
	 * Per thread (tid -> int64_t ns stored as uint64_t), the wall time not
	 * yet expressed in whole WallClockSample.samples: each event's count
	 * is its weight plus its thread's carry, rounded, and the rest is
	 * carried, so a thread's counts add up to its wall time within half an
	 * interval over any run of windows. Caller-owned, kept across windows;
	 * NULL: carried within this window only.
	 */
	struct ember__u64map *wall_carry;
} ember__jfr_window;

/*
 * Encodes the window. On success *out is a malloc'd buffer of *out_len
 * bytes (the caller frees it). Returns 0, EMBER_ERR_INVALID (with a
 * message) if an event names a kind without a profile, a sample out of
 * range or a tid <= 0 (or a poll a tid <= 0 or a negative duration), or EMBER_ERR_NOMEM.
 */
int ember__jfr_encode(const ember__jfr_window *w, uint8_t **out, size_t *out_len);

#endif
