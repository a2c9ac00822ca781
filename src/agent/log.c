/*
 * log.c - the agent's log: a user callback, or stderr by default. Messages
 * are formatted into a stack buffer; logging never happens in the signal
 * handler.
 */
#include <stdarg.h>
#include <stdio.h>

#include "agent/agent_internal.h"

void ember__log(const ember__config *c, ember_log_level level, const char *fmt, ...)
{
	if ((int)level > c->log_level || level == EMBER_LOG_OFF)
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
	fprintf(stderr, "emberprof: %s: %s\n", names[level], msg);
}
