/*
 * log.c - the agent's log: a user callback, or stderr by default (only while
 * descriptor 2 is still the program's original stderr: util/logfd.h). Messages
 * are formatted into a stack buffer; logging never happens in the signal
 * handler.
 */
#include <stdarg.h>
#include <stdio.h>

#include "agent/agent_internal.h"
#include "util/logfd.h"

void ember__log(const ember__config *c, ember_log_level level, const char *fmt, ...)
{
	if (!c || (int)level > c->log_level || level == EMBER_LOG_OFF)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->log_fn) {
		c->log_fn(c->log_ud, level, msg);
		return;
	}
	static const char *const names[] = {"off", "error", "warning", "info", "debug"};
	char line[1100];
	int n = snprintf(line, sizeof(line), "emberprof: %s: %s\n", names[level], msg);
	if (n > 0)
		ember__logfd_write(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}
