/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perfmap.h - JIT symbols from a perf map, /tmp/perf-PID.map, the file
 * that runtimes write for perf (node --perf-basic-prof, the JVM with a
 * perf-map agent, LuaJIT, ...): one line per piece of generated code,
 *
 *     START SIZE NAME
 *
 * START and SIZE in hex (an optional 0x prefix is accepted, as perf's
 * strtoull does), NAME the rest of the line (it may hold spaces). Lines
 * are appended as code is generated, and a later line for an address wins
 * over an earlier one (code space is reused after a GC).
 *
 * The parser takes text in pieces: it consumes complete lines only, so a
 * line the runtime is still writing is read on the next call. Malformed
 * lines (missing or non-hex fields, a zero size, a range that wraps, an
 * empty name, a line longer than EMBER_PERFMAP_MAX_LINE) are skipped and
 * counted. The table is bounded: past EMBER_PERFMAP_MAX_ENTRIES entries
 * further lines are counted as dropped.
 *
 * Used by the symbolizer on the agent thread; nothing here is
 * async-signal-safe.
 */
#ifndef EMBER_PERFMAP_H
#define EMBER_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/arena.h"

#define EMBER_PERFMAP_MAX_LINE 4096
#define EMBER_PERFMAP_MAX_ENTRIES (1u << 21) /* ~2M symbols, ~100 MB with names */

typedef struct ember__perfmap_entry {
	uint64_t start, end; /* [start, end) */
	uint32_t seq;        /* line order: a higher one is newer */
	const char *name;    /* in the map's arena */
} ember__perfmap_entry;

typedef struct ember__perfmap {
	ember__perfmap_entry *v; /* sorted by (start, seq) when `sorted` */
	size_t n, cap;
	int sorted;
	uint32_t seq;
	ember__arena names;
	uint64_t bad_lines; /* malformed lines skipped */
	uint64_t dropped;   /* lines past EMBER_PERFMAP_MAX_ENTRIES */
} ember__perfmap;

#define EMBER_PERFMAP_INIT {0}

/*
 * Parses the complete lines of data[0..len) into m and returns how many
 * bytes it consumed (up to and including the last newline; a line longer
 * than EMBER_PERFMAP_MAX_LINE without one is consumed and counted as
 * malformed). Sets *err to 0, or to EMBER_ERR_NOMEM when it stopped for
 * lack of memory (what was parsed is kept). data is borrowed.
 */
size_t ember__perfmap_parse(ember__perfmap *m, const char *data, size_t len, int *err);

/*
 * The name of the newest entry whose range holds addr, or NULL. Sorts the
 * table first if lines were added since the last lookup (hence not const).
 * The string belongs to m and lives until ember__perfmap_reset().
 */
const char *ember__perfmap_find(ember__perfmap *m, uint64_t addr);

/* Frees everything and makes m empty (EMBER_PERFMAP_INIT) again. */
void ember__perfmap_reset(ember__perfmap *m);

/* ---- the file of this process ---- */

#define EMBER_PERFMAP_MAX_BYTES ((uint64_t)256 << 20) /* read from one file, in all */
#define EMBER_PERFMAP_RECHECK_NS 100000000           /* look at the file at most every 100 ms */
#define EMBER_PERFMAP_MISS_RECHECK_NS 10000000       /* ... or 10 ms after an address missed */

/*
 * /tmp/perf-PID.map of the current process, followed as it grows. A file
 * that is not a regular file owned by our user or root is ignored (as perf
 * does: anyone can create a file in /tmp). When the file was replaced (a
 * new inode) or shrank, it is read again from its start.
 */
typedef struct ember__perfmap_file {
	ember__perfmap map;
	char path[48];        /* of pid */
	pid_t pid;            /* 0 until the first update */
	int found;            /* the file exists, is ours, and was read */
	uint64_t dev, ino, off; /* the file read, and the bytes consumed */
	int64_t checked_ns;   /* CLOCK_MONOTONIC of the last look, 0 never */
	uint64_t refused;     /* looks at a file we would not trust */
	int capped;           /* EMBER_PERFMAP_MAX_BYTES read: no more */
	pid_t target;         /* another process's map (the tree engine); 0: our own */
} ember__perfmap_file;

#define EMBER_PERFMAP_FILE_INIT {0}

/*
 * Reads what was appended to the file since the last look, if at least
 * `interval_ns` passed since then (0: look now). A fork (a new pid) starts
 * over with the new process's file. Returns 0 or EMBER_ERR_NOMEM (what was
 * read is kept); a missing or unreadable file is not an error (f->found is
 * 0). Opens the file only for the read, O_CLOEXEC.
 */
int ember__perfmap_file_update(ember__perfmap_file *f, int64_t interval_ns);

/* Frees everything; f is EMBER_PERFMAP_FILE_INIT again. */
void ember__perfmap_file_reset(ember__perfmap_file *f);

#endif
