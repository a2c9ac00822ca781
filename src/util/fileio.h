/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fileio.h - small file helpers shared by the reporters and the spool.
 * Not async-signal-safe in intent (they run on agent-owned threads), though
 * they call only write(2).
 */
#ifndef EMBER_FILEIO_H
#define EMBER_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* Writes all n bytes, retrying short writes and EINTR. 0, or -1 with errno. */
int ember__write_all(int fd, const void *buf, size_t n);

/*
 * Reads the whole file at path into *out (malloc'd, caller frees) of *len
 * bytes. Files over max bytes are refused. 0, or EMBER_ERR_IO (cannot
 * open or read), EMBER_ERR_FORMAT (too large) or EMBER_ERR_NOMEM, with a
 * message naming the file.
 */
int ember__read_file(const char *path, size_t max, uint8_t **out, size_t *len);

/*
 * Reads /proc/self/task/TID/NAME (status, syscall, comm: one read, as the
 * kernel makes these files) into buf, NUL-terminated. Returns the length,
 * or -1 if the thread is gone or the file cannot be read. No allocation.
 */
long ember__read_task_file(int32_t tid, const char *name, char *buf, size_t len);

/* The integer a one-number file starts with (a /proc/sys setting such as
 * kernel/perf_event_paranoid), or `dflt` when it cannot be read. */
int ember__read_int_file(const char *path, int dflt);

/*
 * Creates `dir` and its missing parents (mode 0700) and opens it with
 * O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC. Refuses a `dir` whose last component
 * is a symlink, a path that is not a directory, and a directory the caller
 * cannot write to; every failure is a negative ember_err with a message
 * naming the path (and errno where there is one). On success returns the
 * descriptor, which the caller closes. The output directory of the local
 * reporter (hence its name) and of the upload spool.
 */
int ember__local_open_dir(const char *dir);

/* A malloc'd copy of `dir` with trailing slashes removed ("/" stays "/"),
 * the caller's; NULL on OOM. */
char *ember__path_trim_slashes(const char *dir);

#endif
