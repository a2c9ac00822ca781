/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi_elf.c - locating call-frame information in ELF files and images
 * (cfi_elf.h) with libelf, and feeding it to the table builder (cfi.h).
 */
#include "cfi/cfi_elf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "emberprof.h"
#include "unwind/arch.h"
#include "util/dep_elfutils.h"
#include "util/elfdebug.h"
#include "util/elfnote.h"
#include "util/error.h"

#define SHT_X86_64_UNWIND_ 0x70000001 /* .eh_frame's type in some x86-64 objects */
#define BUILD_ID_MAX 64

/* Priorities of the sources (cfi.h: the higher wins on overlap). */
enum { PRIO_DEBUG_FRAME = 1, PRIO_EH_FRAME = 2 };

typedef struct elf_file {
	int fd;
	Elf *elf;
	const uint8_t *raw;
	size_t rawsize;
} elf_file;

static void close_elf(elf_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

/* Opens fd (taken over) or image as an ELF object. 0 or ember_err. */
static int open_elf(int fd, const void *image, size_t image_size, const char *what, elf_file *f)
{
	memset(f, 0, sizeof(*f));
	f->fd = fd;
	int lrc = ember__lazydep_load(&ember__libelf);
	if (lrc < 0) {
		close_elf(f);
		return lrc;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		close_elf(f);
		return ember__error(EMBER_ERR_SYS, "libelf: %s", elf_errmsg(-1));
	}
	f->elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL)
			 : elf_memory((char *)image, image_size);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		close_elf(f);
		return ember__error(EMBER_ERR_FORMAT, "%s: not an ELF object", what);
	}
	char *raw = elf_rawfile(f->elf, &f->rawsize);
	GElf_Ehdr eh;
	if (!raw || !gelf_getehdr(f->elf, &eh)) {
		close_elf(f);
		return ember__error(EMBER_ERR_FORMAT, "%s: unreadable ELF header", what);
	}
	f->raw = (const uint8_t *)raw;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EMBER_ARCH_ELF_MACHINE) {
		close_elf(f);
		return ember__error(EMBER_ERR_UNSUPPORTED, "%s: not a 64-bit %s ELF object", what,
				    EMBER_ARCH_NAME);
	}
	return 0;
}

static int find_phdr(Elf *e, uint32_t type, GElf_Phdr *out)
{
	size_t n;
	if (elf_getphdrnum(e, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, out) && out->p_type == type)
			return 1;
	return 0;
}

/* The PT_LOAD whose file data holds link-time address vaddr. */
static int load_for_vaddr(Elf *e, uint64_t vaddr, GElf_Phdr *out)
{
	size_t n;
	if (elf_getphdrnum(e, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, out) && out->p_type == PT_LOAD && vaddr >= out->p_vaddr &&
		    vaddr - out->p_vaddr < out->p_filesz)
			return 1;
	return 0;
}

/* Section data, decompressed if needed; NULL if absent or without bits. */
static Elf_Data *section_data(Elf *e, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = ember__elf_find_section(e, name, sh);
	if (!scn || sh->sh_type == SHT_NOBITS)
		return NULL;
	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return NULL;
	Elf_Data *d = elf_getdata(scn, NULL);
	return d && d->d_buf && d->d_size ? d : NULL;
}

/* .eh_frame through .eh_frame_hdr, else the section. 0 or ember_err. */
static int add_eh_frame(ember__cfi_builder *b, elf_file *f, ember__cfi_module_info *info)
{
	GElf_Phdr hp, lp;
	GElf_Shdr sh;
	uint64_t eh_vaddr;
	if (find_phdr(f->elf, PT_GNU_EH_FRAME, &hp) && hp.p_offset <= f->rawsize &&
	    hp.p_filesz <= f->rawsize - hp.p_offset &&
	    ember__cfi_eh_frame_hdr_target(f->raw + hp.p_offset, hp.p_filesz, hp.p_vaddr,
					   &eh_vaddr) == 0 &&
	    load_for_vaddr(f->elf, eh_vaddr, &lp) && lp.p_offset <= f->rawsize) {
		uint64_t off = lp.p_offset + (eh_vaddr - lp.p_vaddr);
		uint64_t seg_end = lp.p_offset + lp.p_filesz;
		if (seg_end > f->rawsize)
			seg_end = f->rawsize;
		if (off < seg_end) {
			uint64_t len = seg_end - off;
			/* The section header, where there is one, gives the exact size. */
			if (ember__elf_find_section(f->elf, ".eh_frame", &sh) && sh.sh_addr == eh_vaddr &&
			    sh.sh_type != SHT_NOBITS && sh.sh_size < len)
				len = sh.sh_size;
			int rc = ember__cfi_add_eh_frame_hdr(b, f->raw + hp.p_offset, hp.p_filesz,
							     hp.p_vaddr, f->raw + off, len, eh_vaddr,
							     PRIO_EH_FRAME);
			if (rc == 0) {
				info->used_hdr = 1;
				info->eh_frame_bytes = len;
				return 0;
			}
			if (rc == EMBER_ERR_NOMEM)
				return rc;
		}
	}
	Elf_Scn *scn = ember__elf_find_section(f->elf, ".eh_frame", &sh);
	if (!scn || (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND_))
		return 0;
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return 0;
	info->eh_frame_bytes = d->d_size;
	return ember__cfi_add_section(b, d->d_buf, d->d_size, sh.sh_addr, EMBER_CFI_EH_FRAME,
				      PRIO_EH_FRAME);
}

static int add_debug_frame(ember__cfi_builder *b, Elf *e, ember__cfi_module_info *info)
{
	GElf_Shdr sh;
	Elf_Data *d = section_data(e, ".debug_frame", &sh);
	if (!d)
		return 1;
	info->debug_frame_bytes = d->d_size;
	return ember__cfi_add_section(b, d->d_buf, d->d_size, 0, EMBER_CFI_DEBUG_FRAME,
				      PRIO_DEBUG_FRAME);
}

/*
 * PLT stubs without CFI: the rows the architecture gives .plt and .iplt
 * (arch.h: EMBER_ARCH_PLT_ROWS; aarch64's linkers never describe them,
 * x86-64's lld leaves its lazy .plt without CFI), found by the section
 * headers, kept only where no FDE covers them (ember__cfi_add_fill). A
 * file without section headers gets none.
 * 0 or EMBER_ERR_NOMEM.
 */
static int add_plt(ember__cfi_builder *b, const elf_file *f)
{
	static const char *const names[] = {".plt", ".iplt"};
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		GElf_Shdr sh;
		if (!ember__elf_find_section(f->elf, names[i], &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || sh.sh_offset > f->rawsize)
			continue;
		size_t len = f->rawsize - sh.sh_offset;
		if (len > sh.sh_size)
			len = sh.sh_size;
		ember__plt_run runs[EMBER_PLT_RUNS_MAX];
		int n = EMBER_ARCH_PLT_ROWS(f->raw + sh.sh_offset, len, sh.sh_addr, sh.sh_size, i == 0,
					    runs, EMBER_PLT_RUNS_MAX);
		for (int k = 0; k < n; k++)
			if (ember__cfi_add_fill(b, runs[k].start, runs[k].end, &runs[k].row, 1))
				return EMBER_ERR_NOMEM;
	}
	return 0;
}

/* Copies s into dst[len], truncating. */
static void copy_str(char *dst, size_t len, const char *s)
{
	size_t n = strlen(s);
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/*
 * Opens the separate debug file of `main_elf` (found at main_path), as
 * util/elfdebug.h searches for it. 0 and *df open, or -1.
 */
static int open_debug_file(Elf *main_elf, const char *main_path, elf_file *df, char *found,
			   size_t found_len)
{
	uint8_t id[BUILD_ID_MAX];
	size_t idlen = ember__elf_build_id(main_elf, id, sizeof(id));
	const char *link = NULL;
	uint32_t crc = 0;
	if (!ember__elf_debuglink(main_elf, &link, &crc))
		link = NULL;
	char *path = NULL;
	int fd = ember__elf_debug_open(main_path, id, idlen, link, crc, &path);
	if (fd < 0)
		return -1;
	int rc = open_elf(fd, NULL, 0, path, df);
	if (rc == 0)
		copy_str(found, found_len, path);
	else
		ember__error_clear();
	free(path);
	return rc == 0 ? 0 : -1;
}

/* Everything after the file is open: bias, sources, table. */
static int build(elf_file *f, const char *path, const ember__cfi_module_src *src,
		 ember__cfi_table **out, ember__cfi_module_info *info)
{
	if (src && !ember__elf_load_bias(f->elf, src->map_start, src->map_offset, &info->bias))
		return ember__error(EMBER_ERR_FORMAT, "%s: no loadable segment holds file offset 0x%llx",
				    path, (unsigned long long)src->map_offset);
	ember__cfi_builder *b;
	int rc = ember__cfi_builder_new(&b);
	if (rc)
		return rc;
	rc = add_eh_frame(b, f, info);
	if (rc == 0 && add_debug_frame(b, f->elf, info) == 1 && f->fd >= 0) {
		elf_file df;
		if (open_debug_file(f->elf, path, &df, info->debug_file, sizeof(info->debug_file)) == 0) {
			rc = add_debug_frame(b, df.elf, info);
			if (rc == 1) {
				rc = 0;
				info->debug_file[0] = '\0';
			}
			close_elf(&df);
		}
	}
	if (rc >= 0)
		rc = add_plt(b, f);
	if (rc < 0) {
		ember__cfi_builder_free(b);
		return rc;
	}
	rc = ember__cfi_finish(b, out);
	if (rc)
		return ember__error(rc, "%s: %s", path, "out of memory building the unwind table");
	return 0;
}

/* Opens the mapped file, checking that it is the one mapped. fd or -1. */
static int open_mapped(const ember__cfi_module_src *src)
{
	int fd = open(src->path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && src->inode) {
		struct stat st;
		if (fstat(fd, &st) != 0 || st.st_ino != src->inode || major(st.st_dev) != src->dev_major ||
		    minor(st.st_dev) != src->dev_minor) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0 && src->map_end) {
		/* Replaced or deleted on disk: the mapping's own file, if the
		 * kernel lets us open it. */
		char mf[64];
		snprintf(mf, sizeof(mf), "/proc/self/map_files/%llx-%llx",
			 (unsigned long long)src->map_start, (unsigned long long)src->map_end);
		fd = open(mf, O_RDONLY | O_CLOEXEC);
	}
	return fd;
}

int ember__cfi_build_module(const ember__cfi_module_src *src, ember__cfi_table **out,
			    ember__cfi_module_info *info)
{
	*out = NULL;
	memset(info, 0, sizeof(*info));
	const char *what = src->path ? src->path : "[vdso]";
	elf_file f;
	int rc;
	if (src->path) {
		int fd = open_mapped(src);
		if (fd < 0)
			return ember__error_errno(EMBER_ERR_IO, errno,
						  "%s: cannot open the mapped file (changed on disk?)", what);
		rc = open_elf(fd, NULL, 0, what, &f);
	} else {
		rc = open_elf(-1, src->image, src->image_size, what, &f);
	}
	if (rc)
		return rc;
	rc = build(&f, what, src, out, info);
	close_elf(&f);
	return rc;
}

int ember__cfi_build_file(const char *path, ember__cfi_table **out, ember__cfi_module_info *info)
{
	*out = NULL;
	memset(info, 0, sizeof(*info));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "%s", path);
	elf_file f;
	int rc = open_elf(fd, NULL, 0, path, &f);
	if (rc)
		return rc;
	rc = build(&f, path, NULL, out, info);
	close_elf(&f);
	return rc;
}
