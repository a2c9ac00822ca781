/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plt_rows_check.c - checks the rows the aarch64 table builder gives PLT
 * stubs (ember__plt_rows_aarch64, src/unwind/regs_aarch64.c), on an aarch64
 * file the real linkers made; run by test_plt_rows_a64.sh on any host
 * (libelf reads any ELF; the function is a pure function of the bytes).
 *
 * Usage: plt_rows_check FILE PLT0_STP
 *   PLT0_STP: the address of PLT0's `stp x16, x30, [sp, #-16]!` as
 *   aarch64-linux-gnu-objdump shows it (hex), or "none" (no lazy header).
 * For every instruction of .plt, the row (built as cfi_elf.c builds it:
 * ember__cfi_add_fill, then ember__cfi_finish) must say CFA = sp, return
 * address in x30, x29 unchanged - except from the instruction after that
 * stp to the end of PLT0, where CFA = sp + 16; the first byte after .plt
 * must have no row (nothing spills into the next section).
 *
 * Usage: plt_rows_check --x86-64 FILE {fill|cfi}
 *   An x86-64 file, on an x86-64 host: the table as the agent builds it
 *   (ember__cfi_build_file: CFI, then fill rows), whose rows must give
 *   every byte of the lazy .plt the CFA GNU ld's CFI describes - rsp + 16
 *   in PLT0, + 24 after its push, rsp + 8 in a stub, + 16 from its byte 11
 *   - with the return address at CFA - 8 and rbp and rbx unchanged; "fill":
 *   they must come from the fill rows (lld, no CFI), "cfi": from the
 *   linker's CFI, the fill dropped (GNU ld).
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfi/cfi.h"
#include "cfi/cfi_pack.h"
#include "unwind/unwind.h"

static int fail(const char *what, const char *file)
{
	fprintf(stderr, "FAIL %s: %s\n", file, what);
	return 1;
}

/* .plt's header and, when data is not NULL, a copy of its bytes (the
 * caller's, free()). 0, or 1 after a message. */
/* The row covering pc in t (either form), or NULL; valid until the next call. */
static const ember__cfi_row *find_row(const ember__cfi_table *t, uint32_t pc)
{
	static ember__cfi_row r;
	return ember__cfi_table_find(t, pc, &r) ? &r : NULL;
}

static int find_plt(const char *file, unsigned machine, GElf_Shdr *sh, uint8_t **data)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return fail("libelf", file);
	int fd = open(file, O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	GElf_Ehdr eh;
	size_t shstrndx;
	int rc = 0;
	Elf_Scn *scn = NULL;
	Elf_Data *d = NULL;
	int found = 0;
	if (!e || !gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx) != 0) {
		rc = fail("not an ELF file", file);
		goto out;
	}
	if (eh.e_machine != machine) {
		rc = fail("not a file of the expected machine", file);
		goto out;
	}
	while (!found && (scn = elf_nextscn(e, scn)))
		found = gelf_getshdr(scn, sh) && !strcmp(elf_strptr(e, shstrndx, sh->sh_name), ".plt");
	d = found ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf || d->d_size != sh->sh_size || sh->sh_size < 32) {
		rc = fail("no .plt with bits and a stub", file);
		goto out;
	}
	if (data) {
		*data = malloc(d->d_size);
		if (!*data) {
			rc = fail("out of memory", file);
			goto out;
		}
		memcpy(*data, d->d_buf, d->d_size);
	}
out:
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return rc;
}

#if defined(__x86_64__)
#include "cfi/cfi_elf.h"

static int check_x86_64(const char *file, int want_fill)
{
	GElf_Shdr sh;
	if (find_plt(file, 62 /* EM_X86_64 */, &sh, NULL))
		return 1;
	ember__cfi_table *t;
	ember__cfi_module_info info;
	if (ember__cfi_build_file(file, &t, &info) != 0)
		return fail("ember__cfi_build_file", file);
	unsigned bad = 0;
	for (uint64_t pc = sh.sh_addr; pc < sh.sh_addr + sh.sh_size; pc++) {
		uint64_t off = pc - sh.sh_addr;
		int want = off < 6 ? 16 : off < 16 ? 24 : (off & 15) >= 11 ? 16 : 8;
		const ember__cfi_row *r = find_row(t, (uint32_t)pc);
		unsigned k = r ? r->kind & EMBER_CFI_KIND_MASK : EMBER_CFI_NONE;
		int cfa = k == EMBER_CFI_SP    ? r->cfa * 8
			  : k == EMBER_CFI_PLT ? r->cfa * 8 + ((int)(pc & 15) >= r->fp ? 8 : 0)
					       : -1;
		/* kind's high bits: rbx unchanged, rbp not lost, RA defined */
		if (cfa != want || (r->kind & ~EMBER_CFI_KIND_MASK) != 0 ||
		    (k == EMBER_CFI_SP && r->fp != 0)) {
			if (bad++ < 5)
				fprintf(stderr, "  %#llx: kind %#x cfa %d fp %d: CFA rsp+%d, want rsp+%d\n",
					(unsigned long long)pc, r ? r->kind : 0, r ? r->cfa : 0,
					r ? r->fp : 0, cfa, want);
		}
	}
	int from_fill = t->stats.fill_rows > 0 && t->stats.fill_dropped == 0;
	int from_cfi = t->stats.fill_rows == 0 && t->stats.fill_dropped > 0;
	if (want_fill ? !from_fill : !from_cfi)
		bad++, fprintf(stderr, "  rows not from the %s: %u fill rows, %u fills dropped\n",
			       want_fill ? "fill" : "linker's CFI", t->stats.fill_rows,
			       t->stats.fill_dropped);
	printf("%s: .plt %#llx+%#llx, %u fill rows, %u fills dropped: %s\n", file,
	       (unsigned long long)sh.sh_addr, (unsigned long long)sh.sh_size, t->stats.fill_rows,
	       t->stats.fill_dropped, bad ? "FAIL" : "ok");
	ember__cfi_table_free(t);
	return bad ? 1 : 0;
}
#endif

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--x86-64")) {
#if defined(__x86_64__)
		return check_x86_64(argv[2], !strcmp(argv[3], "fill"));
#else
		printf("SKIP: --x86-64 needs an x86-64 host\n");
		return 77;
#endif
	}
	if (argc != 3) {
		fprintf(stderr, "usage: %s FILE PLT0_STP|none\n", argv[0]);
		return 2;
	}
	const char *file = argv[1];
	int has_stp = strcmp(argv[2], "none") != 0;
	uint64_t stp = has_stp ? strtoull(argv[2], NULL, 16) : 0;
	GElf_Shdr sh;
	uint8_t *code = NULL;
	if (find_plt(file, 183 /* EM_AARCH64 */, &sh, &code))
		return 1;
	ember__plt_run runs[EMBER_PLT_RUNS_MAX];
	int n = ember__plt_rows_aarch64(code, sh.sh_size, sh.sh_addr, sh.sh_size, 1, runs,
					EMBER_PLT_RUNS_MAX);
	free(code);
	ember__cfi_builder *b;
	if (n <= 0 || ember__cfi_builder_new(&b) != 0)
		return fail("no PLT runs", file);
	for (int i = 0; i < n; i++)
		if (ember__cfi_add_fill(b, runs[i].start, runs[i].end, &runs[i].row, 1) != 0)
			return fail("add_fill", file);
	ember__cfi_table *t;
	if (ember__cfi_finish(b, &t) != 0)
		return fail("finish", file);

	const unsigned want_kind = EMBER_CFI_SP | (EMBER_CFI_LR_REG << EMBER_CFI_AUX_SHIFT);
	unsigned bad = 0, up = 0;
	for (uint64_t pc = sh.sh_addr; pc < sh.sh_addr + sh.sh_size; pc += 4) {
		const ember__cfi_row *r = find_row(t, (uint32_t)pc);
		int want_cfa = has_stp && pc > stp && pc < sh.sh_addr + 32 ? 2 : 0;
		up += want_cfa != 0;
		if (!r || r->kind != want_kind || r->cfa != want_cfa || r->fp != 0) {
			if (bad++ < 5)
				fprintf(stderr, "  %#llx: row %s kind %#x cfa %d fp %d; want kind %#x cfa %d\n",
					(unsigned long long)pc, r ? "" : "(none)", r ? r->kind : 0,
					r ? r->cfa : 0, r ? r->fp : 0, want_kind, want_cfa);
		}
	}
	const ember__cfi_row *after =
		find_row(t, (uint32_t)(sh.sh_addr + sh.sh_size));
	if (!after || (after->kind & EMBER_CFI_KIND_MASK) != EMBER_CFI_NONE)
		bad++, fprintf(stderr, "  the rows spill past .plt\n");
	if (has_stp && up == 0)
		bad++, fprintf(stderr, "  PLT0_STP %s is not inside .plt's header\n", argv[2]);
	printf("%s: .plt %#llx+%#llx, %u rows, %u fill rows, PLT0 %s (%u instructions at sp+16): %s\n",
	       file, (unsigned long long)sh.sh_addr, (unsigned long long)sh.sh_size, t->nrows,
	       t->stats.fill_rows, has_stp ? "found" : "none", up, bad ? "FAIL" : "ok");
	ember__cfi_table_free(t);
	return bad ? 1 : 0;
}
