/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfdebug.c - the separate debug file of an ELF file found on the local
 * disk, and a mapping's load bias, with libelf alone (elfdebug.h).
 */
#include "util/elfdebug.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/dep_zlib.h"
#include "util/elfnote.h"

#define BUILD_ID_MAX 64

Elf_Scn *ember__elf_find_section(Elf *e, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return NULL;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, sh))
			continue;
		const char *n = elf_strptr(e, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

int ember__elf_debuglink(Elf *e, const char **name, uint32_t *crc)
{
	GElf_Shdr sh;
	Elf_Scn *scn = ember__elf_find_section(e, ".gnu_debuglink", &sh);
	Elf_Data *d = scn && sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf)
		return 0;
	const char *s = d->d_buf;
	size_t nlen = strnlen(s, d->d_size);
	size_t crc_off = (nlen + 4) & ~(size_t)3;
	if (nlen == 0 || nlen == d->d_size || crc_off + 4 > d->d_size)
		return 0;
	memcpy(crc, s + crc_off, 4);
	*name = s;
	return 1;
}

int ember__elf_debug_matches(int fd, const uint8_t *id, size_t id_len, uint32_t crc)
{
	if (id_len > 0) {
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		uint8_t got[BUILD_ID_MAX];
		size_t n = elf && elf_kind(elf) == ELF_K_ELF ? ember__elf_build_id(elf, got, sizeof(got))
							     : 0;
		if (elf)
			elf_end(elf);
		return n == id_len && memcmp(got, id, n) == 0;
	}
	unsigned char buf[16384];
	uLong c = crc32(0L, Z_NULL, 0);
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)r);
	if (lseek(fd, 0, SEEK_SET) != 0)
		return 0;
	return r == 0 && (uint32_t)c == crc;
}

/* Opens path if it is not the main file (main_st) and matches. */
static int try_file(const char *path, const struct stat *main_st, const uint8_t *id,
		    size_t id_len, uint32_t crc, char **found)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 ||
	    (main_st && st.st_dev == main_st->st_dev && st.st_ino == main_st->st_ino) ||
	    !ember__elf_debug_matches(fd, id, id_len, crc) || !(*found = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

int ember__elf_debug_open_link(const char *main_path, const uint8_t *id, size_t id_len,
			       const char *link, uint32_t crc, char **found)
{
	if (!link || !main_path || main_path[0] != '/')
		return -1;
	struct stat main_st;
	if (stat(main_path, &main_st) != 0)
		return -1;
	const char *slash = strrchr(main_path, '/');
	int dirlen = (int)(slash - main_path);
	const char *base = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	static const char *const fmts[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
	for (size_t i = 0; i < sizeof(fmts) / sizeof(*fmts); i++) {
		char path[PATH_MAX];
		int n = snprintf(path, sizeof(path), fmts[i], dirlen, main_path, base);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		int fd = try_file(path, &main_st, id, id_len, crc, found);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

int ember__elf_debug_open(const char *main_path, const uint8_t *id, size_t id_len,
			  const char *link, uint32_t crc, char **found)
{
	if (id_len >= 2) {
		char path[PATH_MAX];
		int n = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", id[0]);
		for (size_t i = 1; i < id_len; i++)
			n += snprintf(path + n, sizeof(path) - (size_t)n, "%02x", id[i]);
		snprintf(path + n, sizeof(path) - (size_t)n, ".debug");
		struct stat main_st;
		int have_main = main_path && stat(main_path, &main_st) == 0;
		int fd = try_file(path, have_main ? &main_st : NULL, id, id_len, 0, found);
		if (fd >= 0)
			return fd;
	}
	return ember__elf_debug_open_link(main_path, id, id_len, link, crc, found);
}

int ember__elf_load_bias(Elf *e, uint64_t map_start, uint64_t map_offset, uint64_t *bias)
{
	size_t n;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	if (elf_getphdrnum(e, &n) != 0)
		return 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (pass == 0 && !(ph.p_flags & PF_X))
				continue; /* prefer the code segment */
			uint64_t lo = ph.p_offset & ~(page - 1);
			if (map_offset >= lo &&
			    map_offset < ph.p_offset + (ph.p_filesz ? ph.p_filesz : 1)) {
				*bias = map_start - (ph.p_vaddr + map_offset - ph.p_offset);
				return 1;
			}
		}
	return 0;
}
