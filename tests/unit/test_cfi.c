/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cfi.c - the CFI parser and table builder (src/cfi/).
 *
 * Crafted sections check each part: the CFA program's opcodes (advance,
 * def_cfa*, offset*, restore*, remember/restore_state, undefined,
 * same_value, register, expressions, GNU_args_size), the PLT expression,
 * signal-frame CIEs, every pointer encoding of .eh_frame and
 * .eh_frame_hdr, .debug_frame (32- and 64-bit DWARF, version 4), row
 * merging and gaps, overlap priorities, and malformed input: bad lengths,
 * bad CIE pointers, unknown opcodes, truncation at every byte, random
 * corruption. Real system libraries (libc, libstdc++ when present, the
 * vDSO) must parse without a skipped FDE, the header's search table and a
 * linear walk must agree, and known functions must start with CFA = sp + 8.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "cfi/cfi.h"
#include "cfi/cfi_elf.h"
#include "cfi/cfi_pack.h"
#include "check.h"
#include "emberprof.h"
#include "unwind/arch.h"

/* ---- a tiny assembler for CFI sections ---- */

typedef struct buf {
	uint8_t b[8192];
	size_t n;
} buf;

static void put(buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}
static void u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void u16(buf *b, uint16_t v) { put(b, &v, 2); }
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void uleb(buf *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		u8(b, (uint8_t)(c | (v ? 0x80 : 0)));
	} while (v);
}
static void sleb(buf *b, int64_t v)
{
	for (;;) {
		uint8_t c = v & 0x7f;
		v >>= 7;
		int done = (v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40));
		u8(b, (uint8_t)(c | (done ? 0 : 0x80)));
		if (done)
			return;
	}
}

/* Writes a pointer in encoding enc at b->n, the section at vaddr. */
static void ptr(buf *b, uint8_t enc, uint64_t v, uint64_t vaddr, uint64_t data_base)
{
	uint64_t here = vaddr + b->n;
	if ((enc & 0x70) == 0x10)
		v -= here;
	else if ((enc & 0x70) == 0x30)
		v -= data_base;
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: u64(b, v); break;
	case 0x01: uleb(b, v); break;
	case 0x02: case 0x0a: u16(b, (uint16_t)v); break;
	case 0x03: case 0x0b: u32(b, (uint32_t)v); break;
	case 0x09: sleb(b, (int64_t)v); break;
	}
}

static size_t begin_entry(buf *b)
{
	size_t at = b->n;
	u32(b, 0); /* length, patched */
	return at;
}

static void end_entry(buf *b, size_t at)
{
	while ((b->n - at) % 8)
		u8(b, 0); /* DW_CFA_nop */
	uint32_t len = (uint32_t)(b->n - at - 4);
	memcpy(b->b + at, &len, 4);
}

/* Standard x86-64 initial instructions: CFA = rsp + 8, RA at CFA - 8. */
static const uint8_t cie_init[] = {0x0c, 0x07, 0x08, 0x90, 0x01};

/* An .eh_frame CIE with augmentation aug ("zR", "zRS", "zPLR", ...). */
static size_t eh_cie(buf *b, const char *aug, uint8_t fde_enc)
{
	size_t at = begin_entry(b);
	u32(b, 0); /* CIE id */
	u8(b, 1);
	put(b, aug, strlen(aug) + 1);
	uleb(b, 1);
	sleb(b, -8);
	u8(b, 16);
	if (aug[0] == 'z') {
		buf a = {.n = 0};
		for (const char *c = aug + 1; *c; c++) {
			if (*c == 'R')
				u8(&a, fde_enc);
			else if (*c == 'L')
				u8(&a, 0x1b);
			else if (*c == 'P') {
				u8(&a, 0x9b); /* indirect pcrel sdata4: skipped, never read */
				u32(&a, 0x1234);
			}
		}
		uleb(b, a.n);
		put(b, a.b, a.n);
	}
	put(b, cie_init, sizeof(cie_init));
	end_entry(b, at);
	return at;
}

static size_t eh_fde(buf *b, size_t cie, uint8_t enc, uint64_t vaddr, uint64_t begin,
		     uint64_t range, const uint8_t *ins, size_t nins)
{
	size_t at = begin_entry(b);
	u32(b, (uint32_t)(b->n - cie));
	ptr(b, enc, begin, vaddr, 0);
	ptr(b, (uint8_t)(enc & 0x0f), range, vaddr, 0);
	uleb(b, 0); /* augmentation data */
	put(b, ins, nins);
	end_entry(b, at);
	return at;
}

#define VADDR 0x40000u
#define PCREL_S4 0x1b

static ember__cfi_table *finish(ember__cfi_builder *b)
{
	ember__cfi_table *t = NULL;
	CHECK_EQ_INT(ember__cfi_finish(b, &t), 0);
	return t;
}

static ember__cfi_table *parse_eh(const buf *s)
{
	ember__cfi_builder *b;
	CHECK_EQ_INT(ember__cfi_builder_new(&b), 0);
	CHECK_EQ_INT(ember__cfi_add_section(b, s->b, s->n, VADDR, EMBER_CFI_EH_FRAME, 2), 0);
	return finish(b);
}

/* Row i of a table, in whichever form it has (an all-0xff row if none). */
static ember__cfi_row row_of(const ember__cfi_table *t, uint32_t i)
{
	ember__cfi_row r;
	if (!ember__cfi_table_row(t, i, &r))
		memset(&r, 0xff, sizeof(r));
	return r;
}

/* Compares a row with byte offsets (for PLT rows, fp is the threshold). */
static int row_is(const ember__cfi_row *r, uint32_t pc, unsigned kind, int cfa, int fp)
{
	int rfp = (r->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_PLT ? r->fp : r->fp * EMBER_CFI_UNIT;
	int ok = r->pc == pc && r->kind == kind && r->cfa * EMBER_CFI_UNIT == cfa && rfp == fp;
	if (!ok)
		fprintf(stderr, "  row {pc %#x kind %#x cfa %d fp %d}, expected {%#x %#x %d %d}\n", r->pc,
			r->kind, r->cfa * EMBER_CFI_UNIT, rfp, pc, kind, cfa, fp);
	return ok;
}

/* A row as a test expects it: pc, kind, cfa and fp in bytes (row_is). */
typedef struct want_row {
	uint32_t pc;
	unsigned kind;
	int cfa, fp;
} want_row;

/* Whether t holds exactly the rows w[0..n). */
static int rows_are(const ember__cfi_table *t, const want_row *w, uint32_t n)
{
	if (t->nrows != n) {
		fprintf(stderr, "  %u rows, expected %u\n", t->nrows, n);
		return 0;
	}
	int ok = 1;
	for (uint32_t i = 0; i < n; i++) {
		ember__cfi_row r = row_of(t, i);
		ok &= row_is(&r, w[i].pc, w[i].kind, w[i].cfa, w[i].fp);
	}
	return ok;
}

/* push %rbp; mov %rsp,%rbp; ...; leave; ret, over [0x1000, 0x1030). */
static const uint8_t prologue[] = {
	0x41,             /* advance 1 */
	0x0e, 0x10,       /* def_cfa_offset 16 */
	0x86, 0x02,       /* offset rbp at cfa-16 */
	0x43,             /* advance 3 */
	0x0d, 0x06,       /* def_cfa_register rbp */
	0x02, 0x20,       /* advance_loc1 0x20 */
	0x0c, 0x07, 0x08, /* def_cfa rsp+8 */
	0xc6,             /* restore rbp */
};

static void test_basic_rows(void)
{
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zR", PCREL_S4);
	eh_fde(&s, c, PCREL_S4, VADDR, 0x1000, 0x30, prologue, sizeof(prologue));
	u32(&s, 0); /* terminator */
	ember__cfi_table *t = parse_eh(&s);
	CHECK_EQ_INT(t->nrows, 5);
	static const want_row want[] = {
		{0x1000, EMBER_CFI_SP, 8, 0},
		{0x1001, EMBER_CFI_SP, 16, -16},
		{0x1004, EMBER_CFI_FP, 16, -16},
		{0x1024, EMBER_CFI_SP, 8, 0},
		{0x1030, EMBER_CFI_NONE, 0, 0},
	};
	CHECK(rows_are(t, want, 5));
	CHECK_EQ_INT(t->stats.fdes, 1);
	CHECK_EQ_INT(t->stats.cies, 1);
	CHECK_EQ_INT(t->stats.bad_fdes, 0);
	CHECK_EQ_INT(t->nindex, 1);
	CHECK_EQ_INT(t->bytes, sizeof(*t) + 5 * sizeof(ember__cfi_row) + sizeof(uint32_t));
	ember__cfi_table_free(t);
}

static void test_state_and_rules(void)
{
	static const uint8_t ins[] = {
		0x41, 0x0e, 0x10,       /* @1: CFA sp+16 */
		0x0a,                   /* remember */
		0x41, 0x0e, 0x08,       /* @2: CFA sp+8 (an early return) */
		0x41, 0x0b,             /* @3: restore: CFA sp+16 again */
		0x41, 0x2e, 0x20,       /* @4: GNU_args_size 32 (ignored) */
		0x11, 0x06, 0x7e,       /* offset_extended_sf rbp, -2*-8 = cfa+16?? */
		0x41, 0x08, 0x06,       /* @5: same_value rbp */
		0x41, 0x09, 0x06, 0x03, /* @6: rbp in rbx: lost */
		0x41, 0x07, 0x10,       /* @7: RA undefined */
		0x41, 0x05, 0x10, 0x01, /* @8: offset_extended RA at cfa-8 again */
		0x41, 0x12, 0x07, 0x7c, /* @9: def_cfa_sf rsp, -4*-8 = 32 */
		0x41, 0x13, 0x7d,       /* @10: def_cfa_offset_sf 24 */
		0x41, 0x0c, 0x0c, 0x08, /* @11: CFA r12+8: unknown */
	};
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zR", PCREL_S4);
	eh_fde(&s, c, PCREL_S4, VADDR, 0x2000, 0x20, ins, sizeof(ins));
	ember__cfi_table *t = parse_eh(&s);
	CHECK_EQ_INT(t->stats.bad_fdes, 0);
	CHECK_EQ_INT(t->nrows, 13); /* and the end of the FDE */
	if (t->nrows == 13) {
		static const want_row want[] = {
			{0x2000, EMBER_CFI_SP, 8, 0},
			{0x2001, EMBER_CFI_SP, 16, 0},
			{0x2002, EMBER_CFI_SP, 8, 0},
			{0x2003, EMBER_CFI_SP, 16, 0},
			{0x2004, EMBER_CFI_SP, 16, 16},
			{0x2005, EMBER_CFI_SP, 16, 0},
			{0x2006, EMBER_CFI_SP | EMBER_CFI_F_FP_LOST, 16, 0},
			{0x2007, EMBER_CFI_SP | EMBER_CFI_F_FP_LOST | EMBER_CFI_F_RA_UNDEF, 16, 0},
			{0x2008, EMBER_CFI_SP | EMBER_CFI_F_FP_LOST, 16, 0},
			{0x2009, EMBER_CFI_SP | EMBER_CFI_F_FP_LOST, 32, 0},
			{0x200a, EMBER_CFI_SP | EMBER_CFI_F_FP_LOST, 24, 0},
			{0x200b, EMBER_CFI_UNKNOWN, 0, 0},
			{0x2020, EMBER_CFI_NONE, 0, 0},
		};
		CHECK(rows_are(t, want, 13));
	}
	ember__cfi_table_free(t);
}

#define AUXC(code) ((unsigned)(code) << EMBER_CFI_AUX_SHIFT)

/*
 * The aux register (rbx): ld.so's _dl_runtime_resolve_xsavec, whose CFA
 * moves to rbx after it realigns the stack, and where a caller's rbx is
 * saved in every kind of row.
 */
static void test_aux_rules(void)
{
	static const uint8_t resolve[] = {
		0x0e, 0x18, /* @0: CFA sp+24 (the PLT pushed two words) */
		0x41,       /* advance 1: push %rbx */
		0x0e, 0x20, /*     CFA sp+32 */
		0x83, 0x04, /*     rbx at cfa-32 */
		0x43,       /* @4: mov %rsp,%rbx */
		0x0d, 0x03, /*     CFA rbx+32 */
		0x50,       /* @0x14: mov %rbx,%rsp */
		0x0d, 0x07, /*     CFA rsp+32 */
		0x44,       /* @0x18: pop %rbx */
		0xc3,       /*     restore rbx */
		0x0e, 0x18, /*     CFA sp+24 */
	};
	static const uint8_t saves[] = {
		0x41, 0x0e, 0x10, 0x83, 0x02,       /* @1: CFA sp+16, rbx at cfa-16: code 1 */
		0x41, 0x0e, 0x40, 0x83, 0x07,       /* @2: CFA sp+64, rbx at cfa-56: code 6 */
		0x41, 0x0e, 0x48, 0x83, 0x08,       /* @3: CFA sp+72, rbx at cfa-64: lost */
		0x41, 0x0e, 0x50, 0x09, 0x03, 0x0c, /* @4: CFA sp+80, rbx in r12: lost */
		0x41, 0x08, 0x03,                   /* @5: same_value rbx */
		0x41, 0x0c, 0x0c, 0x08,             /* @6: CFA r12+8: unknown, rbx unchanged */
		0x41, 0x83, 0x02,                   /* @7: unknown, rbx saved: lost */
	};
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zR", PCREL_S4);
	eh_fde(&s, c, PCREL_S4, VADDR, 0x3000, 0x20, resolve, sizeof(resolve));
	eh_fde(&s, c, PCREL_S4, VADDR, 0x3100, 0x10, saves, sizeof(saves));
	u32(&s, 0);
	ember__cfi_table *t = parse_eh(&s);
	CHECK_EQ_INT(t->stats.bad_fdes, 0);
	CHECK_EQ_INT(t->nrows, 15);
	if (t->nrows == 15) {
		const unsigned lost = AUXC(EMBER_CFI_AUX_LOST);
		static const want_row want[] = {
			{0x3000, EMBER_CFI_SP, 24, 0},
			{0x3001, EMBER_CFI_SP | AUXC(3), 32, 0},
			{0x3004, EMBER_CFI_AUX | AUXC(3), 32, 0},
			{0x3014, EMBER_CFI_SP | AUXC(3), 32, 0},
			{0x3018, EMBER_CFI_SP, 24, 0},
			{0x3020, EMBER_CFI_NONE, 0, 0},
			{0x3100, EMBER_CFI_SP, 8, 0},
			{0x3101, EMBER_CFI_SP | AUXC(1), 16, 0},
			{0x3102, EMBER_CFI_SP | AUXC(6), 64, 0},
			{0x3103, EMBER_CFI_SP | lost, 72, 0},
			{0x3104, EMBER_CFI_SP | lost, 80, 0},
			{0x3105, EMBER_CFI_SP, 80, 0},
			{0x3106, EMBER_CFI_UNKNOWN, 0, 0},
			{0x3107, EMBER_CFI_UNKNOWN | lost, 0, 0},
			{0x3110, EMBER_CFI_NONE, 0, 0},
		};
		CHECK(rows_are(t, want, 15));
	}
	ember__cfi_table_free(t);
}

/* What 8-byte rows cannot say becomes "unknown" (CFA) or "lost" (fp). */
static void test_row_limits(void)
{
	static const uint8_t ins[] = {
		0x41, 0x05, 0x10, 0x02,       /* @1: RA at cfa-16: unknown */
		0x41, 0x05, 0x10, 0x01,       /* @2: RA back at cfa-8 */
		0x0e, 0x0c,                   /*     CFA sp+12: not a slot multiple: unknown */
		0x41, 0x0e, 0xe0, 0xa7, 0x12, /* @3: CFA sp+300000: too far for 16 bits */
		0x41, 0x0e, 0x10,             /* @4: CFA sp+16 */
		0x86, 0xfa, 0x01,             /*     rbp at cfa-2000: too far, lost */
		0x41, 0x05, 0x06, 0x7f,       /* @5: offset_extended rbp: cfa+(127*-8)=-1016: kept */
	};
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zR", PCREL_S4);
	eh_fde(&s, c, PCREL_S4, VADDR, 0x6000, 0x10, ins, sizeof(ins));
	ember__cfi_table *t = parse_eh(&s);
	CHECK_EQ_INT(t->stats.bad_fdes, 0);
	CHECK_EQ_INT(t->nrows, 5);
	if (t->nrows == 5) {
		static const want_row want[] = {
			{0x6000, EMBER_CFI_SP, 8, 0},
			{0x6001, EMBER_CFI_UNKNOWN, 0, 0}, /* @1..@3 merge */
			{0x6004, EMBER_CFI_SP | EMBER_CFI_F_FP_LOST, 16, 0},
			{0x6005, EMBER_CFI_SP, 16, -1016},
			{0x6010, EMBER_CFI_NONE, 0, 0},
		};
		CHECK(rows_are(t, want, 5));
	}
	ember__cfi_table_free(t);
}

static void test_plt_and_signal(void)
{
	/* The PLT0/PLT stub expression, with lit11 and with lit10. */
	static const uint8_t plt[] = {
		0x0e, 0x10, 0x46, 0x0e, 0x18, 0x4a, /* CFA sp+16 @0, sp+24 @6, @16: */
		0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
		0x50,                                                    /* advance 16 */
		0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22,
		0x50,
		0x0f, 0x03, 0x77, 0x08, 0x06, /* breg7 8; deref: unknown */
	};
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zR", PCREL_S4);
	eh_fde(&s, c, PCREL_S4, VADDR, 0x3000, 0x40, plt, sizeof(plt));
	size_t cs = eh_cie(&s, "zRS", PCREL_S4);
	static const uint8_t sig[] = {0x0f, 0x03, 0x77, 0xa0, 0x01, 0x06}; /* glibc's style */
	eh_fde(&s, cs, PCREL_S4, VADDR, 0x3100, 0x10, sig, sizeof(sig));
	ember__cfi_table *t = parse_eh(&s);
	CHECK_EQ_INT(t->stats.bad_fdes, 0);
	CHECK_EQ_INT(t->stats.signal_fdes, 1);
	CHECK_EQ_INT(t->stats.plt_rows, 2);
	CHECK_EQ_INT(t->nrows, 8);
	if (t->nrows == 8) {
		static const want_row want[] = {
			{0x3000, EMBER_CFI_SP, 16, 0},
			{0x3006, EMBER_CFI_SP, 24, 0},
			{0x3010, EMBER_CFI_PLT, 8, 11},
			{0x3020, EMBER_CFI_PLT, 8, 10},
			{0x3030, EMBER_CFI_UNKNOWN, 0, 0},
			{0x3040, EMBER_CFI_NONE, 0, 0},
			{0x3100, EMBER_CFI_SIGNAL, 0, 0},
			{0x3110, EMBER_CFI_NONE, 0, 0},
		};
		CHECK(rows_are(t, want, 8));
	}
	ember__cfi_table_free(t);
}

/* Merging of identical neighbours, alignment gaps, real gaps, order. */
static void test_merge_and_gaps(void)
{
	static const uint8_t leaf[] = {0x00};
	static const uint8_t frame[] = {0x41, 0x0e, 0x10, 0x44, 0x0e, 0x08};
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zR", PCREL_S4);
	/* FDEs out of order: a builder sorts them. */
	eh_fde(&s, c, PCREL_S4, VADDR, 0x5010, 0x10, leaf, sizeof(leaf));  /* after 6 B pad */
	eh_fde(&s, c, PCREL_S4, VADDR, 0x5000, 0x0a, frame, sizeof(frame));
	eh_fde(&s, c, PCREL_S4, VADDR, 0x5100, 0x10, leaf, sizeof(leaf));  /* after a real gap */
	ember__cfi_table *t = parse_eh(&s);
	/* 0x5000 sp+8, 0x5001 sp+16, 0x5005 sp+8 (merges with 0x5010's and
	 * absorbs the 6-byte pad), 0x5020 gap, 0x5100 sp+8, 0x5110 gap. */
	CHECK_EQ_INT(t->nrows, 6);
	if (t->nrows == 6) {
		static const want_row want[] = {
			{0x5000, EMBER_CFI_SP, 8, 0},
			{0x5001, EMBER_CFI_SP, 16, 0},
			{0x5005, EMBER_CFI_SP, 8, 0},
			{0x5020, EMBER_CFI_NONE, 0, 0},
			{0x5100, EMBER_CFI_SP, 8, 0},
			{0x5110, EMBER_CFI_NONE, 0, 0},
		};
		CHECK(rows_are(t, want, 6));
	}
	CHECK_EQ_INT(t->stats.raw_rows, 5);
	ember__cfi_table_free(t);
}

/*
 * Code without CFI but with a known rule (the aarch64 PLT stubs: cfi_elf.c
 * adds them with ember__cfi_add_fill): kept where no FDE is, dropped
 * whole where one overlaps (CFI always wins), never mixed into an FDE's
 * rows; malformed fills are ignored.
 */
static void test_fill(void)
{
	static const uint8_t leaf[] = {0x00};
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zR", PCREL_S4);
	eh_fde(&s, c, PCREL_S4, VADDR, 0x6000, 0x40, leaf, sizeof(leaf));
	ember__cfi_builder *b;
	CHECK_EQ_INT(ember__cfi_builder_new(&b), 0);
	const ember__cfi_row kept[] = {{0x6100, 0, 0, EMBER_CFI_SP}, {0x6108, 2, 0, EMBER_CFI_SP}};
	const ember__cfi_row over[] = {{0x6020, 0, 0, EMBER_CFI_SP}};
	const ember__cfi_row bad[] = {{0x6300, 0, 0, EMBER_CFI_SP}, {0x6300, 2, 0, EMBER_CFI_SP}};
	/* Fills first: the order of adding does not matter. */
	CHECK_EQ_INT(ember__cfi_add_fill(b, 0x6100, 0x6140, kept, 2), 0);
	CHECK_EQ_INT(ember__cfi_add_fill(b, 0x6020, 0x6060, over, 1), 0);
	CHECK_EQ_INT(ember__cfi_add_fill(b, 0x6300, 0x6340, bad, 2), 0);  /* unsorted */
	CHECK_EQ_INT(ember__cfi_add_fill(b, 0x6400, 0x6440, kept, 1), 0); /* row not at start */
	CHECK_EQ_INT(ember__cfi_add_fill(b, 0x6500, 0x6500, over, 0), 0); /* empty */
	const ember__cfi_row top[] = {{0xfffffff0u, 0, 0, EMBER_CFI_SP}};
	CHECK_EQ_INT(ember__cfi_add_fill(b, 0xfffffff0u, 0x100000010u, top, 1), 0); /* > 32 bits */
	CHECK_EQ_INT(ember__cfi_add_section(b, s.b, s.n, VADDR, EMBER_CFI_EH_FRAME, 1), 0);
	ember__cfi_table *t = finish(b);
	CHECK_EQ_INT(t->nrows, 5);
	if (t->nrows == 5) {
		static const want_row want[] = {
			{0x6000, EMBER_CFI_SP, 8, 0}, /* the FDE, whole */
			{0x6040, EMBER_CFI_NONE, 0, 0},
			{0x6100, EMBER_CFI_SP, 0, 0},
			{0x6108, EMBER_CFI_SP, 16, 0},
			{0x6140, EMBER_CFI_NONE, 0, 0},
		};
		CHECK(rows_are(t, want, 5));
	}
	CHECK_EQ_INT(t->stats.fill_rows, 2);
	CHECK_EQ_INT(t->stats.fill_dropped, 1);
	CHECK_EQ_INT(t->stats.overlaps, 0);
	CHECK_EQ_INT(t->stats.fdes, 1);
	ember__cfi_table_free(t);
}

/* Two functions 2 GiB apart: the index grows its buckets instead of
 * holding millions of entries, and still answers like a full search. */
static void test_sparse_index(void)
{
	static const uint8_t ins[] = {0x41, 0x0e, 0x10};
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zR", 0x03); /* absolute udata4 */
	eh_fde(&s, c, 0x03, VADDR, 0x1000, 0x20, ins, sizeof(ins));
	eh_fde(&s, c, 0x03, VADDR, 0x80001000u, 0x20, ins, sizeof(ins));
	ember__cfi_table *t = parse_eh(&s);
	CHECK_EQ_INT(t->nrows, 6);
	/* 2 GiB of pages would not be smaller than 6 rows: kept unpacked */
	CHECK(t->rows && t->packed.nrows == 0 && t->stats.unpacked_small);
	CHECK(t->nindex <= t->nrows && t->index_shift > EMBER_CFI_INDEX_SHIFT);
	static const uint32_t probe[] = {0x1000, 0x1001, 0x101f, 0x1020, 0x5000000, 0x80001000u,
					 0x80001005u, 0x80001020u, 0xfffffff0u};
	for (size_t i = 0; i < sizeof(probe) / sizeof(*probe); i++)
		CHECK(ember__cfi_rows_find_indexed(t->rows, t->nrows, t->index, t->nindex,
						   t->index_shift, probe[i]) ==
		      ember__cfi_rows_find(t->rows, t->nrows, probe[i]));
	ember__cfi_table_free(t);
}

/* Each FDE pointer encoding the 'R' augmentation may name. */
static void test_encodings(void)
{
	static const uint8_t encs[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x09, 0x0a, 0x0b, 0x0c,
				       0x10, 0x11, 0x12, 0x13, 0x14, 0x19, 0x1a, 0x1b, 0x1c};
	static const uint8_t ins[] = {0x42, 0x0e, 0x10};
	for (size_t i = 0; i < sizeof(encs); i++) {
		uint8_t enc = encs[i];
		/* A start every format can express: absolute, it fits 16 bits;
		 * pc-relative, it lies a little after the section (a positive
		 * delta, for the unsigned formats). */
		uint64_t begin = (enc & 0x70) == 0x10 ? VADDR + 0x700 : 0x700;
		buf s = {.n = 0};
		size_t c = eh_cie(&s, "zPLR", enc);
		eh_fde(&s, c, enc, VADDR, begin, 0x20, ins, sizeof(ins));
		ember__cfi_table *t = parse_eh(&s);
		if (t->nrows != 3 || row_of(t, 0).pc != begin || row_of(t, 1).pc != begin + 2 ||
		    row_of(t, 2).pc != begin + 0x20)
			fprintf(stderr, "  encoding %#x: %u rows, first at %#x\n", enc, t->nrows,
				t->nrows ? row_of(t, 0).pc : 0);
		CHECK_EQ_INT(t->nrows, 3);
		CHECK_EQ_INT(t->stats.bad_fdes, 0);
		ember__cfi_table_free(t);
	}
	/* Encodings we must refuse for FDE addresses: indirect, text- and
	 * function-relative, data-relative without a base, reserved formats. */
	static const uint8_t bad[] = {0x9b, 0x23, 0x43, 0x33, 0x05, 0x0f};
	for (size_t i = 0; i < sizeof(bad); i++) {
		buf s = {.n = 0};
		size_t c = eh_cie(&s, "zR", bad[i]);
		eh_fde(&s, c, 0x03, VADDR, 0x7000, 0x20, ins, sizeof(ins));
		ember__cfi_table *t = parse_eh(&s);
		if (t->nrows != 0)
			fprintf(stderr, "  encoding %#x accepted\n", bad[i]);
		CHECK_EQ_INT(t->nrows, 0);
		CHECK_EQ_INT(t->stats.bad_fdes, 1);
		ember__cfi_table_free(t);
	}
}

/* Malformed sections: the bad FDE goes, the good ones stay. */
static void test_malformed(void)
{
	static const uint8_t good[] = {0x41, 0x0e, 0x10};
	static const uint8_t unknown_op[] = {0x41, 0x1d, 0x00}; /* DW_CFA_MIPS_advance_loc8 */
	static const uint8_t pop_empty[] = {0x41, 0x0b};
	static const uint8_t deep[] = {0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a,
				       0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a};
	static const uint8_t cut_leb[] = {0x0e, 0x80}; /* uleb runs into the padding's end */
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zR", PCREL_S4);
	eh_fde(&s, c, PCREL_S4, VADDR, 0x1000, 0x10, good, sizeof(good));
	eh_fde(&s, c, PCREL_S4, VADDR, 0x1100, 0x10, unknown_op, sizeof(unknown_op));
	eh_fde(&s, c, PCREL_S4, VADDR, 0x1200, 0x10, pop_empty, sizeof(pop_empty));
	eh_fde(&s, c, PCREL_S4, VADDR, 0x1300, 0x10, deep, sizeof(deep));
	size_t f = eh_fde(&s, c, PCREL_S4, VADDR, 0x1400, 0x10, cut_leb, sizeof(cut_leb));
	memset(s.b + f + 4 + 4 + 4 + 4 + 1 + 2, 0x80, s.n - (f + 19)); /* no terminating byte */
	/* A CIE pointer pointing before the section. */
	size_t g = eh_fde(&s, c, PCREL_S4, VADDR, 0x1500, 0x10, good, sizeof(good));
	uint32_t wild = (uint32_t)(g + 4 + 100000);
	memcpy(s.b + g + 4, &wild, 4);
	/* A CIE pointer to an FDE rather than a CIE. */
	size_t h = eh_fde(&s, c, PCREL_S4, VADDR, 0x1600, 0x10, good, sizeof(good));
	uint32_t to_fde = (uint32_t)(h + 4 - f);
	memcpy(s.b + h + 4, &to_fde, 4);
	/* A range past 4 GiB. */
	eh_fde(&s, c, PCREL_S4, VADDR, 0x1700, 0xffffffffu, good, sizeof(good));
	eh_fde(&s, c, PCREL_S4, VADDR, 0x1800, 0x10, good, sizeof(good));
	ember__cfi_table *t = parse_eh(&s);
	CHECK_EQ_INT(t->stats.fdes, 2);
	CHECK_EQ_INT(t->stats.bad_fdes, 7);
	CHECK(t->nrows >= 2 && row_of(t, 0).pc == 0x1000);
	ember__cfi_table_free(t);

	/* Bad CIEs: version 2, an unknown augmentation, "eh". */
	const char *augs[] = {"zX", "eh"};
	for (int i = 0; i < 3; i++) {
		buf z = {.n = 0};
		size_t cc = eh_cie(&z, i < 2 ? augs[i] : "zR", PCREL_S4);
		if (i == 2)
			z.b[cc + 8] = 2; /* version */
		eh_fde(&z, cc, PCREL_S4, VADDR, 0x1000, 0x10, good, sizeof(good));
		ember__cfi_table *u = parse_eh(&z);
		CHECK_EQ_INT(u->nrows, 0);
		CHECK_EQ_INT(u->stats.bad_cies, 1);
		CHECK_EQ_INT(u->stats.bad_fdes, 1);
		ember__cfi_table_free(u);
	}

	/* A length running past the end, and a reserved length: the walk
	 * stops (the next entry cannot be found), what came before stays. */
	uint32_t lens[] = {0x7fffffff, 0xfffffff5};
	for (int i = 0; i < 2; i++) {
		buf z = {.n = 0};
		size_t cc = eh_cie(&z, "zR", PCREL_S4);
		eh_fde(&z, cc, PCREL_S4, VADDR, 0x1000, 0x10, good, sizeof(good));
		size_t ff = eh_fde(&z, cc, PCREL_S4, VADDR, 0x1100, 0x10, good, sizeof(good));
		memcpy(z.b + ff, &lens[i], 4);
		ember__cfi_table *u = parse_eh(&z);
		CHECK_EQ_INT(u->stats.fdes, 1);
		CHECK_EQ_INT(u->stats.bad_fdes, 1);
		ember__cfi_table_free(u);
	}
}

/* Every prefix of a valid section, and random corruption: no crash (the
 * sanitizer build checks reads), and never more FDEs than exist. */
static void test_truncation_and_noise(void)
{
	buf s = {.n = 0};
	size_t c = eh_cie(&s, "zPLR", PCREL_S4);
	eh_fde(&s, c, PCREL_S4, VADDR, 0x1000, 0x30, prologue, sizeof(prologue));
	size_t cs = eh_cie(&s, "zRS", PCREL_S4);
	static const uint8_t sig[] = {0x0f, 0x03, 0x77, 0xa0, 0x01, 0x06};
	eh_fde(&s, cs, PCREL_S4, VADDR, 0x3100, 0x10, sig, sizeof(sig));
	u32(&s, 0);
	for (size_t len = 0; len <= s.n; len++) {
		uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
		memcpy(copy, s.b, len);
		ember__cfi_builder *b;
		ember__cfi_builder_new(&b);
		ember__cfi_add_section(b, copy, len, VADDR, EMBER_CFI_EH_FRAME, 1);
		ember__cfi_add_section(b, copy, len, VADDR, EMBER_CFI_DEBUG_FRAME, 1);
		ember__cfi_table *t = NULL;
		CHECK_EQ_INT(ember__cfi_finish(b, &t), 0);
		CHECK(t->stats.fdes <= 2);
		ember__cfi_table_free(t);
		free(copy);
	}
	uint64_t x = 88172645463325252ull;
	for (int iter = 0; iter < 3000; iter++) {
		uint8_t *copy = malloc(s.n);
		memcpy(copy, s.b, s.n);
		for (int k = 0; k < 1 + iter % 4; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			copy[x % s.n] = (uint8_t)(x >> 32);
		}
		ember__cfi_builder *b;
		ember__cfi_builder_new(&b);
		ember__cfi_add_section(b, copy, s.n, VADDR, EMBER_CFI_EH_FRAME, 1);
		ember__cfi_table *t = NULL;
		ember__cfi_finish(b, &t);
		CHECK(t && t->stats.fdes <= 2);
		/* Rows stay sorted whatever the input. */
		for (uint32_t i = 1; t && i < t->nrows; i++)
			CHECK(row_of(t, i - 1).pc < row_of(t, i).pc);
		ember__cfi_table_free(t);
		free(copy);
	}
}

/* An .eh_frame_hdr over a section of three FDEs, in several encodings. */
static void test_eh_frame_hdr(void)
{
	static const uint8_t ins[] = {0x41, 0x0e, 0x10};
	const uint64_t eh_vaddr = 0x9000, hdr_vaddr = 0x8f00;
	buf eh = {.n = 0};
	size_t c = eh_cie(&eh, "zR", PCREL_S4);
	size_t f[3];
	f[0] = eh_fde(&eh, c, PCREL_S4, eh_vaddr, 0x1000, 0x10, ins, sizeof(ins));
	f[1] = eh_fde(&eh, c, PCREL_S4, eh_vaddr, 0x2000, 0x10, ins, sizeof(ins));
	f[2] = eh_fde(&eh, c, PCREL_S4, eh_vaddr, 0x3000, 0x10, ins, sizeof(ins));
	u32(&eh, 0);
	/* {eh_frame_ptr enc, fde_count enc, table enc} */
	static const uint8_t combos[][3] = {
		{0x1b, 0x03, 0x3b}, /* what ld writes: pcrel sdata4, udata4, datarel sdata4 */
		{0x04, 0x01, 0x04}, /* udata8, uleb128, absolute udata8 */
		{0x3b, 0x09, 0x1c}, /* datarel sdata4, sleb128, pcrel sdata8 */
		{0x0c, 0x0b, 0x3c}, /* sdata8, sdata4, datarel sdata8 */
		{0x1b, 0xff, 0xff}, /* no search table: linear walk */
	};
	for (size_t k = 0; k < sizeof(combos) / sizeof(*combos); k++) {
		buf h = {.n = 0};
		u8(&h, 1);
		u8(&h, combos[k][0]);
		u8(&h, combos[k][1]);
		u8(&h, combos[k][2]);
		ptr(&h, combos[k][0], eh_vaddr, hdr_vaddr, hdr_vaddr);
		if (combos[k][1] != 0xff) {
			ptr(&h, combos[k][1], 3, hdr_vaddr, hdr_vaddr);
			for (int i = 0; i < 3; i++) {
				ptr(&h, combos[k][2], 0x1000u * (uint64_t)(i + 1), hdr_vaddr, hdr_vaddr);
				ptr(&h, combos[k][2], eh_vaddr + f[i], hdr_vaddr, hdr_vaddr);
			}
		}
		uint64_t target = 0;
		CHECK_EQ_INT(ember__cfi_eh_frame_hdr_target(h.b, h.n, hdr_vaddr, &target), 0);
		CHECK_EQ_INT(target, eh_vaddr);
		ember__cfi_builder *b;
		ember__cfi_builder_new(&b);
		CHECK_EQ_INT(ember__cfi_add_eh_frame_hdr(b, h.b, h.n, hdr_vaddr, eh.b, eh.n, eh_vaddr, 2), 0);
		ember__cfi_table *t = finish(b);
		CHECK_EQ_INT(t->stats.fdes, 3);
		CHECK_EQ_INT(t->nrows, 9); /* 2 rows + 1 gap per FDE */
		ember__cfi_table_free(t);
	}
	/* A header pointing elsewhere, a bad version, an FDE entry outside. */
	buf h = {.n = 0};
	u8(&h, 1), u8(&h, 0x1b), u8(&h, 0x03), u8(&h, 0x3b);
	ptr(&h, 0x1b, eh_vaddr + 8, hdr_vaddr, 0);
	u32(&h, 0);
	ember__cfi_builder *b;
	ember__cfi_builder_new(&b);
	CHECK_EQ_INT(ember__cfi_add_eh_frame_hdr(b, h.b, h.n, hdr_vaddr, eh.b, eh.n, eh_vaddr, 2),
		     EMBER_ERR_FORMAT);
	h.b[0] = 2;
	CHECK_EQ_INT(ember__cfi_add_eh_frame_hdr(b, h.b, h.n, hdr_vaddr, eh.b, eh.n, eh_vaddr, 2),
		     EMBER_ERR_FORMAT);
	buf h2 = {.n = 0};
	u8(&h2, 1), u8(&h2, 0x04), u8(&h2, 0x03), u8(&h2, 0x04);
	u64(&h2, eh_vaddr);
	u32(&h2, 3);
	u64(&h2, 0x1000), u64(&h2, eh_vaddr + f[0]);
	u64(&h2, 0x2000), u64(&h2, eh_vaddr + 100000); /* outside */
	u64(&h2, 0x3000), u64(&h2, eh_vaddr + c);      /* the CIE, not an FDE */
	CHECK_EQ_INT(ember__cfi_add_eh_frame_hdr(b, h2.b, h2.n, hdr_vaddr, eh.b, eh.n, eh_vaddr, 2), 0);
	CHECK_EQ_INT(ember__cfi_builder_stats(b)->fdes, 1);
	CHECK_EQ_INT(ember__cfi_builder_stats(b)->bad_fdes, 2);
	/* fde_count larger than the table: stops at the end, counted. */
	uint32_t many = 1000000;
	memcpy(h2.b + 12, &many, 4);
	CHECK_EQ_INT(ember__cfi_add_eh_frame_hdr(b, h2.b, h2.n, hdr_vaddr, eh.b, eh.n, eh_vaddr, 2), 0);
	CHECK_EQ_INT(ember__cfi_builder_stats(b)->bad_fdes, 5);
	ember__cfi_builder_free(b);
}

/* .debug_frame: 32-bit v1, 64-bit v4; and priorities against .eh_frame. */
static void test_debug_frame(void)
{
	static const uint8_t ins[] = {0x41, 0x0e, 0x10};
	for (int is64 = 0; is64 < 2; is64++) {
		buf s = {.n = 0};
		size_t cie = s.n;
		if (is64) {
			u32(&s, 0xffffffffu);
			u64(&s, 0); /* patched */
			u64(&s, UINT64_MAX);
			u8(&s, 4);
			u8(&s, 0);    /* augmentation "" */
			u8(&s, 8);    /* address size */
			u8(&s, 0);    /* segment selector size */
		} else {
			u32(&s, 0);
			u32(&s, 0xffffffffu);
			u8(&s, 1);
			u8(&s, 0);
		}
		uleb(&s, 1);
		sleb(&s, -8);
		if (is64)
			uleb(&s, 16);
		else
			u8(&s, 16);
		put(&s, cie_init, sizeof(cie_init));
		while ((s.n - cie) % 8)
			u8(&s, 0);
		if (is64) {
			uint64_t l = s.n - cie - 12;
			memcpy(s.b + cie + 4, &l, 8);
		} else {
			uint32_t l = (uint32_t)(s.n - cie - 4);
			memcpy(s.b + cie, &l, 4);
		}
		for (int i = 0; i < 3; i++) {
			size_t at = s.n;
			if (is64) {
				u32(&s, 0xffffffffu);
				u64(&s, 0);
				u64(&s, cie);
			} else {
				u32(&s, 0);
				u32(&s, (uint32_t)cie);
			}
			u64(&s, i == 2 ? 0 : 0x4000u + 0x100u * (unsigned)i); /* 0: a discarded function */
			u64(&s, 0x20);
			put(&s, ins, sizeof(ins));
			while ((s.n - at) % 8)
				u8(&s, 0);
			if (is64) {
				uint64_t l = s.n - at - 12;
				memcpy(s.b + at + 4, &l, 8);
			} else {
				uint32_t l = (uint32_t)(s.n - at - 4);
				memcpy(s.b + at, &l, 4);
			}
		}
		ember__cfi_builder *b;
		ember__cfi_builder_new(&b);
		CHECK_EQ_INT(ember__cfi_add_section(b, s.b, s.n, 0, EMBER_CFI_DEBUG_FRAME, 1), 0);
		/* An .eh_frame FDE over the second function wins over .debug_frame's. */
		buf e = {.n = 0};
		size_t c = eh_cie(&e, "zR", PCREL_S4);
		static const uint8_t big[] = {0x41, 0x0e, 0x40};
		eh_fde(&e, c, PCREL_S4, VADDR, 0x4100, 0x20, big, sizeof(big));
		CHECK_EQ_INT(ember__cfi_add_section(b, e.b, e.n, VADDR, EMBER_CFI_EH_FRAME, 2), 0);
		ember__cfi_table *t = finish(b);
		CHECK_EQ_INT(t->stats.fdes, 3);
		CHECK_EQ_INT(t->stats.overlaps, 1);
		CHECK_EQ_INT(t->stats.bad_fdes, 0);
		CHECK_EQ_INT(t->nrows, 6);
		if (t->nrows == 6) {
			static const want_row want[] = {
				{0x4000, EMBER_CFI_SP, 8, 0},
				{0x4001, EMBER_CFI_SP, 16, 0},
				{0x4020, EMBER_CFI_NONE, 0, 0},
				{0x4100, EMBER_CFI_SP, 8, 0},
				{0x4101, EMBER_CFI_SP, 64, 0},
				{0x4120, EMBER_CFI_NONE, 0, 0},
			};
			CHECK(rows_are(t, want, 6));
		}
		ember__cfi_table_free(t);
	}
}

/* ---- real files ---- */

/* The .eh_frame of a file, walked linearly (to compare with the header). */
static ember__cfi_table *linear_table(const char *path)
{
	int fd = open(path, O_RDONLY);
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx;
	elf_getshdrstrndx(e, &shstrndx);
	Elf_Scn *scn = NULL;
	ember__cfi_builder *b;
	ember__cfi_builder_new(&b);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		if (!strcmp(elf_strptr(e, shstrndx, sh.sh_name), ".eh_frame")) {
			Elf_Data *d = elf_getdata(scn, NULL);
			ember__cfi_add_section(b, d->d_buf, d->d_size, sh.sh_addr, EMBER_CFI_EH_FRAME, 2);
		}
	}
	ember__cfi_table *t = NULL;
	ember__cfi_finish_rows(b, &t); /* the reference: rows + index, not packed */
	elf_end(e);
	close(fd);
	return t;
}

/* libc's path, load address and its own definition of `name` (dladdr on
 * &qsort would find a sanitizer's interceptor instead). */
static const char *libc_info(uintptr_t *base, const char *name, void **fn)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	struct link_map *lm = NULL;
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
		return NULL;
	*base = (uintptr_t)lm->l_addr;
	*fn = dlsym(h, name);
	return lm->l_name;
}

/* The row at a function's first byte: CFA = sp + 8, RA at CFA - 8. */
static void check_entry(const ember__cfi_table *t, uintptr_t base, void *fn, const char *name)
{
	ember__cfi_row row;
	const ember__cfi_row *r =
		ember__cfi_table_find(t, (uint32_t)((uintptr_t)fn - base), &row) ? &row : NULL;
	int ok = r && r->kind == EMBER_CFI_SP && r->cfa * EMBER_CFI_UNIT == 8 && r->fp == 0;
	if (!ok)
		fprintf(stderr, "  %s: no entry row CFA=sp+8\n", name);
	CHECK(ok);
}

static void test_real_libc(void)
{
	uintptr_t base = 0;
	void *fn;
	const char *path = libc_info(&base, "qsort", &fn);
	CHECK(path != NULL);
	if (!path)
		return;
	ember__cfi_table *t = NULL;
	ember__cfi_module_info info;
	CHECK_EQ_INT(ember__cfi_build_file(path, &t, &info), 0);
	if (!t)
		return;
	printf("  %s: %u rows, %zu bytes, %u FDEs, eh_frame %zu bytes%s\n", path, t->nrows, t->bytes,
	       t->stats.fdes, info.eh_frame_bytes, info.used_hdr ? " via .eh_frame_hdr" : "");
	CHECK(info.used_hdr);
	CHECK(t->nrows > 5000);
	CHECK_EQ_INT(t->stats.bad_fdes, 0);
	CHECK_EQ_INT(t->stats.bad_cies, 0);
	CHECK_EQ_INT(t->stats.overlaps, 0);
	CHECK(t->stats.signal_fdes >= 1); /* __restore_rt */
	CHECK(t->stats.plt_rows >= 1);
	static const char *const fns[] = {"qsort", "getenv", "strtol", "fopen"};
	for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++) {
		libc_info(&base, fns[i], &fn);
		CHECK(fn != NULL);
		if (fn)
			check_entry(t, base, fn, fns[i]);
	}
	int undef = 0, sig = 0;
	for (uint32_t i = 0; i < t->nrows; i++) {
		ember__cfi_row r = row_of(t, i);
		undef += !!(r.kind & EMBER_CFI_F_RA_UNDEF); /* clone, clone3 */
		sig += (r.kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SIGNAL;
		if (i)
			CHECK(row_of(t, i - 1).pc < r.pc);
	}
	CHECK(undef >= 1 && sig >= 1);
	/* Packed, 4-4.5 bytes a row with its index. */
	CHECK(t->packed.nrows == t->nrows && !t->rows && !t->index);
	CHECK(t->bytes < t->nrows * 4.5);
	/* The search table and a linear walk give the same rows: the walk's
	 * table unpacked, every row of the packed one decodes to its row. */
	ember__cfi_table *l = linear_table(path);
	CHECK(l && l->rows && l->nrows == t->nrows && l->stats.fdes == t->stats.fdes);
	int same = l && l->rows && l->nrows == t->nrows;
	for (uint32_t i = 0; same && i < t->nrows; i++) {
		ember__cfi_row b = row_of(t, i);
		same = !memcmp(&l->rows[i], &b, sizeof(b));
	}
	CHECK(same);
	/* Every byte from a page below the first row to a page above the
	 * last: the packed lookup returns what the rows' index finds. */
	uint64_t wrong = 0, n = 0;
	uint32_t first = same ? l->rows[0].pc : 0, last = same ? l->rows[l->nrows - 1].pc : 0;
	for (uint64_t pc = first > 0x10000 ? first - 0x10000 : 0; same && pc < last + 0x10000ull;
	     pc++, n++) {
		const ember__cfi_row *want = ember__cfi_rows_find_indexed(
			l->rows, l->nrows, l->index, l->nindex, l->index_shift, (uint32_t)pc);
		ember__cfi_row got;
		int found = ember__cfi_table_find(t, (uint32_t)pc, &got);
		wrong += found != (want != NULL) || (found && memcmp(&got, want, sizeof(got)));
	}
	printf("  packed %zu bytes (%.2f a row), rows + index %zu (%.2f); %llu addresses, %llu "
	       "lookups differ\n",
	       t->bytes, (double)t->bytes / t->nrows, l ? l->bytes : 0,
	       l ? (double)l->bytes / l->nrows : 0.0, (unsigned long long)n,
	       (unsigned long long)wrong);
	CHECK(n > 1000000);
	CHECK_EQ_INT(wrong, 0);
	ember__cfi_table_free(l);
	ember__cfi_table_free(t);
}

static void test_real_others(void)
{
	static const char *const paths[] = {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
					    "/usr/lib/x86_64-linux-gnu/libm.so.6",
					    "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		if (access(paths[i], R_OK) != 0) {
			printf("  %s: not present, skipped\n", paths[i]);
			continue;
		}
		ember__cfi_table *t = NULL;
		ember__cfi_module_info info;
		CHECK_EQ_INT(ember__cfi_build_file(paths[i], &t, &info), 0);
		if (!t)
			continue;
		printf("  %s: %u rows, %zu bytes, %u FDEs\n", paths[i], t->nrows, t->bytes, t->stats.fdes);
		CHECK(t->nrows > 100);
		CHECK_EQ_INT(t->stats.bad_fdes, 0);
		ember__cfi_table_free(t);
	}
	/* ld.so: its lazy-binding trampolines (_dl_runtime_resolve_*) compute
	 * their CFA from rbx, which every other glibc function saves where an
	 * aux code can say. */
	const char *ldso = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
	if (access(ldso, R_OK) == 0) {
		ember__cfi_table *t = NULL;
		ember__cfi_module_info info;
		CHECK_EQ_INT(ember__cfi_build_file(ldso, &t, &info), 0);
		unsigned aux = 0, unknown = 0, lost = 0;
		for (uint32_t i = 0; t && i < t->nrows; i++) {
			ember__cfi_row r = row_of(t, i);
			unsigned k = r.kind & EMBER_CFI_KIND_MASK;
			aux += k == EMBER_CFI_AUX;
			unknown += k == EMBER_CFI_UNKNOWN;
			lost += EMBER_CFI_AUX_CODE(r.kind) == EMBER_CFI_AUX_LOST;
		}
		printf("  %s: %u rows, %u with CFA = rbx + n, %u unknown, %u with rbx lost\n", ldso,
		       t ? t->nrows : 0, aux, unknown, lost);
		CHECK(aux >= 3);
		ember__cfi_table_free(t);
	}
	/* The vDSO, from memory. */
	uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	if (vdso) {
		ember__cfi_module_src src = {.image = (const void *)vdso, .image_size = 8192,
					     .map_start = vdso, .map_end = vdso + 8192};
		ember__cfi_table *t = NULL;
		ember__cfi_module_info info;
		CHECK_EQ_INT(ember__cfi_build_module(&src, &t, &info), 0);
		CHECK(t && t->nrows > 0 && t->stats.bad_fdes == 0);
		printf("  [vdso]: %u rows\n", t ? t->nrows : 0);
		ember__cfi_table_free(t);
	}
	/* Not ELF, and absent. */
	ember__cfi_table *t = NULL;
	ember__cfi_module_info info;
	CHECK_EQ_INT(ember__cfi_build_file("/proc/self/status", &t, &info), EMBER_ERR_FORMAT);
	CHECK_EQ_INT(ember__cfi_build_file("/nonexistent/lib.so", &t, &info), EMBER_ERR_IO);
	CHECK(strstr(ember_last_error(), "/nonexistent/lib.so") != NULL);
	CHECK(t == NULL);
}

int main(void)
{
	RUN(test_malformed);
	RUN(test_truncation_and_noise);
	if (EMBER_ARCH_LINK_REG) {
		/* The rest is x86-64's CFI (return address column 16 at CFA - 8,
		 * rbx, the PLT expression, x86-64 libraries);
		 * test_unwind_aarch64.c checks aarch64's. */
		printf("skipped: the x86-64 CFI tests (this is %s)\n", EMBER_ARCH_NAME);
		return CHECK_DONE();
	}
	RUN(test_basic_rows);
	RUN(test_state_and_rules);
	RUN(test_row_limits);
	RUN(test_aux_rules);
	RUN(test_plt_and_signal);
	RUN(test_merge_and_gaps);
	RUN(test_fill);
	RUN(test_sparse_index);
	RUN(test_encodings);
	RUN(test_eh_frame_hdr);
	RUN(test_debug_frame);
	RUN(test_real_libc);
	RUN(test_real_others);
	return CHECK_DONE();
}
