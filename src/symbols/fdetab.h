/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdetab.h - the functions of a module without symbols: the code ranges
 * of the FDEs in its .eh_frame, which the compiler emits one per function
 * (and one per split-off part, such as a ".cold" block), stripped or not.
 *
 * The symbolizer names an address that no symbol covers after the start of
 * the FDE that covers it, "module+0xSTART" (symbolizer_resolve.c), so that
 * the addresses of one function of a stripped program add up to one entry
 * of a profile's table instead of one entry per address.
 *
 * Addresses here are ELF virtual addresses of the file (those nm, objdump,
 * addr2line, gdb and `readelf --debug-dump=frames` print), not file offsets
 * and not addresses of a process: the caller subtracts the load bias.
 *
 * The table is read from the file's .eh_frame section (found by its
 * section header, or else through the PT_GNU_EH_FRAME segment's
 * .eh_frame_hdr, whose eh_frame_ptr points at it) by walking its CIE and
 * FDE records; it is kept compact, two uint32 per FDE relative to the
 * lowest start. Built lazily, once per module, on the first address of the
 * module no symbol names. Reads libelf data owned by the caller's Elf only
 * during the build; the table owns its arrays.
 *
 * Agent thread only; nothing here is async-signal-safe (it allocates).
 */
#ifndef EMBER_SYMBOLS_FDETAB_H
#define EMBER_SYMBOLS_FDETAB_H

#include <stddef.h>
#include <stdint.h>

#include "util/dep_elfutils.h"

typedef struct ember__fdetab {
	uint64_t base;   /* ELF vaddr the offsets are relative to */
	uint32_t *start; /* sorted, start[i] <= start[i + 1]; malloc'd */
	uint32_t *end;   /* end[i]: the end of FDE i's range (exclusive) */
	size_t n;
	int built;       /* tried (even if the module has no usable .eh_frame) */
	const char *why; /* static: why the table is empty, NULL if it is not */
} ember__fdetab;

#define EMBER_FDETAB_INIT {0}

/*
 * Reads the FDE ranges of `elf` into t (which must be empty). A module
 * without .eh_frame, or with records it cannot read, gives an empty, built
 * table (t->why says why); records past a malformed one are skipped.
 * Returns 0 or EMBER_ERR_NOMEM (then t is empty and not built).
 */
int ember__fdetab_build(ember__fdetab *t, Elf *elf);

/*
 * ember__fdetab_build, or a copy of the table built last for the same file
 * (`path`: device, inode, size and mtime; not a "[vdso]" or other pseudo
 * path): the last 8 files whose tables have 1,024 FDEs or more are kept,
 * process-wide (a mutex; never from a signal handler), so that the
 * symbolizers of many processes of one program build its table once.
 * *t is the caller's either way. 0 or what ember__fdetab_build returns.
 */
int ember__fdetab_build_file(ember__fdetab *t, Elf *elf, const char *path);

/*
 * The function start for `vaddr`: 1 when an FDE covers it (*start: the
 * start of the innermost such FDE, the latest one starting at or below
 * vaddr), 2 when no FDE covers it but one ends below it (*start: the end
 * of the closest such FDE: the code following a function, up to the next
 * one, is grouped together), 0 when none starts at or below vaddr. A
 * binary search; no allocation.
 */
int ember__fdetab_find(const ember__fdetab *t, uint64_t vaddr, uint64_t *start);

/* Frees the arrays; t is empty and unbuilt again. */
void ember__fdetab_reset(ember__fdetab *t);

#endif
