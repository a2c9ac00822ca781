/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfo_file.c - the build ID, the type and the bytes of a file to
 * upload (see debuginfo_file.h), read with elfutils from a read-only
 * mapping of the whole file: the same mapping is the body of the upload.
 */
#include "debuginfo/debuginfo_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emberprof.h"
#include "util/dep_elfutils.h"
#include "util/error.h"

const char *ember__dbg_type_name(int type)
{
	return type == EMBER__DBG_TYPE_EXECUTABLE_NO_TEXT ? "executable-no-text"
							  : "executable-full";
}

/* The section's name, or "". */
static const char *scn_name(Elf *e, size_t shstrndx, const GElf_Shdr *sh)
{
	const char *n = elf_strptr(e, shstrndx, sh->sh_name);
	return n ? n : "";
}

/* Reads the sections of the ELF file in f->data into f. 0 or an error naming `path`. */
static int probe(const char *path, ember__dbgfile *f)
{
	Elf *e = elf_memory((char *)f->data, f->size);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		return ember__error(EMBER_ERR_FORMAT, "'%s' is not an ELF file", path);
	}
	int rc = 0;
	GElf_Ehdr eh;
	size_t shstrndx;
	if (!gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx) < 0) {
		rc = ember__error(EMBER_ERR_FORMAT, "'%s': unreadable ELF headers: %s", path,
				  elf_errmsg(-1));
		goto out;
	}
	int code_bytes = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = scn_name(e, shstrndx, &sh);
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS && sh.sh_size > 0)
			code_bytes = 1;
		if (sh.sh_type != SHT_NOBITS && sh.sh_size > 0 &&
		    (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			f->has_debug_info = 1;
		if (sh.sh_type == SHT_SYMTAB && sh.sh_entsize && sh.sh_size / sh.sh_entsize > 1)
			f->has_symtab = 1;
	}
	f->type = code_bytes ? EMBER__DBG_TYPE_EXECUTABLE_FULL : EMBER__DBG_TYPE_EXECUTABLE_NO_TEXT;
	const void *id = NULL;
	ssize_t n = dwelf_elf_gnu_build_id(e, &id);
	if (n <= 0 || !id) {
		rc = ember__error(EMBER_ERR_FORMAT, "'%s' has no GNU build ID (no .note.gnu.build-id "
				  "note): the server files debug information by build ID; link "
				  "with -Wl,--build-id", path);
		goto out;
	}
	if (n > EMBER__DBG_BUILD_ID_MAX) {
		rc = ember__error(EMBER_ERR_FORMAT, "'%s' has a %zd-byte build ID; Pyroscope takes "
				  "at most %d bytes (40 hex digits)", path, n,
				  EMBER__DBG_BUILD_ID_MAX);
		goto out;
	}
	static const char hex[] = "0123456789abcdef";
	for (ssize_t i = 0; i < n; i++) {
		uint8_t b = ((const uint8_t *)id)[i];
		f->build_id[2 * i] = hex[b >> 4];
		f->build_id[2 * i + 1] = hex[b & 15];
	}
	f->build_id[2 * n] = '\0';
out:
	elf_end(e);
	return rc;
}

int ember__dbgfile_open(const char *path, ember__dbgfile *f)
{
	memset(f, 0, sizeof(*f));
	int rc = ember__lazydep_load(&ember__elfutils);
	if (rc < 0)
		return rc;
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot open '%s'", path);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		rc = ember__error_errno(EMBER_ERR_IO, errno, "cannot stat '%s'", path);
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return ember__error(EMBER_ERR_FORMAT, "'%s' is %s, not an ELF file", path,
				    S_ISREG(st.st_mode) ? "empty" : "not a regular file");
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	int err = errno;
	close(fd);
	if (m == MAP_FAILED)
		return ember__error_errno(EMBER_ERR_IO, err, "cannot map '%s'", path);
	f->data = m;
	f->size = (size_t)st.st_size;
	if ((rc = probe(path, f))) {
		ember__dbgfile_close(f);
		return rc;
	}
	return 0;
}

void ember__dbgfile_close(ember__dbgfile *f)
{
	if (f->data)
		munmap((void *)f->data, f->size);
	memset(f, 0, sizeof(*f));
}
