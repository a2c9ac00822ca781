/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent.h - what the rest of the tree may use of the agent: its settings
 * (ember__config, filled by the builder: config.c) and the calls that
 * src/preload, src/link, tools/tree, the CLI and the tests make into it.
 * The agent's own structures stay in agent_internal.h and core.h, which
 * only the files of src/agent/ include. Nothing here is
 * async-signal-safe except where a comment says so.
 */
#ifndef EMBER_AGENT_AGENT_H
#define EMBER_AGENT_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "asprof/asprof.h"
#include "emberprof.h"
#include "profile/window.h"
#include "util/log.h"

/* Settings: filled by the builder, copied into the agent at build. */
typedef struct ember__config {
	char *app_name;
	unsigned hz;
	unsigned interval_ms;
	unsigned max_depth;
	int unwind;
	int engine;
	unsigned wall_ms; /* wall-clock interval, 0: off */
	int perf_refuse;  /* test knob EMBERPROF_ENGINE_PERF_DISABLE: act as if perf_event_open were refused */
	int wall_signal_idle; /* test knob EMBERPROF_WALL_SIGNAL_IDLE: signal idle threads too */
	unsigned drain_ms; /* test knob EMBERPROF_DRAIN_INTERVAL: drain this often (0: every 50 ms) */
	int signo;
	int thread_labels;
	int lines; /* ember_line_info */
	int no_symbolize; /* EMBERPROF_SYMBOLIZE=0: addresses, mappings and build ids only */
	int kernel; /* EMBERPROF_KERNEL: perf events that sample the kernel record its frames */
	uint64_t alloc_mean; /* allocation profiling: mean bytes between samples; 0: off */
	int alloc_backend;   /* ember_alloc_backend: the memory profile's source */
	unsigned poll_threshold_ms; /* pollcatch: shortest poll whose samples are labelled */
	ember__tag *tags;
	size_t ntags;
	ember_reporter *reporters;
	size_t nreporters;
	ember__logger log; /* ember_builder_set_log, EMBERPROF_LOG_LEVEL */
	/* the profiling backend (ember_backend) and the async-profiler one's settings */
	int backend;
	ember__asprof_config asprof;
	/* ember_builder_follow_forks: finishes a fork child's builder; NULL: off */
	ember_fork_fn fork_fn;
	void *fork_ud;
} ember__config;

struct ember_builder {
	ember__config cfg;
};

/*
 * The program is leaving through _exit()/_Exit(), which skips atexit and
 * so ember_running_stop(): asks the agent thread to report the final
 * window now (reporters flush as at a stop) and waits up to timeout_ms
 * for it. Returns 0 when it was reported, 1 on timeout (the window is
 * lost: the caller says so), -1 when there is nothing to do here (another
 * process's agent, the async-profiler backend, already stopping).
 * Async-signal-safe: atomics, clock_gettime and nanosleep only, so the
 * hook may run in a signal handler; the agent thread does the work.
 */
int ember__running_exit_flush(ember_running *r, unsigned timeout_ms);

/* The settings a window's profile takes (profile/window.h), borrowed
 * from c: valid while c is unchanged. */
static inline ember__window_cfg ember__config_window(const ember__config *c)
{
	return (ember__window_cfg){c->tags, c->ntags, c->thread_labels, c->hz, c->wall_ms, NULL};
}

/* Frees everything a config owns (reporters' destroy() included if `destroy_reporters`). */
void ember__config_release(ember__config *c, int destroy_reporters);
/* Sets the defaults. */
void ember__config_defaults(ember__config *c);
/*
 * Tells each reporter with a bind() callback about the agent it serves
 * (cfg's name, tags, rates) and caps cfg->max_depth at what the strictest
 * reporter's backend keeps. 0, or the first refusal with the reporter's
 * message. Called once, before the first report: by ember_builder_build,
 * or by the tree engine (tools/tree/tree_engine.h) for its reporters.
 */
int ember__config_bind_reporters(ember__config *cfg);

/*
 * Hands one report to every reporter of cfg taking its format; a failure
 * is logged (naming the reporter, the window and, when rep->pid is set,
 * the process) and counted in *failed. 0, or EMBER_ERR_REPORTER if one
 * failed. The agent thread's, or the tree engine's.
 */
int ember__config_call_reporters(const ember__config *cfg, const ember_report *rep,
				 uint64_t *failed);

/* The symbolizer's line policy (EMBER__LINES_*, symbols/symbolizer.h)
 * for cfg->lines (--lines): the agent's and the tree engine's. */
int ember__config_lines_policy(const ember__config *cfg);

/* The symbolizer options (symbols/symbolizer.h, EMBER__SYM_*) the
 * configuration asks for: EMBER__SYM_ADDRESSES_ONLY under
 * EMBERPROF_SYMBOLIZE=0, else none. */
unsigned ember__config_symbolizer_flags(const ember__config *cfg);

/* Logs what a symbolizer could not read (files, elfutils failures) and
 * the perf map it read JIT names from, at the level each deserves: at
 * the agent's stop, and by the tree engine as each process ends. */
struct ember__symbolizer;
void ember__log_symbolizer_stats(const ember__config *cfg, struct ember__symbolizer *sym);

/*
 * A new builder with the settings of `src` (its own copies of the
 * application name and tags) and no reporter: a fork child's, before
 * ember_fork_fn adds its reporters (src/preload/preload.c). 0 or
 * EMBER_ERR_NOMEM. Not async-signal-safe.
 */
int ember__builder_from_settings(ember_builder **out, const ember__config *src);

/*
 * Following fork children (ember_builder_follow_forks), implemented by the
 * shared library's preload part (src/preload/preload.c) and, as
 * "unsupported", by src/link/follow_none.c in the static one:
 *  - available: 1 when this copy of emberprof can follow forks;
 *  - begin: from now on a fork child of this process starts an agent with
 *    the settings of `cfg` (copied) and cfg->fork_fn; called by
 *    ember_agent_start once the agent runs. 0 or a negative ember_err;
 *  - end: no more (ember_running_stop, in the process that started it).
 * Not async-signal-safe.
 */
int ember__follow_forks_available(void);
int ember__follow_forks_begin(const ember__config *cfg);
void ember__follow_forks_end(void);

/* Logging through c->log (util/log.h); nothing when c is NULL (a part
 * used without an agent, as in unit tests). Never from a handler. */
void ember__log(const ember__config *c, ember_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The option parsers (shared with the CLI and the reporters). */
#include "util/parse.h"

#endif
