/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi_pack.h - the packed form of a module's unwind rows:
 * ember__cfi_packed in src/unwind/unwind.h says what it holds and how the
 * handler looks an address up in it.
 *
 * ember__cfi_finish builds rows + index as before and then packs them
 * (ember__cfi_pack): each distinct rule once, 4 bytes a row, and a page and
 * bucket index of 260 bytes per 64 KiB of code, where rows + index took 8
 * bytes a row and 4 per 512 bytes of code. A table keeps its rows + index
 * instead when it has more than EMBER_CFI_RULES_MAX distinct rules (a rule
 * number has 16 bits) or when the packed form would not be smaller (a
 * module of a few rows: the page index alone is 260 bytes); the table's
 * stats say which (unpacked_rules, unpacked_small).
 *
 * Agent side only: allocates.
 */
#ifndef EMBER_CFI_PACK_H
#define EMBER_CFI_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "cfi/cfi.h"
#include "unwind/unwind.h"

/*
 * Packs rows[0..n) (n >= 1, sorted by pc) into a new heap block: 0 and
 * *block (the caller's, free()), *len and *out (pointing into it);
 * 1 when they have more than EMBER_CFI_RULES_MAX distinct rules (nothing
 * allocated); EMBER_ERR_NOMEM.
 */
int ember__cfi_pack_rows(const ember__cfi_row *rows, uint32_t n, void **block, size_t *len,
			 ember__cfi_packed *out);

/*
 * Replaces the rows + index of a finished table with the packed form, or
 * keeps them and says why in t->stats (see above). 0 or EMBER_ERR_NOMEM
 * (t unchanged).
 */
int ember__cfi_pack(ember__cfi_table *t);

/*
 * Checks that a packed table's index (pages, fine) and rules agree with
 * its counts: pages from 0 to nrows, non-decreasing, first and last page
 * not empty, every bucket's offset inside its page's rows and
 * non-decreasing, the SIGNAL rules numbered first, page0 + npages within
 * 32-bit offsets. The rows themselves are not read (garbage in a row
 * gives a wrong row, never a read outside the arrays: the lookup checks
 * each rule number). 0 or EMBER_ERR_FORMAT with a message.
 */
int ember__cfi_packed_check(const ember__cfi_packed *p);

/* Row i of a table, in either form: 1 and *out, or 0 (no such row). */
int ember__cfi_table_row(const ember__cfi_table *t, uint32_t i, ember__cfi_row *out);

/* The row covering offset pc, in either form: 1 and *out, or 0. */
int ember__cfi_table_find(const ember__cfi_table *t, uint32_t pc, ember__cfi_row *out);

/* Points m's table fields (packed, or rows and index) at t's arrays. */
void ember__cfi_table_to_module(const ember__cfi_table *t, ember__unwind_module *m);

#endif
