/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dep_zlib.h - zlib, loaded on first use (util/lazydep.h). Include this
 * instead of <zlib.h>: after it, every function listed below is called
 * through ember__zlib_fn, and the first call loads libz.so.1. Callers
 * that must not fail silently check ember__lazydep_load(&ember__zlib)
 * first. zlib's own macros (deflateInit2, inflateInit2) expand to the
 * listed functions and are redirected with them.
 *
 * A function not listed here is an undefined symbol in libemberprof.so,
 * which is linked with --no-undefined: add it to both lists.
 *
 * Not async-signal-safe.
 */
#ifndef EMBER_UTIL_DEP_ZLIB_H
#define EMBER_UTIL_DEP_ZLIB_H

#include <zlib.h>

#include "util/lazydep.h"

#define EMBER__ZLIB_FNS(X) \
	X(crc32) X(deflate) X(deflateBound) X(deflateEnd) X(deflateInit2_) X(inflate) \
	X(inflateEnd) X(inflateInit2_) X(inflateReset)

struct ember__zlib_fns {
	EMBER__ZLIB_FNS(EMBER__LAZYDEP_SLOT)
};
extern struct ember__zlib_fns ember__zlib_fn;
extern struct ember__lazydep ember__zlib;

#define EMBER__ZLIB_CALL(f) (ember__lazydep_need(&ember__zlib), *ember__zlib_fn.p_##f)
#define crc32         EMBER__ZLIB_CALL(crc32)
#define deflate       EMBER__ZLIB_CALL(deflate)
#define deflateBound  EMBER__ZLIB_CALL(deflateBound)
#define deflateEnd    EMBER__ZLIB_CALL(deflateEnd)
#define deflateInit2_ EMBER__ZLIB_CALL(deflateInit2_)
#define inflate       EMBER__ZLIB_CALL(inflate)
#define inflateEnd    EMBER__ZLIB_CALL(inflateEnd)
#define inflateInit2_ EMBER__ZLIB_CALL(inflateInit2_)
#define inflateReset  EMBER__ZLIB_CALL(inflateReset)

#endif
