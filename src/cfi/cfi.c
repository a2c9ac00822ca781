/*
 * cfi.c - parses .eh_frame / .debug_frame and compiles their CFA programs
 * into sorted unwind rows (cfi.h).
 *
 * Formats (DWARF 5 section 6.4, and the LSB's description of .eh_frame and
 * .eh_frame_hdr): a section is a sequence of entries, each a length
 * (32-bit, or 0xffffffff then 64-bit), an id telling a CIE from an FDE,
 * and a body. A CIE holds the alignment factors, the return-address column,
 * the augmentation (for .eh_frame: 'z' data length, 'R' FDE pointer
 * encoding, 'P' personality, 'L' LSDA encoding, 'S' signal frame) and the
 * initial instructions every FDE starts from. An FDE holds its address
 * range and the instructions that change the rules as the address
 * advances. We run those instructions and keep, per row, only the CFA
 * rule, the return-address rule, the frame-pointer rule and the rule of
 * the aux register (arch.h: rbx, which ld.so's trampolines compute their
 * CFA from).
 *
 * Every read goes through a cursor bounded by the entry it belongs to; a
 * failed read marks the cursor bad and the FDE is dropped and counted.
 */
#include "cfi/cfi.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cfi/cfi_pack.h"
#include "cfi/cfi_read.h"
#include "emberprof.h"
#include "unwind/arch.h"
#include "util/error.h"
#include "util/sort.h"

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

#define STATE_STACK 16
#define GAP_ABSORB 16 /* bytes; see ember__cfi_finish */
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

int ember__cfi_builder_new(ember__cfi_builder **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : ember__error_oom("CFI builder");
}

void ember__cfi_builder_free(ember__cfi_builder *b)
{
	if (!b)
		return;
	free(b->rows);
	free(b->runs);
	free(b);
}

const ember__cfi_stats *ember__cfi_builder_stats(const ember__cfi_builder *b)
{
	return &b->stats;
}

void ember__cfi_table_free(ember__cfi_table *t)
{
	if (!t)
		return;
	if (t->map) {
		munmap(t->map, t->map_len);
		free(t);
		return;
	}
	free(t->rows);
	free(t->index);
	free(t->block);
	free(t);
}

/* The lookup index over finished rows (see ember__unwind_module). */
static int build_index(ember__cfi_table *t)
{
	if (t->nrows == 0)
		return 0;
	uint32_t first = t->rows[0].pc, last = t->rows[t->nrows - 1].pc;
	/* No more buckets than rows: rows spread thin over a large span
	 * (garbage CFI) must not buy a large index. */
	uint32_t shift = EMBER_CFI_INDEX_SHIFT;
	while (shift < 31 && ((last - first) >> shift) + 1 > t->nrows)
		shift++;
	uint32_t n = ((last - first) >> shift) + 1;
	t->index = malloc((size_t)n * sizeof(*t->index));
	if (!t->index)
		return EMBER_ERR_NOMEM;
	t->index_shift = shift;
	uint32_t r = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t start = first + (i << shift);
		while (r + 1 < t->nrows && t->rows[r + 1].pc <= start)
			r++;
		t->index[i] = r;
	}
	t->nindex = n;
	return 0;
}

static int fits(int64_t v, int64_t lo, int64_t hi)
{
	return v >= lo && v <= hi;
}

/* off / EMBER_CFI_UNIT into *out if it divides and fits [lo, hi]. */
static int units(int64_t off, int64_t lo, int64_t hi, int64_t *out)
{
	if (off % EMBER_CFI_UNIT != 0 || !fits(off / EMBER_CFI_UNIT, lo, hi))
		return 0;
	*out = off / EMBER_CFI_UNIT;
	return 1;
}

/*
 * Link-register architectures (arch.h: EMBER_ARCH_LINK_REG): where a
 * row's return address is, as an EMBER_CFI_LR_* code (unwind.h), from the
 * rule of the return-address column. Still in the link register (the
 * CIE's default: the register keeps its value); saved as the upper half
 * of the frame record whose lower half is the caller's fp (`stp x29, x30,
 * [sp, #-n]!`, what GCC and Clang emit); or saved alone while fp is
 * unchanged (-fomit-frame-pointer code: the slot goes into row->fp).
 * or as the record, or the return address alone, at the CFA's base (sp
 * or x29: a frame too large for the fp field). Anything else leaves the frame to the frame-pointer rule
 * (*kind becomes UNKNOWN). row->fp already holds the fp slot, if any.
 */
static unsigned lr_code(const cfstate *st, unsigned *kind, unsigned *flags, ember__cfi_row *row)
{
	int64_t u;
	if (st->ra.how == RULE_UNDEF)
		return EMBER_CFI_LR_REG; /* the outermost frame: never read */
	if (st->ra.how == RULE_SAME || st->ra.how == RULE_NONE)
		return EMBER_CFI_LR_REG;
	if (st->ra.how == RULE_OFFSET &&
	    (*kind == EMBER_CFI_SP || *kind == EMBER_CFI_FP || *kind == EMBER_CFI_AUX)) {
		if (st->fp.how == RULE_OFFSET && row->fp != 0 && st->ra.off == st->fp.off + 8)
			return EMBER_CFI_LR_RECORD;
		/* A frame too large for the fp field keeps its record at the
		 * bottom (GCC: `sub sp, sp, #n; stp x29, x30, [sp]`), where the
		 * CFA's base register points. */
		if (st->fp.how == RULE_OFFSET && st->fp.off == -st->cfa_off &&
		    st->ra.off == st->fp.off + 8) {
			row->fp = 0;
			*flags &= ~(unsigned)EMBER_CFI_F_FP_LOST;
			return EMBER_CFI_LR_RECORD_BASE;
		}
		if (st->fp.how != RULE_OFFSET && units(st->ra.off, INT8_MIN, INT8_MAX, &u) && u != 0) {
			row->fp = (int8_t)u;
			return EMBER_CFI_LR_SLOT;
		}
		/* ... or x30 alone at the CFA's base (`sub sp, sp, #n; str x30, [sp]`). */
		if (st->ra.off == -st->cfa_off && st->ra.off != 0)
			return EMBER_CFI_LR_SLOT_BASE;
		/* ... or above it, fp unchanged (`sub sp, sp, #n; ... str x30,
		 * [sp, #k]`: GCC saves x30 above the callee-saved registers of a
		 * frame over 1 KiB, out of the fp field's reach from the CFA). */
		if (st->fp.how != RULE_OFFSET && units(st->ra.off + st->cfa_off, 1, INT8_MAX, &u)) {
			row->fp = (int8_t)u;
			return EMBER_CFI_LR_SLOT_BASE_UP;
		}
	}
	*kind = EMBER_CFI_UNKNOWN;
	return EMBER_CFI_AUX_LOST;
}

/* The row for `loc` under state st (see ember__cfi_row). */
static ember__cfi_row make_row(uint64_t loc, const cfstate *st, int signal)
{
	ember__cfi_row row;
	memset(&row, 0, sizeof(row));
	row.pc = (uint32_t)loc;
	if (signal) {
		row.kind = EMBER_CFI_SIGNAL;
		return row;
	}
	unsigned kind = EMBER_CFI_UNKNOWN, flags = 0;
	int64_t u;
	if (st->cfa_how == CFA_REG && units(st->cfa_off, INT16_MIN, INT16_MAX, &u) &&
	    (st->cfa_reg == EMBER_DWARF_REG_SP || st->cfa_reg == EMBER_DWARF_REG_FP ||
	     (!EMBER_ARCH_LINK_REG && st->cfa_reg == EMBER_DWARF_REG_AUX))) {
		kind = st->cfa_reg == EMBER_DWARF_REG_SP   ? EMBER_CFI_SP
		       : st->cfa_reg == EMBER_DWARF_REG_FP ? EMBER_CFI_FP
							   : EMBER_CFI_AUX;
		row.cfa = (int16_t)u;
	} else if (st->cfa_how == CFA_PLT && units(st->cfa_off, INT16_MIN, INT16_MAX, &u) &&
		   st->fp.how == RULE_SAME) {
		kind = EMBER_CFI_PLT;
		row.cfa = (int16_t)u;
		row.fp = (int8_t)st->plt_thr;
	}
	if (st->ra.how == RULE_UNDEF)
		flags |= EMBER_CFI_F_RA_UNDEF;
	else if (!EMBER_ARCH_LINK_REG && (st->ra.how != RULE_OFFSET || st->ra.off != EMBER_CFI_RA_OFF))
		kind = EMBER_CFI_UNKNOWN;
	if (kind == EMBER_CFI_SP || kind == EMBER_CFI_FP || kind == EMBER_CFI_AUX) {
		if (st->fp.how == RULE_OFFSET && st->fp.off != 0 && units(st->fp.off, INT8_MIN, INT8_MAX, &u))
			row.fp = (int8_t)u;
		else if (st->fp.how != RULE_SAME)
			flags |= EMBER_CFI_F_FP_LOST;
	}
	unsigned aux = EMBER_CFI_AUX_LOST;
	if (EMBER_ARCH_LINK_REG) {
		/* The aux bits say where the return address is. */
		aux = lr_code(st, &kind, &flags, &row);
	} else if (st->aux.how == RULE_SAME) {
		/* Where the caller's aux register is. Under the frame-pointer
		 * rule the CFA is a guess, so a saved aux counts as lost. */
		aux = 0;
	} else if (kind != EMBER_CFI_UNKNOWN && st->aux.how == RULE_OFFSET &&
		   units(st->aux.off, -(int64_t)EMBER_CFI_AUX_LOST, -2, &u)) {
		aux = (unsigned)(-u - 1);
	}
	if (kind == EMBER_CFI_UNKNOWN) {
		row.cfa = 0;
		row.fp = 0;
		flags &= EMBER_CFI_F_RA_UNDEF;
	}
	flags |= aux << EMBER_CFI_AUX_SHIFT;
	row.kind = (uint8_t)(kind | flags);
	return row;
}

static int push_row(ember__cfi_builder *b, const ember__cfi_row *row)
{
	if (b->nrows == b->caprows) {
		size_t ncap = b->caprows ? b->caprows * 2 : 1024;
		ember__cfi_row *n = realloc(b->rows, ncap * sizeof(*n));
		if (!n)
			return EMBER_ERR_NOMEM;
		b->rows = n;
		b->caprows = ncap;
	}
	b->rows[b->nrows++] = *row;
	return 0;
}

/*
 * Recognises the x86-64 PLT stub expression
 *   DW_OP_breg7 <base>; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and;
 *   DW_OP_lit<thr>; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. rsp + base + ((rip & 15) >= thr) * 8.
 */
static int plt_expression(const uint8_t *p, size_t n, int64_t *base, uint8_t *thr)
{
#if EMBER_ARCH_HAS_PLT_EXPR
	rd r = {p, 0, n, 0};
	if (rd_u8(&r) != 0x70 + EMBER_DWARF_REG_SP)
		return 0;
	int64_t b = rd_sleb(&r);
	static const uint8_t tail[] = {0x70 + EMBER_DWARF_REG_RA, 0x00, 0x3f, 0x1a, 0xff,
				       0x2a, 0x33, 0x24, 0x22};
	if (r.bad || n - r.pos != sizeof(tail))
		return 0;
	for (size_t i = 0; i < sizeof(tail); i++) {
		uint8_t c = p[r.pos + i];
		if (tail[i] == 0xff) {
			if (c < 0x30 || c > 0x3f)
				return 0;
			*thr = (uint8_t)(c - 0x30);
		} else if (c != tail[i]) {
			return 0;
		}
	}
	*base = b;
	return 1;
#else
	(void)p;
	(void)n;
	(void)base;
	(void)thr;
	return 0;
#endif
}

static void set_rule(cfstate *st, const cie *c, uint64_t reg, uint8_t how, int64_t off)
{
	rule *r = reg == EMBER_DWARF_REG_FP    ? &st->fp
		  : reg == c->ra_reg           ? &st->ra
		  : reg == EMBER_DWARF_REG_AUX ? &st->aux
					       : NULL;
	if (r) {
		r->how = how;
		r->off = off;
	}
}

/* DW_CFA_restore: reg's rule as the CIE's initial instructions left it. */
static void restore_rule(cfstate *st, const cfstate *init, const cie *c, uint64_t reg)
{
	if (reg == EMBER_DWARF_REG_FP)
		st->fp = init->fp;
	else if (reg == c->ra_reg)
		st->ra = init->ra;
	else if (reg == EMBER_DWARF_REG_AUX)
		st->aux = init->aux;
}

/* Factored offset: v * daf, wrapping (garbage gives a value no row accepts). */
static int64_t factored(uint64_t v, int64_t daf)
{
	return (int64_t)(v * (uint64_t)daf);
}

enum { PROG_OK = 0, PROG_BAD = -1, PROG_NOMEM = -2 };

/*
 * Runs a CFA program over r (bounded by the entry). For a CIE (`init` is
 * NULL) location-changing and restore instructions are invalid and no row
 * is emitted. For an FDE, rows for [*loc, loc_end) are pushed to b.
 */
static int run_program(ember__cfi_builder *b, rd *r, const cie *c, const ptr_ctx *pc_ctx,
		       cfstate *st, const cfstate *init, uint64_t loc, uint64_t loc_end)
{
	cfstate stack[STATE_STACK];
	unsigned depth = 0;
	int emit = init != NULL;
	while (r->pos < r->end && !r->bad) {
		uint8_t op = rd_u8(r);
		uint64_t reg, adv = 0, newloc = 0;
		int moves = 0;
		switch (op & 0xc0) {
		case 0x40: /* DW_CFA_advance_loc */
			adv = (uint64_t)(op & 0x3f) * c->caf;
			moves = 1;
			break;
		case 0x80: /* DW_CFA_offset */
			set_rule(st, c, op & 0x3f, RULE_OFFSET, factored(rd_uleb(r), c->daf));
			break;
		case 0xc0: /* DW_CFA_restore */
			if (!init)
				return PROG_BAD;
			reg = op & 0x3f;
			restore_rule(st, init, c, reg);
			break;
		default:
			switch (op) {
			case 0x00: /* nop */
				break;
			case 0x01: /* set_loc */
				if (c->kind == EMBER_CFI_DEBUG_FRAME)
					newloc = rd_uint(r, c->addr_size);
				else
					newloc = rd_encoded(r, c->fde_enc, pc_ctx, 0);
				if (newloc < loc)
					return PROG_BAD;
				adv = newloc - loc;
				moves = 1;
				break;
			case 0x02: adv = rd_uint(r, 1) * c->caf; moves = 1; break;
			case 0x03: adv = rd_uint(r, 2) * c->caf; moves = 1; break;
			case 0x04: adv = rd_uint(r, 4) * c->caf; moves = 1; break;
			case 0x05: /* offset_extended */
				reg = rd_uleb(r);
				set_rule(st, c, reg, RULE_OFFSET, factored(rd_uleb(r), c->daf));
				break;
			case 0x06: /* restore_extended */
				reg = rd_uleb(r);
				if (!init)
					return PROG_BAD;
				restore_rule(st, init, c, reg);
				break;
			case 0x07: set_rule(st, c, rd_uleb(r), RULE_UNDEF, 0); break;
			case 0x08: set_rule(st, c, rd_uleb(r), RULE_SAME, 0); break;
			case 0x09: /* register */
				reg = rd_uleb(r);
				rd_uleb(r);
				set_rule(st, c, reg, RULE_OTHER, 0);
				break;
			case 0x0a: /* remember_state */
				if (depth == STATE_STACK)
					return PROG_BAD;
				stack[depth++] = *st;
				break;
			case 0x0b: /* restore_state */
				if (depth == 0)
					return PROG_BAD;
				*st = stack[--depth];
				break;
			case 0x0c: /* def_cfa */
				st->cfa_reg = rd_uleb(r);
				st->cfa_off = (int64_t)rd_uleb(r);
				st->cfa_how = CFA_REG;
				break;
			case 0x0d: /* def_cfa_register */
				st->cfa_reg = rd_uleb(r);
				if (st->cfa_how != CFA_REG)
					st->cfa_how = CFA_OTHER;
				break;
			case 0x0e: /* def_cfa_offset */
				st->cfa_off = (int64_t)rd_uleb(r);
				if (st->cfa_how != CFA_REG)
					st->cfa_how = CFA_OTHER;
				break;
			case 0x0f: { /* def_cfa_expression */
				uint64_t n = rd_uleb(r);
				size_t at = r->pos;
				rd_skip(r, n);
				if (r->bad)
					return PROG_BAD;
				int64_t base = 0;
				uint8_t thr = 0;
				if (plt_expression(r->base + at, (size_t)n, &base, &thr)) {
					st->cfa_how = CFA_PLT;
					st->cfa_off = base;
					st->plt_thr = thr;
				} else {
					st->cfa_how = CFA_OTHER;
				}
				break;
			}
			case 0x10: /* expression */
			case 0x16: /* val_expression */
				reg = rd_uleb(r);
				rd_skip(r, rd_uleb(r));
				set_rule(st, c, reg, RULE_OTHER, 0);
				break;
			case 0x11: /* offset_extended_sf */
				reg = rd_uleb(r);
				set_rule(st, c, reg, RULE_OFFSET, factored((uint64_t)rd_sleb(r), c->daf));
				break;
			case 0x12: /* def_cfa_sf */
				st->cfa_reg = rd_uleb(r);
				st->cfa_off = factored((uint64_t)rd_sleb(r), c->daf);
				st->cfa_how = CFA_REG;
				break;
			case 0x13: /* def_cfa_offset_sf */
				st->cfa_off = factored((uint64_t)rd_sleb(r), c->daf);
				if (st->cfa_how != CFA_REG)
					st->cfa_how = CFA_OTHER;
				break;
			case 0x14: /* val_offset */
				reg = rd_uleb(r);
				rd_uleb(r);
				set_rule(st, c, reg, RULE_OTHER, 0);
				break;
			case 0x15: /* val_offset_sf */
				reg = rd_uleb(r);
				rd_sleb(r);
				set_rule(st, c, reg, RULE_OTHER, 0);
				break;
			case 0x2d: /* DW_CFA_AARCH64_negate_ra_state (GNU_window_save elsewhere) */
				if (!EMBER_ARCH_PAC)
					return PROG_BAD;
				/* From here the saved return address carries a
				 * PAC signature; the unwinder strips every return
				 * address (EMBER_ARCH_PC_MASK), so the state only
				 * has to be followed, and is counted. */
				st->ra_signed ^= 1;
				b->stats.ra_sign_ops++;
				break;
			case 0x2e: /* GNU_args_size */
				rd_uleb(r);
				break;
			case 0x2f: /* GNU_negative_offset_extended */
				reg = rd_uleb(r);
				set_rule(st, c, reg, RULE_OFFSET, -factored(rd_uleb(r), c->daf));
				break;
			default:
				return PROG_BAD; /* unknown or vendor opcode we do not know */
			}
		}
		if (r->bad)
			return PROG_BAD;
		if (moves) {
			if (!emit)
				return PROG_BAD; /* a CIE cannot move the location */
			if (adv == 0)
				continue;
			if (loc < loc_end) {
				ember__cfi_row row = make_row(loc, st, c->signal);
				if (push_row(b, &row))
					return PROG_NOMEM;
			}
			if (adv >= loc_end - loc || loc >= loc_end) {
				loc = loc_end; /* the rest only describes addresses past the FDE */
				break;
			}
			loc += adv;
		}
	}
	if (r->bad || depth > STATE_STACK)
		return PROG_BAD;
	if (emit && loc < loc_end) {
		ember__cfi_row row = make_row(loc, st, c->signal);
		if (push_row(b, &row))
			return PROG_NOMEM;
	}
	return PROG_OK;
}

/* ---- entries ---- */

typedef struct entry {
	size_t start;   /* offset of the length field */
	size_t id_pos;  /* offset of the CIE id / CIE pointer */
	size_t body;    /* offset after the id */
	size_t next;    /* offset of the next entry */
	uint64_t id;
	int is64;
	int terminator;
} entry;

/* Reads an entry header at pos. 0, or -1 if it does not fit the section. */
static int read_entry(const uint8_t *d, size_t len, size_t pos, int kind, entry *e)
{
	rd r = {d, pos, len, 0};
	memset(e, 0, sizeof(*e));
	e->start = pos;
	uint64_t l = rd_uint(&r, 4);
	if (r.bad)
		return -1;
	if (l == 0) {
		e->terminator = 1;
		e->next = r.pos;
		return 0;
	}
	if (l == 0xffffffffu) {
		l = rd_uint(&r, 8);
		e->is64 = 1;
	} else if (l >= 0xfffffff0u) {
		return -1;
	}
	if (r.bad || l > len - r.pos)
		return -1;
	e->next = r.pos + (size_t)l;
	e->id_pos = r.pos;
	r.end = e->next;
	e->id = rd_uint(&r, kind == EMBER_CFI_DEBUG_FRAME && e->is64 ? 8 : 4);
	if (r.bad)
		return -1;
	e->body = r.pos;
	return 0;
}

static int is_cie(const entry *e, int kind)
{
	if (kind == EMBER_CFI_EH_FRAME)
		return e->id == 0;
	return e->is64 ? e->id == UINT64_MAX : e->id == 0xffffffffu;
}

/* Parses the CIE at section offset off into *c. 0 or -1. */
static int parse_cie(ember__cfi_builder *b, const uint8_t *d, size_t len, size_t off, int kind,
		     uint64_t vaddr, cie *c)
{
	entry e;
	if (read_entry(d, len, off, kind, &e) || e.terminator || !is_cie(&e, kind))
		return -1;
	memset(c, 0, sizeof(*c));
	c->off = off;
	c->sec = d;
	c->kind = kind;
	c->addr_size = EMBER_ARCH_ADDR_SIZE;
	rd r = {d, e.body, e.next, 0};
	uint8_t version = rd_u8(&r);
	if (kind == EMBER_CFI_EH_FRAME ? (version != 1 && version != 3)
				       : (version != 1 && version != 3 && version != 4))
		return -1;
	size_t aug = r.pos;
	while (rd_need(&r, 1) && d[r.pos])
		r.pos++;
	rd_u8(&r); /* the NUL */
	if (r.bad)
		return -1;
	const char *augs = (const char *)d + aug;
	size_t auglen = r.pos - aug - 1;
	if (version == 4) {
		c->addr_size = rd_u8(&r);
		if (rd_u8(&r) != 0 || (c->addr_size != 4 && c->addr_size != 8))
			return -1; /* segment selectors: not on our platforms */
	}
	c->caf = rd_uleb(&r);
	c->daf = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_u8(&r) : rd_uleb(&r);
	c->fde_enc = PE_ABSPTR; /* unless 'R' says otherwise */
	if (r.bad || c->caf == 0)
		return -1;
	if (auglen > 0 && augs[0] == 'z') {
		c->has_z = 1;
		uint64_t n = rd_uleb(&r);
		if (r.bad || n > r.end - r.pos)
			return -1;
		rd a = {d, r.pos, r.pos + (size_t)n, 0};
		ptr_ctx pctx = {vaddr, 0, 0};
		for (size_t i = 1; i < auglen; i++) {
			switch (augs[i]) {
			case 'R': c->fde_enc = rd_u8(&a); break;
			case 'L': rd_u8(&a); break;
			case 'P': {
				uint8_t penc = rd_u8(&a);
				rd_encoded(&a, penc, &pctx, 1);
				break;
			}
			case 'S': c->signal = 1; break;
			case 'B': /* aarch64 pointer authentication key B */
			case 'G': /* aarch64 memory tagging */
				break;
			default:
				return -1;
			}
			if (a.bad)
				return -1;
		}
		r.pos += (size_t)n;
	} else if (auglen > 0) {
		return -1; /* "eh" and other pre-'z' augmentations */
	}
	/* The initial instructions. */
	memset(&c->init, 0, sizeof(c->init));
	c->init.fp.how = RULE_SAME;
	c->init.aux.how = RULE_SAME; /* callee-saved: the ABI's default */
	/* Without a link register the CIE always places the return address;
	 * with one, an unmentioned return-address column keeps its value: it
	 * is the link register until the function saves it. */
	c->init.ra.how = EMBER_ARCH_LINK_REG ? RULE_SAME : RULE_NONE;
	rd ins = {d, r.pos, e.next, 0};
	ptr_ctx none = {vaddr, 0, 0};
	if (run_program(b, &ins, c, &none, &c->init, NULL, 0, 0) != PROG_OK)
		return -1;
	return 0;
}

/* The CIE at offset off, from the cache or parsed now; NULL if bad. */
static const cie *get_cie(ember__cfi_builder *b, const uint8_t *d, size_t len, size_t off,
			  int kind, uint64_t vaddr)
{
	for (unsigned i = 0; i < b->ncache; i++)
		if (b->cache[i].sec == d && b->cache[i].off == off && b->cache[i].kind == kind)
			return &b->cache[i];
	cie tmp;
	if (parse_cie(b, d, len, off, kind, vaddr, &tmp) != 0) {
		b->stats.bad_cies++;
		return NULL;
	}
	b->stats.cies++;
	unsigned slot = b->ncache < CIE_CACHE ? b->ncache++ : (b->next_slot++ % CIE_CACHE);
	b->cache[slot] = tmp;
	return &b->cache[slot];
}

static int push_run(ember__cfi_builder *b, const run *rn)
{
	if (b->nruns == b->capruns) {
		size_t ncap = b->capruns ? b->capruns * 2 : 256;
		run *n = realloc(b->runs, ncap * sizeof(*n));
		if (!n)
			return EMBER_ERR_NOMEM;
		b->runs = n;
		b->capruns = ncap;
	}
	b->runs[b->nruns] = *rn;
	b->runs[b->nruns].seq = (uint32_t)b->nruns;
	b->nruns++;
	return 0;
}

/* Turns the FDE whose entry is e into rows. 0 or EMBER_ERR_NOMEM. */
static int add_fde(ember__cfi_builder *b, const uint8_t *d, size_t len, uint64_t vaddr, int kind,
		   int priority, const entry *e)
{
	size_t cie_off;
	if (kind == EMBER_CFI_EH_FRAME) {
		if (e->id > e->id_pos)
			goto bad;
		cie_off = e->id_pos - (size_t)e->id;
	} else {
		if (e->id >= len)
			goto bad;
		cie_off = (size_t)e->id;
	}
	/* (the same section buffer keys the cache, so the FDE reuses its CIE) */
	const cie *c = get_cie(b, d, len, cie_off, kind, vaddr);
	if (!c)
		goto bad;
	rd r = {d, e->body, e->next, 0};
	ptr_ctx pctx = {vaddr, 0, 0};
	uint64_t begin, range;
	if (kind == EMBER_CFI_DEBUG_FRAME) {
		begin = rd_uint(&r, c->addr_size);
		range = rd_uint(&r, c->addr_size);
	} else {
		begin = rd_encoded(&r, c->fde_enc, &pctx, 0);
		range = rd_encoded_value(&r, c->fde_enc);
	}
	if (c->has_z)
		rd_skip(&r, rd_uleb(&r));
	if (r.bad)
		goto bad;
	if (begin == 0 || range == 0 || (c->addr_size == 4 && begin == 0xffffffffu) ||
	    begin == UINT64_MAX)
		return 0; /* discarded by the linker (tombstone), or empty: nothing to add */
	if (begin > UINT32_MAX || range > (uint64_t)UINT32_MAX + 1 - begin)
		goto bad; /* rows hold 32-bit offsets */
	run rn = {.start = begin, .end = begin + range, .first = b->nrows, .priority = priority};
	cfstate st = c->init;
	int rc = run_program(b, &r, c, &pctx, &st, &c->init, begin, begin + range);
	if (rc == PROG_NOMEM)
		return EMBER_ERR_NOMEM;
	if (rc != PROG_OK) {
		b->nrows = rn.first;
		goto bad;
	}
	rn.n = b->nrows - rn.first;
	for (size_t i = rn.first; i < b->nrows; i++) {
		unsigned k = b->rows[i].kind & EMBER_CFI_KIND_MASK;
		b->stats.plt_rows += k == EMBER_CFI_PLT;
		b->stats.unknown_rows += k == EMBER_CFI_UNKNOWN;
	}
	b->stats.raw_rows += (uint32_t)rn.n;
	b->stats.fdes++;
	b->stats.signal_fdes += c->signal;
	if (push_run(b, &rn)) {
		b->nrows = rn.first;
		return EMBER_ERR_NOMEM;
	}
	return 0;
bad:
	b->stats.bad_fdes++;
	return 0;
}

int ember__cfi_add_section(ember__cfi_builder *b, const uint8_t *data, size_t len, uint64_t vaddr,
			   int kind, int priority)
{
	if (kind != EMBER_CFI_EH_FRAME && kind != EMBER_CFI_DEBUG_FRAME)
		return ember__error(EMBER_ERR_INVALID, "unknown CFI section kind %d", kind);
	b->ncache = 0; /* CIEs are cached per section buffer */
	size_t pos = 0;
	while (pos < len) {
		entry e;
		if (read_entry(data, len, pos, kind, &e) != 0) {
			b->stats.bad_fdes++; /* cannot find the next entry: the rest is lost */
			break;
		}
		if (e.terminator) {
			if (kind == EMBER_CFI_EH_FRAME)
				break;
			b->stats.bad_fdes++;
			break;
		}
		if (!is_cie(&e, kind)) {
			int rc = add_fde(b, data, len, vaddr, kind, priority, &e);
			if (rc)
				return ember__error_oom("CFI rows");
		}
		pos = e.next;
	}
	return 0;
}

int ember__cfi_add_fill(ember__cfi_builder *b, uint64_t start, uint64_t end,
			const ember__cfi_row *rows, size_t n)
{
	if (n == 0 || start == 0 || start >= end || end > (uint64_t)UINT32_MAX + 1 ||
	    rows[0].pc != start)
		return 0;
	for (size_t i = 1; i < n; i++)
		if (rows[i].pc <= rows[i - 1].pc || rows[i].pc >= end)
			return 0;
	run rn = {.start = start, .end = end, .first = b->nrows, .priority = INT_MIN, .fill = 1};
	for (size_t i = 0; i < n; i++)
		if (push_row(b, &rows[i])) {
			b->nrows = rn.first;
			return ember__error_oom("CFI rows");
		}
	rn.n = n;
	b->stats.raw_rows += (uint32_t)n;
	if (push_run(b, &rn)) {
		b->nrows = rn.first;
		return ember__error_oom("CFI rows");
	}
	return 0;
}

/* The fixed fields of an .eh_frame_hdr. */
typedef struct hdr_fields {
	uint64_t eh_vaddr;
	uint64_t fde_count;
	uint8_t table_enc;
	int has_table;
	size_t table_pos;
} hdr_fields;

static int parse_hdr(const uint8_t *hdr, size_t hdr_len, uint64_t hdr_vaddr, hdr_fields *h)
{
	rd r = {hdr, 0, hdr_len, 0};
	ptr_ctx c = {hdr_vaddr, hdr_vaddr, 1};
	uint8_t version = rd_u8(&r);
	uint8_t ptr_enc = rd_u8(&r);
	uint8_t count_enc = rd_u8(&r);
	h->table_enc = rd_u8(&r);
	if (r.bad || version != 1)
		return ember__error(EMBER_ERR_FORMAT, ".eh_frame_hdr: version %u, expected 1", version);
	h->eh_vaddr = rd_encoded(&r, ptr_enc, &c, 0);
	if (r.bad)
		return ember__error(EMBER_ERR_FORMAT, ".eh_frame_hdr: unsupported eh_frame_ptr encoding 0x%02x",
				    ptr_enc);
	h->has_table = count_enc != PE_OMIT && h->table_enc != PE_OMIT;
	if (h->has_table) {
		h->fde_count = rd_encoded(&r, count_enc, &c, 0);
		if (r.bad)
			return ember__error(EMBER_ERR_FORMAT, ".eh_frame_hdr: unsupported count encoding 0x%02x",
					    count_enc);
	}
	h->table_pos = r.pos;
	return 0;
}

int ember__cfi_eh_frame_hdr_target(const uint8_t *hdr, size_t hdr_len, uint64_t hdr_vaddr,
				   uint64_t *eh_vaddr)
{
	hdr_fields h;
	int rc = parse_hdr(hdr, hdr_len, hdr_vaddr, &h);
	if (rc == 0)
		*eh_vaddr = h.eh_vaddr;
	return rc;
}

int ember__cfi_add_eh_frame_hdr(ember__cfi_builder *b, const uint8_t *hdr, size_t hdr_len,
				uint64_t hdr_vaddr, const uint8_t *eh, size_t eh_len,
				uint64_t eh_vaddr, int priority)
{
	hdr_fields h;
	int rc = parse_hdr(hdr, hdr_len, hdr_vaddr, &h);
	if (rc)
		return rc;
	if (h.eh_vaddr != eh_vaddr)
		return ember__error(EMBER_ERR_FORMAT,
				    ".eh_frame_hdr points to 0x%llx, not to .eh_frame at 0x%llx",
				    (unsigned long long)h.eh_vaddr, (unsigned long long)eh_vaddr);
	if (!h.has_table)
		return ember__cfi_add_section(b, eh, eh_len, eh_vaddr, EMBER_CFI_EH_FRAME, priority);
	b->ncache = 0;
	rd r = {hdr, h.table_pos, hdr_len, 0};
	ptr_ctx c = {hdr_vaddr, hdr_vaddr, 1};
	for (uint64_t i = 0; i < h.fde_count; i++) {
		rd_encoded(&r, h.table_enc, &c, 0); /* initial location: the FDE has its own */
		uint64_t fde = rd_encoded(&r, h.table_enc, &c, 0);
		if (r.bad) {
			b->stats.bad_fdes++; /* truncated or undecodable table: stop */
			break;
		}
		entry e;
		if (fde < eh_vaddr || fde - eh_vaddr >= eh_len ||
		    read_entry(eh, eh_len, (size_t)(fde - eh_vaddr), EMBER_CFI_EH_FRAME, &e) != 0 ||
		    e.terminator || is_cie(&e, EMBER_CFI_EH_FRAME)) {
			b->stats.bad_fdes++;
			continue;
		}
		if (add_fde(b, eh, eh_len, eh_vaddr, EMBER_CFI_EH_FRAME, priority, &e))
			return ember__error_oom("CFI rows");
	}
	return 0;
}

/* ---- finishing ---- */

static int cmp_runs(const void *pa, const void *pb)
{
	const run *a = pa, *b = pb;
	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Whether [start, end) overlaps a run of acc[0..n) (sorted, disjoint). */
static int overlaps(const run *acc, size_t n, uint64_t start, uint64_t end)
{
	size_t lo = 0, hi = n; /* first run with end > start */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (acc[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && acc[lo].start < end;
}

static int same_rule(const ember__cfi_row *a, const ember__cfi_row *b)
{
	return a->kind == b->kind && a->cfa == b->cfa && a->fp == b->fp;
}

static int finish(ember__cfi_builder *b, ember__cfi_table **out, int pack);

int ember__cfi_finish(ember__cfi_builder *b, ember__cfi_table **out)
{
	return finish(b, out, 1);
}

int ember__cfi_finish_rows(ember__cfi_builder *b, ember__cfi_table **out)
{
	return finish(b, out, 0);
}

static int finish(ember__cfi_builder *b, ember__cfi_table **out, int pack)
{
	*out = NULL;
	int rc = 0;
	run *acc = NULL, *merged = NULL;
	ember__cfi_row *rows = NULL;
	ember__cfi_table *t = calloc(1, sizeof(*t));
	if (!t)
		goto oom;
	if (b->nruns) {
		acc = malloc(b->nruns * sizeof(*acc));
		merged = malloc(b->nruns * sizeof(*merged));
		if (!acc || !merged)
			goto oom;
	}
	if (b->nruns)
		ember__sort(b->runs, b->nruns, sizeof(*b->runs), cmp_runs); /* util/sort.h */
	/* Priority by priority: keep a run unless it overlaps one kept from a
	 * higher priority or the previous one kept at its own. */
	size_t nacc = 0;
	for (size_t i = 0; i < b->nruns;) {
		size_t j = i, nnew = 0, first_new = nacc;
		uint64_t last_end = 0;
		while (j < b->nruns && b->runs[j].priority == b->runs[i].priority) {
			const run *rn = &b->runs[j++];
			if ((nnew && rn->start < last_end) || overlaps(acc, first_new, rn->start, rn->end)) {
				if (rn->fill)
					b->stats.fill_dropped++;
				else
					b->stats.overlaps++;
				continue;
			}
			acc[nacc++] = *rn; /* appended after the older ones for now */
			if (rn->fill)
				b->stats.fill_rows += (uint32_t)rn->n;
			nnew++;
			last_end = rn->end;
		}
		/* merge acc[0..first_new) and acc[first_new..nacc), both by start */
		size_t x = 0, y = first_new, m = 0;
		while (x < first_new || y < nacc)
			merged[m++] = (y == nacc || (x < first_new && acc[x].start < acc[y].start)) ? acc[x++]
												       : acc[y++];
		memcpy(acc, merged, m * sizeof(*acc));
		i = j;
	}
	size_t cap = b->nrows + nacc + 1, n = 0;
	rows = malloc(cap * sizeof(*rows));
	if (!rows)
		goto oom;
	uint64_t last_end = 0;
	for (size_t i = 0; i < nacc; i++) {
		const run *rn = &acc[i];
		/* A gap shorter than GAP_ABSORB is alignment padding: no code
		 * runs there, so the previous row may cover it (which lets it
		 * merge with the next function's first row). */
		if (i > 0 && rn->start - last_end >= GAP_ABSORB) {
			ember__cfi_row gap = {.pc = (uint32_t)last_end, .kind = EMBER_CFI_NONE};
			rows[n++] = gap;
		}
		for (size_t k = 0; k < rn->n; k++)
			rows[n++] = b->rows[rn->first + k];
		last_end = rn->end;
	}
	if (nacc && last_end <= UINT32_MAX) {
		ember__cfi_row gap = {.pc = (uint32_t)last_end, .kind = EMBER_CFI_NONE};
		rows[n++] = gap;
	}
	/* Merge rows that say the same as the one before them. */
	size_t w = 0;
	for (size_t i = 0; i < n; i++)
		if (w == 0 || !same_rule(&rows[w - 1], &rows[i]))
			rows[w++] = rows[i];
	if (w == 0) {
		free(rows);
		rows = NULL;
	} else {
		ember__cfi_row *shrunk = realloc(rows, w * sizeof(*rows));
		if (shrunk)
			rows = shrunk;
	}
	t->rows = rows;
	t->nrows = (uint32_t)w;
	rows = NULL;
	if (build_index(t))
		goto oom;
	t->bytes = sizeof(*t) + w * sizeof(*t->rows) + t->nindex * sizeof(*t->index);
	t->stats = b->stats;
	if (pack && ember__cfi_pack(t))
		goto oom;
	*out = t;
	goto done;
oom:
	rc = ember__error_oom("CFI table");
	free(rows);
	ember__cfi_table_free(t);
done:
	free(acc);
	free(merged);
	ember__cfi_builder_free(b);
	return rc;
}
