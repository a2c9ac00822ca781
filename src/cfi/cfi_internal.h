/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi_internal.h - the table builder's state, shared by the files of
 * src/cfi/ that build a table: cfi.c (entries, CIEs and FDEs, the
 * .eh_frame_hdr search table, finishing) and cfi_program.c (the CFA
 * program interpreter that turns an entry's instructions into rows).
 * Private to src/cfi/. Agent side only: allocates, not async-signal-safe.
 */
#ifndef EMBER_CFI_INTERNAL_H
#define EMBER_CFI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cfi/cfi.h"
#include "cfi/cfi_read.h"

/* ---- the rule state ---- */

enum { RULE_NONE = 0, RULE_SAME, RULE_UNDEF, RULE_OFFSET, RULE_OTHER };
enum { CFA_OTHER = 0, CFA_REG, CFA_PLT };

typedef struct rule {
	uint8_t how;
	int64_t off;
} rule;

typedef struct cfstate {
	uint8_t cfa_how;
	uint8_t plt_thr;
	uint64_t cfa_reg;
	int64_t cfa_off;
	rule fp, ra, aux;
	uint8_t ra_signed; /* DW_CFA_AARCH64_negate_ra_state toggles it */
} cfstate;

#define CIE_CACHE 16

typedef struct cie {
	size_t off; /* section offset of the entry: the cache key */
	const uint8_t *sec;
	uint64_t caf;
	int64_t daf;
	uint64_t ra_reg;
	uint8_t fde_enc;
	uint8_t addr_size;
	int has_z, signal, kind;
	cfstate init; /* after the initial instructions */
} cie;

typedef struct run {
	uint64_t start, end;
	size_t first, n; /* rows in builder->rows */
	int priority;
	uint32_t seq;
	int fill; /* ember__cfi_add_fill's: kept only where no FDE is */
} run;

struct ember__cfi_builder {
	ember__cfi_row *rows;
	size_t nrows, caprows;
	run *runs;
	size_t nruns, capruns;
	cie cache[CIE_CACHE];
	unsigned ncache, next_slot;
	ember__cfi_stats stats;
};

/* ember__cfi_run_program's results. */
enum { PROG_OK = 0, PROG_BAD = -1, PROG_NOMEM = -2 };

/* Appends a row to b->rows. 0 or EMBER_ERR_NOMEM. */
int ember__cfi_push_row(ember__cfi_builder *b, const ember__cfi_row *row);

/*
 * Runs a CFA program over r (bounded by the entry). For a CIE (`init` is
 * NULL) location-changing and restore instructions are invalid and no row
 * is emitted. For an FDE, rows for [*loc, loc_end) are pushed to b.
 * PROG_OK, PROG_BAD or PROG_NOMEM (cfi_program.c).
 */
int ember__cfi_run_program(ember__cfi_builder *b, rd *r, const cie *c, const ptr_ctx *pc_ctx,
			   cfstate *st, const cfstate *init, uint64_t loc, uint64_t loc_end);

#endif
