/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlclosed.h - the libraries the program dlclose'd, as the loader had
 * them mapped just before (path, load base, PT_LOAD segments, build id),
 * for the symbolizer: a library dlopen'ed and dlclose'd between two
 * drains of the agent is never seen in /proc/self/maps, and its samples
 * would keep no names.
 *
 * Writers are the program's threads, in libemberprof.so's dlclose wrapper
 * (src/preload/dlclose_hook.c), before the real dlclose; the reader is the
 * agent's symbolizer (symbolizer.c, EMBER__SYM_DLCLOSED), at its
 * refreshes. One journal per copy of the library, in static storage: a
 * ring of EMBER_DLCLOSED_SLOTS records, written without a lock and without
 * malloc; a writer never waits: when the reader has not taken the records
 * yet and the ring is full, the record is dropped and counted.
 *
 * Recording happens only while an agent of this very process runs
 * (ember__dlclosed_enable at its start, _disable at its stop): a fork
 * child inherits the journal and the parent's pid as its owner, so it
 * records nothing until its own agent starts, which empties the journal
 * (records the parent took before the fork are of no use to the child: its
 * samples all come after its agent's start).
 *
 * A dlclose that does not unload (the object is still referenced) is
 * recorded too: the reader finds the object still mapped and ignores the
 * record.
 */
#ifndef EMBER_SYMBOLS_DLCLOSED_H
#define EMBER_SYMBOLS_DLCLOSED_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_DLCLOSED_SLOTS 64u  /* records between two refreshes (50 ms) */
#define EMBER_DLCLOSED_SEGS 8u    /* PT_LOAD segments kept (4 in a usual library) */
#define EMBER_DLCLOSED_PATH 1024u /* a longer path is not recorded (counted) */
#define EMBER_DLCLOSED_ID 64u     /* build id bytes kept (20 usually) */

typedef struct ember__dlclosed_seg {
	uint64_t vaddr, memsz, offset, align; /* the PT_LOAD's p_vaddr, p_memsz, p_offset, p_align */
	uint32_t flags;                       /* its p_flags (PF_X: code) */
} ember__dlclosed_seg;

typedef struct ember__dlclosed_rec {
	uint64_t base; /* load bias: dlpi_addr, l_addr */
	uint32_t nsegs;
	uint32_t build_id_len; /* 0: the object has no NT_GNU_BUILD_ID note */
	ember__dlclosed_seg segs[EMBER_DLCLOSED_SEGS];
	uint8_t build_id[EMBER_DLCLOSED_ID];
	char path[EMBER_DLCLOSED_PATH]; /* absolute (relative names: the cwd at the dlclose) */
} ember__dlclosed_rec;

typedef struct ember__dlclosed_stats {
	uint64_t recorded; /* records published */
	uint64_t dropped;  /* journal full: the reader had not taken the records yet */
	uint64_t skipped;  /* not recordable: no such object, path too long, too many segments */
} ember__dlclosed_stats;

/*
 * Recording on for this process (the agent's start), the journal emptied
 * of what earlier runs or a parent process left. Then off (its stop).
 * Agent threads; not async-signal-safe.
 */
void ember__dlclosed_enable(void);
void ember__dlclosed_disable(void);

/* Does an agent of this process record dlcloses? One atomic load and a
 * getpid (a system call): async-signal-safe. */
int ember__dlclosed_wanted(void);

/*
 * Fills *out from `handle`, a handle dlopen returned and not yet closed:
 * its link map (dlinfo RTLD_DI_LINKMAP), then its PT_LOAD and PT_NOTE
 * segments (dl_iterate_phdr, which takes the loader's list lock for the
 * walk). 0, or -1 when the object cannot be recorded (the main program,
 * an unknown object, a path over EMBER_DLCLOSED_PATH bytes, more than
 * EMBER_DLCLOSED_SEGS segments). No malloc; not async-signal-safe.
 */
int ember__dlclosed_capture(void *handle, ember__dlclosed_rec *out);

/*
 * Publishes *rec (copied). 0, or -1 when the ring is full (counted as
 * dropped). Lock-free: a compare-and-swap, a copy, a store; never waits.
 */
int ember__dlclosed_push(const ember__dlclosed_rec *rec);

/*
 * The dlclose wrapper's whole job: when ember__dlclosed_wanted(), captures
 * and pushes handle's object; a capture that fails is counted (skipped).
 * Call it before the real dlclose. Program threads; no malloc; bounded.
 */
void ember__dlclosed_note(void *handle);

/*
 * The reader (one: the agent's symbolizer): moves up to `max` published
 * records, oldest first, into out[] and returns their number. A record
 * still being written ends the batch (the next call takes it).
 */
size_t ember__dlclosed_take(ember__dlclosed_rec *out, size_t max);

/* Are records waiting to be taken? One atomic load each side. */
int ember__dlclosed_pending(void);

/* The counters since the process started. */
void ember__dlclosed_stats_get(ember__dlclosed_stats *out);

#endif
