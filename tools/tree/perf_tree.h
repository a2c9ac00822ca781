/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf_tree.h - samples a whole process tree from outside it:
 * the kernel half of the out-of-process engine for `emberprof run`.
 *
 * One CPU-clock perf event per CPU, opened on the command's process
 * before it execs (enabled by the exec itself) and inherited by every
 * process and thread it starts, across fork and exec: nothing is loaded
 * into the tree, no thread is added to it, and a process that lives a few
 * milliseconds costs the kernel's bookkeeping only (bench/perf_tree_floor.c
 * measured that design at 1.05x the shell loop's CPU). Each sample
 * carries the thread, the time, the user registers the unwinder starts
 * from and a copy of the top of the user stack (unwound later, in this
 * process, with our own tables: tools/tree/tree_space.h). The rings also
 * carry what names the samples: executable mappings (MMAP2), names and
 * execs (COMM), forks and exits (FORK, EXIT) and losses (LOST), and what
 * each thread used, sampled or not: its count on each CPU when it exits
 * (READ, inherit_stat).
 *
 * Records of different CPUs' rings are merged by time: a sample must meet
 * the mappings of its process as they were when it was taken. The rings
 * are read up to a watermark (the clock when the drain began, less a
 * margin for records the kernel was still writing); anything later waits
 * for the next drain, or for the final one.
 *
 * With perf_event_paranoid 2 (the default) and no CAP_PERFMON, events
 * sample user mode only: samples then fall where the tree runs its own
 * code, never in the kernel. Where the kernel lets an inherited event's
 * samples read its count (Linux 6.12+), each sample's period is the CPU
 * time since the thread's previous sample on that CPU, time in the kernel
 * included, which then weighs the next user-mode stack (as a CPU timer's
 * signal, delivered on the way back from the kernel, does in the library).
 * ember__ptree_open says which it got.
 *
 * Not async-signal-safe; one thread owns a tree sampler.
 */
#ifndef EMBER_PERF_TREE_H
#define EMBER_PERF_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwind.h"

typedef struct ember__ptree ember__ptree;

typedef struct ember__ptree_opts {
	unsigned hz;          /* samples per second of CPU time per thread; 0: 100 */
	uint32_t stack_bytes; /* bytes of user stack copied per sample (8-byte
				 multiple, <= 65,528); 0: 16,384 */
	unsigned ring_pages;  /* data pages per CPU's ring, a power of two; 0: 128 */
	int user_only;        /* 1: count user mode only even where the kernel
				 would count kernel time too (tests) */
	int kernel_frames;    /* 1: with kernel samples, each carries its kernel
				 callchain (PERF_SAMPLE_CALLCHAIN, user part
				 excluded: the user stack is walked here) */
} ember__ptree_opts;

/* Most kernel frames a sample carries (the kernel's own limit is
 * perf_event_max_stack, 127 by default). */
#define EMBER_PTREE_KMAX 64

/* Record types handed to the callback. */
enum {
	EMBER_PTREE_SAMPLE = 1,
	EMBER_PTREE_MMAP = 2, /* an executable file mapping (or [vdso]) */
	EMBER_PTREE_COMM = 3, /* a thread's name; exec: the process exec'd */
	EMBER_PTREE_FORK = 4, /* a process (pid != ppid) or thread (pid == ppid) was created */
	EMBER_PTREE_EXIT = 5, /* a thread exited; the process when tid == pid */
	EMBER_PTREE_LOST = 6, /* the kernel dropped records: a ring was full */
	EMBER_PTREE_READ = 7  /* an exited thread's count on one CPU (inherit_stat) */
};

/*
 * One record, valid during the callback only (its strings and stack copy
 * point into the reader's buffers). pid/tid/time are the record's own for
 * every type (time: CLOCK_MONOTONIC nanoseconds).
 */
typedef struct ember__ptree_rec {
	int type;
	int32_t pid, tid;
	uint64_t time;
	union {
		struct {
			uint64_t period;     /* CPU nanoseconds since the thread's previous sample */
			ember__regs regs;    /* pc, sp, fp, aux (x86-64: rbx; aarch64: x30) */
			int regs_ok;         /* 0: the kernel gave no user registers
						(a kernel thread, or none yet) */
			const uint8_t *stack; /* the copy of [regs.sp, regs.sp + stack_len) */
			uint64_t stack_len;
			uint32_t nkips;       /* kernel frames, innermost first (0: none, a
						 user-mode sample or no kernel_frames) */
			uint64_t kips[EMBER_PTREE_KMAX];
		} sample;
		struct {
			uint64_t start, len, pgoff;
			uint32_t maj, min;
			uint64_t ino;
			uint32_t prot;
			const char *path;
		} mmap;
		struct {
			const char *comm;
			int exec;
		} comm;
		struct {
			int32_t ppid, ptid; /* FORK: the parent; EXIT: the parent too */
		} task;
		struct {
			uint64_t lost;
		} lost;
		struct {
			uint64_t value; /* CPU nanoseconds the thread ran on that CPU */
		} read;
	} u;
} ember__ptree_rec;

typedef void (*ember__ptree_cb)(void *arg, const ember__ptree_rec *rec);

typedef struct ember__ptree_stats {
	uint64_t records, samples, lost, throttles, unknown;
	uint64_t malformed; /* records whose size contradicts their content: skipped */
	uint64_t bytes;     /* bytes read from the rings */
	uint64_t sample_ns; /* CPU time the samples decoded weigh (their periods) */
	uint64_t read_ns;   /* CPU time of the exited threads, from their READ records */
	uint64_t holds, hold_failures; /* processes given a context of their own (ember__ptree_hold) */
	uint64_t counted_ns; /* CPU time the events counted, the whole tree's,
				read at the final drain (0 before, or if the
				kernel refused the read); sample_ns falls short
				of it by what no sample stands for: each
				thread's time after its last sample */
	int exclude_kernel; /* 1: user mode only (perf_event_paranoid >= 2) */
	int kernel_frames;  /* samples carry kernel callchains (kernel_frames asked,
			       and kernel samples permitted) */
	int kernel_weighed; /* with exclude_kernel: each sample's period is the
			       CPU time its count says it stands for, the
			       kernel's included (PERF_SAMPLE_READ, Linux 6.12+) */
} ember__ptree_stats;

/*
 * Opens one event per CPU on process `pid`, which must not have exec'd
 * yet: the events start at its next exec (enable_on_exec) and follow
 * every descendant. Tries to count kernel time too, and falls back to
 * user mode only. Returns 0 and *out (the caller's: ember__ptree_free),
 * EMBER_ERR_UNSUPPORTED when the kernel refuses (with the reason:
 * ember_last_error()), EMBER_ERR_INVALID for bad options, or
 * EMBER_ERR_NOMEM.
 */
int ember__ptree_open(ember__ptree **out, pid_t pid, const ember__ptree_opts *opts);

/*
 * Whether ember__ptree_open would be permitted here, asked without a
 * child: 2 with kernel samples, 1 with user-mode samples weighed by their
 * counts, kernel time included (perf_event_paranoid 2 without
 * CAP_PERFMON, Linux 6.12+), 0 otherwise (refused: paranoid 3, seccomp,
 * no perf events; or user mode only without counts). Opens and closes
 * one disabled event on the caller itself.
 */
int ember__ptree_probe(void);

/*
 * In a child forked from the reader's process: the rings again. The
 * kernel does not copy their mappings into a fork child (VM_DONTCOPY);
 * the descriptors are inherited. 0 or EMBER_ERR_SYS.
 */
int ember__ptree_after_fork(ember__ptree *t);

/*
 * Gives process `pid` of the tree a perf context of its own: one disabled,
 * non-inherited dummy event on it (kept until ember__ptree_release, or the
 * sampler is freed). The kernel otherwise treats a child's context as a
 * clone of its parent's and swaps the two at a context switch between
 * them instead of stopping the events: a parent that forks a short child
 * every millisecond then restarts the child's fresh sampling period each
 * time and never takes a sample (perf record -e cpu-clock shows the same).
 * A non-inherited event in the parent's context makes its children's
 * contexts no clones (and opening it unclones its own). Idempotent. 0 or
 * EMBER_ERR_UNSUPPORTED (counted in hold_failures).
 */
int ember__ptree_hold(ember__ptree *t, pid_t pid);
/* Closes the dummy event of an exited process (no-op if none). */
void ember__ptree_release(ember__ptree *t, pid_t pid);

/*
 * Sampling processes that already run (`emberprof attach`): the rings of
 * ember__ptree_open, held by disabled events on this process (which never
 * sample it), and no thread sampled yet: each running thread is added
 * with ember__ptree_add_task; the threads and, unless threads_only, the
 * child processes it starts from then on inherit its events. Same
 * returns as ember__ptree_open.
 */
int ember__ptree_open_rings(ember__ptree **out, const ember__ptree_opts *opts, int threads_only);

/*
 * One more running thread (of any process) sampled into the rings of t
 * from now on: one event per CPU, its output in that CPU's ring
 * (PERF_EVENT_IOC_SET_OUTPUT). 0, -ESRCH when the thread has exited
 * meanwhile (nothing to sample), or EMBER_ERR_UNSUPPORTED (the kernel's
 * reason: ember_last_error) / EMBER_ERR_NOMEM.
 */
int ember__ptree_add_task(ember__ptree *t, pid_t tid);

/* Closes the events and frees everything. NULL is ok. */
void ember__ptree_free(ember__ptree *t);

/* Waits up to timeout_ms for a ring to pass its wakeup mark (a quarter
 * full); returns at once if one has. 0, or a negative errno. */
int ember__ptree_wait(ember__ptree *t, int timeout_ms);

/*
 * Reads every ring and calls cb for each record up to the watermark, in
 * time order (records of one time in the order read). `final`: everything
 * read is delivered (the tree has exited, or the caller stops). Returns
 * the number of records delivered.
 */
size_t ember__ptree_drain(ember__ptree *t, int final, ember__ptree_cb cb, void *arg);

void ember__ptree_get_stats(const ember__ptree *t, ember__ptree_stats *out);

#endif
