/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfdebug.h - what an ELF file says about its separate debug file, and
 * the local-disk search for it, with libelf alone (no libdw:
 * util/dep_elfutils.h); also the load bias of a mapping of an ELF file
 * from its program headers. One implementation for the unwind tables
 * (cfi/cfi_elf.c), libdwfl's debug-file callback (symbols/debugfile.c)
 * and the symbolizer's libelf path (symbols/symbolizer_elf.c).
 *
 * The search is the local part of what elfutils' standard search does:
 * the build-id tree (/usr/lib/debug/.build-id/xx/yyyy.debug), then the
 * name .gnu_debuglink records, next to the file, in its .debug
 * subdirectory and under /usr/lib/debug/<dir>. A candidate is accepted as
 * libdwfl accepts it: by build id when the file has one, else by the
 * CRC-32 .gnu_debuglink records (zlib's crc32); never the file itself.
 *
 * Callers have loaded libelf (ember__lazydep_load(&ember__libelf)) and
 * zlib (util/dep_zlib.h). Agent threads and tools; not async-signal-safe.
 */
#ifndef EMBER_UTIL_ELFDEBUG_H
#define EMBER_UTIL_ELFDEBUG_H

#include <stddef.h>
#include <stdint.h>

#include "util/dep_elfutils.h"

/* The section of e called `name` (first of that name), its header in
 * *sh; NULL if none. */
Elf_Scn *ember__elf_find_section(Elf *e, const char *name, GElf_Shdr *sh);

/* e's .gnu_debuglink: 1 with *name (borrowed from e's data, NUL-ended)
 * and *crc, or 0 when it has none or it is malformed. */
int ember__elf_debuglink(Elf *e, const char **name, uint32_t *crc);

/*
 * Does the file open on fd match: by build id when id_len > 0 (the file's
 * NT_GNU_BUILD_ID equals id[0..id_len)), else by CRC-32 of the whole file
 * equal to crc. Leaves the file offset at 0. fd stays the caller's.
 */
int ember__elf_debug_matches(int fd, const uint8_t *id, size_t id_len, uint32_t crc);

/*
 * Opens the debug file of the ELF file at main_path (absolute), whose build
 * id is id[0..id_len) (id_len 0: none) and whose .gnu_debuglink is
 * link/crc (link NULL: none): the build-id tree first (only with an id of
 * 2 bytes or more), then the debuglink places. main_path and link NULL:
 * the build-id tree alone (a dwz alt file: symbols/debugalt.c). Returns an open read-only
 * descriptor (the caller's) and *found, a malloc'd copy of its path (the
 * caller frees it); or -1 (nothing to release).
 */
int ember__elf_debug_open(const char *main_path, const uint8_t *id, size_t id_len,
			  const char *link, uint32_t crc, char **found);

/* The same, only the .gnu_debuglink places (libdwfl searched the build-id
 * tree already: symbols/debugfile.c). */
int ember__elf_debug_open_link(const char *main_path, const uint8_t *id, size_t id_len,
			       const char *link, uint32_t crc, char **found);

/*
 * The load bias of e mapped at map_start from file offset map_offset
 * (a mapping /proc/PID/maps shows): map_start minus the link-time address
 * of that file offset, by the PT_LOAD segment holding it (the executable
 * one preferred). 1 and *bias, or 0 if no segment holds that offset.
 */
int ember__elf_load_bias(Elf *e, uint64_t map_start, uint64_t map_offset, uint64_t *bias);

#endif
