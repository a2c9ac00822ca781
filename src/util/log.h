/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - the log below the agent: where a message goes (the user's
 * callback, or standard error through util/logfd.h) and from what level
 * on it is dropped. The agent's settings (agent/config.h) embed one; the
 * lower layers (cfi, heap, asprof...) borrow a `const ember__logger *`
 * from whoever calls them, and never see the agent's configuration.
 *
 * Messages are formatted into a stack buffer. Not async-signal-safe:
 * never from a signal handler.
 */
#ifndef EMBER_UTIL_LOG_H
#define EMBER_UTIL_LOG_H

#include <stdarg.h>

#include "emberprof.h"

typedef struct ember__logger {
	ember_log_fn fn; /* NULL: "emberprof: <level>: <msg>" on stderr (util/logfd.h) */
	void *ud;        /* fn's first argument, the caller's */
	int level;       /* an ember_log_level: messages above it are dropped */
} ember__logger;

/* Logs one message through `l`; nothing when l is NULL (a part used
 * without an agent, as in unit tests) or the level is above l->level. */
void ember__logf(const ember__logger *l, ember_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ember__vlogf(const ember__logger *l, ember_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#endif
