/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.c - the option parsers (parse.h).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emberprof.h"
#include "util/parse.h"
#include "util/hotpage.h"

int ember__parse_number(const char *s, unsigned long long *value, const char **unit)
{
	if (!s || !isdigit((unsigned char)*s))
		return EMBER_ERR_INVALID;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return EMBER_ERR_INVALID;
	*value = v;
	*unit = end;
	return 0;
}

int ember__parse_bytes(const char *s, uint64_t *out)
{
	unsigned long long v;
	const char *end;
	if (ember__parse_number(s, &v, &end))
		return EMBER_ERR_INVALID;
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {{"", 0},	   {"b", 0},	  {"k", 10},   {"kb", 10}, {"kib", 10},
		     {"m", 20},	   {"mb", 20},	  {"mib", 20}, {"g", 30},  {"gb", 30},
		     {"gib", 30}};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].suffix) != 0)
			continue;
		if (v == 0 || v > (EMBER__ALLOC_MAX_MEAN >> units[i].shift))
			return EMBER_ERR_INVALID;
		*out = (uint64_t)v << units[i].shift;
		return 0;
	}
	return EMBER_ERR_INVALID;
}

int ember__parse_alloc(const char *s, uint64_t *out)
{
	int on;
	if (!s)
		return EMBER_ERR_INVALID;
	if (ember__parse_bool(s, &on) == 0) {
		*out = on ? 512u * 1024u : 0;
		return 0;
	}
	return ember__parse_bytes(s, out);
}

int ember__parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	if (!s || !*s || !isdigit((unsigned char)*s))
		return EMBER_ERR_INVALID;
	errno = 0;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return EMBER_ERR_INVALID;
	*out = v;
	return 0;
}

int ember__parse_duration_ms(const char *s, unsigned *out_ms)
{
	if (!s || !isdigit((unsigned char)*s))
		return EMBER_ERR_INVALID;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (errno || v < 0)
		return EMBER_ERR_INVALID;
	double mul;
	if (!*end || !strcmp(end, "s"))
		mul = 1000; /* a bare number is seconds, as in Pyroscope's agents */
	else if (!strcmp(end, "ms"))
		mul = 1;
	else if (!strcmp(end, "m"))
		mul = 60000;
	else
		return EMBER_ERR_INVALID;
	double ms = v * mul;
	if (ms > (double)UINT_MAX || ms < 1)
		return EMBER_ERR_INVALID;
	*out_ms = (unsigned)(ms + 0.5);
	return 0;
}

/* strcasecmp for ASCII words: libc's reads the locale's tables, a page
 * fault or three in every process of a tree whose constructor parses a
 * flag (util/hotpage.h). */
EMBER_HOT_TEXT static int ascii_ieq(const char *a, const char *lower)
{
	for (; *a && *lower; a++, lower++) {
		char c = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
		if (c != *lower)
			return 0;
	}
	return *a == *lower;
}

EMBER_HOT_TEXT int ember__parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off", ""};
	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		if (ascii_ieq(s, yes[i]))
			return *out = 1, 0;
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		if (ascii_ieq(s, no[i]))
			return *out = 0, 0;
	return EMBER_ERR_INVALID;
}

int ember__parse_signal(const char *s, int *out)
{
	unsigned long n;
	if (ember__parse_uint(s, 1, (unsigned long)SIGRTMAX, &n) == 0) {
		*out = (int)n;
		return 0;
	}
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	if (!strncasecmp(s, "RTMIN", 5)) {
		long off = 0;
		if (s[5] == '+' && ember__parse_uint(s + 6, 0, 64, &n) == 0)
			off = (long)n;
		else if (s[5])
			return EMBER_ERR_INVALID;
		if (SIGRTMIN + off > SIGRTMAX)
			return EMBER_ERR_INVALID;
		*out = SIGRTMIN + (int)off;
		return 0;
	}
	static const struct { const char *name; int sig; } names[] = {
		{"PROF", SIGPROF}, {"VTALRM", SIGVTALRM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (!strcasecmp(s, names[i].name))
			return *out = names[i].sig, 0;
	return EMBER_ERR_INVALID;
}

int ember__parse_log_level(const char *s, int *out)
{
	static const char *const names[] = {"off", "error", "warn", "info", "debug"};
	for (int i = 0; i < 5; i++)
		if (!strcasecmp(s, names[i]))
			return *out = i, 0;
	if (!strcasecmp(s, "warning"))
		return *out = EMBER_LOG_WARN, 0;
	return EMBER_ERR_INVALID;
}

int ember__parse_formats(const char *s, unsigned *out)
{
	if (!strcmp(s, "pprof"))
		*out = EMBER_FORMAT_PPROF;
	else if (!strcmp(s, "jfr"))
		*out = EMBER_FORMAT_JFR;
	else if (!strcmp(s, "both"))
		*out = EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR;
	else
		return EMBER_ERR_INVALID;
	return 0;
}

int ember__parse_wall(const char *s, unsigned *out_ms)
{
	int on;
	if (s && ember__parse_bool(s, &on) == 0 && strcmp(s, "1") != 0) {
		*out_ms = on ? EMBER__WALL_DEFAULT_MS : 0; /* "1" is a duration: 1 s */
		return 0;
	}
	unsigned ms;
	if (ember__parse_duration_ms(s, &ms) || ms > 60000)
		return EMBER_ERR_INVALID;
	*out_ms = ms;
	return 0;
}
