/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.h - the option parsers shared by the builder, the EMBERPROF_*
 * environment, the reporters' settings and the CLI. Each takes a
 * NUL-terminated string it does not keep and returns 0 with the value in
 * *out, or EMBER_ERR_INVALID (the caller names the setting in its error).
 * Pure functions: thread-safe, not async-signal-safe (strtoul, strcasecmp).
 */
#ifndef EMBER_UTIL_PARSE_H
#define EMBER_UTIL_PARSE_H

#include <stdint.h>

/* The wall-clock interval "on" means. */
#define EMBER__WALL_DEFAULT_MS 50

/* A duration of 1 ms or more: "250ms", "1.5s", "2m", or a bare number
 * (seconds, as in Pyroscope's agents). */
int ember__parse_duration_ms(const char *s, unsigned *out_ms);
/* Decimal digits only, within [min, max]. */
int ember__parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out);
/* 1/true/yes/on or 0/false/no/off/"" (any case). */
int ember__parse_bool(const char *s, int *out);
/* A signal number, or SIGPROF-style names and SIGRTMIN+N. */
int ember__parse_signal(const char *s, int *out);
/* error, warn, info, debug (EMBER_LOG_*). */
int ember__parse_log_level(const char *s, int *out);
/* EMBERPROF_OUTPUT_FORMAT: "pprof", "jfr" or "both" -> EMBER_FORMAT_* bits. */
int ember__parse_formats(const char *s, unsigned *out);
/* "off"/"0" (0), "on" (the default 50 ms) or a duration of 1 ms..60 s. */
int ember__parse_wall(const char *s, unsigned *out_ms);

/* Allocation profiling: "off"/"0" (0), "on"/"1" (the default mean) or a
 * mean such as 512k, 1m, 4096 (bytes; 1 takes every allocation). */
int ember__parse_alloc(const char *s, uint64_t *out);
/* A decimal number at the start of `s` (digits first, no sign): its
 * value, and in *unit what follows it. 0 or EMBER_ERR_INVALID (overflow). */
int ember__parse_number(const char *s, unsigned long long *value, const char **unit);
/* A byte size: 4096, 512k, 512KiB, 1m, 1MiB, 1g (binary units), 1..1 GiB. */
int ember__parse_bytes(const char *s, uint64_t *out);
#define EMBER__ALLOC_MAX_MEAN (1ull << 30)

#endif
