/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap_link.c - malloc, free and the rest for programs that link
 * emberprof's objects in (the emberprof_heaplink object library: the
 * heap tests): the program's own definitions, found before libc's. See
 * src/heap/exports.h; the shared library has heap_exports.c instead.
 */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include "heap/exports.h"
#endif
