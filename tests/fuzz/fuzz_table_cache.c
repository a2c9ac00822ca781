/*
 * fuzz_table_cache.c - libFuzzer target for the unwind-table cache's file
 * check (src/agent/table_cache.c: ember__table_cache_validate), and for
 * the DWARF unwinder walking whatever table a file that passes it holds
 * (src/unwind/unwind_dwarf.c): a file passes on its header, sizes and
 * index alone, its rows are never checked one by one, so the handler must
 * stay within its stack and the table whatever the rows say.
 *
 * Input, by the low bit of the first byte:
 *   0: the file's bytes as they are (mostly rejected: the header check);
 *   1: u16 nrows, u16 nindex, u8 shift, then the rows' and index's bytes:
 *      wrapped in a header that is valid in itself, so that the checks of
 *      sizes, offsets and index and then the walk are reached.
 * Every buffer is an exact-size heap copy (malloc's alignment suits the
 * rows): an overread is a sanitizer report.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/table_cache.h"
#include "emberprof.h"
#include "unwind/arch.h"
#include "unwind/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const ember__table_cache_header *h, const uint8_t *img, const uint8_t *data,
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
	s->mods[0].rows = (const ember__cfi_row *)(img + h->rows_off);
	s->mods[0].nrows = h->nrows;
	s->mods[0].index = h->nindex ? (const uint32_t *)(img + h->index_off) : NULL;
	s->mods[0].nindex = h->nindex;
	s->mods[0].index_shift = h->index_shift;
	const ember__cfi_row *rows = s->mods[0].rows;
	for (size_t i = 0; i + 4 <= size && i < 64; i += 4) {
		uint32_t pc;
		memcpy(&pc, data + i, 4);
		(void)ember__unwind_find_row(s, pc, NULL);
	}
	ember__regs r = {.pc = rows[data[0] % h->nrows].pc + (data[size - 1] & 7),
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t n = size;
	uint8_t *img;
	if ((data[0] & 1) == 0) {
		img = malloc(n ? n : 1);
		if (!img)
			abort();
		memcpy(img, data, n);
	} else {
		if (size < 6)
			return 0;
		ember__table_cache_header h;
		ember__build_id id = {.len = 20};
		ember__table_cache_header_init(&h, &id, &id, (uint32_t)(data[1] | data[2] << 8),
					       (uint32_t)(data[3] | data[4] << 8), data[5]);
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
		if (h.nrows)
			walk(&h, img, data, size);
	}
	free(img);
	return 0;
}
