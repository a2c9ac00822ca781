/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfnote.c - the GNU build id of an ELF object through libelf (elfnote.h).
 */
#include "util/elfnote.h"

#include <string.h>

/* The build id among the notes of d (note data as libelf gives it). */
static size_t note_build_id(Elf_Data *d, uint8_t *out, size_t max)
{
	size_t off = 0, name_off, desc_off, next;
	GElf_Nhdr nh;
	while (off < d->d_size && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz > 0 &&
		    nh.n_descsz <= max) {
			memcpy(out, (const char *)d->d_buf + desc_off, nh.n_descsz);
			return nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

size_t ember__elf_build_id(Elf *e, uint8_t *out, size_t max)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int sections = 0;
	while ((scn = elf_nextscn(e, scn))) {
		sections = 1;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? note_build_id(d, out, max) : 0;
		if (n)
			return n;
	}
	if (sections)
		return 0;
	/* No section headers: the PT_NOTE segments (as libdw reads them). */
	size_t nph = 0;
	if (elf_getphdrnum(e, &nph) != 0)
		return 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
						   ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		size_t n = d ? note_build_id(d, out, max) : 0;
		if (n)
			return n;
	}
	return 0;
}

void ember__build_id_hex(const uint8_t *id, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * n] = '\0';
}
