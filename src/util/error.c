/* SPDX-License-Identifier: Apache-2.0 */
/*
 * error.c - thread-local last-error messages and ember_strerror().
 */
#include "util/error.h"

#include <stdio.h>
#include <string.h>

#include "emberprof.h"

static __thread char last_error[EMBER_ERROR_MAX];

static void vset(const char *fmt, va_list ap)
{
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
}

int ember__error(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(fmt, ap);
	va_end(ap);
	return err;
}

int ember__error_errno(int err, int errno_value, const char *fmt, ...)
{
	char why[128];
	va_list ap;
	va_start(ap, fmt);
	vset(fmt, ap);
	va_end(ap);
	/* GNU strerror_r returns a pointer that may or may not be `why`. */
	const char *s = strerror_r(errno_value, why, sizeof(why));
	size_t n = strlen(last_error);
	snprintf(last_error + n, sizeof(last_error) - n, ": %s", s);
	return err;
}

int ember__error_oom(const char *what)
{
	/* No formatting that could allocate: copy two fixed strings. */
	static const char prefix[] = "out of memory allocating ";
	size_t n = sizeof(prefix) - 1;
	memcpy(last_error, prefix, n);
	size_t w = strlen(what);
	if (w > sizeof(last_error) - n - 1)
		w = sizeof(last_error) - n - 1;
	memcpy(last_error + n, what, w);
	last_error[n + w] = '\0';
	return EMBER_ERR_NOMEM;
}

void ember__error_clear(void)
{
	last_error[0] = '\0';
}

EMBER_API const char *ember_last_error(void)
{
	return last_error;
}

EMBER_API int ember_set_error(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(fmt, ap);
	va_end(ap);
	return err;
}

EMBER_API const char *ember_strerror(int err)
{
	switch (err) {
	case EMBER_OK: return "success";
	case EMBER_ERR_INVALID: return "invalid argument";
	case EMBER_ERR_NOMEM: return "out of memory";
	case EMBER_ERR_SYS: return "system call failed";
	case EMBER_ERR_BUSY: return "resource busy";
	case EMBER_ERR_IO: return "I/O error";
	case EMBER_ERR_FORMAT: return "malformed input";
	case EMBER_ERR_REPORTER: return "reporter failed";
	case EMBER_ERR_UNSUPPORTED: return "unsupported";
	default: return "unknown error";
	}
}

EMBER_API const char *ember_version(void)
{
	return EMBER_VERSION_STRING;
}
