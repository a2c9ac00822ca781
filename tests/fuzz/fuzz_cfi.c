/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_cfi.c - libFuzzer target for the CFI parser and table builder
 * (src/cfi/cfi.c, cfi_program.c), and for the DWARF unwinder walking
 * whatever table comes out (src/unwind/unwind_dwarf.c).
 *
 * Input layout (little-endian), by the low two bits of the first byte:
 *   0: u32 vaddr, then raw .eh_frame bytes (linear walk)
 *   1: raw .debug_frame bytes
 *   2: u16 hdr_len, u32 hdr_vaddr, u32 eh_vaddr, hdr_len bytes of
 *      .eh_frame_hdr, then the .eh_frame bytes it indexes
 * Mode 0 with bit 3 of the first byte set also reads the section's bytes
 * as a PLT section at vaddr (both architectures' ember__plt_rows_*, whose
 * runs must lie inside it, in order) and adds the host's as fill rows.
 * Any input must give a table (or a clean error for a bad header) whose
 * rows are strictly sorted with valid kinds; then an unwind from a fake
 * stack made of the input's last bytes, over that table, must stay within
 * the stack (the sanitizers see any stray read) and return a sane count.
 * The parser copies nothing it reads: every buffer handed to it is an
 * exact-size heap copy, so reading past it is caught.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/cfi.h"
#include "cfi/cfi_pack.h"
#include "emberprof.h"
#include "unwind/arch.h"
#include "unwind/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t le(const uint8_t *p, size_t n)
{
	uint32_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

/* An exact-size heap copy (so that an overread is a sanitizer report). */
static uint8_t *dup(const uint8_t *p, size_t n)
{
	uint8_t *d = malloc(n ? n : 1);
	if (!d)
		abort();
	memcpy(d, p, n);
	return d;
}

static void walk(const ember__cfi_table *t, const ember__cfi_row *rows, const uint8_t *data,
		 size_t size)
{
	static uintptr_t stack[64];
	memset(stack, 0, sizeof(stack));
	size_t take = size < sizeof(stack) ? size : sizeof(stack);
	memcpy((uint8_t *)stack + sizeof(stack) - take, data + size - take, take);
	ember__unwind_snapshot *s = malloc(sizeof(*s) + sizeof(s->mods[0]));
	if (!s)
		abort();
	memset(s, 0, sizeof(*s) + sizeof(s->mods[0]));
	s->n = 1;
	s->mods[0].start = 0;
	s->mods[0].end = UINTPTR_MAX;
	s->mods[0].base = 0;
	ember__cfi_table_to_module(t, &s->mods[0]);
	ember__regs r = {.pc = rows[data[0] % t->nrows].pc + (data[size - 1] & 7),
			 .sp = (uintptr_t)&stack[0],
			 .fp = (uintptr_t)&stack[data[size / 2] % 64]};
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[64]};
	uint64_t pcs[32];
	unsigned flags = 0;
	int n = ember__unwind_dwarf(s, data[0] & 4, &r, &b, pcs, 32, &flags);
	if (n < 1 || n > 32)
		abort();
	free(s);
}

/* Runs in order, each non-empty and inside [addr, addr + len). */
static void check_runs(const ember__plt_run *r, int n, uint64_t addr, size_t len)
{
	if (n < 0 || n > EMBER_PLT_RUNS_MAX)
		abort();
	for (int i = 0; i < n; i++)
		if (r[i].start >= r[i].end || r[i].start < addr || r[i].end > addr + len ||
		    (i && r[i].start < r[i - 1].end) || r[i].row.pc != (uint32_t)r[i].start)
			abort();
}

static void add_plt(ember__cfi_builder *b, const uint8_t *code, size_t len, uint64_t addr)
{
	ember__plt_run runs[EMBER_PLT_RUNS_MAX];
	int n = ember__plt_rows_aarch64(code, len, addr, len, 1, runs, EMBER_PLT_RUNS_MAX);
	check_runs(runs, n, addr, len);
	n = ember__plt_rows_x86_64(code, len, addr, len, 1, runs, EMBER_PLT_RUNS_MAX);
	check_runs(runs, n, addr, len);
	n = EMBER_ARCH_PLT_ROWS(code, len, addr, len, 1, runs, EMBER_PLT_RUNS_MAX);
	for (int i = 0; i < n; i++)
		if (ember__cfi_add_fill(b, runs[i].start, runs[i].end, &runs[i].row, 1) != 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	ember__cfi_builder *b;
	if (ember__cfi_builder_new(&b) != 0)
		abort();
	int mode = data[0] & 3;
	uint8_t *a = NULL, *c = NULL;
	if (mode == 0 && size >= 5) {
		a = dup(data + 5, size - 5);
		ember__cfi_add_section(b, a, size - 5, le(data + 1, 4), EMBER_CFI_EH_FRAME, 2);
		if (data[0] & 8)
			add_plt(b, a, size - 5, le(data + 1, 4));
	} else if (mode == 1) {
		a = dup(data + 1, size - 1);
		ember__cfi_add_section(b, a, size - 1, 0, EMBER_CFI_DEBUG_FRAME, 1);
	} else if (mode == 2 && size >= 11) {
		size_t hlen = le(data + 1, 2);
		if (hlen > size - 11)
			hlen = size - 11;
		a = dup(data + 11, hlen);
		c = dup(data + 11 + hlen, size - 11 - hlen);
		uint64_t target;
		int rc = ember__cfi_eh_frame_hdr_target(a, hlen, le(data + 3, 4), &target);
		int rc2 = ember__cfi_add_eh_frame_hdr(b, a, hlen, le(data + 3, 4), c, size - 11 - hlen,
						      le(data + 7, 4), 2);
		if (rc2 == EMBER_ERR_NOMEM || (rc != 0 && rc2 == 0))
			abort(); /* a header that does not decode cannot be used */
	}
	ember__cfi_table *t = NULL;
	if (ember__cfi_finish(b, &t) != 0 || !t)
		abort();
	/* The rows, decoded from whichever form the table took. */
	ember__cfi_row *rows = malloc((t->nrows ? t->nrows : 1) * sizeof(*rows));
	if (!rows)
		abort();
	for (uint32_t i = 0; i < t->nrows; i++)
		if (!ember__cfi_table_row(t, i, &rows[i]))
			abort();
	/* The same rows packed whatever their size (fuzzed tables are small,
	 * which ember__cfi_finish keeps unpacked), unless they span too many
	 * 64 KiB pages for a quick run. */
	ember__cfi_table pk;
	memset(&pk, 0, sizeof(pk));
	int packed = t->nrows && ((rows[t->nrows - 1].pc - rows[0].pc) >> 16) < 64 &&
		     ember__cfi_pack_rows(rows, t->nrows, &pk.block, &pk.block_len, &pk.packed) == 0;
	pk.nrows = t->nrows;
	if (packed && ember__cfi_packed_check(&pk.packed) != 0)
		abort();
	for (uint32_t i = 0; i < t->nrows; i++) {
		if ((rows[i].kind & EMBER_CFI_KIND_MASK) > EMBER_CFI_AUX)
			abort();
		if (i && rows[i - 1].pc >= rows[i].pc)
			abort();
		if (t->nindex > t->nrows)
			abort(); /* the index stays proportional to the rows */
		/* The index, and the packed form, find what a full search finds,
		 * around each row and around the 64 KiB page it lies in. */
		uint32_t probes[6] = {rows[i].pc - 1, rows[i].pc, rows[i].pc + 1,
				      (rows[i].pc & ~0xffffu) - 1, rows[i].pc & ~0xffffu,
				      rows[i].pc | 0xffff};
		for (uint32_t d = 0; d < 6; d++) {
			uint32_t pc = probes[d];
			const ember__cfi_row *want = ember__cfi_rows_find(rows, t->nrows, pc);
			ember__cfi_row got;
			int found = ember__cfi_table_find(t, pc, &got);
			if (found != (want != NULL) || (found && memcmp(&got, want, sizeof(got))))
				abort();
			found = packed && ember__cfi_table_find(&pk, pc, &got);
			if (packed &&
			    (found != (want != NULL) || (found && memcmp(&got, want, sizeof(got)))))
				abort();
		}
	}
	if (t->nrows)
		walk(t, rows, data, size);
	if (packed)
		walk(&pk, rows, data, size);
	free(pk.block);
	free(rows);
	ember__cfi_table_free(t);
	free(a);
	free(c);
	return 0;
}
