/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_engine.h - CPU profiles of a whole process tree, sampled from
 * outside it: what `emberprof run --engine tree` runs in the
 * emberprof process while the command runs.
 *
 * Data path: the kernel samples every thread of the tree (perf_tree.h);
 * the records are read here, in time order; each process's mappings are
 * followed (tree_space.h) and each sample is walked from its stack copy
 * with tables shared by the whole tree (tree_mods.h) into that process's
 * aggregate of the window. When a window closes, and when a process
 * execs or exits, the process's aggregate becomes a CPU profile (window.h,
 * named by a symbolizer given the process's layout) handed to the
 * configuration's reporters with the process's pid (ember_report.pid).
 * Every process's CPU is in the profiles, sampled or not: its threads'
 * counts at exit tell what no sample stands for (tree_profile.h), and
 * short-lived processes share one profile per window, their samples
 * labelled with pid and comm. Windows end on whole multiples of the
 * interval. Design: docs/design/tree-engine-coverage.md.
 *
 * Weights are the CPU nanoseconds of the kernel's sampling period; with
 * perf_event_paranoid 2 (no CAP_PERFMON) only user-mode time is sampled
 * (ember__tree_stats.user_only), and each sample weighs the CPU time its
 * count says it stands for, the kernel's included, where the kernel gives
 * inherited samples their counts (Linux 6.12+, kernel_weighed); before
 * that a process's time in the kernel is missing from its profile.
 *
 * Not yet: wall-clock, allocation and JFR output, labels beyond the
 * configuration's tags, the unwind-table cache on disk.
 *
 * One thread owns an engine; nothing here is async-signal-safe.
 */
#ifndef EMBER_TREE_ENGINE_H
#define EMBER_TREE_ENGINE_H

#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"
#include "profile/profile.h"

typedef struct ember__tree ember__tree;

typedef struct ember__tree_stats {
	uint64_t records, samples, lost;
	uint64_t processes;          /* processes seen */
	uint64_t processes_profiled; /* of those, with at least one profile */
	uint64_t profiles;           /* profiles handed to the reporters */
	uint64_t shared_profiles;    /* of those, the windows' shared profiles */
	uint64_t processes_shared;   /* processes profiled in a shared profile only */
	uint64_t unsampled_reported_ns; /* CPU time no sample stands for, in the profiles:
					   spread over a process's last stacks, or as its
					   [unsampled] frame (tree_profile.h) */
	uint64_t unsampled_spread_ns;   /* of it, spread over stacks */
	uint64_t trimmed_ns;            /* samples' weight beyond their process's count,
					   taken off its last stacks (not in the profiles) */
	uint64_t uncounted_ns;          /* the tree's CPU by rusage no event counted,
					   as [uncounted] (ember__tree_set_waited) */
	uint64_t report_failures;    /* reporter calls or encodings that failed */
	uint64_t truncated;          /* walks that stopped before the outermost frame */
	uint64_t sampled_ns;         /* CPU time the samples weigh */
	uint64_t unsampled_ns;       /* after ember__tree_finish: CPU time the tree used
					that no sample weighs (each thread's time after
					its last sample), from the events' own counts */
	uint64_t tables, table_rows, table_build_ns, table_failures;
	uint64_t tables_deferred;    /* table builds held back by the budget (tree_mods.h) */
	int user_only;
	int kernel_weighed; /* user_only, with samples weighed by their counts */
	int kernel_frames;  /* samples carry kernel callchains */
	int kernel_named;   /* ... named from /proc/kallsyms (else one [kernel] frame) */
	const char *kernel_why; /* why not named ("" if named); borrowed */
	uint64_t kernel_samples; /* samples with kernel frames */
	uint64_t names_held;     /* profiles held for names under way (ember__tree_set_names) */
	uint64_t names_expired;  /* ... of them, reported at the bound with some still under way */
} ember__tree_stats;

/*
 * Names that arrive while the run goes on (docs/design/debuginfod.md,
 * "Per window"): each window's profile is handed to `name` before it is
 * reported, and held back (the drain going on) while that says something
 * is still under way for it, at most wait_ms; the engine's symbolizers are
 * made anew when `answered` grows (a debug file they did not have may be
 * there now). The callbacks never wait; they run on the engine's thread.
 */
typedef struct ember__tree_names {
	/* Names what it can of prof's unnamed locations with what has
	 * arrived, asking for what would name the rest: how much of that
	 * is still under way (0: report it now), or < 0 on an error (the
	 * profile is reported as it is). */
	int (*name)(void *arg, ember__profile *prof);
	/* Grows each time something asked for is answered. */
	uint64_t (*answered)(void *arg);
	void *arg;
	int64_t wait_ms; /* how long a profile is held at most */
} ember__tree_names;

/* Sets the naming hooks (copied; NULL: none, every profile reported as
 * made). Set before the first window, or NULL in a fork child. */
void ember__tree_set_names(ember__tree *t, const ember__tree_names *names);

/*
 * An engine reporting to cfg's reporters (borrowed: cfg must outlive the
 * engine; the caller has bound them: ember__config_bind_reporters), at
 * cfg->hz samples per CPU second, windows of cfg->interval_ms, stacks of
 * cfg->max_depth. 0 and *out, or EMBER_ERR_NOMEM.
 */
int ember__tree_new(ember__tree **out, ember__config *cfg);

/*
 * Starts sampling the tree of `pid`, which must not have exec'd yet (it
 * waits for the caller's go): sampling begins at its exec. 0, or
 * EMBER_ERR_UNSUPPORTED with the kernel's reason.
 */
int ember__tree_attach(ember__tree *t, pid_t pid);

/* 1 (the default; before ember__tree_attach or _attach_task): samples in
 * the kernel carry its frames, where the kernel permits kernel samples
 * (tree_kernel.h); 0 (EMBERPROF_KERNEL=0 in `emberprof run`): the user
 * frames only. */
void ember__tree_set_kernel(ember__tree *t, int kernel);

/*
 * `emberprof attach`: sampling starts at once on running thread `tid`;
 * threads_only: the threads it starts inherit its events, its children
 * do not (--no-follow-children). 0, or EMBER_ERR_UNSUPPORTED with the
 * kernel's reason.
 */
int ember__tree_attach_task(ember__tree *t, pid_t tid, int threads_only);

/* Another running thread, of any process, sampled from now on (after
 * ember__tree_attach_task). 0, -ESRCH if it has exited, or ember_err. */
int ember__tree_add_task(ember__tree *t, pid_t tid);

/*
 * A process that ran before sampling began: its name, program, threads'
 * names and executable mappings as its records would have told them, read
 * from /proc/PID (call once its threads' events are open, so that a
 * mapping made meanwhile comes in a record, after this). 0, -ESRCH if it
 * has exited, or EMBER_ERR_NOMEM.
 */
int ember__tree_adopt(ember__tree *t, pid_t pid);

/* 0: only the attached process is profiled (what it execs into included),
 * not its descendants (--no-follow-children); 1 (the default): the tree. */
void ember__tree_set_follow(ember__tree *t, int follow);

/* Waits up to timeout_ms for records, reads them, and reports the
 * windows and processes that ended. 0 or the first reporter error. */
int ember__tree_step(ember__tree *t, int timeout_ms);

/* The command has exited: every record read so far is delivered (its
 * processes' last records are all in the rings by now), without waiting
 * for the time-order watermark. 0 or the first reporter error. */
int ember__tree_settle(ember__tree *t);

/*
 * How many processes of the tree still run (their exit not seen, and the
 * pid still there, held by the same process: a pid whose process started
 * after the FORK record was reused after an exit record that was lost,
 * ember__tree_started_by). Those found gone without an exit record (lost)
 * get their last window reported here.
 */
size_t ember__tree_alive(ember__tree *t);

/*
 * Whether the process now at `pid` can be the one whose FORK record had
 * time fork_mono_ns (CLOCK_MONOTONIC): 1 if it started no later than that
 * (its /proc/PID/stat start time, in clock ticks since boot, within two
 * ticks of it), 0 if it started later (the pid was reused), -1 if it
 * cannot tell (no such process, /proc unreadable). Not async-signal-safe.
 */
int ember__tree_started_by(int pid, int64_t fork_mono_ns);

/*
 * The CPU time the command's whole tree used, as wait4's rusage gives it
 * (the command and the children it waited for, theirs included), called
 * before ember__tree_finish once the command has been reaped and nothing
 * of the tree runs on: what the events did not count of it (the kernel's
 * work on a process after its events are gone at exit, and before the
 * command's exec) goes to the command's last profile as `[uncounted]`
 * (tree_profile.h). 0 (the default): none.
 */
void ember__tree_set_waited(ember__tree *t, uint64_t ns);

/* The tree has exited (or the run stops): reads what is left and reports
 * every process's last window (final). 0 or the first reporter error. */
int ember__tree_finish(ember__tree *t);

/*
 * In a child forked to go on sampling (a background collector), first
 * thing: the rings mapped again (fork does not copy them). The kernel
 * keeps a ring, and the records written to it, only while some process
 * maps it, so the parent must not unmap its own (free the engine) before
 * this has returned in the child. 0, or EMBER_ERR_SYS.
 */
int ember__tree_remap_after_fork(ember__tree *t);

/*
 * Then: the reports go to `cfg`'s reporters from now on (a configuration
 * built in the child: a network reporter's upload thread does not survive
 * fork; borrowed, bound by the caller, must outlive the engine). 0 or
 * EMBER_ERR_NOMEM.
 */
int ember__tree_after_fork(ember__tree *t, ember__config *cfg);

/* (may read /proc/kallsyms, for kernel_named) */
void ember__tree_get_stats(ember__tree *t, ember__tree_stats *out);
void ember__tree_free(ember__tree *t);

#endif
