/*
 * unwind_dwarf.c - the DWARF unwinder: walks a stack with call-frame
 * information that the agent compiled beforehand into one sorted table of
 * rows per module (src/cfi/), published as an immutable snapshot.
 *
 * For each frame: find the module holding the PC (the previous frame's,
 * or a binary search) and the row covering it (the module's index, then a
 * binary search over a few rows), compute the frame's CFA from sp, fp or
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

/* The row covering pc in module m (a NONE row for a gap), or NULL. */
static const ember__cfi_row *module_row(const ember__unwind_module *m, uintptr_t pc)
{
	if (pc < m->base || pc - m->base > UINT32_MAX)
		return NULL;
	return ember__cfi_rows_find_indexed(m->rows, m->nrows, m->index, m->nindex, m->index_shift,
					    (uint32_t)(pc - m->base));
}

const ember__cfi_row *ember__unwind_find_row(const ember__unwind_snapshot *snap, uintptr_t pc,
					     const ember__unwind_module **mod)
{
	const ember__unwind_module *m = snap ? find_module(snap, pc) : NULL;
	const ember__cfi_row *r = m ? module_row(m, pc) : NULL;
	if (mod)
		*mod = m;
	if (r && (r->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_NONE)
		return NULL;
	return r;
}

/*
 * The row for a frame. `look` is the address to look up (pc, or pc - 1
 * for a return address). A return address that is the very first byte of
 * a signal trampoline (its FDE does not start a byte early, as glibc's
 * does) must use the trampoline's row, which starts exactly at pc.
 */
static const ember__cfi_row *frame_row(const ember__unwind_snapshot *snap,
				       const ember__unwind_module **last, uintptr_t pc,
				       uintptr_t look)
{
	/* Consecutive frames are often in the same module. */
	const ember__unwind_module *m = *last;
	if (!m || look < m->start || look >= m->end) {
		m = find_module(snap, look);
		if (!m)
			return NULL;
		*last = m;
	}
	const ember__cfi_row *r = module_row(m, look);
	if (look != pc && pc - m->base <= UINT32_MAX) {
		const ember__cfi_row *next = r ? r + 1 : m->rows;
		if (next < m->rows + m->nrows && next->pc == (uint32_t)(pc - m->base) &&
		    (next->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SIGNAL)
			return next;
	}
	return r;
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
		const ember__cfi_row *row = snap ? frame_row(snap, &last, pc, look) : NULL;
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
