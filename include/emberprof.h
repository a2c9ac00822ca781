/*
 * emberprof.h - the public API of emberprof, a continuous-profiling agent
 * that lives inside the profiled process.
 *
 * Lifecycle. Three distinct handle types make the agent's states explicit,
 * so that calling a function in the wrong state does not compile:
 *
 *     ember_builder  --ember_builder_build()-->  ember_agent   (ready)
 *     ember_agent    --ember_agent_start()---->  ember_running (sampling)
 *     ember_running  --ember_running_stop()--->  ember_agent   (ready again)
 *     ember_agent    --ember_agent_shutdown()->  (freed)
 *
 * Each transition consumes the handle it is given: after a successful
 * transition the old pointer is invalid and must not be used again.
 *
 * Errors. Functions return 0 (EMBER_OK) or a negative ember_err. A message
 * describing the last failure on the calling thread is available from
 * ember_last_error(). Out-of-memory is reported without allocating.
 *
 * Threads. The agent owns one thread ("emberprof") that drains samples,
 * symbolizes, encodes and calls the reporters. Reporters are therefore
 * always called on that thread, never on the application's threads.
 *
 * Signal safety. Unless a function's comment says it is async-signal-safe,
 * it is not: do not call it from a signal handler.
 */
#ifndef EMBERPROF_H
#define EMBERPROF_H

#include <stddef.h>
#include <stdint.h>

/*
 * Passing one handle type where another is expected is what makes lifecycle
 * misuse fail to compile. C compilers before GCC 14 and Clang 16 only warn
 * about incompatible pointer types, so this header makes that diagnostic an
 * error, as those newer compilers do by default.
 */
#if defined(__GNUC__) && !defined(__cplusplus) && !defined(EMBER_NO_STRICT_HANDLES)
#pragma GCC diagnostic error "-Wincompatible-pointer-types"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 1
#define EMBER_VERSION_PATCH 0
#define EMBER_VERSION_NUMBER \
	(EMBER_VERSION_MAJOR * 10000 + EMBER_VERSION_MINOR * 100 + EMBER_VERSION_PATCH)
#define EMBER_VERSION_STRING "0.1.0"

#if defined(EMBER_BUILDING_LIBRARY)
#define EMBER_API __attribute__((visibility("default")))
#else
#define EMBER_API
#endif

/** Error codes. The numbers never change. */
typedef enum ember_err {
	EMBER_OK = 0,
	EMBER_ERR_INVALID = -1,   /**< an argument or option is invalid */
	EMBER_ERR_NOMEM = -2,     /**< out of memory */
	EMBER_ERR_SYS = -3,       /**< a system call failed (message has errno) */
	EMBER_ERR_BUSY = -4,      /**< a resource is taken (signal, sampler) */
	EMBER_ERR_IO = -5,        /**< reading or writing a file failed */
	EMBER_ERR_FORMAT = -6,    /**< malformed input (profile, ELF, config) */
	EMBER_ERR_REPORTER = -7,  /**< a reporter failed */
	EMBER_ERR_UNSUPPORTED = -8 /**< not available on this system */
} ember_err;

/** Log levels, most severe first. */
typedef enum ember_log_level {
	EMBER_LOG_OFF = 0,
	EMBER_LOG_ERROR = 1,
	EMBER_LOG_WARN = 2,
	EMBER_LOG_INFO = 3,
	EMBER_LOG_DEBUG = 4
} ember_log_level;

/**
 * Log callback. Called on the agent's thread or on the thread calling an
 * emberprof function, never in a signal handler. `msg` is borrowed for the
 * duration of the call.
 */
typedef void (*ember_log_fn)(void *userdata, ember_log_level level, const char *msg);

/** Stack unwinding methods. */
typedef enum ember_unwind_mode {
	EMBER_UNWIND_AUTO = 0, /**< the best available method */
	EMBER_UNWIND_FP = 1    /**< frame pointers */
} ember_unwind_mode;

/** Sampling engines. */
typedef enum ember_engine {
	EMBER_ENGINE_AUTO = 0,          /**< per-thread CPU timers, else process timer */
	EMBER_ENGINE_THREAD_TIMER = 1,  /**< timer_create on each thread's CPU clock */
	EMBER_ENGINE_PROCESS_TIMER = 2  /**< setitimer(ITIMER_PROF), process-wide */
} ember_engine;

typedef struct ember_builder ember_builder;
typedef struct ember_agent ember_agent;
typedef struct ember_running ember_running;

/**
 * One reporting window, handed to reporters. Everything it points to is
 * borrowed and valid only for the duration of the report callback.
 */
typedef struct ember_report {
	const char *app_name;      /**< the builder's application name */
	const char *profile_type;  /**< "cpu" */
	int64_t start_ns;          /**< window start, ns since the Unix epoch */
	int64_t end_ns;            /**< window end, ns since the Unix epoch */
	uint64_t samples;          /**< samples in the window */
	const uint8_t *pprof;      /**< gzip'd profile.proto */
	size_t pprof_len;
	uint32_t seq;              /**< window number since build, from 0 */
	int final;                 /**< 1 for the last window before stop */
} ember_report;

/**
 * A reporter: where finished windows go. emberprof copies the struct.
 * report() runs on the agent thread and returns 0 or a negative ember_err
 * (after setting a message with ember_set_error() if it likes); a failure
 * is logged and counted, it does not stop the agent. destroy(), if set,
 * is called once with `userdata` when the agent is shut down, or when the
 * builder is freed without building.
 */
typedef struct ember_reporter {
	const char *name; /**< for logs; copied */
	int (*report)(void *userdata, const ember_report *report);
	void (*destroy)(void *userdata);
	void *userdata;
} ember_reporter;

/** Agent statistics. Counters since build; all monotonic. */
typedef struct ember_stats {
	uint64_t samples;             /**< samples recorded by the handler */
	uint64_t samples_dropped_full;/**< dropped: sample buffer was full */
	uint64_t samples_truncated;   /**< stack cut short (depth, bounds, bad frame) */
	uint64_t samples_no_bounds;   /**< leaf only: thread stack bounds not yet known */
	uint64_t labels_truncated;    /**< samples whose labels did not all fit */
	uint64_t signals_foreign;     /**< signals not from our timers (ignored) */
	uint64_t threads_seen;        /**< threads given a timer */
	uint64_t timer_failures;      /**< timer_create/settime failures */
	uint64_t windows_reported;    /**< windows handed to all reporters */
	uint64_t report_failures;     /**< reporter calls that failed */
} ember_stats;

/* ---- version and errors ---- */

/** The library's version string, e.g. "0.1.0". Static; async-signal-safe. */
EMBER_API const char *ember_version(void);

/**
 * The message of the last error on the calling thread, or "" if none.
 * The string is owned by emberprof and valid until the next emberprof call
 * on this thread.
 */
EMBER_API const char *ember_last_error(void);

/** A static description of an error code. */
EMBER_API const char *ember_strerror(int err);

/**
 * Sets the calling thread's last-error message (for custom reporters).
 * Returns `err` so that `return ember_set_error(EMBER_ERR_IO, "...")` works.
 */
EMBER_API int ember_set_error(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- builder ---- */

/**
 * Creates a builder with defaults: 100 Hz, 10 s windows, depth 128.
 * `app_name` is copied. On success *out is the caller's, consumed by
 * ember_builder_build() or freed with ember_builder_free().
 */
EMBER_API int ember_builder_new(ember_builder **out, const char *app_name);

/** Frees a builder that was not built, and its reporters. NULL is fine. */
EMBER_API void ember_builder_free(ember_builder *b);

/** Samples per second of CPU time per thread, 1..10000. Default 100. */
EMBER_API int ember_builder_set_sample_rate(ember_builder *b, unsigned hz);

/**
 * Reporting interval in milliseconds, 100..3600000. Default 10000. Windows
 * end on wall-clock multiples of the interval (…:00, …:10 for 10 s).
 */
EMBER_API int ember_builder_set_interval_ms(ember_builder *b, unsigned ms);

/** Maximum frames per stack, 1..1024. Default 128. */
EMBER_API int ember_builder_set_max_depth(ember_builder *b, unsigned depth);

/** Unwinding method. Default EMBER_UNWIND_AUTO. */
EMBER_API int ember_builder_set_unwind(ember_builder *b, ember_unwind_mode mode);

/**
 * Adds a static tag, written as a label on every sample. Key and value are
 * copied; the key must match [A-Za-z_][A-Za-z0-9_.]* and not repeat.
 */
EMBER_API int ember_builder_add_tag(ember_builder *b, const char *key, const char *value);

/** Sampling engine. Default EMBER_ENGINE_AUTO. */
EMBER_API int ember_builder_set_engine(ember_builder *b, ember_engine engine);

/**
 * The signal used for sampling. Default SIGPROF. The process-wide timer
 * engine needs SIGPROF; the per-thread timers work with any signal, so an
 * application that owns SIGPROF can give emberprof e.g. SIGRTMIN+4.
 */
EMBER_API int ember_builder_set_signal(ember_builder *b, int signo);

/** When on, samples carry thread_id and thread_name labels. Default off. */
EMBER_API int ember_builder_set_thread_labels(ember_builder *b, int on);

/**
 * Adds a reporter. The struct is copied; ownership of r->userdata passes
 * to the builder (and later the agent), which calls r->destroy once.
 * On failure ownership stays with the caller.
 */
EMBER_API int ember_builder_add_reporter(ember_builder *b, const ember_reporter *r);

/** Log callback and level. Default: errors and warnings to stderr. */
EMBER_API int ember_builder_set_log(ember_builder *b, ember_log_fn fn, void *userdata,
				    ember_log_level level);

/**
 * Applies the EMBERPROF_* environment variables (see docs/CONFIG.md):
 * EMBERPROF_APP_NAME, EMBERPROF_SAMPLE_RATE, EMBERPROF_INTERVAL,
 * EMBERPROF_MAX_DEPTH, EMBERPROF_UNWIND, EMBERPROF_TAGS,
 * EMBERPROF_THREAD_LABELS, EMBERPROF_ENGINE, EMBERPROF_SIGNAL,
 * EMBERPROF_LOG_LEVEL, EMBERPROF_OUTPUT_DIR
 * (adds a local reporter). An invalid value fails with EMBER_ERR_INVALID
 * and a message naming the variable; the builder is left as it was for the
 * variables already applied.
 */
EMBER_API int ember_builder_apply_env(ember_builder *b);

/**
 * Builds a ready agent. Consumes `b` whether or not it succeeds.
 * On success *out is the caller's, freed with ember_agent_shutdown().
 */
EMBER_API int ember_builder_build(ember_agent **out, ember_builder *b);

/* ---- lifecycle ---- */

/**
 * Starts sampling: installs the signal handler, arms a CPU-time timer on
 * every thread of the process (and on threads created later), starts the
 * agent thread. Only one agent can run per process.
 * On success `a` is consumed and *out is the running agent. On failure
 * `a` is untouched and still the caller's.
 */
EMBER_API int ember_agent_start(ember_running **out, ember_agent *a);

/**
 * Stops sampling, restores the previous signal disposition, deletes every
 * timer, reports the final partial window and gives back the ready agent
 * in *out. `r` is always consumed and *out always set (the agent survives
 * a failed final report); the return value says whether the final report
 * was delivered to every reporter.
 */
EMBER_API int ember_running_stop(ember_agent **out, ember_running *r);

/** Frees a ready agent: its reporters' destroy() run here. NULL is fine. */
EMBER_API void ember_agent_shutdown(ember_agent *a);

/** Copies the counters of a ready agent. */
EMBER_API void ember_agent_stats(const ember_agent *a, ember_stats *out);

/** Copies the counters of a running agent (a consistent-enough snapshot). */
EMBER_API void ember_running_stats(const ember_running *r, ember_stats *out);

/* ---- per-thread labels ---- */

/**
 * Sets key=value on the calling thread until the matching pop: every
 * sample taken on this thread meanwhile carries it as a pprof label. Labels
 * nest; when a key is set twice, the innermost value wins. Key and value
 * are copied (key <= 63 bytes, value <= 127 bytes, at most 8 labels at
 * once). The first push on a thread allocates its label block; later
 * pushes and pops make no system call and take no lock. Works whether or
 * not an agent is running. Not async-signal-safe.
 *
 *     unsigned mark = ember_labels_depth();
 *     ember_labels_push("endpoint", "/checkout");
 *     handle_request();
 *     ember_labels_pop_to(mark);
 */
EMBER_API int ember_labels_push(const char *key, const char *value);

/** Removes the innermost label of the calling thread (none: no-op). */
EMBER_API void ember_labels_pop(void);

/** How many labels the calling thread has set. */
EMBER_API unsigned ember_labels_depth(void);

/** Pops labels until `depth` remain: the end of a scope. */
EMBER_API void ember_labels_pop_to(unsigned depth);

/* ---- built-in reporters ---- */

/**
 * Fills *out with a reporter writing one gzip'd pprof file per window into
 * `dir` (created 0700 if missing; never followed through a symlink). Names
 * sort by time and never collide:
 *     <app>-<UTC yyyymmddTHHMMSS>.<ms>Z-<pid>-<seq>.pb.gz
 * Files are written to a temporary name and renamed into place.
 * `dir` is copied. Hand *out to ember_builder_add_reporter().
 */
EMBER_API int ember_reporter_local(ember_reporter *out, const char *dir);

#ifdef __cplusplus
}
#endif
#endif /* EMBERPROF_H */
