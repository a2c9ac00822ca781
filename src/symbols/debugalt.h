/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debugalt.h - a module's dwz "alt" file: the common debug file that
 * `dwz -m` moves the DWARF shared by several files into, named (with its
 * GNU build id) by each one's .gnu_debugaltlink section. libdwfl asks
 * for it through the find_debuginfo callback (symbols/debugfile.c) with
 * file_name = the file holding the module's DWARF, debuglink_file = the
 * name .gnu_debugaltlink records and debuglink_crc = 0; when the callback
 * finds nothing, libdw later opens the file itself with a plain open()
 * (libdw/dwarf_getalt.c): a low descriptor without O_CLOEXEC, held as long
 * as the module. This is the search that keeps it ours.
 *
 * Agent threads and tools; not async-signal-safe. Callers have loaded
 * libelf (ember__lazydep_load(&ember__libelf)).
 */
#ifndef EMBER_SYMBOLS_DEBUGALT_H
#define EMBER_SYMBOLS_DEBUGALT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Is this callback call libdwfl's request for the alt file: does the ELF
 * file at file_name have a .gnu_debugaltlink whose name is link? Then
 * returns the alt file's build id length (1 to cap) with the bytes in
 * id[]; else 0 (no such section, another name, a malformed section: no
 * NUL-ended name, no build id or one longer than cap).
 */
size_t ember__debugalt_id(const char *file_name, const char *link, uint8_t *id, size_t cap);

/*
 * Opens the alt file `link` of the ELF file at file_name where libdw's
 * own fallback looks: link itself when absolute, else relative to
 * file_name's directory (as given, then with symbolic links resolved, as
 * libdw sees it); then /usr/lib/debug/.build-id/xx/yyyy.debug of
 * the alt's build id id[0..id_len). Each candidate is accepted only when
 * its build id is that one. Returns a read-only descriptor (the caller's)
 * and *found, a malloc'd copy of its path (the caller frees it); or -1
 * (nothing to release).
 */
int ember__debugalt_open(const char *file_name, const char *link, const uint8_t *id,
			 size_t id_len, char **found);

#endif
