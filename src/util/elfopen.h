/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfopen.h - an ELF file read through libelf with no descriptor kept.
 *
 * The symbolizer keeps a module's Elf for as long as the module lives.
 * A descriptor held that long inside a program is one the program can
 * see: it takes one of the low numbers the program's next open() would
 * return, a program's dup2() or closefrom() can replace or close it under
 * libelf, and without O_CLOEXEC (libdwfl's own finder opens without it)
 * every command the program execs inherits it. So the file is mapped
 * (ELF_C_READ_MMAP), read whole into memory where it could not be mapped
 * (ELF_C_FDREAD, which also marks the descriptor done), and the
 * descriptor closed before the Elf is handed out: libelf never reads it
 * again.
 *
 * Callers have loaded libelf (ember__lazydep_load(&ember__libelf)).
 * Agent threads and tools; not async-signal-safe.
 */
#ifndef EMBER_UTIL_ELFOPEN_H
#define EMBER_UTIL_ELFOPEN_H

#include "util/dep_elfutils.h"

/*
 * Opens the file at `path` read-only and begins an Elf on it (any kind:
 * the caller checks elf_kind). Returns the Elf (the caller's: elf_end) and
 * no descriptor stays open; or NULL with *why set to a static reason
 * (strerror of the open, or libelf's message).
 */
Elf *ember__elf_open_detached(const char *path, const char **why);

/* The same for a descriptor open read-only on the file, which this takes
 * over: it is closed whatever the outcome. */
Elf *ember__elf_begin_detached(int fd, const char **why);

#endif
