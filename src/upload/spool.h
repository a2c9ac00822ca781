/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spool.h - the spool directory of the upload pipeline: undelivered
 * windows kept on disk, one file per window, so that they reach the
 * server after it, or the application, restarts.
 *
 * Layout. Files are named "<start_ns>-<seq>-<pid>-<n>.ems" with start_ns
 * in 20 digits and seq and n (a per-process counter) in 10, so sorting the
 * names sorts the windows by time, across runs. Each file
 * holds a small header (magic, version, kind, seq, start, end, sizes,
 * CRC-32 of the payload), the item's meta string and its body. A file is
 * written under a hidden temporary name (mode 0600), fsync'd, and renamed
 * into place: a reader never sees a partial one. A file that fails its
 * checks when read is removed and reported as corrupt.
 *
 * Ownership. One process at a time owns a spool directory: it holds an
 * exclusive flock() on ".lock" inside it while the spool is open. The
 * directory is created 0700 (with its parents) and never followed
 * through a symlink; every file operation is relative to its descriptor.
 *
 * Size. The total size of the files is kept at or under max_bytes by
 * removing the oldest files first.
 *
 * Not thread-safe: the pipeline serializes calls with its mutex. Nothing
 * here is async-signal-safe.
 */
#ifndef EMBER_UPLOAD_SPOOL_H
#define EMBER_UPLOAD_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "upload/pipeline.h"

typedef struct ember__spool ember__spool;

/* The suffix of finished spool files. */
#define EMBER_SPOOL_SUFFIX ".ems"

/*
 * Opens `dir` as a spool bounded to max_bytes: creates it if missing,
 * takes its lock, removes temporary files a crashed run left, and indexes
 * the windows present. Returns 0, EMBER_ERR_BUSY if another process holds
 * the lock, or another negative ember_err; a message is set in every
 * case. *out is the caller's, closed with ember__spool_close().
 */
int ember__spool_open(ember__spool **out, const char *dir, uint64_t max_bytes);

/* Releases the lock and frees the spool; the files stay. NULL is fine. */
void ember__spool_close(ember__spool *s);

/* Number of files, and their total size in bytes. */
size_t ember__spool_count(const ember__spool *s);
uint64_t ember__spool_bytes(const ember__spool *s);

/* The directory as given (for logs). */
const char *ember__spool_dir(const ember__spool *s);

/*
 * How many of the spool's descriptors (directory, lock) the program closed
 * or reused and we reopened by path (see util/ownfd.h). Under the caller's
 * lock, like every call here.
 */
uint64_t ember__spool_reopens(const ember__spool *s);

/*
 * Writes `it` as a new file. To stay within max_bytes, first removes the
 * oldest files (never the one named `keep`, which may be NULL); their
 * number is added to *evicted. An item larger than max_bytes is not
 * written (EMBER_ERR_INVALID). Returns 0 or a negative ember_err with a
 * message; on failure nothing is left behind.
 */
int ember__spool_put(ember__spool *s, const ember__upload_item *it, const char *keep,
		     unsigned *evicted);

/*
 * Reads the oldest file into a new item (its spool_name set, its
 * not_before 0). Returns 0; 1 if the spool is empty; EMBER_ERR_FORMAT if
 * the file was corrupt (it has been removed; the message names it); or
 * another negative ember_err (the file stays).
 */
int ember__spool_load_oldest(ember__spool *s, ember__upload_item **out);

/* Removes the file `name` (a delivered or refused item). */
void ember__spool_remove(ember__spool *s, const char *name);

#endif
