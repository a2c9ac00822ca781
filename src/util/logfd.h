/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logfd.h - where the agent's default log lines go: the program's standard
 * error, but only while descriptor 2 is still the file it was when the
 * library was loaded.
 *
 * A daemon closes its descriptors at start and the next open() it makes -
 * a client socket, a database file - may get number 2: a line written
 * there would corrupt the program's own data. So the library remembers
 * what descriptor 2 was (device and inode) before main() runs, and a log
 * line is written only if it still is; otherwise it is dropped and
 * counted (ember__logfd_lost()). No copy of descriptor 2 is kept: a
 * daemon's forked child would inherit it and keep its caller's pipe open.
 */
#ifndef EMBER_LOGFD_H
#define EMBER_LOGFD_H

#include <stddef.h>
#include <stdint.h>

/*
 * Writes the n bytes of one formatted line (ending in '\n') to standard
 * error if descriptor 2 is still the program's original standard error.
 * Returns 0 if written, -1 if dropped or if the write failed (each
 * counted). Calls only fstat(2) and write(2): async-signal-safe.
 */
int ember__logfd_write(const char *line, size_t n);

/*
 * Writes v in decimal and a NUL to buf (room for 21 bytes) and returns the
 * number of digits: a pid or count in a line built for ember__logfd_write,
 * without snprintf, whose code and locale pages would be faults in every
 * process of a tree that runs it before main (util/hotpage.h).
 * Async-signal-safe.
 */
size_t ember__logfd_decimal(char *buf, unsigned long v);

/* Log lines dropped because descriptor 2 changed or was closed. */
uint64_t ember__logfd_lost(void);

/* Log lines whose write to descriptor 2 failed (ENOSPC, EPIPE...) since the
 * library was loaded; *last_errno (if not NULL) is the last such errno. */
uint64_t ember__logfd_failed(int *last_errno);

#endif
