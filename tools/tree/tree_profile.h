/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_profile.h - what the tree engine adds to a process's window profile
 * (the pid and comm labels, the CPU time no sample stands for) and the
 * profile that the short-lived processes of one window share.
 *
 * A short-lived process (younger than the window interval, with less CPU
 * than ten sampling periods) gets no file of its own: its
 * window's profile (already symbolized with its own layout) is copied into
 * the window's shared profile, its samples labelled with its pid and comm
 * so that `go tool pprof -tagfocus pid=N` and Pyroscope's label filters
 * still split the processes. Mappings, functions and locations that two
 * processes have alike are stored once.
 *
 * The CPU time a process used that none of its samples stands for (a
 * process shorter than a sampling period, and each thread's time after
 * its last sample), known from its threads' counts when they exit, goes
 * to the stacks of its last window in proportion (tree_engine.c); a
 * process without a sample gets one sample of weight that time and count
 * 0 whose stack is two frames: the executable's name (as the root, in the
 * executable's mapping) and `[unsampled]` as the leaf.
 *
 * Owned by the engine's one thread; nothing here is async-signal-safe.
 */
#ifndef EMBER_TREE_PROFILE_H
#define EMBER_TREE_PROFILE_H

#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "util/hashmap.h"

/* The leaf function of the CPU time no sample stands for. */
#define EMBER_TREE_UNSAMPLED "[unsampled]"
/* The leaf function of the CPU time the tree used (by wait4's rusage) that
 * no perf event counted. */
#define EMBER_TREE_UNCOUNTED "[uncounted]"

/* Labels every sample of `p` with pid and comm (strings). 0 or
 * EMBER_ERR_NOMEM. */
int ember__tprof_label(ember__profile *p, pid_t pid, const char *comm);

/*
 * Adds to `p` one sample of `ns` CPU nanoseconds and no sample count, the
 * stack [`leaf`, basename of exe (or comm when exe is NULL)] in exe's
 * mapping (added when p has none of that file). 0 or EMBER_ERR_NOMEM.
 */
int ember__tprof_unsampled(ember__profile *p, const char *exe, const char *comm, uint64_t ns,
			   const char *leaf);

/*
 * The path a process ran its program by, when it is a symbolic link to
 * `exe` (the file the kernel mapped, which perf records name resolved):
 * `redis-server` -> `redis-check-rdb`. The kernel names a process after
 * the path it exec'd (comm, at most 15 characters), so the candidates are
 * exe's directory joined with comm, and the process's argv[0] when it is
 * an absolute path; a candidate counts when it is a symlink to the same
 * file (device and inode). malloc'd, or NULL.
 */
char *ember__tprof_exe_alias(const char *exe, const char *comm, pid_t pid);

/*
 * Names the mappings of `exe` in p by `alias` (their build ids stay), and
 * says which file it is in p's comment ("ALIAS: the file EXE"). 0 or
 * EMBER_ERR_NOMEM.
 */
int ember__tprof_alias_main(ember__profile *p, const char *exe, const char *alias);

/* The shared profile of one window. Zeroed (EMBER_TSHARED_INIT) it is empty. */
typedef struct ember__tshared {
	ember__profile *p;      /* NULL until a process is added */
	ember__u64map maps, funcs, locs; /* content hash -> 1-based index in p */
	uint64_t samples;       /* sample count (the first value) */
	uint64_t procs;         /* processes added */
} ember__tshared;

#define EMBER_TSHARED_INIT {NULL, EMBER_U64MAP_INIT, EMBER_U64MAP_INIT, EMBER_U64MAP_INIT, 0, 0}

/* Copies src's samples (and what they refer to) into s; src is unchanged
 * and stays the caller's. The first profile added gives the sample types.
 * 0 or EMBER_ERR_NOMEM (s then holds a part of src). */
int ember__tshared_add(ember__tshared *s, const ember__profile *src);

/* Hands s's profile to the caller (NULL if empty; ember__profile_free)
 * and empties s. */
ember__profile *ember__tshared_take(ember__tshared *s);

void ember__tshared_release(ember__tshared *s);

#endif
