/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - the log (log.h): a user callback, or stderr by default (only while
 * descriptor 2 is still the program's original stderr: util/logfd.h). Messages
 * are formatted into a stack buffer; logging never happens in the signal
 * handler.
 */
#include "util/log.h"

#include <stdio.h>

#include "util/logfd.h"

void ember__vlogf(const ember__logger *l, ember_log_level level, const char *fmt, va_list ap)
{
	if (!l || (int)level > l->level || level == EMBER_LOG_OFF)
		return;
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (l->fn) {
		l->fn(l->ud, level, msg);
		return;
	}
	static const char *const names[] = {"off", "error", "warning", "info", "debug"};
	char line[1100];
	int n = snprintf(line, sizeof(line), "emberprof: %s: %s\n", names[level], msg);
	if (n > 0)
		ember__logfd_write(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void ember__logf(const ember__logger *l, ember_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ember__vlogf(l, level, fmt, ap);
	va_end(ap);
}
