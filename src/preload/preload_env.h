/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preload_env.h - names shared by the LD_PRELOAD entry point
 * (src/preload/preload.c) and the `emberprof` CLI, which sets them up for
 * the program it starts. See docs/CONFIG.md for every variable.
 *
 * EMBERPROF_AUTOSTART is read only by the preload entry point; the other
 * EMBERPROF_* variables are applied by ember_builder_apply_env().
 */
#ifndef EMBER_PRELOAD_ENV_H
#define EMBER_PRELOAD_ENV_H

#define EMBER_ENV_AUTOSTART "EMBERPROF_AUTOSTART"
#define EMBER_ENV_FOLLOW_CHILDREN "EMBERPROF_FOLLOW_CHILDREN"
/* With EMBERPROF_FOLLOW_CHILDREN=0, the pid of the one process profiled
 * (set by the library in that process; `emberprof run` clears it). */
#define EMBER_ENV_PROFILE_PID "EMBERPROF_PROFILE_PID"
/* Set by `emberprof run` to its own pid: the process it started (its child,
 * whatever that child execs into) starts its agent at once; every other
 * process of the tree starts one lazily, once it shows it lives (so a
 * shell loop's /bin/true costs next to nothing). Absent (plain
 * LD_PRELOAD): every process starts at once. */
#define EMBER_ENV_RUN_PID "EMBERPROF_RUN_PID"
#define EMBER_ENV_OUTPUT_DIR "EMBERPROF_OUTPUT_DIR"
#define EMBER_ENV_APP_NAME "EMBERPROF_APP_NAME"

/* The file name (without version suffix) of the preloadable library. */
#define EMBER_PRELOAD_LIBNAME "libemberprof.so"
/* The same library without malloc & co (no allocation hook): what the CLI
 * preloads when allocation profiling is off. */
#define EMBER_PRELOAD_NOALLOC_LIBNAME "libemberprof_noalloc.so"

#endif
