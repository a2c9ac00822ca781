/* SPDX-License-Identifier: Apache-2.0 */
/*
 * empty_preload.c - a shared library that does nothing, for
 * bench/startcost.sh's loop case: preloaded into every process of a shell
 * loop, it measures what LD_PRELOAD itself costs a process that lives a
 * millisecond (one more object for the loader to find, map and relocate),
 * the floor under any in-process profiler that follows a process tree
 * through LD_PRELOAD (docs/BENCHMARKS.md section 13).
 */
__attribute__((visibility("default"))) int ember_bench_empty_preload;
