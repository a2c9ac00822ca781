/* SPDX-License-Identifier: Apache-2.0 */
/*
 * table_cache.h - a persistent cache of DWARF unwind tables on disk, shared
 * by every process that loads the same binary (docs/design/unwinding.md,
 * the unwind-table cache).
 *
 * A module's table (src/cfi/, rows relative to its load bias, so the same
 * for every process whatever address it is loaded at) is stored in one
 * file named by the module's GNU build id:
 *   DIR/<build id in hex>.<arch>.utab
 * DIR is $EMBERPROF_UNWIND_CACHE, else $XDG_CACHE_HOME/emberprof/unwind,
 * else ~/.cache/emberprof/unwind; EMBERPROF_UNWIND_CACHE=off turns it off.
 * A module without a build id (rustc's toolchain) is keyed by a digest of
 * its .eh_frame_hdr instead; one with neither is never cached.
 *
 * Writers never modify a file in place: a table is written to a new
 * temporary file (O_EXCL, unique name) in DIR and renamed over the final
 * name; two processes storing the same table both leave a valid file (the
 * last rename wins). Readers validate the header (magic, format version,
 * architecture, build id, the builder's identity, counts, offsets and
 * sizes against the file's size, the index) and map the file read-only;
 * anything wrong rejects the file, counted, and the table is built as
 * without a cache (and stored again). Every failure (no directory, a
 * read-only or full disk, EACCES, ENOSPC...) leaves the in-memory build as
 * it was; the first one is logged, all are counted.
 *
 * Not async-signal-safe: the agent thread only (or a test's own thread).
 * The signal handler reads a loaded table's rows and index only, as it
 * reads a built one's.
 */
#ifndef EMBER_TABLE_CACHE_H
#define EMBER_TABLE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "cfi/cfi.h"

typedef struct ember__logger ember__logger;
typedef struct ember__table_cache ember__table_cache;

/* The file format's version: bump it with any change to the layout below
 * or to what a row means (src/unwind/unwind.h), or to the rows a file
 * gives. 2: rows for PLT stubs without CFI (ember__cfi_add_fill), and
 * the fill_rows and fill_dropped counters in the header's stats. 3: the
 * packed form (ember__cfi_packed), its counts in the header. */
#define EMBER_TABLE_CACHE_VERSION 3
#define EMBER_TABLE_CACHE_MAGIC "EMBRUTAB"
#define EMBER_TABLE_CACHE_ENV "EMBERPROF_UNWIND_CACHE"
#define EMBER_BUILD_ID_MAX 64

/* A module's identity: its GNU build id (NT_GNU_BUILD_ID), 1..64 bytes,
 * or the 24-byte "ehfr" digest of a module without one. */
typedef struct ember__build_id {
	uint32_t len;
	uint8_t id[EMBER_BUILD_ID_MAX];
} ember__build_id;

/*
 * The header at offset 0 of a cache file (native byte order: the file is
 * only ever read on the architecture that wrote it, and arch says which).
 * A table in the packed form (packed == 1): rows_off (8-aligned) is its
 * block of arrays (ember__cfi_packed_layout of nrows, nrules, npages) up to
 * index_off == file_size; nindex and index_shift are 0. Otherwise (a table
 * that kept its 8-byte rows, cfi_pack.h): rows_off: nrows ember__cfi_row
 * (8-aligned); index_off: nindex uint32_t; nrules, nsignal, npages, page0
 * are 0. file_size: the whole file. check: FNV-1a 64 of the header's bytes
 * before it.
 */
typedef struct ember__table_cache_header {
	char magic[8];          /* EMBER_TABLE_CACHE_MAGIC, no NUL */
	uint32_t version;       /* EMBER_TABLE_CACHE_VERSION */
	uint32_t arch;          /* EMBER_ARCH_ELF_MACHINE */
	uint32_t header_size;   /* sizeof(ember__table_cache_header) */
	uint32_t row_size;      /* sizeof(ember__cfi_row) */
	ember__build_id module; /* the module's build id: the file's name */
	ember__build_id builder; /* the build id of the code that built the rows */
	uint32_t nrows, nindex, index_shift, packed;
	uint32_t nrules, nsignal, npages, page0; /* the packed form's (unwind.h) */
	uint64_t rows_off, index_off, file_size;
	ember__cfi_stats stats; /* the build's counters, for logs */
	uint64_t check;
} ember__table_cache_header;

typedef struct ember__table_cache_stats {
	uint64_t hits;          /* tables loaded from the cache */
	uint64_t misses;        /* lookups that found no file */
	uint64_t stored;        /* tables written */
	uint64_t store_failed;  /* writes that failed (the table was used anyway) */
	uint64_t rejected;      /* files found but invalid (corrupt, truncated, another
				   build id, another builder): rebuilt */
	uint64_t no_build_id;   /* modules not cached: no build id, or not loaded by ld.so */
	uint64_t mapped;        /* of the hits: mapped (local file system) rather than copied */
} ember__table_cache_stats;

/*
 * The cache directory the environment asks for, into buf: 1 and buf
 * filled; 0 when the cache is off (EMBERPROF_UNWIND_CACHE=off, a setuid
 * process, no HOME); -1 when the value is not an absolute path (a message
 * is set: ember_last_error()).
 */
int ember__table_cache_dir_from_env(char *buf, size_t size);

/*
 * Opens (creates, mode 0700, with its parents) the cache at `dir`. `log`
 * (may be NULL) is for logging only and must outlive the cache. Returns 0
 * and *out (the caller's: ember__table_cache_free), or EMBER_ERR_NOMEM.
 * A directory that cannot be created is not an error: loads find nothing
 * and the first store fails, logged.
 */
int ember__table_cache_open(ember__table_cache **out, const char *dir, const ember__logger *log);

/* Frees the cache handle (the tables it loaded are the caller's). NULL ok. */
void ember__table_cache_free(ember__table_cache *c);

/*
 * The build id and load bias of the module loaded by the dynamic loader
 * that holds address `addr` (read from its program headers and notes in
 * memory, under the loader's lock: dl_iterate_phdr). A module without a
 * build id gets a digest of its program headers and .eh_frame_hdr instead
 * (table_cache.c: eh_frame_digest). 1 when found with either, else 0.
 */
int ember__module_build_id(uint64_t addr, ember__build_id *out, uint64_t *bias);

/*
 * The cache key of the module mapped at `addr` (an address inside its
 * executable mapping): ember__module_build_id, counted in no_build_id when
 * there is none (the module is then never cached).
 */
int ember__table_cache_key(ember__table_cache *c, uint64_t addr, ember__build_id *id,
			   uint64_t *bias);

/* Whether a file for `id` exists (a load would be tried). */
int ember__table_cache_has(const ember__table_cache *c, const ember__build_id *id);

/*
 * Claims the building of module id's table for the cache, so that the
 * processes of a parallel build (cargo -j, make -j) that start with a
 * cold cache do not all build the same large table: creates
 * DIR/<name>.building with O_EXCL. 1: claimed (ember__table_cache_release
 * ends the claim); 0: another process claimed it less than
 * EMBER_TABLE_CACHE_CLAIM_S seconds ago (an older claim is a dead
 * process's: taken over), or the file cannot be created.
 */
#define EMBER_TABLE_CACHE_CLAIM_S 120
int ember__table_cache_claim(ember__table_cache *c, const ember__build_id *id);
void ember__table_cache_release(ember__table_cache *c, const ember__build_id *id);

/* Whether stores may succeed: none has failed yet. */
int ember__table_cache_writable(const ember__table_cache *c);

/*
 * Loads the table of module `id`: 1 and *out (the caller's:
 * ember__cfi_table_free, which unmaps it), 0 when there is none or the
 * file was rejected (counted, logged at debug), EMBER_ERR_NOMEM.
 */
int ember__table_cache_load(ember__table_cache *c, const ember__build_id *id,
			    ember__cfi_table **out);

/*
 * Stores `t` as module id's table (temporary file + rename). 0, or a
 * negative ember_err (counted; the first failure is logged at info, the
 * others at debug). The table stays the caller's.
 */
int ember__table_cache_store(ember__table_cache *c, const ember__build_id *id,
			     const ember__cfi_table *t);

/*
 * Validates a cache file's bytes (the whole file, size bytes) for module
 * `id` (NULL: any) and builder `builder` (NULL: any). 0, or
 * EMBER_ERR_FORMAT with a message saying what is wrong. The loader's
 * check, exposed for the fuzzer and tests.
 */
int ember__table_cache_validate(const void *data, size_t size, const ember__build_id *id,
				const ember__build_id *builder);

/*
 * A header for a table shaped as t (its form and counts: t->packed's when
 * t->packed.nrows, else nrows and, with an index, nindex and index_shift;
 * the arrays right after the header, 8-aligned; file_size set), stats
 * zero and check not yet computed.
 */
void ember__table_cache_header_init(ember__table_cache_header *h, const ember__build_id *id,
				    const ember__build_id *builder, const ember__cfi_table *t);

/* The header's check value (FNV-1a 64 of its bytes before `check`). */
uint64_t ember__table_cache_header_check(const ember__table_cache_header *h);

void ember__table_cache_get_stats(const ember__table_cache *c, ember__table_cache_stats *out);

/* The cache's directory (for logs and tests). */
const char *ember__table_cache_path(const ember__table_cache *c);

#endif
