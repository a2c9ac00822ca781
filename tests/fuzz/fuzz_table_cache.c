/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_table_cache.c - libFuzzer target for the unwind-table cache's file
 * check (src/cfi/table_cache.c: ember__table_cache_validate), and for
 * the DWARF unwinder walking whatever table a file that passes it holds
 * (src/unwind/unwind_dwarf.c): a file passes on its header, sizes and
 * index alone, its rows are never checked one by one, so the handler must
 * stay within its stack and the table whatever the rows say.
 *
 * Input, by the low bits of the first byte:
 *   xxxx0: the file's bytes as they are (mostly rejected: the header check);
 *   x0xx1: u16 nrows, u16 nindex, u8 shift, then the rows' and index's
 *      bytes: wrapped in a header that is valid in itself, so that the
 *      checks of sizes, offsets and index and then the walk are reached;
 *   x1xx1: the packed form (format 3): u16 offset, u8 value, u16 count,
 *      then 8-byte rows (pc, cfa, fp, kind: anything), sorted by pc and
 *      packed (ember__cfi_pack_rows) into a file as the agent writes it;
 *      then the byte at that offset of the file (past the header's checked
 *      part, within the file) is xor'ed with the value, and `count` bytes
 *      from there are overwritten with what follows the rows (if any): a
 *      near-valid file, whose page and bucket index, rules and rows the
 *      check and then the walk meet corrupted.
 * Every buffer is an exact-size heap copy (malloc's alignment suits the
 * rows): an overread is a sanitizer report.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/table_cache.h"
#include "cfi/cfi_pack.h"
#include "emberprof.h"
#include "unwind/arch.h"
#include "unwind/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const ember__table_cache_header *h, const uint8_t *img, const uint8_t *data,
		 size_t size)
{
	if (h->nrows == 0)
		return;
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
	ember__cfi_row start = {0};
	if (h->packed) {
		ember__cfi_packed *p = &s->mods[0].packed;
		ember__cfi_packed_layout(h->nrows, h->nrules, h->npages, img + h->rows_off, p);
		p->nsignal = h->nsignal;
		p->page0 = h->page0;
		(void)ember__cfi_packed_row(p, data[0] % h->nrows, &start);
		/* every row, decoded: the row search stays inside the arrays */
		for (uint32_t i = 0; i < h->nrows; i++) {
			ember__cfi_row x;
			(void)ember__cfi_packed_row(p, i, &x);
		}
	} else {
		s->mods[0].rows = (const ember__cfi_row *)(img + h->rows_off);
		s->mods[0].nrows = h->nrows;
		s->mods[0].index = h->nindex ? (const uint32_t *)(img + h->index_off) : NULL;
		s->mods[0].nindex = h->nindex;
		s->mods[0].index_shift = h->index_shift;
		start = s->mods[0].rows[data[0] % h->nrows];
	}
	for (size_t i = 0; i + 4 <= size && i < 64; i += 4) {
		uint32_t pc;
		memcpy(&pc, data + i, 4);
		ember__cfi_row x;
		(void)ember__unwind_find_row(s, pc, NULL, &x);
		(void)ember__unwind_find_row(s, start.pc + (uint32_t)i * 4099u, NULL, &x);
	}
	ember__regs r = {.pc = start.pc + (data[size - 1] & 7),
			 .sp = (uintptr_t)&stack[0],
			 .fp = (uintptr_t)&stack[data[size / 2] % 64]};
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[64]};
	uint64_t pcs[32];
	unsigned flags = 0;
	int n = ember__unwind_dwarf(s, data[0] & 2, &r, &b, pcs, 32, &flags);
	if (n < 1 || n > 32)
		abort();
	free(s);
}

static int cmp_pc(const void *a, const void *b)
{
	const ember__cfi_row *x = a, *y = b;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* Mode x1xx1: a packed file as the agent writes it, then corrupted. */
static uint8_t *packed_image(const uint8_t *data, size_t size, size_t *n)
{
	if (size < 6)
		return NULL;
	size_t nrows = (size - 6) / 8, at = (size_t)(data[1] | data[2] << 8);
	size_t count = (size_t)(data[4] | data[5] << 8);
	if (nrows == 0 || nrows > 4096)
		return NULL;
	ember__cfi_row *rows = malloc(nrows * sizeof(*rows));
	if (!rows)
		abort();
	memcpy(rows, data + 6, nrows * sizeof(*rows));
	qsort(rows, nrows, sizeof(*rows), cmp_pc);
	size_t w = 0;
	for (size_t i = 0; i < nrows; i++)
		if (w == 0 || rows[w - 1].pc != rows[i].pc)
			rows[w++] = rows[i];
	uint8_t *img = NULL;
	ember__cfi_table t;
	memset(&t, 0, sizeof(t));
	/* at most 256 pages: a quick run */
	if (((rows[w - 1].pc - rows[0].pc) >> 16) < 256 &&
	    ember__cfi_pack_rows(rows, (uint32_t)w, &t.block, &t.block_len, &t.packed) == 0) {
		t.nrows = (uint32_t)w;
		ember__table_cache_header h;
		ember__build_id id = {.len = 20};
		ember__table_cache_header_init(&h, &id, &id, &t);
		h.check = ember__table_cache_header_check(&h);
		*n = (size_t)h.file_size;
		img = malloc(*n);
		if (!img)
			abort();
		memset(img, 0, *n);
		memcpy(img, &h, sizeof(h));
		memcpy(img + h.rows_off, t.block, t.block_len);
		size_t lo = offsetof(ember__table_cache_header, check) + sizeof(h.check);
		size_t tail = size - 6 - nrows * 8;
		if (lo + at < *n) {
			img[lo + at] ^= data[3];
			for (size_t k = 0; k < count && k < tail && lo + at + k < *n; k++)
				img[lo + at + k] = data[6 + nrows * 8 + k];
		}
	}
	free(t.block);
	free(rows);
	return img;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t n = size;
	uint8_t *img;
	if ((data[0] & 0x11) == 0x11) {
		img = packed_image(data, size, &n);
		if (!img)
			return 0;
	} else if ((data[0] & 1) == 0) {
		img = malloc(n ? n : 1);
		if (!img)
			abort();
		memcpy(img, data, n);
	} else {
		if (size < 6)
			return 0;
		ember__table_cache_header h;
		ember__build_id id = {.len = 20};
		ember__cfi_table shape;
		memset(&shape, 0, sizeof(shape));
		static const uint32_t some_index[1];
		shape.nrows = (uint32_t)(data[1] | data[2] << 8);
		shape.nindex = (uint32_t)(data[3] | data[4] << 8);
		shape.index_shift = data[5];
		shape.index = (uint32_t *)some_index; /* only tested against NULL */
		ember__table_cache_header_init(&h, &id, &id, &shape);
		size_t payload = size - 6;
		n = (size_t)h.rows_off + payload; /* index_off and file_size as they fall */
		h.file_size = n;
		h.check = ember__table_cache_header_check(&h);
		img = malloc(n ? n : 1);
		if (!img)
			abort();
		memcpy(img, &h, sizeof(h));
		memset(img + sizeof(h), 0, (size_t)h.rows_off - sizeof(h));
		memcpy(img + h.rows_off, data + 6, payload);
	}
	if (ember__table_cache_validate(img, n, NULL, NULL) == 0) {
		ember__table_cache_header h;
		memcpy(&h, img, sizeof(h));
		walk(&h, img, data, size);
	}
	free(img);
	return 0;
}
