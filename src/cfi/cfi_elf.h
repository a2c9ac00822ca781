/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi_elf.h - finds a module's call-frame information in its ELF file (or,
 * for the vDSO, in its image in memory) and builds its unwind table with
 * cfi.h.
 *
 * Where the CFI comes from, in order of priority (an address covered by a
 * higher source keeps that source's rows):
 *   1. .eh_frame, located through .eh_frame_hdr (the PT_GNU_EH_FRAME
 *      segment) and enumerated by the header's search table; a file without
 *      the header falls back to a linear walk of its .eh_frame section;
 *   2. .debug_frame of the file itself, else of its separate debug file,
 *      found by build id (/usr/lib/debug/.build-id/xx/rest.debug) or by
 *      .gnu_debuglink (next to the file, in .debug/, or under
 *      /usr/lib/debug), and accepted only if its build id or CRC matches.
 * The load bias (runtime address - link-time address) is derived from an
 * executable mapping of the module and the PT_LOAD segment it maps.
 *
 * Agent side only (libelf, files, allocation); not async-signal-safe.
 */
#ifndef EMBER_CFI_ELF_H
#define EMBER_CFI_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "cfi/cfi.h"

/* One module, as /proc/self/maps shows an executable mapping of it. */
typedef struct ember__cfi_module_src {
	const char *path;        /* the file; NULL when image is given */
	const void *image;       /* an ELF image in memory (the vDSO); NULL for a file */
	size_t image_size;
	uint64_t map_start, map_end, map_offset; /* the executable mapping */
	uint64_t inode;          /* the mapping's inode and device: the file opened must */
	uint32_t dev_major, dev_minor; /* match them (inode 0: not checked) */
} ember__cfi_module_src;

/* What a build found, for logs and tests. */
typedef struct ember__cfi_module_info {
	uint64_t bias;            /* load bias: rows' pc = address - bias */
	size_t eh_frame_bytes;    /* size of the .eh_frame used, 0 if none */
	size_t debug_frame_bytes; /* size of the .debug_frame used, 0 if none */
	int used_hdr;             /* .eh_frame was enumerated through .eh_frame_hdr */
	char debug_file[256];     /* separate debug file whose .debug_frame was used, or "" */
} ember__cfi_module_info;

/*
 * Builds the unwind table of the module described by src. On success *out
 * is the caller's (ember__cfi_table_free) and *info is filled; a module
 * without any CFI gives a table with no rows. Returns 0, EMBER_ERR_IO (the
 * file cannot be opened, or it is not the file that is mapped),
 * EMBER_ERR_FORMAT (not an ELF file, no PT_LOAD holds the mapping),
 * EMBER_ERR_UNSUPPORTED (another architecture) or EMBER_ERR_NOMEM, with a
 * message naming the module.
 */
int ember__cfi_build_module(const ember__cfi_module_src *src, ember__cfi_table **out,
			    ember__cfi_module_info *info);

/*
 * Builds the table of an ELF file on disk as if it were loaded at bias 0
 * (tests and benchmarks: no mapping needed). Same returns as above.
 */
int ember__cfi_build_file(const char *path, ember__cfi_table **out, ember__cfi_module_info *info);

#endif
