/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap_exports.c - libemberprof.so's malloc, free and the rest (see
 * src/heap/exports.h). A program's references carry glibc's symbol
 * versions (malloc@GLIBC_2.2.5, aligned_alloc@GLIBC_2.16,
 * reallocarray@GLIBC_2.26) and bind only to a definition of that version:
 * src/emberprof.map gives each name its glibc version. Where this library
 * comes first in the symbol search order (LD_PRELOAD, or linked before
 * libc, as a program linking -lemberprof does), every allocation of the
 * process goes through the hook; with allocation profiling never on in
 * the process it costs a flag test and a jump per call (docs/BENCHMARKS.md
 * section 7: +1.6-3.4 % of a malloc-bound program, the bare interposition
 * +0.9-2.4 %).
 */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include "heap/exports.h"
#endif
