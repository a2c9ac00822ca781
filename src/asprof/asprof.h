/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asprof.h - async-profiler as a profiling backend: loading
 * libasyncProfiler.so, its C API (upstream src/asprof.h, v4.x) and the
 * commands emberprof sends it. The rotation of its JFR output and the
 * backend's thread are in asprof_run.h; the optional API for the pollcatch
 * helpers in asprof_hooks.h.
 *
 * Nothing here is async-signal-safe. The library is loaded with
 * dlopen(RTLD_LOCAL | RTLD_LAZY) and never unloaded (async-profiler keeps
 * signal handlers and threads of its own).
 */
#ifndef EMBER_ASPROF_H
#define EMBER_ASPROF_H

#include <stddef.h>
#include <stdint.h>

/* The name looked up through the dynamic loader's search path. */
#define EMBER__ASPROF_LIBNAME "libasyncProfiler.so"
/* Defaults, as the async-profiler Rust agent has them: 100 ms of CPU time
 * per sample, a wall-clock sample per thread every second. */
#define EMBER__ASPROF_DEFAULT_CPU_NS 100000000ull
#define EMBER__ASPROF_DEFAULT_WALL_MS 1000u
/* Accepted ranges. */
#define EMBER__ASPROF_MIN_CPU_NS 10000ull           /* 10 us */
#define EMBER__ASPROF_MAX_CPU_NS 3600000000000ull   /* 1 h */
#define EMBER__ASPROF_MAX_WALL_MS 3600000u          /* 1 h */
#define EMBER__ASPROF_NATIVEMEM_MAX 31
#define EMBER__ASPROF_LIBRARY_MAX 1023

/* The backend's settings, part of the agent's configuration. Fixed-size
 * strings, so the configuration stays a plain value to copy. */
typedef struct ember__asprof_config {
	uint64_t cpu_interval_ns;  /* 0: EMBER__ASPROF_DEFAULT_CPU_NS */
	unsigned wall_interval_ms; /* 0: EMBER__ASPROF_DEFAULT_WALL_MS */
	char native_mem[EMBER__ASPROF_NATIVEMEM_MAX + 1]; /* "": off */
	char library[EMBER__ASPROF_LIBRARY_MAX + 1];      /* "": EMBER__ASPROF_LIBNAME */
	int stop_start; /* rotate windows with stop/start instead of dump (EMBERPROF_ASPROF_ROTATE) */
	unsigned max_depth; /* jstackdepth: a reporter's frame cap (Pyroscope 1000); 0: the library's 2048 */
} ember__asprof_config;

/* The loaded library's entry points (optional ones may be NULL). */
typedef struct ember__asprof_api ember__asprof_api;

/*
 * Loads async-profiler: `library` is an absolute path, or NULL/"" for
 * EMBER__ASPROF_LIBNAME through the loader's search path. A library
 * already loaded under the same name is reused. Missing library or a
 * missing required symbol (asprof_init, asprof_execute, asprof_error_str):
 * EMBER_ERR_UNSUPPORTED with a message naming it. On success the library
 * also becomes the one asprof_hooks.h uses.
 */
int ember__asprof_load(const char *library, const ember__asprof_api **out);

/* Calls asprof_init() the first time for this library; later calls do nothing. */
void ember__asprof_init_once(const ember__asprof_api *api);

/*
 * Runs one command. 0, or EMBER_ERR_SYS with async-profiler's message
 * (asprof_execute returned an error and asprof_error_str gave its text; a
 * NULL text counts as success, as in async-profiler's own agent). The
 * command's output, if any, is kept for ember__asprof_last_output().
 */
int ember__asprof_exec(const ember__asprof_api *api, const char *cmd);

/* The output of the calling thread's last command (truncated), or "". */
const char *ember__asprof_last_output(void);

/* The path the library was loaded by. */
const char *ember__asprof_api_path(const ember__asprof_api *api);

/*
 * Writes the start command for a recording into the file open as `fd`:
 *   start,event=cpu,interval=<ns>,wall=<ms>ms,jfr,cstack=dwarf,file=/proc/self/fd/<fd>[,nativemem=<str>]
 *   [,jstackdepth=<n>]
 * 0, or EMBER_ERR_INVALID if it does not fit in `cap`.
 */
int ember__asprof_start_command(char *buf, size_t cap, const ember__asprof_config *cfg, int fd);

/* Checks a nativemem value: 1..31 characters among [0-9A-Za-z.] (a number
 * with an optional unit such as 10m); anything else could smuggle another
 * option into the command. 0 or EMBER_ERR_INVALID with a message. */
int ember__asprof_check_native_mem(const char *s);

/* Checks a library path override: absolute, at most EMBER__ASPROF_LIBRARY_MAX. */
int ember__asprof_check_library(const char *path);

/*
 * Parses a duration into nanoseconds: an integer with a unit ns, us, ms or
 * s, or a bare integer of nanoseconds (async-profiler's own convention).
 * 0 or EMBER_ERR_INVALID.
 */
int ember__asprof_parse_ns(const char *s, uint64_t *out);

#endif
