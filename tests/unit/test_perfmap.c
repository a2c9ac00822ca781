/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_perfmap.c - the perf map parser (src/symbols/perfmap.c) and the PLT
 * stub decoders (src/symbols/pltsyms.c) on hand-made input.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "symbols/perfmap.h"
#include "symbols/pltsyms.h"

static size_t parse(ember__perfmap *m, const char *text)
{
	int err;
	size_t used = ember__perfmap_parse(m, text, strlen(text), &err);
	CHECK_EQ_INT(err, 0);
	return used;
}

static void test_lines(void)
{
	ember__perfmap m = EMBER_PERFMAP_INIT;
	const char *text = "1000 10 first fn\n"
			   "0x2000 0x20 LazyCompile:*f /a b.js:1\n"
			   "\n"
			   "garbage\n"
			   "3000 0 zero\n"
			   "zz 10 x\n"
			   "4000 10\n"
			   "4000 10 \n"
			   "ffffffffffffffff 2 wraps\n"
			   "11112222333344445 1 too_long_number\n"
			   "5000\t8\ttabbed\r\n";
	CHECK_EQ_INT(parse(&m, text), strlen(text));
	CHECK_EQ_INT(m.n, 3);
	CHECK_EQ_INT(m.bad_lines, 7);
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x1000), "first fn");
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x100f), "first fn");
	CHECK(ember__perfmap_find(&m, 0x1010) == NULL);
	CHECK(ember__perfmap_find(&m, 0xfff) == NULL);
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x201f), "LazyCompile:*f /a b.js:1");
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x5007), "tabbed");
	ember__perfmap_reset(&m);
	CHECK_EQ_INT(m.n, 0);
}

static void test_incremental_and_newest(void)
{
	ember__perfmap m = EMBER_PERFMAP_INIT;
	/* an incomplete last line is left for the next call */
	CHECK_EQ_INT(parse(&m, "1000 100 old\n2000 1"), strlen("1000 100 old\n"));
	CHECK_EQ_INT(m.n, 1);
	CHECK_EQ_INT(parse(&m, "2000 10 b\n1040 10 new\n"), strlen("2000 10 b\n1040 10 new\n"));
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x1045), "new"); /* later line wins */
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x1000), "old");
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x1050), "old"); /* the older range still holds it */
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x2000), "b");
	/* the same start again: the newer one */
	parse(&m, "1000 100 newest\n");
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x1000), "newest");
	ember__perfmap_reset(&m);
}

static void test_long_line(void)
{
	ember__perfmap m = EMBER_PERFMAP_INIT;
	size_t n = EMBER_PERFMAP_MAX_LINE + 100;
	char *text = malloc(n + 32);
	memset(text, 'a', n);
	strcpy(text + n, "\n1000 10 ok\n");
	CHECK_EQ_INT(parse(&m, text), strlen(text));
	CHECK_EQ_INT(m.bad_lines, 1);
	CHECK_EQ_STR(ember__perfmap_find(&m, 0x1000), "ok");
	/* too long and no newline yet: consumed and counted, not waited for */
	memset(text, 'b', n);
	text[n] = '\0';
	CHECK_EQ_INT(parse(&m, text), n);
	CHECK_EQ_INT(m.bad_lines, 2);
	free(text);
	ember__perfmap_reset(&m);
}

static void test_x86_64_entries(void)
{
	uint64_t slot = 0;
	uint32_t index = 0;
	/* lazy .plt entry at 0x1030: jmp *0x2fe2(%rip); push $3; jmp .plt */
	static const uint8_t lazy[] = {0xff, 0x25, 0xe2, 0x2f, 0x00, 0x00, 0x68, 0x03,
				       0x00, 0x00, 0x00, 0xe9, 0xe0, 0xff, 0xff, 0xff};
	CHECK_EQ_INT(ember__plt_x86_64_entry(lazy, 16, 0x1030, &slot, &index), 1);
	CHECK_EQ_INT(slot, 0x1030 + 6 + 0x2fe2);
	/* .plt.sec: endbr64; bnd jmp *-0x10(%rip) */
	static const uint8_t sec[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xf0,
				      0xff, 0xff, 0xff, 0x0f, 0x1f, 0x44, 0x00, 0x00};
	CHECK_EQ_INT(ember__plt_x86_64_entry(sec, 16, 0x2000, &slot, &index), 1);
	CHECK_EQ_INT(slot, 0x2000 + 11 - 0x10);
	/* IBT lazy .plt entry: endbr64; push $7; bnd jmp .plt */
	static const uint8_t ibt[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x68, 0x07, 0x00, 0x00,
				      0x00, 0xf2, 0xe9, 0x00, 0x00, 0x00, 0x00, 0x90};
	CHECK_EQ_INT(ember__plt_x86_64_entry(ibt, 16, 0x1000, &slot, &index), 2);
	CHECK_EQ_INT(index, 7);
	/* PLT0: push GOT+8; jmp *GOT+16 -> not a stub */
	static const uint8_t plt0[] = {0xff, 0x35, 0x02, 0x30, 0x00, 0x00, 0xff, 0x25,
				       0x04, 0x30, 0x00, 0x00, 0x0f, 0x1f, 0x40, 0x00};
	CHECK_EQ_INT(ember__plt_x86_64_entry(plt0, 16, 0x1000, &slot, &index), 0);
	CHECK_EQ_INT(ember__plt_x86_64_entry(lazy, 3, 0x1030, &slot, &index), 0); /* cut short */
}

static void test_aarch64_pair(void)
{
	/* at 0x5a0: adrp x16, 0x11000; ldr x17, [x16, #0x8] (from objdump of a
	 * cross-built library: 0xb0000090 0xf9400611) */
	static const uint8_t pair[] = {0x90, 0x00, 0x00, 0xb0, 0x11, 0x06, 0x40, 0xf9};
	uint64_t slot = 0;
	CHECK_EQ_INT(ember__plt_aarch64_pair(pair, 0x5a0, &slot), 1);
	CHECK_EQ_INT(slot, 0x11008);
	/* negative page offset: adrp x16, -0x1000 from 0x3000 */
	uint32_t adrp = 0x90000010u | (3u << 29) | (0x7ffffu << 5); /* imm = -1 */
	uint8_t neg[8];
	memcpy(neg, &adrp, 4);
	memcpy(neg + 4, pair + 4, 4);
	CHECK_EQ_INT(ember__plt_aarch64_pair(neg, 0x3010, &slot), 1);
	CHECK_EQ_INT(slot, 0x2000 + 8);
	/* ldr into x16 instead of x17: not a stub */
	uint8_t other[8];
	memcpy(other, pair, 8);
	other[4] = 0x10;
	CHECK_EQ_INT(ember__plt_aarch64_pair(other, 0x5a0, &slot), 0);
}

int main(void)
{
	RUN(test_lines);
	RUN(test_incremental_and_newest);
	RUN(test_long_line);
	RUN(test_x86_64_entries);
	RUN(test_aarch64_pair);
	return CHECK_DONE();
}
