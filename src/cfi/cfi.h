/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi.h - call-frame information (.eh_frame, .eh_frame_hdr, .debug_frame)
 * compiled into the compact, sorted row table the DWARF unwinder reads
 * (ember__cfi_row in src/unwind/unwind.h).
 *
 * A builder collects the FDEs of one module from any number of sections,
 * interpreting each FDE's CFA program (after its CIE's initial
 * instructions) and keeping, per address range, only what unwinding needs:
 * the CFA rule (sp or fp + offset, the PLT stub expression), where the
 * return address is saved (or that it is undefined: the outermost frame)
 * and where the caller's frame pointer is saved (or that it is unchanged).
 * ember__cfi_finish() sorts the FDEs, drops overlapping ones (the section
 * added with the higher priority wins), fills gaps with EMBER_CFI_NONE
 * rows and merges consecutive identical rows.
 *
 * Input is untrusted: every read is bounded by the section, and a
 * malformed or unsupported CIE or FDE (bad length, unknown opcode,
 * unsupported pointer encoding, truncated data, state-stack overflow)
 * drops that FDE and is counted in ember__cfi_stats; nothing crashes.
 * Row addresses are offsets from the module's load bias and must fit in
 * 32 bits (FDEs beyond are dropped).
 *
 * Agent side only: allocates, not async-signal-safe. Finding the sections
 * in an ELF file or image is cfi_elf.h's job.
 */
#ifndef EMBER_CFI_H
#define EMBER_CFI_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"

typedef struct ember__cfi_stats {
	uint32_t cies;         /* CIEs parsed successfully */
	uint32_t fdes;         /* FDEs turned into rows */
	uint32_t bad_cies;     /* CIEs rejected (their FDEs count in bad_fdes) */
	uint32_t bad_fdes;     /* FDEs rejected: malformed or unsupported */
	uint32_t overlaps;     /* FDEs dropped at finish: overlap one kept */
	uint32_t signal_fdes;  /* FDEs of signal trampolines ('S' augmentation) */
	uint32_t plt_rows;     /* rows with the PLT CFA expression */
	uint32_t unknown_rows; /* rows left to the frame-pointer rule */
	uint32_t raw_rows;     /* rows before merging */
	uint32_t ra_sign_ops;  /* DW_CFA_AARCH64_negate_ra_state seen (PAC-signed code) */
	uint32_t fill_rows;    /* rows of ember__cfi_add_fill kept (no FDE covers them) */
	uint32_t fill_dropped; /* ember__cfi_add_fill ranges dropped: an FDE covers them */
	/* 1 when the table kept the 8-byte rows (cfi_pack.h): more than
	 * EMBER_CFI_RULES_MAX distinct rules, or packing would not be smaller */
	uint32_t unpacked_rules, unpacked_small;
} ember__cfi_stats;

/*
 * The finished table of one module: packed (packed.nrows != 0, the arrays
 * in `block` or the cache file's mapping; rows and index NULL) or, where
 * packing does not pay, rows + index (cfi_pack.h). Read row i with
 * ember__cfi_table_row, look an address up with ember__cfi_table_find.
 */
typedef struct ember__cfi_table {
	ember__cfi_row *rows; /* the unpacked form: sorted by pc */
	uint32_t nrows;       /* rows, in either form */
	uint32_t nindex, index_shift;
	uint32_t *index; /* the lookup index (ember__unwind_module); NULL if no rows */
	ember__cfi_packed packed; /* the packed form (src/unwind/unwind.h) */
	void *block;              /* the packed form's arrays on the heap (or NULL) */
	size_t block_len;
	size_t bytes;    /* memory held by the table: struct, rows and index or block */
	ember__cfi_stats stats;
	/* a table loaded from the unwind-table cache (src/cfi/table_cache.h):
	 * rows and index, or the packed arrays, point into this read-only file
	 * mapping, unmapped by ember__cfi_table_free; NULL for a table on the
	 * heap */
	void *map;
	size_t map_len;
} ember__cfi_table;

typedef struct ember__cfi_builder ember__cfi_builder;

/* Which kind of section a buffer holds. */
enum { EMBER_CFI_EH_FRAME = 1, EMBER_CFI_DEBUG_FRAME = 2 };

/* A new, empty builder; *out is the caller's (free it or finish it). */
int ember__cfi_builder_new(ember__cfi_builder **out);
/* Frees a builder and everything it collected. NULL is ok. */
void ember__cfi_builder_free(ember__cfi_builder *b);

/*
 * Adds every FDE of one section, walking its entries in order.
 * data/len: the section's bytes (borrowed for the call only);
 * vaddr: the link-time address of data[0], the base of pc-relative
 * pointers (.eh_frame; ignored for .debug_frame, whose addresses are
 * absolute); kind: EMBER_CFI_EH_FRAME or EMBER_CFI_DEBUG_FRAME;
 * priority: on overlap at finish, the higher one's FDE is kept.
 * Malformed entries are counted, not returned as errors: returns 0,
 * EMBER_ERR_INVALID (an unknown kind) or EMBER_ERR_NOMEM.
 */
int ember__cfi_add_section(ember__cfi_builder *b, const uint8_t *data, size_t len, uint64_t vaddr,
			   int kind, int priority);

/*
 * Adds the FDEs of .eh_frame as listed by the search table of its
 * .eh_frame_hdr (each FDE is still parsed from `eh`, bounded by it).
 * hdr/hdr_vaddr: the header and its link-time address (the base of its
 * datarel pointers); eh/eh_len/eh_vaddr: the .eh_frame section it points
 * to. A header without a search table makes this a linear walk of `eh`.
 * Returns 0, EMBER_ERR_FORMAT (the header is malformed or does not point
 * into `eh`; nothing was added) or EMBER_ERR_NOMEM.
 */
int ember__cfi_add_eh_frame_hdr(ember__cfi_builder *b, const uint8_t *hdr, size_t hdr_len,
				uint64_t hdr_vaddr, const uint8_t *eh, size_t eh_len,
				uint64_t eh_vaddr, int priority);

/*
 * Decodes the eh_frame_ptr field of an .eh_frame_hdr at hdr_vaddr: the
 * link-time address of .eh_frame. Returns 0 or EMBER_ERR_FORMAT.
 */
int ember__cfi_eh_frame_hdr_target(const uint8_t *hdr, size_t hdr_len, uint64_t hdr_vaddr,
				   uint64_t *eh_vaddr);

/*
 * Adds a range of code that has no CFI but a known rule (the aarch64 PLT
 * stubs: unwind.h, ember__plt_rows_*): rows[0..n), sorted by pc, the first
 * at start, all inside [start, end). Such a range is kept at finish only if
 * no FDE overlaps it (it never overrides CFI; dropped ones count in
 * fill_dropped, kept rows in fill_rows), as if added at a priority below every
 * section's. A range that rows cannot hold (empty, unsorted rows, beyond
 * 32-bit offsets) is ignored. Returns 0 or EMBER_ERR_NOMEM.
 */
int ember__cfi_add_fill(ember__cfi_builder *b, uint64_t start, uint64_t end,
			const ember__cfi_row *rows, size_t n);

/*
 * Builds the table from everything added, packed (cfi_pack.h), and frees
 * the builder (also on failure). *out is the caller's, freed with ember__cfi_table_free(). A
 * builder with no usable FDE gives a table with no rows. Returns 0 or
 * EMBER_ERR_NOMEM.
 */
int ember__cfi_finish(ember__cfi_builder *b, ember__cfi_table **out);

/* The same, without packing: the table keeps rows + index whatever its
 * size (the reference the packed form is tested against). */
int ember__cfi_finish_rows(ember__cfi_builder *b, ember__cfi_table **out);

/* Statistics so far (valid before finish). */
const ember__cfi_stats *ember__cfi_builder_stats(const ember__cfi_builder *b);

/* Frees a table. NULL is ok. */
void ember__cfi_table_free(ember__cfi_table *t);

#endif
