/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind.h - the unwinder interface used by the signal handler.
 *
 * An unwinder turns the interrupted thread's registers into a list of
 * program counters, leaf first. It runs inside the signal handler, so every
 * implementation must be async-signal-safe: no allocation, no locks, no
 * stdio, and no memory read outside what the caller proved readable (the
 * stack bounds passed in, and the DWARF tables the agent published). Two
 * walkers sit behind one call (ember__unwind): frame pointers
 * (unwind_fp.c) and DWARF call-frame information compiled into compact
 * per-module tables (unwind_dwarf.c; tables built by src/cfi/).
 */
#ifndef EMBER_UNWIND_H
#define EMBER_UNWIND_H

#include <stddef.h>
#include <stdint.h>

/*
 * For functions that read the stack on an unwinder's behalf: under
 * AddressSanitizer they are not instrumented. An unwinder reads slots of
 * other functions' frames (and, following the frame-pointer rule through
 * code without one, arbitrary live stack words), some inside the redzones
 * ASan poisons; the bounds checks of the caller are what make such a read
 * safe, and ASan would only report the profiler's intent.
 */
#if defined(__SANITIZE_ADDRESS__)
#define EMBER_STACK_READ __attribute__((no_sanitize_address, noinline))
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_STACK_READ __attribute__((no_sanitize_address, noinline))
#endif
#endif
#ifndef EMBER_STACK_READ
#define EMBER_STACK_READ
#endif

/*
 * The registers an unwinder needs, taken from the signal's ucontext. aux
 * is the one other register some hand-written code computes its CFA from
 * (arch.h: EMBER_DWARF_REG_AUX); 0 means its value is unknown, and a frame
 * whose CFA needs it then ends the walk as truncated.
 */
typedef struct ember__regs {
	uintptr_t pc, sp, fp, aux; /* aarch64: aux is the link register, x30 */
} ember__regs;

/*
 * Memory the unwinder may read: [lo, hi) of the current thread's stack.
 * Reads are further limited to [sp, hi), the part of the stack that is
 * live and therefore mapped. lo == hi == 0 means unknown: only the leaf PC
 * (a register) can be recorded.
 */
typedef struct ember__stack_bounds {
	uintptr_t lo, hi;
} ember__stack_bounds;

/* Unwinding modes; the values match the public ember_unwind_mode. */
enum {
	EMBER_UNWIND_MODE_AUTO = 0,  /* DWARF tables where they exist, frame pointers elsewhere */
	EMBER_UNWIND_MODE_FP = 1,    /* frame pointers only */
	EMBER_UNWIND_MODE_DWARF = 2, /* DWARF tables only: a PC without CFI ends the stack */
};

/* Result flags. */
enum {
	EMBER_UNWIND_TRUNCATED = 1u << 0, /* stopped before the stack's end */
	EMBER_UNWIND_NO_BOUNDS = 1u << 1, /* leaf only: bounds unknown */
	/* a frame lay in a module whose table was not built yet (lazy): the
	 * frame-pointer rule was used for it, in every mode */
	EMBER_UNWIND_PENDING = 1u << 2
};

/* ---- DWARF unwind tables (built by src/cfi/, read by unwind_dwarf.c) ---- */

/*
 * One row of a module's compiled call-frame information: from `pc` up to
 * the next row's pc, how to find the caller's registers. pc is an offset
 * from the module's load bias (a link-time virtual address). Rows are
 * sorted by pc; a gap between functions is a row of kind EMBER_CFI_NONE.
 * Offsets are kept in units of EMBER_CFI_UNIT bytes (arch.h: the stack
 * slot size) and the return address is always at CFA + EMBER_CFI_RA_OFF;
 * CFI that needs anything else becomes an EMBER_CFI_UNKNOWN row. The top
 * bits of kind say where the caller's aux register is (EMBER_CFI_AUX_*).
 * 8 bytes; see src/cfi/cfi.h for how rows are built.
 */
typedef struct ember__cfi_row {
	uint32_t pc;
	int16_t cfa;  /* SP, FP, PLT: CFA = reg + cfa * EMBER_CFI_UNIT */
	int8_t fp;    /* SP, FP: caller's fp saved at CFA + fp * EMBER_CFI_UNIT, 0 = fp
			 unchanged; PLT: the threshold on (pc & 15) */
	uint8_t kind; /* EMBER_CFI_KIND_MASK: EMBER_CFI_*; high bits: EMBER_CFI_F_* */
} ember__cfi_row;

_Static_assert(sizeof(ember__cfi_row) == 8, "unwind rows are 8 bytes");

enum {
	EMBER_CFI_NONE = 0,    /* no CFI covers this address */
	EMBER_CFI_SP = 1,      /* CFA = sp + cfa units */
	EMBER_CFI_FP = 2,      /* CFA = fp + cfa units */
	EMBER_CFI_PLT = 3,     /* CFA = sp + cfa units + ((pc & 15) >= fp ? 1 unit : 0) */
	EMBER_CFI_SIGNAL = 4,  /* sigreturn trampoline: registers in the ucontext at sp */
	EMBER_CFI_UNKNOWN = 5, /* a rule we do not keep: use the frame-pointer rule */
	EMBER_CFI_AUX = 6,     /* CFA = aux + cfa units (ld.so's lazy-binding trampolines) */
	EMBER_CFI_KIND_MASK = 0x07,
	EMBER_CFI_F_RA_UNDEF = 0x08, /* return address undefined: the thread's outermost frame */
	EMBER_CFI_F_FP_LOST = 0x10,  /* the caller's fp cannot be recovered */
	/*
	 * Bits 5-7: where the caller's aux register is. 0: unchanged (this
	 * frame did not save it); 1-6: saved at CFA - (code + 1) units, the
	 * slots of the pushes that follow the return address (c-16 .. c-56
	 * on x86-64, where ~99.9 % of glibc's saves are); 7: not recoverable.
	 */
	EMBER_CFI_AUX_SHIFT = 5,
	EMBER_CFI_AUX_MASK = 0xe0,
	EMBER_CFI_AUX_LOST = 7
};

/*
 * On an architecture with a link register (arch.h: EMBER_ARCH_LINK_REG,
 * aarch64) aux is that register, and bits 5-7 say instead where the
 * frame's return address is:
 */
enum {
	EMBER_CFI_LR_REG = 0,    /* still in the link register: only a frame the
				    walk starts in (or a signal interrupted) has it */
	EMBER_CFI_LR_RECORD = 1, /* at CFA + fp * UNIT + 8: the frame record
				    {caller's fp, return address} */
	EMBER_CFI_LR_SLOT = 2,   /* at CFA + fp * UNIT, the caller's fp unchanged
				    (fp holds the return address's slot) */
	EMBER_CFI_LR_RECORD_BASE = 3, /* the frame record at CFA - cfa * UNIT, where
					the CFA's base register (sp or fp) points:
					large frames; fp is 0 */
	EMBER_CFI_LR_SLOT_BASE = 4,   /* alone at CFA - cfa * UNIT (large frames);
					 fp as for SP and FP rows */
	EMBER_CFI_LR_SLOT_BASE_UP = 5 /* alone at CFA - cfa * UNIT + fp * UNIT, fp
					 unchanged: a frame too large for an offset
					 from the CFA, x30 saved above its bottom
					 (`sub sp, sp, #n; ... str x30, [sp, #k]`) */
};

/* The aux-save code of a row (see EMBER_CFI_AUX_SHIFT). */
#define EMBER_CFI_AUX_CODE(kind) (((unsigned)(kind) & EMBER_CFI_AUX_MASK) >> EMBER_CFI_AUX_SHIFT)

/*
 * A module's rows and the index that narrows a lookup: index[i] is the row
 * covering rows[0].pc + (i << shift), for i in [0, nindex); the row
 * covering an address in bucket i lies in rows[index[i] .. index[i + 1]]
 * (the last bucket: up to the last row). Without it, a lookup is one
 * binary search over every row: ~15 dependent loads for libc, most of them
 * cache misses. shift is EMBER_CFI_INDEX_SHIFT (512-byte buckets), or more
 * where the rows span so much address space that the index would outgrow
 * them (garbage CFI). Built by src/cfi/ (ember__cfi_finish).
 */
#define EMBER_CFI_INDEX_SHIFT 9

/*
 * The packed form of a module's rows (built by src/cfi/cfi_pack.c,
 * read by cfi_packed.c), about 4.3 bytes a row where the form above takes
 * 8.5, after the OpenTelemetry eBPF profiler's "stack deltas". Addresses
 * are cut into 64 KiB pages (pc >> 16), numbered from page0, the first
 * row's page, to page0 + npages - 1, the last row's:
 * - rows[i]: row i's pc & 0xffff | its rule's number << 16; sorted by pc;
 *   a row's page is the one whose range of pages[] holds i;
 * - rules[r]: each distinct rule once, its cfa, fp and kind in 32 bits
 *   (ember__cfi_rule_pack); those of kind EMBER_CFI_SIGNAL come first,
 *   rules 0 .. nsignal - 1, so that a walk tells a row that starts a
 *   sigreturn trampoline by its number alone;
 * - pages[p], p in [0, npages]: the first row at or above page page0 + p
 *   (pages[npages] == nrows);
 * - fine[p * EMBER_CFI_FINE_PER_PAGE + b]: the first row at or above byte
 *   b << EMBER_CFI_INDEX_SHIFT of page p, less pages[p] (< 65,536: a page
 *   holds at most 65,536 rows).
 * The row covering pc is then the last row of its 512-byte bucket at or
 * below pc, or, when there is none, the row before the bucket's first
 * (which may lie in an earlier page). A table contradicting itself gives
 * no row, never a read outside its arrays (cfi_packed.c).
 * The arrays lie in one block in the order rows, rules, pages, fine
 * (ember__cfi_packed_layout), in memory as in the unwind-table cache.
 */
#define EMBER_CFI_PAGE_SHIFT 16
#define EMBER_CFI_FINE_PER_PAGE (1u << (EMBER_CFI_PAGE_SHIFT - EMBER_CFI_INDEX_SHIFT))
#define EMBER_CFI_RULES_MAX 65535u

typedef struct ember__cfi_packed {
	const uint32_t *rows, *rules, *pages;
	const uint16_t *fine;
	uint32_t nrows, nrules, nsignal, npages;
	uint32_t page0;
} ember__cfi_packed;

/* A rule (a row's cfa, fp and kind) as packed in ember__cfi_packed.rules:
 * the row's last 4 bytes as they lie in memory (the cache is only read on
 * the architecture that wrote it), so that decoding is one 4-byte copy. */
#define EMBER_CFI_RULE_AT offsetof(ember__cfi_row, cfa)
_Static_assert(sizeof(ember__cfi_row) - EMBER_CFI_RULE_AT == sizeof(uint32_t),
	       "a rule is a row's last 4 bytes");

static inline uint32_t ember__cfi_rule_pack(const ember__cfi_row *r)
{
	uint32_t v;
	__builtin_memcpy(&v, (const char *)r + EMBER_CFI_RULE_AT, sizeof(v));
	return v;
}

/* The row kind (EMBER_CFI_* and flags) of a packed rule. */
static inline unsigned ember__cfi_rule_kind(uint32_t rule)
{
	ember__cfi_row r;
	__builtin_memcpy((char *)&r + EMBER_CFI_RULE_AT, &rule, sizeof(rule));
	return r.kind;
}

/*
 * The byte size of a block holding a packed table of the given counts,
 * and, when p is non-NULL and block is, p's arrays pointed into it (counts
 * copied). Async-signal-safe (no handler calls it).
 */
size_t ember__cfi_packed_layout(uint32_t nrows, uint32_t nrules, uint32_t npages,
				const void *block, ember__cfi_packed *p);

/*
 * The row covering offset pc in a packed table, decoded into *out (out->pc
 * its start), and its number + 1; 0 when no row covers pc (pc below the
 * first row, or a table that contradicts itself). Bounded: a few loads and
 * two binary searches of at most 17 steps. Async-signal-safe.
 */
uint32_t ember__cfi_packed_find(const ember__cfi_packed *p, uint32_t pc, ember__cfi_row *out);

/* Row i of a packed table, decoded; 0 if there is none. Async-signal-safe. */
int ember__cfi_packed_row(const ember__cfi_packed *p, uint32_t i, ember__cfi_row *out);

/* One executable mapping with CFI, as the handler sees it: its rows in
 * the packed form (packed.nrows != 0) or, where packing does not pay (a
 * small module, more than EMBER_CFI_RULES_MAX rules), as rows + index. */
typedef struct ember__unwind_module {
	uintptr_t start, end; /* the mapping [start, end) */
	uintptr_t base;       /* load bias: row pc = address - base */
	ember__cfi_packed packed;
	const ember__cfi_row *rows;
	const uint32_t *index; /* may be NULL: search all rows */
	uint32_t nrows, nindex;
	uint32_t index_shift;
	/* 1: the agent builds this module's table lazily and has not yet
	 * (src/cfi/unwind_tables.h); no rows: the walk uses the
	 * frame-pointer rule for its frames and flags EMBER_UNWIND_PENDING */
	uint32_t pending;
} ember__unwind_module;

/*
 * The modules the handler may use, sorted by start, non-overlapping. A
 * snapshot and the rows it points to are immutable once published and are
 * freed only after no handler can still read them (unwind_tables.c).
 */
typedef struct ember__unwind_snapshot {
	uint32_t n;
	ember__unwind_module mods[];
} ember__unwind_snapshot;

/*
 * Fills pcs[0..max) from regs, leaf first; returns the count (>= 1 when
 * max >= 1) and ORs EMBER_UNWIND_* flags into *flags. `snap` (may be NULL)
 * holds the DWARF tables for modes AUTO and DWARF; without it, and in mode
 * FP, frame pointers are followed.
 * Async-signal-safe. Reads memory only inside [regs->sp, bounds->hi) and
 * inside the snapshot's tables.
 */
int ember__unwind(int mode, const ember__unwind_snapshot *snap, const ember__regs *regs,
		  const ember__stack_bounds *bounds, uint64_t *pcs, int max, unsigned *flags);

/*
 * The DWARF unwinder (unwind_dwarf.c). Same contract as ember__unwind.
 * Each frame's PC (return address - 1 for callers) is looked up in `snap`;
 * where no row covers it, `strict` ends the stack (truncated) and
 * otherwise the frame-pointer rule is tried for that one frame. A frame
 * resumed from a signal frame is recorded as its interrupted PC + 1, so
 * that "caller at address - 1" (window.c) symbolizes the exact PC.
 */
int ember__unwind_dwarf(const ember__unwind_snapshot *snap, int strict, const ember__regs *regs,
			const ember__stack_bounds *bounds, uint64_t *pcs, int max, unsigned *flags);

/*
 * The row covering `pc` in the snapshot: 1 and *out (when non-NULL; out->pc
 * its start, an offset from the module's bias), or 0 (no module, or a
 * gap). *mod receives the module when non-NULL. Async-signal-safe.
 */
int ember__unwind_find_row(const ember__unwind_snapshot *snap, uintptr_t pc,
			   const ember__unwind_module **mod, ember__cfi_row *out);

/* The row covering offset pc in module m, in whichever form it has: 1 and
 * *out, or 0. Async-signal-safe. */
int ember__unwind_module_row(const ember__unwind_module *m, uint32_t pc, ember__cfi_row *out);

/*
 * The row covering offset `pc` in rows[0..n) sorted by pc (the last row
 * starting at or before it), or NULL when pc is below the first row.
 * Async-signal-safe.
 */
const ember__cfi_row *ember__cfi_rows_find(const ember__cfi_row *rows, uint32_t n, uint32_t pc);

/* The same through a module's index (see ember__unwind_module). */
const ember__cfi_row *ember__cfi_rows_find_indexed(const ember__cfi_row *rows, uint32_t n,
						   const uint32_t *index, uint32_t nindex,
						   uint32_t shift, uint32_t pc);

/*
 * For a copy of the stack bytes [sp, sp + 8 * nwords) now lying at `base`
 * (another thread's or process's stack, copied to be walked): every word
 * that holds an address inside the copied range (saved frame pointers,
 * signal frames' registers) is moved by base - sp to point into the copy,
 * so that the walkers, which read only inside their bounds, walk the copy
 * as the original. A word that merely looks like such an address moves
 * too, as it would mislead a walk of the original. Async-signal-safe.
 */
void ember__unwind_relocate_copy(uint64_t *words, size_t nwords, uintptr_t sp, uintptr_t base);

/* The frame-pointer walker. Same contract as ember__unwind. */
int ember__unwind_fp(const ember__regs *regs, const ember__stack_bounds *bounds,
		     uint64_t *pcs, int max, unsigned *flags);

/*
 * Architecture part (regs_<arch>.c): registers from a ucontext_t.
 * Async-signal-safe.
 */
void ember__regs_from_ucontext(const void *ucontext, ember__regs *out);

/*
 * Architecture part: the registers a signal interrupted, read from the
 * signal frame a sigreturn trampoline runs on, given the trampoline's sp
 * (on x86-64 the ucontext starts right there, the handler's return slot
 * having been popped). Returns 1 and fills *out only if the frame lies
 * wholly inside [sp, hi) and sp is aligned; else 0. Async-signal-safe.
 */
int ember__regs_from_sigframe(uintptr_t sp, uintptr_t hi, ember__regs *out);

/*
 * Architecture part: whether the thread a signal interrupted (ucontext,
 * its pc) was blocked in a system call - 1 if the kernel restarts the
 * call, 2 if the call returns EINTR to the program once the handler is
 * done - or running - 0 - or -1 when that cannot be told. Reads the code bytes next to pc only inside pc's
 * page. Async-signal-safe.
 */
int ember__regs_in_syscall(const void *ucontext, uintptr_t pc);

/*
 * Architecture part: whether pc, a return address the walk reached
 * outside every module with call-frame information, is the sigreturn
 * trampoline noted by ember__regs_note_sigreturn and known by its
 * instructions.
 * Async-signal-safe.
 */
int ember__regs_at_sigreturn(uintptr_t pc);

/*
 * Architecture part: the signal handler's own return address, noted on
 * every entry - the trampoline the kernel (or an emulator) returns through;
 * ember__regs_at_sigreturn examines only that address. Async-signal-safe.
 */
void ember__regs_note_sigreturn(uintptr_t ra);

/*
 * Architecture part: whether `before`, the 8 code bytes that end just
 * before a (PAC-stripped) return address, end with a call instruction -
 * the address was reached by a call, not merely a code pointer stored on
 * the stack. Looks only at the given bytes; async-signal-safe.
 */
int ember__regs_after_call(const uint8_t before[8]);

/*
 * Architecture part: whether `before`, the 8 code bytes that end at the pc
 * /proc/TID/syscall reports for a thread blocked in a call, end with the
 * system-call instruction. The kernel's pc always does; an emulator's
 * (qemu-user reports its own host registers there) does not, and those
 * registers must not be unwound as the program's. Async-signal-safe.
 */
int ember__regs_after_syscall(const uint8_t before[8]);

/*
 * Architecture part: where the call instruction that ends just before the
 * return address `ra` (`before`: its 8 code bytes, as above) went. 1: a
 * direct call, *dest its target; 2: a call through the code pointer
 * stored at *dest; 0: the bytes do not say (a call through a register,
 * or an architecture that does not decode them). Async-signal-safe.
 */
int ember__regs_call_dest(const uint8_t before[8], uintptr_t ra, uintptr_t *dest);

/*
 * Architecture part: whether the 16 code bytes at address `at` are a PLT
 * stub that jumps through a code pointer: 1 and *slot, that pointer's
 * address; else 0 (also where the architecture does not decode them).
 * Async-signal-safe.
 */
int ember__regs_plt_slot(const uint8_t code[16], uintptr_t at, uintptr_t *slot);

/*
 * Architecture part, used by the table builder on the agent thread (pure
 * functions of their arguments: no allocation, no I/O; async-signal-safe
 * though no handler calls them): rows for a PLT section that the linker
 * left without call-frame information. Stubs only branch, so a few fixed
 * rules describe them; src/cfi/cfi_elf.c adds these rows below every FDE,
 * so they apply only where no CFI covers the stubs. The caller owns code
 * and out.
 * code/len: the section's bytes as the file holds them (len may be less
 * than size; only the first instructions are read, never past len);
 * addr/size: its link-time address and size; lazy: 1 for `.plt`, which may
 * start with the lazy-binding header (PLT0), 0 for `.iplt`. Fills out[0..max)
 * with runs of one rule each, in address order, and returns their count
 * (0: this architecture's linkers give their stubs CFI, or nothing
 * applies). Every architecture's version is compiled on every host (pure
 * functions of their input: the x86-64 build tests the aarch64 one on
 * cross-linked files); arch.h names the native one EMBER_ARCH_PLT_ROWS.
 */
typedef struct ember__plt_run {
	uint64_t start, end; /* [start, end), link-time addresses */
	ember__cfi_row row;  /* its rule; row.pc is start's low 32 bits */
} ember__plt_run;

#define EMBER_PLT_RUNS_MAX 3

int ember__plt_rows_aarch64(const uint8_t *code, size_t len, uint64_t addr, uint64_t size,
			    int lazy, ember__plt_run *out, int max);
int ember__plt_rows_x86_64(const uint8_t *code, size_t len, uint64_t addr, uint64_t size,
			   int lazy, ember__plt_run *out, int max);

#endif
