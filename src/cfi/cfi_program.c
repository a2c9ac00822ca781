/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi_program.c - the CFA program interpreter (cfi_internal.h): runs a
 * CIE's initial instructions, or an FDE's instructions from the state
 * they leave, and turns the rule state at each location into an unwind
 * row (ember__cfi_row, src/unwind/unwind.h), keeping only the CFA rule,
 * the return-address rule, the frame-pointer rule and the rule of the aux
 * register (arch.h). Finding the entries and finishing the table is
 * cfi.c's job.
 *
 * Every read goes through the entry's bounded cursor (cfi_read.h); a bad
 * read or an instruction we do not know makes the program PROG_BAD, and
 * the caller drops the CIE or FDE (cfi.c counts it). Agent side only:
 * allocates, not async-signal-safe.
 */
#include "cfi/cfi_internal.h"

#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "unwind/arch.h"

#define STATE_STACK 16

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

int ember__cfi_push_row(ember__cfi_builder *b, const ember__cfi_row *row)
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

int ember__cfi_run_program(ember__cfi_builder *b, rd *r, const cie *c, const ptr_ctx *pc_ctx,
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
				if (ember__cfi_push_row(b, &row))
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
		if (ember__cfi_push_row(b, &row))
			return PROG_NOMEM;
	}
	return PROG_OK;
}
