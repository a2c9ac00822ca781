/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dep_jansson.h - jansson, loaded on first use (util/lazydep.h), for the
 * AWS metadata and credential answers of the S3 reporter. Include this
 * instead of <jansson.h>: after it, every function listed below is called
 * through ember__jansson_fn, and the first call loads libjansson.so.4.
 * Callers check ember__lazydep_load(&ember__jansson) first.
 *
 * jansson.h defines json_decref as an inline function that calls
 * json_delete by name, which would bind to the library directly; it is
 * renamed away while the header is read (left unused, never emitted) and
 * defined again below, the same, with json_delete through the table.
 *
 * A function not listed here is an undefined symbol in libemberprof.so,
 * which is linked with --no-undefined: add it to both lists.
 *
 * Not async-signal-safe.
 */
#ifndef EMBER_UTIL_DEP_JANSSON_H
#define EMBER_UTIL_DEP_JANSSON_H

#define json_decref ember__jansson_header_decref
#include <jansson.h>
#undef json_decref

#include "util/lazydep.h"

#define EMBER__JANSSON_FNS(X) \
	X(json_delete) X(json_integer_value) X(json_loadb) X(json_number_value) \
	X(json_object_get) X(json_string_length) X(json_string_value)

struct ember__jansson_fns {
	EMBER__JANSSON_FNS(EMBER__LAZYDEP_SLOT)
};
extern struct ember__jansson_fns ember__jansson_fn;
extern struct ember__lazydep ember__jansson;

#define EMBER__JANSSON_CALL(f) (ember__lazydep_need(&ember__jansson), *ember__jansson_fn.p_##f)
#define json_delete        EMBER__JANSSON_CALL(json_delete)
#define json_integer_value EMBER__JANSSON_CALL(json_integer_value)
#define json_loadb         EMBER__JANSSON_CALL(json_loadb)
#define json_number_value  EMBER__JANSSON_CALL(json_number_value)
#define json_object_get    EMBER__JANSSON_CALL(json_object_get)
#define json_string_length EMBER__JANSSON_CALL(json_string_length)
#define json_string_value  EMBER__JANSSON_CALL(json_string_value)

/* jansson.h's json_decref, calling json_delete through the table. */
static inline void json_decref(json_t *json)
{
	if (json && json->refcount != (size_t)-1 && JSON_INTERNAL_DECREF(json) == 0)
		json_delete(json);
}

#endif
