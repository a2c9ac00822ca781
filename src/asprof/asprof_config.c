/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asprof_config.c - choosing the profiling backend and configuring the
 * async-profiler one: the checks behind the builder setters (in
 * agent/config.c) and the environment variables
 * EMBERPROF_BACKEND, EMBERPROF_ASPROF_LIB, EMBERPROF_ASPROF_CPU_INTERVAL,
 * EMBERPROF_ASPROF_WALL_INTERVAL, EMBERPROF_ASPROF_NATIVEMEM and
 * EMBERPROF_ASPROF_ROTATE
 * (docs/CONFIG.md). Every rejection names the setting and the value.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "asprof/asprof_config.h"
#include "util/envsnap.h"
#include "util/error.h"

static int check_cpu(uint64_t ns)
{
	if (ns && (ns < EMBER__ASPROF_MIN_CPU_NS || ns > EMBER__ASPROF_MAX_CPU_NS))
		return ember__error(EMBER_ERR_INVALID, "async-profiler CPU interval %" PRIu64 " ns is out "
				    "of range 10 us..1 h", ns);
	return 0;
}

static int check_wall(unsigned ms)
{
	if (ms > EMBER__ASPROF_MAX_WALL_MS)
		return ember__error(EMBER_ERR_INVALID, "async-profiler wall-clock interval %u ms is out "
				    "of range 1 ms..1 h", ms);
	return 0;
}

int ember__asprof_options_to_config(const ember_asprof_options *in, ember__asprof_config *out)
{
	ember_asprof_options o;
	memset(&o, 0, sizeof(o));
	if (in->sz < offsetof(ember_asprof_options, cpu_interval_ns))
		return ember__error(EMBER_ERR_INVALID, "ember_asprof_options.sz is %zu; initialize the "
				    "options with EMBER_ASPROF_OPTIONS_INIT", in->sz);
	if (in->sz > sizeof(o)) {
		const unsigned char *extra = (const unsigned char *)in + sizeof(o);
		for (size_t i = 0; i < in->sz - sizeof(o); i++)
			if (extra[i])
				return ember__error(EMBER_ERR_INVALID, "ember_asprof_options set fields "
						    "this library version does not know (sz %zu > %zu)",
						    in->sz, sizeof(o));
	}
	memcpy(&o, in, in->sz < sizeof(o) ? in->sz : sizeof(o));
	ember__asprof_config c;
	memset(&c, 0, sizeof(c));
	int rc;
	if ((rc = check_cpu(o.cpu_interval_ns)) || (rc = check_wall(o.wall_interval_ms)))
		return rc;
	c.cpu_interval_ns = o.cpu_interval_ns;
	c.wall_interval_ms = o.wall_interval_ms;
	if (o.native_mem && o.native_mem_bytes)
		return ember__error(EMBER_ERR_INVALID, "async-profiler native memory: give native_mem or "
				    "native_mem_bytes, not both");
	if (o.native_mem) {
		if ((rc = ember__asprof_check_native_mem(o.native_mem)))
			return rc;
		snprintf(c.native_mem, sizeof(c.native_mem), "%s", o.native_mem);
	} else if (o.native_mem_bytes) {
		snprintf(c.native_mem, sizeof(c.native_mem), "%" PRIu64, o.native_mem_bytes);
	}
	if (o.library) {
		if ((rc = ember__asprof_check_library(o.library)))
			return rc;
		snprintf(c.library, sizeof(c.library), "%s", o.library);
	}
	*out = c;
	return 0;
}

static int bad_env(const char *name, const char *value, const char *expect)
{
	return ember__error(EMBER_ERR_INVALID, "environment variable %s=\"%s\" is invalid: %s", name,
			    value, expect);
}

int ember__asprof_apply_env(ember__asprof_config *out, int *out_backend)
{
	const char *v;
	ember__asprof_config c = *out;
	int backend = *out_backend;
	if ((v = ember__getenv("EMBERPROF_BACKEND"))) {
		if (!strcmp(v, "builtin") || !strcmp(v, "emberprof"))
			backend = EMBER_BACKEND_BUILTIN;
		else if (!strcmp(v, "asprof") || !strcmp(v, "async-profiler"))
			backend = EMBER_BACKEND_ASYNC_PROFILER;
		else
			return bad_env("EMBERPROF_BACKEND", v, "expected builtin or asprof");
	}
	if ((v = ember__getenv("EMBERPROF_ASPROF_LIB")) && *v) {
		if (ember__asprof_check_library(v))
			return bad_env("EMBERPROF_ASPROF_LIB", v, "expected the absolute path of "
				       "libasyncProfiler.so (unset: found through LD_LIBRARY_PATH)");
		snprintf(c.library, sizeof(c.library), "%s", v);
	}
	if ((v = ember__getenv("EMBERPROF_ASPROF_CPU_INTERVAL"))) {
		uint64_t ns;
		if (ember__asprof_parse_ns(v, &ns) || ns == 0 || check_cpu(ns))
			return bad_env("EMBERPROF_ASPROF_CPU_INTERVAL", v, "expected CPU time per sample "
				       "such as 10ms, 500us or 10000000 (nanoseconds), 10us..1h");
		c.cpu_interval_ns = ns;
	}
	if ((v = ember__getenv("EMBERPROF_ASPROF_WALL_INTERVAL"))) {
		uint64_t ns;
		if (ember__asprof_parse_ns(v, &ns) || ns < 1000000 || ns % 1000000 ||
		    ns / 1000000 > EMBER__ASPROF_MAX_WALL_MS)
			return bad_env("EMBERPROF_ASPROF_WALL_INTERVAL", v, "expected a whole number of "
				       "milliseconds such as 1s or 200ms, 1ms..1h");
		c.wall_interval_ms = (unsigned)(ns / 1000000);
	}
	if ((v = ember__getenv("EMBERPROF_ASPROF_NATIVEMEM"))) {
		if (!*v || !strcasecmp(v, "off")) { /* "0" is a value: every allocation */
			c.native_mem[0] = '\0';
		} else if (ember__asprof_check_native_mem(v)) {
			return bad_env("EMBERPROF_ASPROF_NATIVEMEM", v, "expected off or a byte count "
				       "between samples such as 4096 or 10m");
		} else {
			snprintf(c.native_mem, sizeof(c.native_mem), "%s", v);
		}
	}
	if ((v = ember__getenv("EMBERPROF_ASPROF_ROTATE"))) {
		if (!strcmp(v, "dump"))
			c.stop_start = 0;
		else if (!strcmp(v, "stop"))
			c.stop_start = 1;
		else
			return bad_env("EMBERPROF_ASPROF_ROTATE", v, "expected dump (the default) or stop");
	}
	*out = c;
	*out_backend = backend;
	return 0;
}
