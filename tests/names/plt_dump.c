/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plt_dump.c - prints the PLT stubs of an ELF file as emberprof names them
 * (src/symbols/pltsyms.h), one "ADDR SIZE NAME" line each, addresses in
 * hex as the file's virtual addresses. For test_plt_objdump.sh, which
 * compares them with objdump's synthetic symbols.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "symbols/pltsyms.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: ember_plt_dump ELF-FILE\n");
		return 2;
	}
	elf_version(EV_CURRENT);
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!elf) {
		fprintf(stderr, "ember_plt_dump: cannot read %s\n", argv[1]);
		return 1;
	}
	ember__arena names = EMBER_ARENA_INIT;
	ember__plt_stub *stubs;
	size_t n;
	if (ember__plt_stubs(elf, &names, &stubs, &n) != 0) {
		fprintf(stderr, "ember_plt_dump: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		printf("%llx %llx %s\n", (unsigned long long)stubs[i].addr,
		       (unsigned long long)stubs[i].size, stubs[i].name);
	free(stubs);
	ember__arena_release(&names);
	elf_end(elf);
	close(fd);
	return 0;
}
