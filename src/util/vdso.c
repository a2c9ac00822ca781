/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vdso.c - this process's vDSO image (vdso.h).
 */
#include "util/vdso.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>

const void *ember__vdso_image(size_t *size)
{
	const ElfW(Ehdr) *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
	*size = 0;
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return NULL;
	const ElfW(Phdr) *ph = (const void *)((const char *)eh + eh->e_phoff);
	size_t n = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > n)
			n = ph[i].p_offset + ph[i].p_filesz;
	size_t sh = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	*size = sh > n ? sh : n;
	return eh;
}
