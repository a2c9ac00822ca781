/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pltsyms.h - names for a module's PLT stubs, "foo@plt", as binutils
 * (objdump's synthetic symbols) and perf give them.
 *
 * A PLT stub has no symbol of its own: without these names an address in
 * .plt takes the name of the closest symbol below it, usually `_init`.
 * The names come from the module's relocations, as binutils derives them:
 * each stub jumps through a GOT slot, and the JUMP_SLOT (or, for .plt.got,
 * GLOB_DAT) relocation of that slot names the function. Layouts handled:
 *   - x86-64 .plt (lazy: `jmp *slot(%rip); push N; jmp .plt`), .plt.sec
 *     and .plt.bnd (IBT/MPX: the jump lives in the second table, the lazy
 *     .plt entry only pushes its index N into .rela.plt) and .plt.got;
 *   - aarch64 .plt (`adrp x16, page; ldr x17, [x16, #off]; add; br x17`,
 *     optionally after `bti c`).
 * The lazy-binding header (PLT0) and any entry whose code is not one of
 * these forms are named after their section (".plt"), so an address in a
 * PLT section is never charged to an unrelated function.
 *
 * Used by the agent thread only (symbolization); nothing here is
 * async-signal-safe.
 */
#ifndef EMBER_PLTSYMS_H
#define EMBER_PLTSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/dep_elfutils.h"

/* One named stub; addr is the file's virtual address (not relocated). */
typedef struct ember__plt_stub {
	uint64_t addr, size;
	const char *name; /* "foo@plt" or the section's name; in the caller's arena */
} ember__plt_stub;

/*
 * Finds the PLT stubs of `elf` (an ELF file with section headers; a file
 * without PLT sections gives none). On success *out is a malloc'd array of
 * *n stubs sorted by address (NULL when *n is 0), which the caller frees;
 * the names are allocated in `names`. Returns 0 or EMBER_ERR_NOMEM.
 * Malformed sections or relocations are skipped, never read out of bounds.
 */
int ember__plt_stubs(Elf *elf, ember__arena *names, ember__plt_stub **out, size_t *n);

/* The instruction decoders, exposed for the unit tests. */

/*
 * Decodes one x86-64 PLT entry of `len` bytes at virtual address vaddr:
 * returns 1 with *slot set to the GOT slot it jumps through, 2 with *index
 * set to the relocation index it pushes (a lazy entry of an IBT .plt), or
 * 0 when the code is neither (PLT0, padding).
 */
int ember__plt_x86_64_entry(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *slot,
			    uint32_t *index);

/*
 * Decodes the aarch64 instruction pair at code[0..8) at virtual address
 * vaddr: returns 1 with *slot set if it is `adrp x16, P; ldr x17, [x16, #o]`
 * (slot P + o), else 0.
 */
int ember__plt_aarch64_pair(const uint8_t *code, uint64_t vaddr, uint64_t *slot);

#endif
