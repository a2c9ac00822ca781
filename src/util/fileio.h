/*
 * fileio.h - small file helpers shared by the reporters and the spool.
 * Not async-signal-safe in intent (they run on agent-owned threads), though
 * they call only write(2).
 */
#ifndef EMBER_FILEIO_H
#define EMBER_FILEIO_H

#include <stddef.h>

/* Writes all n bytes, retrying short writes and EINTR. 0, or -1 with errno. */
int ember__write_all(int fd, const void *buf, size_t n);

#endif
