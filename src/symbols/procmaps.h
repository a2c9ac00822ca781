/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procmaps.h - a parsed view of /proc/<pid>/maps: the address ranges the
 * process has mapped, their permissions, the file (if any) behind each one
 * and where in the file it starts.
 *
 * The symbolizer uses it to know which executable mappings exist; the
 * sampler's stack-bounds logic uses ember__procmaps_self_find() to learn the
 * full [start, end) of the mapping holding a thread's stack pointer.
 *
 * Parsing is strict about the fixed fields and lenient about the path: a
 * path may contain spaces, may end in " (deleted)", may be a pseudo name
 * such as "[vdso]", "[stack]" or "[heap]", or may be absent (anonymous
 * memory). A malformed line makes the whole parse fail with
 * EMBER_ERR_FORMAT and a message quoting the line number and the line.
 *
 * Nothing here is async-signal-safe (it allocates): call it from the agent
 * thread or at setup time, never from the SIGPROF handler.
 */
#ifndef EMBER_PROCMAPS_H
#define EMBER_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"

/* Permission bits of a mapping (the "rwxp" column). */
#define EMBER_MAP_READ 0x1u
#define EMBER_MAP_WRITE 0x2u
#define EMBER_MAP_EXEC 0x4u
#define EMBER_MAP_PRIVATE 0x8u /* 'p'; otherwise the mapping is shared ('s') */

typedef struct ember__procmap {
	uint64_t start, end;   /* [start, end) */
	unsigned perms;        /* EMBER_MAP_* bits */
	uint64_t offset;       /* file offset of start */
	uint32_t dev_major, dev_minor;
	uint64_t inode;        /* 0 for anonymous and pseudo mappings */
	const char *path;      /* as printed by the kernel; "" if anonymous */
	int deleted;           /* path ended in " (deleted)" (kept in path) */
} ember__procmap;

typedef struct ember__procmaps {
	ember__procmap *maps; /* sorted by start, non-overlapping */
	size_t n;
	ember__arena arena;   /* owns maps and every path string */
} ember__procmaps;

#define EMBER_PROCMAPS_INIT {NULL, 0, EMBER_ARENA_INIT}

/*
 * Parses `len` bytes of maps-format text into *out, which must be
 * EMBER_PROCMAPS_INIT or freed. The text need not end in a newline and is
 * not kept. On success the caller owns *out and releases it with
 * ember__procmaps_free(); on failure *out is left empty. Returns 0,
 * EMBER_ERR_FORMAT naming the bad line, or EMBER_ERR_NOMEM.
 */
int ember__procmaps_parse(const char *text, size_t len, ember__procmaps *out);

/*
 * Reads a whole maps-format file (e.g. "/proc/self/maps" or a test
 * fixture) into a malloc'd NUL-terminated buffer. On success *text is the
 * caller's to free() and *len its length. Returns 0, EMBER_ERR_IO or
 * EMBER_ERR_NOMEM.
 */
int ember__procmaps_slurp(const char *path, char **text, size_t *len);

/*
 * Makes *dst (EMBER_PROCMAPS_INIT or freed) an independent copy of src:
 * its own array and strings. 0 or EMBER_ERR_NOMEM (*dst left empty).
 */
int ember__procmaps_copy(ember__procmaps *dst, const ember__procmaps *src);

/* ember__procmaps_slurp() followed by ember__procmaps_parse(). */
int ember__procmaps_read_file(const char *path, ember__procmaps *out);

/*
 * As ember__procmaps_parse, for the kernel's own text read while the
 * process maps and unmaps: /proc/PID/maps read in several read() calls is
 * no snapshot, and a mapping that changed between two of them can print
 * over the end of an earlier line (seen in CI under ASan, whose shadow
 * mappings are huge, with dlopen churn). In address-ordered text a line
 * that overlaps earlier ones is the newer state: those are cut to end
 * where it starts, or dropped if it covers them. Other errors as there.
 */
int ember__procmaps_parse_live(const char *text, size_t len, ember__procmaps *out);

/* Reads and parses /proc/self/maps; a read torn by a concurrent change
 * (an overlap) is read again, and the last of a few tries is repaired as
 * ember__procmaps_parse_live does. */
int ember__procmaps_read_self(ember__procmaps *out);

/* Frees everything *m owns and leaves it empty (reusable). NULL is ok. */
void ember__procmaps_free(ember__procmaps *m);

/*
 * Returns the mapping containing addr (start <= addr < end), or NULL.
 * Binary search; the pointer is borrowed from m and valid until m is freed.
 */
const ember__procmap *ember__procmaps_find(const ember__procmaps *m, uint64_t addr);

/*
 * Reads /proc/self/maps afresh and copies the mapping containing addr into
 * *out, with its full extent [start, end) exactly as the kernel reports it.
 * out->path points into path_buf (truncated to path_buf_len - 1 bytes;
 * path_buf may be NULL when path_len is 0, and then out->path is "").
 * Returns 0, EMBER_ERR_INVALID if no mapping contains addr, or the errors
 * of ember__procmaps_read_self(). Meant for setup-time queries such as a
 * thread's stack bounds; it costs a full read of the maps file.
 */
int ember__procmaps_self_find(uint64_t addr, ember__procmap *out, char *path_buf,
			      size_t path_buf_len);

#endif
