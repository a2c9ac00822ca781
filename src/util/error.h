/* SPDX-License-Identifier: Apache-2.0 */
/*
 * error.h - per-thread last-error messages behind ember_last_error().
 *
 * The message lives in a fixed thread-local buffer, so setting it never
 * allocates and out-of-memory can always be reported. Not async-signal-safe
 * (vsnprintf); the signal path never sets errors, it counts instead.
 */
#ifndef EMBER_ERROR_H
#define EMBER_ERROR_H

#include <stdarg.h>

#define EMBER_ERROR_MAX 512

/* Sets the message and returns err. printf-style. */
int ember__error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, with ": strerror(errno_value)" appended. */
int ember__error_errno(int err, int errno_value, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Out-of-memory: a fixed message naming what was being allocated. */
int ember__error_oom(const char *what);
/* Clears the calling thread's message. */
void ember__error_clear(void);

#endif
