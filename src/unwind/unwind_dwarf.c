/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_dwarf.c - the DWARF unwinder: walks a stack with call-frame
 * information that the agent compiled beforehand into one sorted table of
 * rows per module (src/cfi/), published as an immutable snapshot.
 *
 * For each frame: find the module holding the PC (the previous frame's,
 * or a binary search) and the row covering it (in the packed form, the
 * page's and the 512-byte bucket's index, then a binary search over the
 * bucket's few rows and the row's rule; in a module that kept 8-byte rows,
 * its index, then a binary search over a few rows), compute the frame's CFA from sp, fp or
 * aux (rbx, for ld.so's trampolines), read the return address and the
 * saved fp and aux at CFA-relative offsets, and continue in the caller
 * with pc = return address, sp = CFA.
 * The leaf's PC is looked up as is; a caller's at return address - 1,
 * inside its call instruction. A module listed as pending (the agent
 * builds tables lazily and has not built its table yet) has no rows: its
 * frames use the frame-pointer rule, in every mode, and the walk flags
 * EMBER_UNWIND_PENDING. Special rows: PLT stubs (CFA from the
 * stub's offset), signal trampolines (the interrupted registers come from
 * the ucontext of the signal frame), "unknown" rules such as stack
 * realignment (the frame-pointer rule), and an undefined return address,
 * which marks the thread's outermost frame (_start, clone): the walk ends
 * there, complete.
 *
 * Async-signal-safe: no allocation, no locks, no calls outside this file
 * and regs_<arch>.c. Every stack read is proved to lie inside [sp, hi),
 * the live part of the current thread's stack, which is mapped; tables are
 * ours (never the module's memory) and stay valid while the snapshot is
 * published. Code is read only to recognise a sigreturn trampoline that
 * has no CFI (regs_<arch>.c: two words at the one return address our own
 * signal handler returns to). A trampoline entered at its first byte is
 * recorded as pc + 1 (see EMBER_CFI_SIGNAL below). Garbage CFI or a
 * corrupted stack ends the
 * walk with EMBER_UNWIND_TRUNCATED, and strictly increasing sp bounds it.
 */
#include "unwind/unwind.h"

#include <stddef.h>

#include "unwind/arch.h"

/* A frame pointer value that no check accepts (misaligned, below any sp). */
#define FP_INVALID ((uintptr_t)1)

/* The last row of rows[lo..hi) starting at or before pc; rows[lo].pc <= pc. */
static const ember__cfi_row *search(const ember__cfi_row *rows, uint32_t lo, uint32_t hi,
				    uint32_t pc)
{
	while (hi - lo > 1) { /* rows[lo].pc <= pc < rows[hi].pc */
		uint32_t mid = lo + (hi - lo) / 2;
		if (rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return &rows[lo];
}

const ember__cfi_row *ember__cfi_rows_find(const ember__cfi_row *rows, uint32_t n, uint32_t pc)
{
	if (n == 0 || pc < rows[0].pc)
		return NULL;
	return search(rows, 0, n, pc);
}

const ember__cfi_row *ember__cfi_rows_find_indexed(const ember__cfi_row *rows, uint32_t n,
						   const uint32_t *index, uint32_t nindex,
						   uint32_t shift, uint32_t pc)
{
	if (n == 0 || pc < rows[0].pc)
		return NULL;
	if (!index || nindex == 0 || shift > 31)
		return search(rows, 0, n, pc);
	uint32_t b = (pc - rows[0].pc) >> shift;
	if (b >= nindex)
		b = nindex - 1;
	uint32_t lo = index[b], hi = b + 1 < nindex ? index[b + 1] + 1 : n;
	if (lo >= n || hi > n || lo >= hi || rows[lo].pc > pc)
		return search(rows, 0, n, pc); /* a bad index cannot mislead us */
	return search(rows, lo, hi, pc);
}

/* ---- the packed form (unwind.h: ember__cfi_packed) ---- */

size_t ember__cfi_packed_layout(uint32_t nrows, uint32_t nrules, uint32_t npages,
				const void *block, ember__cfi_packed *p)
{
	size_t words = (size_t)nrows + nrules + (size_t)npages + 1;
	size_t size = words * sizeof(uint32_t) +
		      (size_t)npages * EMBER_CFI_FINE_PER_PAGE * sizeof(uint16_t);
	if (p && block) {
		const uint32_t *w = block;
		p->rows = w;
		p->rules = w + nrows;
		p->pages = w + nrows + nrules;
		p->fine = (const uint16_t *)(w + words);
		p->nrows = nrows;
		p->nrules = nrules;
		p->npages = npages;
	}
	return size;
}

/* Row i's page given that it lies in pages [0, below): the last page whose
 * first row is at or before i. */
static uint32_t packed_page_of(const ember__cfi_packed *p, uint32_t i, uint32_t below)
{
	uint32_t lo = 0, hi = below;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (p->pages[mid] <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

/* Row i (< nrows) in page pg (relative to page0), decoded; 0 if its rule
 * number is out of range. */
static int packed_decode(const ember__cfi_packed *p, uint32_t i, uint32_t pg, ember__cfi_row *out)
{
	uint32_t e = p->rows[i], r = e >> 16;
	if (r >= p->nrules)
		return 0;
	out->pc = (p->page0 + pg) << EMBER_CFI_PAGE_SHIFT | (e & 0xffff);
	__builtin_memcpy((char *)out + EMBER_CFI_RULE_AT, &p->rules[r], sizeof(uint32_t));
	return 1;
}

/* ember__cfi_packed_find, inlined where the walk looks rows up. */
__attribute__((always_inline)) static inline uint32_t
packed_find(const ember__cfi_packed *p, uint32_t pc, ember__cfi_row *out)
{
	uint32_t low = pc & 0xffff, pg = (pc >> EMBER_CFI_PAGE_SHIFT) - p->page0;
	if (pg >= p->npages) {
		/* below the first row's page (pg wrapped), or beyond the last
		 * row's page: its last row */
		if ((pc >> EMBER_CFI_PAGE_SHIFT) < p->page0 || p->npages == 0)
			return 0;
		pg = p->npages - 1, low = 0xffff;
	}
	uint32_t b = low >> EMBER_CFI_INDEX_SHIFT, first = p->pages[pg];
	const uint16_t *f = p->fine + (size_t)pg * EMBER_CFI_FINE_PER_PAGE + b;
	uint32_t lo = first + f[0];
	uint32_t hi = b + 1 < EMBER_CFI_FINE_PER_PAGE ? first + f[1] : p->pages[pg + 1];
	if (lo > hi || hi > p->nrows)
		return 0; /* a table that contradicts itself */
	while (lo < hi) { /* the first row of the bucket above pc */
		uint32_t mid = lo + (hi - lo) / 2;
		if ((p->rows[mid] & 0xffff) <= low)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0; /* below the first row */
	uint32_t i = lo - 1;
	if (i < first) /* the bucket has no row at or below pc: an earlier page's */
		pg = packed_page_of(p, i, pg);
	return packed_decode(p, i, pg, out) ? lo : 0;
}

uint32_t ember__cfi_packed_find(const ember__cfi_packed *p, uint32_t pc, ember__cfi_row *out)
{
	return packed_find(p, pc, out);
}

int ember__cfi_packed_row(const ember__cfi_packed *p, uint32_t i, ember__cfi_row *out)
{
	if (i >= p->nrows || p->npages == 0)
		return 0;
	return packed_decode(p, i, packed_page_of(p, i, p->npages), out);
}

/* ---- modules ---- */

int ember__unwind_module_row(const ember__unwind_module *m, uint32_t pc, ember__cfi_row *out)
{
	if (m->packed.nrows)
		return ember__cfi_packed_find(&m->packed, pc, out) != 0;
	const ember__cfi_row *r =
		ember__cfi_rows_find_indexed(m->rows, m->nrows, m->index, m->nindex, m->index_shift, pc);
	if (r)
		*out = *r;
	return r != NULL;
}

static const ember__unwind_module *find_module(const ember__unwind_snapshot *snap, uintptr_t pc)
{
	uint32_t lo = 0, hi = snap->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (snap->mods[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const ember__unwind_module *m = &snap->mods[lo - 1];
	return pc < m->end ? m : NULL;
}

int ember__unwind_find_row(const ember__unwind_snapshot *snap, uintptr_t pc,
			   const ember__unwind_module **mod, ember__cfi_row *out)
{
	const ember__unwind_module *m = snap ? find_module(snap, pc) : NULL;
	ember__cfi_row r;
	int found = m && pc >= m->base && pc - m->base <= UINT32_MAX &&
		    ember__unwind_module_row(m, (uint32_t)(pc - m->base), &r);
	if (mod)
		*mod = m;
	if (!found || (r.kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_NONE)
		return 0;
	if (out)
		*out = r;
	return 1;
}

/*
 * The row for a frame, into *out: 1, or 0 for none. `look` is the address
 * to look up (pc, or pc - 1 for a return address). A return address that
 * is the very first byte of a signal trampoline (its FDE does not start a
 * byte early, as glibc's does) must use the trampoline's row, which starts
 * exactly at pc: the row after look's, when it is a SIGNAL row.
 */
static int frame_row(const ember__unwind_snapshot *snap, const ember__unwind_module **last,
		     uintptr_t pc, uintptr_t look, ember__cfi_row *out)
{
	/* Consecutive frames are often in the same module. */
	const ember__unwind_module *m = *last;
	if (!m || look < m->start || look >= m->end) {
		m = find_module(snap, look);
		if (!m)
			return 0;
		*last = m;
	}
	int in_range = look >= m->base && look - m->base <= UINT32_MAX;
	int check_next = look != pc && pc - m->base <= UINT32_MAX;
	uint32_t off = (uint32_t)(look - m->base);
	if (m->packed.nrows) {
		const ember__cfi_packed *p = &m->packed;
		uint32_t next = in_range ? packed_find(p, off, out) : 0;
		/* next: the number of the row after look's (0: none covers
		 * look); SIGNAL rules are numbered first */
		if (p->nsignal && check_next && next < p->nrows &&
		    (p->rows[next] >> 16) < p->nsignal) {
			ember__cfi_row n;
			if (ember__cfi_packed_row(p, next, &n) && n.pc == (uint32_t)(pc - m->base) &&
			    (n.kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SIGNAL) {
				*out = n;
				return 1;
			}
		}
		return next != 0;
	}
	const ember__cfi_row *r =
		in_range ? ember__cfi_rows_find_indexed(m->rows, m->nrows, m->index, m->nindex,
							m->index_shift, off)
			 : NULL;
	if (check_next) {
		const ember__cfi_row *next = r ? r + 1 : m->rows;
		if (next && next < m->rows + m->nrows && next->pc == (uint32_t)(pc - m->base) &&
		    (next->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SIGNAL)
			r = next;
	}
	if (r)
		*out = *r;
	return r != NULL;
}

/* A stack word at addr, if it lies in [lo, hi) and is aligned. */
EMBER_STACK_READ static int read_word(uintptr_t addr, uintptr_t lo, uintptr_t hi, uintptr_t *out)
{
	if (addr < lo || addr >= hi || hi - addr < sizeof(uintptr_t) ||
	    (addr & (sizeof(uintptr_t) - 1)))
		return 0;
	*out = *(const uintptr_t *)addr;
	return 1;
}

int ember__unwind_dwarf(const ember__unwind_snapshot *snap, int strict, const ember__regs *regs,
			const ember__stack_bounds *bounds, uint64_t *pcs, int max, unsigned *flags)
{
	if (max <= 0)
		return 0;
	int n = 0;
	pcs[n++] = regs->pc;
	if (bounds->hi == 0 || regs->sp < bounds->lo || regs->sp >= bounds->hi) {
		*flags |= EMBER_UNWIND_NO_BOUNDS;
		return n;
	}
	const uintptr_t hi = bounds->hi;
	uintptr_t pc = regs->pc, sp = regs->sp, fp = regs->fp;
	/* The frame's aux: in the stack slot aux_at, or (aux_at == 0) the
	 * value aux, 0 if unknown. Most frames save it and almost none need
	 * it, so only where it lies is tracked; it is read when a frame's CFA
	 * needs it, from a slot of a frame below, which lies in
	 * [regs->sp, hi) and cannot have changed since. */
	uintptr_t aux = regs->aux, aux_at = 0;
	int exact = 1; /* pc is where the frame was interrupted, not a return address */
	const ember__unwind_module *last = NULL;

	for (;;) {
		uintptr_t look = exact ? pc : pc - 1;
		ember__cfi_row row_val;
		const ember__cfi_row *row =
			snap && frame_row(snap, &last, pc, look, &row_val) ? &row_val : NULL;
		unsigned kind = row ? row->kind & EMBER_CFI_KIND_MASK : EMBER_CFI_NONE;
		/* A trampoline without CFI, known by its one address and code,
		 * whatever lies before it: look (pc - 1) may fall in another
		 * module's code, or a pending one (qemu-user's page can follow
		 * any mapping). */
		if (EMBER_ARCH_BARE_SIGRETURN && !exact && kind != EMBER_CFI_SIGNAL &&
		    ember__regs_at_sigreturn(pc))
			kind = EMBER_CFI_SIGNAL, row = NULL;
		/* A module whose table the agent has not built yet (lazy):
		 * the frame-pointer rule, in every mode, and say so. */
		int pending = !row && kind != EMBER_CFI_SIGNAL && last && last->pending &&
			      look >= last->start && look < last->end;
		if (pending)
			*flags |= EMBER_UNWIND_PENDING;
		uintptr_t cfa;
		intptr_t ra_off = EMBER_CFI_RA_OFF, fp_off = 0;

		if (row && (row->kind & EMBER_CFI_F_RA_UNDEF))
			return n; /* the thread's outermost frame */
		switch (kind) {
		case EMBER_CFI_SIGNAL: {
			/* The handler returned to the trampoline's first byte (its
			 * code starts exactly at pc, no byte early as glibc's and
			 * the vDSO's CFI does): record its frame one byte in, so
			 * that pc - 1, where every caller is looked up, lies in
			 * the trampoline and not in whatever precedes it - a data
			 * mapping, whose address profiles take for a bad step. */
			if (!exact && pcs[n - 1] == pc &&
			    (!row || (uintptr_t)row->pc == pc - last->base))
				pcs[n - 1] = pc + 1;
			ember__regs in;
			if (!ember__regs_from_sigframe(sp, hi, &in) || in.sp <= sp || in.sp >= hi ||
			    in.pc == 0)
				goto truncated;
			if (n == max)
				goto truncated;
			/* +1: callers are symbolized at address - 1, and this
			 * PC was interrupted, not called from. */
			pcs[n++] = in.pc + 1;
			pc = in.pc;
			sp = in.sp;
			fp = in.fp;
			aux = in.aux;
			aux_at = 0;
			exact = 1;
			continue;
		}
		case EMBER_CFI_SP:
			cfa = sp + (uintptr_t)((intptr_t)row->cfa * EMBER_CFI_UNIT);
			fp_off = (intptr_t)row->fp * EMBER_CFI_UNIT;
			break;
		case EMBER_CFI_FP:
			cfa = fp + (uintptr_t)((intptr_t)row->cfa * EMBER_CFI_UNIT);
			fp_off = (intptr_t)row->fp * EMBER_CFI_UNIT;
			break;
		case EMBER_CFI_AUX:
			if (aux_at && !read_word(aux_at, regs->sp, hi, &aux))
				goto truncated;
			aux_at = 0;
			if (aux == 0)
				goto truncated; /* its value was lost in a frame below */
			cfa = aux + (uintptr_t)((intptr_t)row->cfa * EMBER_CFI_UNIT);
			fp_off = (intptr_t)row->fp * EMBER_CFI_UNIT;
			break;
		case EMBER_CFI_PLT:
			cfa = sp + (uintptr_t)((intptr_t)row->cfa * EMBER_CFI_UNIT);
			if ((int)(look & 15) >= row->fp)
				cfa += EMBER_CFI_UNIT;
			break;
		case EMBER_CFI_NONE:
			if (strict && !pending)
				goto truncated;
			if (fp == 0)
				return n; /* frame-pointer convention: the outermost frame */
			/* no CFI here: try the frame-pointer rule, which says
			 * nothing of aux */
			aux = aux_at = 0;
			__attribute__((fallthrough));
		default: /* EMBER_CFI_UNKNOWN */
			cfa = fp + EMBER_FP_RULE_CFA_OFF;
			ra_off = EMBER_FP_RULE_RA_OFF;
			fp_off = EMBER_FP_RULE_FP_OFF;
			break;
		}
		uintptr_t ra, nfp = fp;
		if (EMBER_ARCH_LINK_REG && (kind == EMBER_CFI_SP || kind == EMBER_CFI_FP)) {
			/* The row says where the return address is (unwind.h). */
			switch (EMBER_CFI_AUX_CODE(row->kind)) {
			case EMBER_CFI_LR_REG:
				/* Only where the walk started, or a signal
				 * interrupted, is the link register known; a
				 * frame that has not allocated yet has CFA ==
				 * sp, once. */
				if (!exact || aux == 0 || cfa < sp || cfa > hi)
					goto truncated;
				ra = aux;
				goto have_ra;
			case EMBER_CFI_LR_RECORD:
				ra_off = fp_off + 8;
				break;
			case EMBER_CFI_LR_SLOT:
				ra_off = fp_off;
				fp_off = 0;
				break;
			case EMBER_CFI_LR_RECORD_BASE:
				fp_off = -(intptr_t)row->cfa * EMBER_CFI_UNIT;
				ra_off = fp_off + 8;
				break;
			case EMBER_CFI_LR_SLOT_BASE:
				ra_off = -(intptr_t)row->cfa * EMBER_CFI_UNIT;
				break;
			case EMBER_CFI_LR_SLOT_BASE_UP:
				ra_off = -(intptr_t)row->cfa * EMBER_CFI_UNIT + fp_off;
				fp_off = 0;
				break;
			default:
				goto truncated;
			}
		}
		/* The caller's frame lies above ours: sp strictly increases. */
		if (cfa <= sp || cfa > hi)
			goto truncated;
		if (!read_word(cfa + (uintptr_t)ra_off, sp, hi, &ra))
			goto truncated;
	have_ra:
		/* Signed return addresses (PAC): keep the address bits only;
		 * a no-op where there is no signing (arch.h). */
		ra &= EMBER_ARCH_PC_MASK;
		if (fp_off != 0) {
			uintptr_t at = cfa + (uintptr_t)fp_off;
			/* A save slot below sp was popped already (an epilogue
			 * whose CFI does not restore the rule): fp holds the
			 * caller's value again, so it stays as it is. */
			if (at >= sp && !read_word(at, sp, hi, &nfp))
				goto truncated;
		}
		if (row && (row->kind & EMBER_CFI_F_FP_LOST) && fp_off == 0)
			nfp = FP_INVALID;
		unsigned aux_code = row ? EMBER_CFI_AUX_CODE(row->kind) : 0;
		if (EMBER_ARCH_LINK_REG) {
			/* The caller's link register held the return address
			 * we just used, and it is not read again: a caller is
			 * never where the walk started. */
			aux = aux_at = 0;
		} else if (aux_code == EMBER_CFI_AUX_LOST) {
			aux = aux_at = 0;
		} else if (aux_code != 0) {
			/* As for fp: a slot below sp was popped already. */
			uintptr_t at = cfa - (uintptr_t)(aux_code + 1) * EMBER_CFI_UNIT;
			if (at >= sp)
				aux_at = at;
		}
		if (ra == 0)
			return n; /* a zero return address ends a chain by convention */
		/* A return address inside the stack is data (the frame-pointer
		 * rule applied where rbp is not a frame pointer): see
		 * unwind_fp.c. Stacks are never executable. */
		if (bounds->lo && ra >= bounds->lo && ra < hi)
			goto truncated;
		if (n == max)
			goto truncated;
		pcs[n++] = ra;
		pc = ra;
		sp = cfa;
		fp = nfp;
		exact = 0;
	}
truncated:
	*flags |= EMBER_UNWIND_TRUNCATED;
	return n;
}
