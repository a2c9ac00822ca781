/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emberprof.h - the public API of emberprof, a continuous-profiling agent
 * that lives inside the profiled process.
 *
 * Lifecycle. Three distinct handle types make the agent's states explicit,
 * so that calling a function in the wrong state does not compile (in C11
 * and later and in C++; see "strict handles" at the end):
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

#ifdef __cplusplus
extern "C" {
#endif

#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 2
#define EMBER_VERSION_PATCH 0
#define EMBER_VERSION_NUMBER \
	(EMBER_VERSION_MAJOR * 10000 + EMBER_VERSION_MINOR * 100 + EMBER_VERSION_PATCH)
#define EMBER_VERSION_STRING "0.2.0"

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
 * Log callback. Called on the agent's thread, on a network reporter's
 * upload thread, or on the thread calling an emberprof function, never in
 * a signal handler; calls may come from two threads at once. `msg` is
 * borrowed for the duration of the call.
 */
typedef void (*ember_log_fn)(void *userdata, ember_log_level level, const char *msg);

typedef struct ember_builder ember_builder;
typedef struct ember_agent ember_agent;
struct ember_stats;
typedef struct ember_running ember_running;

/**
 * One reporting window, handed to reporters. Everything it points to is
 * borrowed and valid only for the duration of the report callback.
 */
typedef struct ember_report {
	const char *app_name;      /**< the builder's application name */
	const char *profile_type;  /**< "cpu", or "wall" for the wall-clock profile
				        of the same window (see ember_builder_set_wall),
				        "memory" for its allocation profile
				        (ember_builder_set_alloc) */
	int64_t start_ns;          /**< window start, ns since the Unix epoch */
	int64_t end_ns;            /**< window end, ns since the Unix epoch */
	uint64_t samples;          /**< samples in the window */
	const uint8_t *pprof;      /**< gzip'd profile.proto */
	size_t pprof_len;
	uint32_t seq;              /**< window number since build, from 0 */
	int final;                 /**< 1 for the last window before stop */
	/* Since 0.2: the format of this report (see ember_reporter.formats). */
	unsigned format;           /**< EMBER_FORMAT_PPROF or EMBER_FORMAT_JFR */
	/**
	 * EMBER_FORMAT_JFR only: one JFR recording (uncompressed) holding the
	 * whole window - every profile type's events (CPU, wall, allocation),
	 * each sample an event with its own timestamp and thread. profile_type
	 * is then "jfr", pprof is NULL and pprof_len 0. A reporter asking for
	 * both formats gets each window once as JFR and once per profile type
	 * as pprof, all with the same seq.
	 */
	const uint8_t *jfr;
	size_t jfr_len;
	int64_t interval_ms;       /**< the agent's reporting interval */
	/* Since 0.2 (appended: a reporter built against an older header never
	 * reads it). */
	int32_t pid;               /**< the process profiled; 0: the reporter's own.
				        `emberprof run` samples a whole process tree
				        from outside it and reports each process's
				        windows under that process's pid */
} ember_report;

/** Formats a reporter takes (bit mask for ember_reporter.formats). */
#define EMBER_FORMAT_PPROF 0x1u /**< one gzip'd pprof per profile type and window */
#define EMBER_FORMAT_JFR   0x2u /**< one JFR recording per window */

/** A static tag: key and value, both borrowed. */
typedef struct ember_tag {
	const char *key;
	const char *value;
} ember_tag;

/**
 * What a reporter learns about the agent it is attached to (see
 * ember_reporter.bind). Everything is borrowed for the duration of the call.
 */
typedef struct ember_agent_info {
	const char *app_name;      /**< the application name */
	const ember_tag *tags;     /**< static tags, in the order they were added */
	size_t ntags;
	unsigned sample_rate_hz;
	unsigned interval_ms;
	int thread_labels;         /**< samples carry thread_id/thread_name */
	ember_log_fn log_fn;       /**< the agent's log callback (NULL: stderr) */
	void *log_userdata;
	ember_log_level log_level;
	/* Since 0.2 (appended: a reporter built against an older header never
	 * reads them). What the agent will report, so that a reporter can
	 * check each profile type's labels against its backend at build. */
	unsigned wall_ms;          /**< wall-clock profiles every window (label
				        thread_state), 0: none */
	int alloc;                 /**< memory (allocation) profiles are reported */
	unsigned max_depth;        /**< frames kept per stack */
} ember_agent_info;

/**
 * A reporter: where finished windows go. emberprof copies the struct.
 * report() runs on the agent thread and returns 0 or a negative ember_err
 * (after setting a message with ember_set_error() if it likes); a failure
 * is logged and counted, it does not stop the agent. destroy(), if set,
 * is called once with `userdata` when the agent is shut down, or when the
 * builder is freed without building.
 *
 * Optional callbacks (NULL if unused):
 *  - bind() is called once by ember_builder_build(), before the agent
 *    exists, so that the reporter can check the application name and tags
 *    against its backend's rules and learn the log settings. A negative
 *    return fails the build with the reporter's message.
 *  - stats() adds the reporter's counters (the uploads_* fields and
 *    bytes_sent) to *accumulate. It may be called on any thread, at the
 *    same time as report(), so it must read its counters atomically.
 */
typedef struct ember_reporter {
	const char *name; /**< for logs; copied */
	int (*report)(void *userdata, const ember_report *report);
	void (*destroy)(void *userdata);
	void *userdata;
	int (*bind)(void *userdata, const ember_agent_info *info);
	void (*stats)(void *userdata, struct ember_stats *accumulate);
	/** EMBER_FORMAT_* bits this reporter wants; 0 means EMBER_FORMAT_PPROF. */
	unsigned formats;
} ember_reporter;

/** Agent statistics. Counters since build; all monotonic. */
typedef struct ember_stats {
	uint64_t samples;             /**< samples recorded by the handler */
	uint64_t samples_dropped_full;/**< dropped: sample buffer was full */
	uint64_t samples_truncated;   /**< stack cut short (depth, bounds, bad frame) */
	uint64_t samples_no_bounds;   /**< leaf only: thread stack bounds not yet known */
	uint64_t labels_truncated;    /**< samples whose labels did not all fit */
	uint64_t signals_foreign;     /**< signals on the sampling signal that were not ours
					   (the program's own: see signals_forwarded) */
	uint64_t threads_seen;        /**< threads given a timer */
	uint64_t timer_failures;      /**< timer_create/settime failures */
	uint64_t windows_reported;    /**< windows handed to all reporters */
	uint64_t report_failures;     /**< reporter calls that failed */
	/* Network reporters (Pyroscope): one upload is one window. */
	uint64_t uploads_ok;          /**< windows the server accepted */
	uint64_t uploads_retried;     /**< attempts that failed and will be retried */
	uint64_t uploads_failed;      /**< windows the server refused for good (4xx) */
	uint64_t uploads_spooled;     /**< windows written to the spool directory */
	uint64_t uploads_dropped;     /**< windows lost: queue full without spool, spool full, unreadable */
	uint64_t bytes_sent;          /**< request body bytes of accepted uploads */
	/* Engines. */
	uint64_t perf_events;         /**< threads given a perf_events task-clock event */
	uint64_t wall_samples;        /**< wall-clock samples recorded */
	uint64_t wall_signals;        /**< wall-clock signals sent */
	uint64_t wall_max_per_tick;   /**< most threads signalled in one wall-clock tick */
	uint64_t wall_unsignalled;    /**< wall samples of threads left asleep: recorded
					   again without a signal (ember_builder_set_wall) */
	uint64_t wall_repeats_lost;   /**< such samples whose stack was not known (dropped) */
	/* Allocation profiling (since 0.2; ember_builder_set_alloc). */
	uint64_t alloc_samples;       /**< sampled allocations recorded */
	uint64_t alloc_dropped;       /**< sampled allocations lost: their buffer was full */
	uint64_t alloc_live_overflow; /**< sampled blocks not tracked: the live table was full
				           (missing from inuse_*) */
	/* The async-profiler backend (since 0.2). */
	uint64_t asprof_errors;       /**< async-profiler commands refused and recordings
					   lost (each logged with the reason) */
	/* Threads out of the sampler's reach (since 0.2). */
	uint64_t cpu_unsampled_ns;    /**< CPU time of threads that really blocked the
					   sampling signal, not sampled (each such thread
					   is logged); measured at each thread scan */
	uint64_t signals_forwarded;   /**< the program's own signals on the sampling
					   signal, given to its handler or default action */
	/* The host program's descriptors (since 0.2). */
	uint64_t fds_reopened;        /**< descriptors of ours the program closed or reused
					   (output directory, spool, log), reopened by path */
	/* Network reporters, since 0.2. */
	uint64_t uploads_expired;     /**< windows older than the server accepts (Pyroscope:
					   1 h, EMBERPROF_SERVER_MAX_AGE): dropped unsent,
					   or refused by the server as too old; logged */
	/* Wall clock (since 0.2). */
	uint64_t wall_asleep;         /**< wall samples of threads blocked in a system call,
					   taken without a signal (their stacks read without
					   waking them) */
	uint64_t wall_unweighed;      /**< wall samples that could not be weighed (no
					   previous sample to measure from); logged at stop */
	/* CPU time no sample covers (since 0.2). */
	uint64_t cpu_tail_unsampled_ns; /**< CPU time the sampled threads used that their
					   samples' weights fall short of (0 if none),
					   measured as each thread exits and when sampling
					   stops: timer expirations the kernel had not
					   checked yet, many under heavy CPU contention;
					   threads that block the signal count in
					   cpu_unsampled_ns instead */
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

/*
 * ---- the builder ----
 *
 * A builder collects an agent's settings, one section per topic below:
 * identity and labels, CPU sampling, stacks, wall clock, allocation
 * profiling, long polls, output, logging, the profiling backend, fork
 * children, and the environment. None of these is async-signal-safe.
 */

/* ---- builder: create, build, free ---- */

/**
 * Creates a builder with defaults: 100 Hz, 10 s windows, depth 128.
 * `app_name` is copied. On success *out is the caller's, consumed by
 * ember_builder_build() or freed with ember_builder_free().
 */
EMBER_API int ember_builder_new(ember_builder **out, const char *app_name);

/**
 * Builds a ready agent. Consumes `b` whether or not it succeeds.
 * On success *out is the caller's, freed with ember_agent_shutdown().
 */
EMBER_API int ember_builder_build(ember_agent **out, ember_builder *b);

/** Frees a builder that was not built, and its reporters. NULL is fine. */
EMBER_API void ember_builder_free(ember_builder *b);

/* ---- builder: identity and labels (the name: ember_builder_new) ---- */

/**
 * Adds a static tag, written as a label on every sample. Key and value are
 * copied; the key must match [A-Za-z_][A-Za-z0-9_.]* and not repeat.
 */
EMBER_API int ember_builder_add_tag(ember_builder *b, const char *key, const char *value);

/** When on, samples carry thread_id and thread_name labels. Default off. */
EMBER_API int ember_builder_set_thread_labels(ember_builder *b, int on);

/* ---- builder: CPU sampling ---- */

/** Samples per second of CPU time per thread, 1..10000. Default 100. */
EMBER_API int ember_builder_set_sample_rate(ember_builder *b, unsigned hz);

/**
 * CPU sampling engines. CPU-time timers fire at most once per kernel tick
 * (CONFIG_HZ, often 250 Hz): at higher rates they deliver fewer samples,
 * each weighted by the periods it stands for. perf_events task-clock
 * events reach any rate but need the kernel's permission
 * (perf_event_paranoid, seccomp) and one file descriptor per thread.
 */
typedef enum ember_engine {
	EMBER_ENGINE_AUTO = 0,          /**< perf events when the rate exceeds what timers
					     deliver (a period under two kernel ticks) and the
					     kernel permits them, else per-thread CPU timers,
					     else the process timer (docs/CONFIG.md) */
	EMBER_ENGINE_THREAD_TIMER = 1,  /**< timer_create on each thread's CPU clock */
	EMBER_ENGINE_PROCESS_TIMER = 2, /**< setitimer(ITIMER_PROF), process-wide */
	EMBER_ENGINE_PERF = 3           /**< a perf_events task-clock event per thread;
					     start fails if the kernel refuses it */
} ember_engine;

/** Sampling engine. Default EMBER_ENGINE_AUTO. */
EMBER_API int ember_builder_set_engine(ember_builder *b, ember_engine engine);

/**
 * Kernel frames (EMBERPROF_KERNEL): where the perf_events engine samples
 * the kernel (root, CAP_PERFMON, or perf_event_paranoid <= 1), each
 * sample also carries the kernel's frames below its user stack, named from
 * /proc/kallsyms in a [kernel.kallsyms] mapping (one [kernel] frame where
 * kptr_restrict hides the addresses). Costs two pages of locked memory per
 * sampled thread. Default on; 0 turns it off.
 */
EMBER_API int ember_builder_set_kernel_frames(ember_builder *b, int on);

/**
 * The signal used for sampling. Default SIGPROF. The process-wide timer
 * engine needs SIGPROF; the per-thread timers work with any signal, so an
 * application that owns SIGPROF can give emberprof e.g. SIGRTMIN+4.
 */
EMBER_API int ember_builder_set_signal(ember_builder *b, int signo);

/* ---- builder: stacks ---- */

/**
 * Stack unwinding methods. DWARF unwinding reads each module's call-frame
 * information (.eh_frame, .debug_frame), compiled into tables by the agent
 * thread, so it gives complete stacks for code built without frame
 * pointers.
 */
typedef enum ember_unwind_mode {
	EMBER_UNWIND_AUTO = 0,  /**< DWARF tables where a module has them, frame pointers elsewhere */
	EMBER_UNWIND_FP = 1,    /**< frame pointers only */
	EMBER_UNWIND_DWARF = 2  /**< DWARF tables only: code without call-frame information ends the stack */
} ember_unwind_mode;

/** Unwinding method. Default EMBER_UNWIND_AUTO. */
EMBER_API int ember_builder_set_unwind(ember_builder *b, ember_unwind_mode mode);

/** Maximum frames per stack, 1..1024. Default 128. */
EMBER_API int ember_builder_set_max_depth(ember_builder *b, unsigned depth);

/** Which modules get source file/line and inline frames (from DWARF). */
typedef enum ember_line_info {
	EMBER_LINES_APP = 0,  /**< the program and its own libraries; system
				   libraries (/lib, /usr/lib) get function names only */
	EMBER_LINES_ALL = 1,  /**< every module with debug info (costs ~100 ms
				   and ~20 MB more when libc6-dbg is installed) */
	EMBER_LINES_NONE = 2  /**< function names only */
} ember_line_info;

/** Line information policy. Default EMBER_LINES_APP. */
EMBER_API int ember_builder_set_line_info(ember_builder *b, ember_line_info mode);

/* ---- builder: wall clock ---- */

/**
 * Wall-clock profiling: every `interval_ms` (1..60000; 0 turns it off, the
 * default) each thread is sampled whatever it is doing - running, blocked
 * in a system call, waiting on a lock - by a signal from emberprof's own
 * timer thread, at most 8 threads per tick (a pass over many threads then
 * takes longer than the interval; each sample is weighted by the wall time
 * since its thread's previous one). Samples carry a thread_state label,
 * "running" or "sleeping" (interrupted in a system call). Each window is
 * then also reported as a second profile, profile_type "wall", with values
 * samples/count and wall/nanoseconds. It runs next to the CPU engine.
 * A thread that has not run since a sample found it asleep is recorded
 * again without a signal; so a thread blocked in poll(), epoll_wait(),
 * select() or another call the kernel never restarts sees it return EINTR
 * early once per blocking episode (at its first sample), not every tick.
 */
EMBER_API int ember_builder_set_wall(ember_builder *b, unsigned interval_ms);

/* ---- builder: allocation (heap) profiling ---- */

/**
 * Allocation (heap) profiling: one allocation is sampled per `mean_bytes`
 * allocated on average (Poisson sampling by bytes, as Go and tcmalloc;
 * 524288 is their default; 1 takes every allocation; 0 turns it off, the
 * default; at most 1 GiB). malloc, calloc, realloc, free and the aligned
 * variants are intercepted where libemberprof.so comes before libc in the
 * symbol search order (LD_PRELOAD, or linked into the program). Each
 * window is then also reported as a memory profile, profile_type
 * "memory", with values alloc_objects/count and alloc_space/bytes
 * (allocated in the window) and inuse_objects/count and inuse_space/bytes
 * (sampled blocks still live at its end; the default type), every value
 * an unbiased estimate scaled from the samples. Allocations made by
 * emberprof's own threads are never counted. See docs/CONFIG.md.
 */
EMBER_API int ember_builder_set_alloc(ember_builder *b, uint64_t mean_bytes);

/** Where the memory profile's data comes from (ember_builder_set_alloc_backend). */
typedef enum ember_alloc_backend {
	EMBER_ALLOC_BACKEND_AUTO = 0,      /**< jemalloc's profiler when the process runs on
					        jemalloc with profiling on, else emberprof's */
	EMBER_ALLOC_BACKEND_EMBERPROF = 1, /**< emberprof's own malloc interposition */
	EMBER_ALLOC_BACKEND_JEMALLOC = 2   /**< jemalloc's profiler (prof.dump each window) */
} ember_alloc_backend;

/**
 * The memory profile's source, when allocation profiling is on
 * (ember_builder_set_alloc). EMBER_ALLOC_BACKEND_JEMALLOC reads jemalloc's
 * own sampled heap profile each window (the process must run on a jemalloc
 * built with profiling, started with MALLOC_CONF=prof:true; jemalloc's
 * lg_prof_sample sets the sampling mean, and alloc_* need
 * prof_accum:true); emberprof's malloc hook then takes no samples. If
 * jemalloc or its profiling is missing, the agent logs why and runs
 * without a memory profile. Default EMBER_ALLOC_BACKEND_AUTO: jemalloc
 * when available, else emberprof. See docs/CONFIG.md.
 */
EMBER_API int ember_builder_set_alloc_backend(ember_builder *b, ember_alloc_backend backend);

/* ---- builder: long polls (marking them: "long polls" below) ---- */

/**
 * The shortest poll whose samples are labelled, in milliseconds,
 * 0..3600000 (0: every poll that got a sample). Default 10.
 * Environment: EMBERPROF_POLLCATCH_THRESHOLD (e.g. 10ms, 0.5s).
 */
EMBER_API int ember_builder_set_poll_threshold(ember_builder *b, unsigned ms);

/* ---- builder: output (windows; reporters: "built-in reporters") ---- */

/**
 * Reporting interval in milliseconds, 100..3600000. Default 10000. Windows
 * end on wall-clock multiples of the interval (…:00, …:10 for 10 s).
 */
EMBER_API int ember_builder_set_interval_ms(ember_builder *b, unsigned ms);

/**
 * Adds a reporter. The struct is copied; ownership of r->userdata passes
 * to the builder (and later the agent), which calls r->destroy once.
 * On failure ownership stays with the caller.
 */
EMBER_API int ember_builder_add_reporter(ember_builder *b, const ember_reporter *r);

/* ---- builder: logging ---- */

/** Log callback and level. Default: errors and warnings to stderr. */
EMBER_API int ember_builder_set_log(ember_builder *b, ember_log_fn fn, void *userdata,
				    ember_log_level level);

/* ---- builder: profiling backend (since 0.2) ---- */

/** Who takes the samples. */
typedef enum ember_backend {
	EMBER_BACKEND_BUILTIN = 0,        /**< emberprof's own sampler (the default) */
	EMBER_BACKEND_ASYNC_PROFILER = 1  /**< async-profiler (libasyncProfiler.so), see below */
} ember_backend;

/**
 * Chooses the backend. With EMBER_BACKEND_ASYNC_PROFILER, ember_agent_start
 * loads libasyncProfiler.so (dlopen, RTLD_LOCAL; never unloaded) and runs
 * it in CPU + wall-clock mode with DWARF stacks; emberprof installs no
 * signal handler and no timers of its own, and the settings of the
 * built-in sampler (sample rate, engine, wall, unwind, signal, labels) do
 * not apply. At every window boundary the agent thread stops
 * async-profiler, starts it again on a second file and reports the
 * finished recording as one EMBER_FORMAT_JFR report (profile_type "jfr",
 * samples 0: not counted); at stop the last window is reported too. Every
 * reporter must therefore take EMBER_FORMAT_JFR (ember_builder_build fails
 * otherwise, naming it). A missing library or symbol fails
 * ember_agent_start with EMBER_ERR_UNSUPPORTED; async-profiler errors
 * during the run are logged and counted (ember_stats.asprof_errors).
 */
EMBER_API int ember_builder_set_backend(ember_builder *b, ember_backend backend);

/**
 * Settings of the async-profiler backend. Initialize with
 * EMBER_ASPROF_OPTIONS_INIT; zero means the default. Strings are copied.
 */
typedef struct ember_asprof_options {
	size_t sz;                  /**< sizeof(ember_asprof_options) */
	uint64_t cpu_interval_ns;   /**< CPU time per sample, 10 us..1 h; default 100 ms */
	unsigned wall_interval_ms;  /**< wall-clock sampling interval, 1 ms..1 h; default 1000 */
	const char *native_mem;     /**< native memory profiling: async-profiler's nativemem
				         value, e.g. "10m" or "4096" (bytes between samples);
				         NULL: off */
	uint64_t native_mem_bytes;  /**< the same as a number (not both); 0: off */
	const char *library;        /**< absolute path of libasyncProfiler.so; NULL: the name
				         "libasyncProfiler.so" through the dynamic loader's
				         search path (LD_LIBRARY_PATH, RPATH, system
				         directories; never the current directory) */
} ember_asprof_options;

#ifdef __cplusplus
#define EMBER_ASPROF_OPTIONS_INIT { sizeof(ember_asprof_options) }
#else
#define EMBER_ASPROF_OPTIONS_INIT { .sz = sizeof(ember_asprof_options) }
#endif

/**
 * Sets the async-profiler backend's options (they take effect with
 * ember_builder_set_backend(b, EMBER_BACKEND_ASYNC_PROFILER)). Checked
 * here: EMBER_ERR_INVALID with a message naming the bad field.
 */
EMBER_API int ember_builder_set_asprof_options(ember_builder *b, const ember_asprof_options *o);

/* ---- builder: fork children (since 0.2) ---- */

/**
 * Called in a fork child of a process whose agent follows forks
 * (ember_builder_follow_forks), to finish the child's builder. `b` is
 * configured as the parent's was (application name, tags, rates, engine,
 * wall clock, allocation profiling, log callback, and this same
 * following), with no reporter: add the child's own (a reporter's state,
 * a connection, a file, cannot be shared between two processes), change
 * what else should differ, and return 0 to profile the child, or a
 * negative value to leave it unprofiled. `b` stays emberprof's either way:
 * do not build or free it. Runs on a thread of emberprof's in the child,
 * not the program's, so it must not wait for a lock only the program's
 * threads release; not async-signal-safe context needed (malloc, libcurl
 * and the ember_reporter_* constructors are fine there).
 */
typedef int (*ember_fork_fn)(void *userdata, ember_builder *b);

/**
 * (since 0.2) Profiles fork children that keep running, each as its own
 * process with its own agent, pid, windows and reports, as `emberprof
 * run` does for a whole process tree. After a fork, the child gets an
 * agent of its own once it has used 2 ms of CPU or lived 20 ms: most
 * children that exec do so before that and cost only a short-lived
 * helper thread. The child's agent is built from the parent's settings
 * and `fn` (see ember_fork_fn), started on a thread of emberprof's, and
 * stopped, its last window reported, when the child calls exit(),
 * _exit() or exec; its children are followed the same way. What a child
 * runs before its agent starts is not sampled. A child that is killed by
 * a signal loses its last window, as a killed parent does.
 *
 * While following is on, do not start agents in fork children yourself:
 * only one agent runs per process, so one of the two would fail to start.
 * Following ends when the parent's agent is stopped. `fn` NULL turns it
 * off. Only in the shared library libemberprof.so and with emberprof's
 * own sampler: EMBER_ERR_UNSUPPORTED otherwise (here, or from
 * ember_builder_build with the async-profiler backend).
 */
EMBER_API int ember_builder_follow_forks(ember_builder *b, ember_fork_fn fn, void *userdata);

/* ---- builder: the environment ---- */

/**
 * Applies the EMBERPROF_* environment variables (see docs/CONFIG.md):
 * EMBERPROF_APP_NAME, EMBERPROF_SAMPLE_RATE, EMBERPROF_INTERVAL,
 * EMBERPROF_MAX_DEPTH, EMBERPROF_UNWIND, EMBERPROF_TAGS,
 * EMBERPROF_THREAD_LABELS, EMBERPROF_ENGINE, EMBERPROF_WALL, EMBERPROF_SIGNAL, EMBERPROF_LINES,
 * EMBERPROF_ALLOC, EMBERPROF_ALLOC_SAMPLE_BYTES, EMBERPROF_ALLOC_BACKEND,
 * EMBERPROF_LOG_LEVEL, EMBERPROF_BACKEND and EMBERPROF_ASPROF_* (the
 * async-profiler backend), EMBERPROF_OUTPUT_DIR (adds a local reporter, writing
 * the formats EMBERPROF_OUTPUT_FORMAT names: pprof (default), jfr or both;
 * jfr with the async-profiler backend),
 * EMBERPROF_SERVER_URL and the other EMBERPROF_SERVER_* variables (add a
 * Pyroscope reporter), and the names Pyroscope's own agents read
 * (PYROSCOPE_SERVER_ADDRESS, PYROSCOPE_APPLICATION_NAME, ...; the
 * EMBERPROF_* spelling wins when both are set), and EMBERPROF_S3_BUCKET
 * with the other EMBERPROF_S3_* variables (add an S3 reporter). An invalid value fails
 * with EMBER_ERR_INVALID and a message naming the variable; the builder is
 * left as it was for the variables already applied.
 */
EMBER_API int ember_builder_apply_env(ember_builder *b);

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
 *     <app>-<UTC yyyymmddTHHMMSS>.<ms>Z-<pid>-<seq>[.<type>].pb.gz
 * (<type> for profile types other than "cpu", e.g. "wall").
 * Files are written to a temporary name and renamed into place.
 * `dir` is copied. Hand *out to ember_builder_add_reporter().
 */
EMBER_API int ember_reporter_local(ember_reporter *out, const char *dir);

/** Pyroscope ingestion protocols. */
typedef enum ember_pyroscope_protocol {
	EMBER_PYROSCOPE_PUSH = 0,  /**< POST {url}/push.v1.PusherService/Push (Connect, protobuf) */
	EMBER_PYROSCOPE_INGEST = 1 /**< legacy POST {url}/ingest?name=...&format=pprof */
} ember_pyroscope_protocol;

/**
 * Options of the Pyroscope reporter. Initialize with
 * EMBER_PYROSCOPE_OPTIONS_INIT (which sets `sz`), then set what you need;
 * zero means the default. Strings are copied by ember_reporter_pyroscope().
 * `sz` lets older programs run against newer libraries: fields beyond the
 * caller's `sz` take their defaults.
 */
typedef struct ember_pyroscope_options {
	size_t sz;                      /**< sizeof(ember_pyroscope_options) */
	const char *url;                /**< http(s)://host[:port][/base/path]; required */
	ember_pyroscope_protocol protocol; /**< default EMBER_PYROSCOPE_PUSH */
	const char *basic_auth_user;    /**< with basic_auth_password: HTTP Basic auth */
	const char *basic_auth_password;
	const char *bearer_token;       /**< "Authorization: Bearer <token>" */
	const char *tenant_id;          /**< "X-Scope-OrgID: <tenant>" */
	const char *const *headers;     /**< extra headers, each "Name: value" */
	size_t nheaders;
	const char *ca_file;            /**< CA bundle (PEM) for https; default: the system's */
	int insecure;                   /**< 1: do not verify the server's certificate */
	unsigned connect_timeout_ms;    /**< default 5000 */
	unsigned timeout_ms;            /**< whole request, default 30000 */
	const char *spool_dir;          /**< keep undelivered windows here (created 0700) */
	uint64_t spool_max_bytes;       /**< default 64 MiB; oldest dropped first */
	unsigned queue_len;             /**< windows waiting in memory, default 16 */
	unsigned upload_jitter_ms;      /**< delay each upload by a random 0..N ms; default 0 */
	unsigned flush_timeout_ms;      /**< wait at the final window, default 5000 */
	const char *user_agent_suffix;  /**< appended to "emberprof/<version>" */
	/* Since 0.2. */
	unsigned formats;               /**< EMBER_FORMAT_PPROF (0: the default) or
					     EMBER_FORMAT_JFR, not both (a window would count
					     twice): JFR recordings go to the legacy
					     {url}/ingest?format=jfr as a multipart form with a
					     "jfr" part, whatever the protocol, the static tags in
					     the name ("app{k=v,...}"), as Pyroscope's Java agent
					     sends them. For the async-profiler backend. */
	unsigned max_age_s;             /**< the server refuses profiles that started more
					     than this long ago (Pyroscope's
					     validation.reject-older-than); 0: the default,
					     3600; UINT_MAX: no limit. Older windows are
					     dropped unsent (uploads_expired), never
					     re-dated. Since 0.2. */
} ember_pyroscope_options;

#ifdef __cplusplus
#define EMBER_PYROSCOPE_OPTIONS_INIT { sizeof(ember_pyroscope_options) }
#else
#define EMBER_PYROSCOPE_OPTIONS_INIT { .sz = sizeof(ember_pyroscope_options) }
#endif

/**
 * Fills *out with a reporter that sends each window to a Grafana Pyroscope
 * server (docs/CONFIG.md, "Pyroscope"). Every option is checked here: a bad
 * URL, credentials, tenant, header or spool directory fails with
 * EMBER_ERR_INVALID (or EMBER_ERR_IO) and a message naming it; the
 * application name and tags are checked against the server's label rules
 * when the agent is built.
 *
 * Uploads run on the reporter's own thread ("emberprof-up"), through a
 * bounded queue, with retries, so a slow or absent server never blocks the
 * agent or the application. At the final window (ember_running_stop) the
 * reporter waits up to flush_timeout_ms for the queue to drain; what is
 * left at shutdown goes to the spool directory, if there is one.
 *
 * libcurl: the first Pyroscope reporter loads libcurl.so.4 (dlopen; a
 * program that has it loaded already shares it) and calls
 * curl_global_init(CURL_GLOBAL_DEFAULT) once for the process; emberprof
 * never calls curl_global_cleanup(), so an application's own use of
 * libcurl is not disturbed. Without libcurl this fails with
 * EMBER_ERR_UNSUPPORTED. Hand *out to ember_builder_add_reporter().
 */
EMBER_API int ember_reporter_pyroscope(ember_reporter *out, const ember_pyroscope_options *opts);

/**
 * Like ember_reporter_local(), with a choice of formats: EMBER_FORMAT_PPROF
 * (files as above), EMBER_FORMAT_JFR (one `<app>-<ts>-<pid>-<seq>.jfr` per
 * window), or both. 0 means EMBER_FORMAT_PPROF.
 */
EMBER_API int ember_reporter_local_ex(ember_reporter *out, const char *dir, unsigned formats);

/**
 * A reporter that hands every window to each of `n` reporters in turn,
 * each with its own view of the window: one failing does not stop the
 * others, and the error returned names every reporter that failed. It
 * takes ownership of the n reporters (their destroy() runs when it is
 * destroyed) even on failure; its formats are the union of theirs, and
 * each reporter only gets the formats it asked for.
 */
EMBER_API int ember_reporter_multi(ember_reporter *out, const ember_reporter *reporters, size_t n);

/** Where the profiled process runs, for the S3 key (see ember_s3_options). */
typedef enum ember_host_kind {
	EMBER_HOST_DETECT = 0,  /**< find out: EC2 (IMDSv2), then ECS/Fargate, else on-prem */
	EMBER_HOST_EC2 = 1,
	EMBER_HOST_FARGATE = 2, /**< ECS (Fargate or EC2 launch type), from the task metadata */
	EMBER_HOST_ONPREM = 3,  /**< key part "onprem__" */
	EMBER_HOST_NONE = 4     /**< no metadata: key part "unknown__" */
} ember_host_kind;

/**
 * Host metadata given by the application instead of detected. Strings are
 * borrowed by the call that takes the struct and copied. Fields that do
 * not apply to `kind` are ignored.
 */
typedef struct ember_host_metadata {
	size_t sz;                       /**< sizeof(ember_host_metadata) */
	ember_host_kind kind;
	const char *aws_account_id;
	const char *aws_region;
	const char *ec2_instance_id;     /**< EC2 */
	const char *ec2_instance_type;   /**< EC2, optional */
	const char *ecs_task_arn;        /**< FARGATE */
	const char *ecs_cluster_arn;     /**< FARGATE */
	double cpu_limit;                /**< FARGATE, vCPUs; 0 if unknown */
	uint64_t memory_limit_mb;        /**< FARGATE; 0 if unknown */
} ember_host_metadata;

#ifdef __cplusplus
#define EMBER_HOST_METADATA_INIT { sizeof(ember_host_metadata) }
#else
#define EMBER_HOST_METADATA_INIT { .sz = sizeof(ember_host_metadata) }
#endif

/**
 * Options of the S3 reporter. Initialize with EMBER_S3_OPTIONS_INIT, then
 * set what you need; zero means the default. Strings are copied.
 */
typedef struct ember_s3_options {
	size_t sz;                      /**< sizeof(ember_s3_options) */
	const char *bucket;             /**< required */
	const char *profiling_group;    /**< required: the key's {profiling_group} */
	const char *bucket_owner;       /**< x-amz-expected-bucket-owner (account id); optional */
	const char *region;             /**< default: AWS_REGION, AWS_DEFAULT_REGION, the config
					     file's profile, then IMDS */
	const char *endpoint;           /**< S3-compatible store, e.g. http://127.0.0.1:4568;
					     addressed path-style. Default: AWS_ENDPOINT_URL_S3,
					     AWS_ENDPOINT_URL, then https://s3.<region>.amazonaws.com */
	const char *aws_profile;        /**< shared config/credentials profile; default AWS_PROFILE
					     or "default" */
	const ember_host_metadata *host;/**< NULL: detect (EMBER_HOST_DETECT) */
	const char *ca_file;            /**< CA bundle (PEM) for https */
	unsigned connect_timeout_ms;    /**< default 5000 */
	unsigned timeout_ms;            /**< whole request, default 60000 */
	const char *spool_dir;          /**< keep undelivered windows here (created 0700) */
	uint64_t spool_max_bytes;       /**< default 64 MiB */
	unsigned queue_len;             /**< windows waiting in memory, default 16 */
	unsigned flush_timeout_ms;      /**< wait at the final window, default 5000 */
} ember_s3_options;

#ifdef __cplusplus
#define EMBER_S3_OPTIONS_INIT { sizeof(ember_s3_options) }
#else
#define EMBER_S3_OPTIONS_INIT { .sz = sizeof(ember_s3_options) }
#endif

/**
 * Fills *out with a reporter that uploads each window to S3 as the
 * async-profiler agent does: a zip holding `async_profiler_dump_0.jfr`
 * then `metadata.json` ({"start":ms,"end":ms,"reporting_interval":ms}),
 * PutObject under
 *     profile_{profiling_group}_{machine}_{pid}_{time}.zip
 * ({machine}: ec2_<instance id>_, ecs_<task arn>_, onprem__ or unknown__,
 * with '/' and '_' replaced by '-'; {time}: UTC yyyy-mm-ddTHH-MM-SSZ),
 * signed with AWS Signature V4 (credentials from the standard chain: the
 * environment, the shared files, ECS container credentials, EC2 instance
 * role through IMDSv2). Uploads run on the reporter's own thread with
 * retries and an optional spool, like the Pyroscope reporter; host
 * metadata is looked up there too, with 1 s timeouts, never blocking the
 * application. Loads libcurl.so.4 (see ember_reporter_pyroscope). Its
 * formats are EMBER_FORMAT_JFR.
 */
EMBER_API int ember_reporter_s3(ember_reporter *out, const ember_s3_options *opts);

/* ---- long polls (pollcatch; docs/design/pollcatch.md) ---- */

/**
 * Marks the start of one callback, task poll or turn of an event loop on
 * the calling thread; ember_poll_end() marks its end. A poll during which
 * a sample was taken and which lasted at least the agent's threshold
 * (ember_builder_set_poll_threshold, default 10 ms) has its samples
 * labelled poll_id (unique per agent) and poll_duration_ms, so
 * `emberprof longpolls` can list the long polls with the stacks sampled
 * in them. With async-profiler as the sampler, a poll in which it took a
 * sample emits a tokio.PollcatchV1 JFR event instead.
 *
 * Cheap: a cycle-counter read (rdtsc, cntvct_el0) and a few thread-local
 * stores; no system call, no lock, no allocation. Calls nest (the
 * outermost pair is the poll measured); an end without a begin is
 * ignored. Works whether or not an agent runs. Not for signal handlers.
 */
EMBER_API void ember_poll_begin(void);

/** Ends the calling thread's poll (see ember_poll_begin). */
EMBER_API void ember_poll_end(void);

/**
 * Ends the poll, saying that `idle_ns` of it were spent waiting at its
 * start (an event loop's I/O wait, as libuv's idle-time metric counts it):
 * the poll is then reported as [begin + idle_ns, end], and samples taken
 * in the waiting part get no poll labels. include/emberprof_uv.h uses it.
 */
EMBER_API void ember_poll_end_idle(uint64_t idle_ns);


#ifdef __cplusplus
}
#endif

/*
 * ---- strict handles ----
 *
 * Passing one handle type where another is expected is what makes
 * lifecycle misuse fail to compile. C++ rejects it; C compilers before
 * GCC 14 and Clang 16 only warn about incompatible pointer types. A
 * diagnostic pragma cannot make that warning an error at the caller's
 * call sites without making it an error in all the caller's code after
 * the #include too (GCC and Clang take a diagnostic's level from where it
 * is reported), so this header changes no diagnostic setting. Instead, in
 * C11 and later, every function taking a handle is wrapped in a macro of
 * the same name that checks each handle argument with _Generic: a handle
 * of the wrong type is an error at the call site ("_Generic selector of
 * type 'ember_builder *' is not compatible with any association"), on
 * every compiler and whatever the warning flags. A handle argument may
 * also be a void pointer or a null pointer constant (NULL, 0), as before.
 * The functions themselves are unchanged: (ember_agent_start)(...) or
 * &ember_agent_start bypass the macro, and the ABI is the same. Before
 * C11, or with EMBER_NO_STRICT_HANDLES defined, there are no macros and
 * misuse is the compiler's incompatible-pointer warning.
 */
#if !defined(__cplusplus) && !defined(EMBER_NO_STRICT_HANDLES) && \
	!defined(EMBER_BUILDING_LIBRARY) && defined(__STDC_VERSION__) && \
	__STDC_VERSION__ >= 201112L
/* `x` if its type is T (or a void pointer or an int: NULL, 0), else an error. */
#define EMBER_HANDLE_CHECK_(T, x) _Generic(x, T: (x), void *: (x), int: (x))
/* The same for a parameter `const T *` (T without the star). */
#define EMBER_CONST_HANDLE_CHECK_(T, x) \
	_Generic(x, T *: (x), const T *: (x), void *: (x), const void *: (x), int: (x))
#define EMBER_B_(b) EMBER_HANDLE_CHECK_(ember_builder *, b)

#define ember_builder_new(out, app_name) \
	ember_builder_new(EMBER_HANDLE_CHECK_(ember_builder **, out), app_name)
#define ember_builder_build(out, b) \
	ember_builder_build(EMBER_HANDLE_CHECK_(ember_agent **, out), EMBER_B_(b))
#define ember_builder_free(b) ember_builder_free(EMBER_B_(b))
#define ember_builder_add_tag(b, key, value) ember_builder_add_tag(EMBER_B_(b), key, value)
#define ember_builder_set_thread_labels(b, on) ember_builder_set_thread_labels(EMBER_B_(b), on)
#define ember_builder_set_sample_rate(b, hz) ember_builder_set_sample_rate(EMBER_B_(b), hz)
#define ember_builder_set_engine(b, engine) ember_builder_set_engine(EMBER_B_(b), engine)
#define ember_builder_set_kernel_frames(b, on) ember_builder_set_kernel_frames(EMBER_B_(b), on)
#define ember_builder_set_signal(b, signo) ember_builder_set_signal(EMBER_B_(b), signo)
#define ember_builder_set_unwind(b, mode) ember_builder_set_unwind(EMBER_B_(b), mode)
#define ember_builder_set_max_depth(b, depth) ember_builder_set_max_depth(EMBER_B_(b), depth)
#define ember_builder_set_line_info(b, mode) ember_builder_set_line_info(EMBER_B_(b), mode)
#define ember_builder_set_wall(b, interval_ms) ember_builder_set_wall(EMBER_B_(b), interval_ms)
#define ember_builder_set_alloc(b, mean_bytes) ember_builder_set_alloc(EMBER_B_(b), mean_bytes)
#define ember_builder_set_alloc_backend(b, backend) \
	ember_builder_set_alloc_backend(EMBER_B_(b), backend)
#define ember_builder_set_poll_threshold(b, ms) ember_builder_set_poll_threshold(EMBER_B_(b), ms)
#define ember_builder_set_interval_ms(b, ms) ember_builder_set_interval_ms(EMBER_B_(b), ms)
#define ember_builder_add_reporter(b, r) ember_builder_add_reporter(EMBER_B_(b), r)
#define ember_builder_set_log(b, fn, userdata, level) \
	ember_builder_set_log(EMBER_B_(b), fn, userdata, level)
#define ember_builder_set_backend(b, backend) ember_builder_set_backend(EMBER_B_(b), backend)
#define ember_builder_set_asprof_options(b, o) ember_builder_set_asprof_options(EMBER_B_(b), o)
#define ember_builder_follow_forks(b, fn, userdata) \
	ember_builder_follow_forks(EMBER_B_(b), fn, userdata)
#define ember_builder_apply_env(b) ember_builder_apply_env(EMBER_B_(b))

#define ember_agent_start(out, a) \
	ember_agent_start(EMBER_HANDLE_CHECK_(ember_running **, out), \
			  EMBER_HANDLE_CHECK_(ember_agent *, a))
#define ember_running_stop(out, r) \
	ember_running_stop(EMBER_HANDLE_CHECK_(ember_agent **, out), \
			   EMBER_HANDLE_CHECK_(ember_running *, r))
#define ember_agent_shutdown(a) ember_agent_shutdown(EMBER_HANDLE_CHECK_(ember_agent *, a))
#define ember_agent_stats(a, out) \
	ember_agent_stats(EMBER_CONST_HANDLE_CHECK_(ember_agent, a), out)
#define ember_running_stats(r, out) \
	ember_running_stats(EMBER_CONST_HANDLE_CHECK_(ember_running, r), out)
#endif /* strict handles */

#endif /* EMBERPROF_H */
