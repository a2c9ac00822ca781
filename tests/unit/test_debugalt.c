/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_debugalt.c - the dwz alt file search (src/symbols/debugalt.c) on
 * small ELF files written here byte by byte (no tool in between, so each
 * malformed section is exactly what the case says):
 *  - a debug file whose .gnu_debugaltlink names "alt.debug" and a build id:
 *    the request is recognised and the id read; another name is not it;
 *  - the alt file is found relative to the debug file's directory (also
 *    when the debug file is reached through a symbolic link elsewhere),
 *    and by an absolute path, only when its build id is the recorded one;
 *  - malformed sections (no NUL after the name, no build id, an id longer
 *    than the caller's room, no section, not an ELF file, no file) are
 *    "not an alt request", never a crash.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "symbols/debugalt.h"
#include "util/dep_elfutils.h"
#include "util/lazydep.h"

static char dir[96]; /* check_rm_rf takes short paths */

typedef struct section {
	const char *name;
	uint32_t type;
	const void *data;
	size_t size;
} section;

/* Writes a 64-bit ELF file of the host's byte order with these sections
 * (and .shstrtab) at dir/name. */
static void write_elf(const char *name, const section *s, size_t n)
{
	unsigned char buf[4096] = {0};
	size_t off = sizeof(Elf64_Ehdr);
	Elf64_Shdr sh[8] = {0};
	char strtab[256] = "";
	size_t strsz = 1;
	for (size_t i = 0; i < n; i++) {
		memcpy(buf + off, s[i].data, s[i].size);
		sh[i + 1] = (Elf64_Shdr){.sh_name = (uint32_t)strsz, .sh_type = s[i].type,
					 .sh_offset = off, .sh_size = s[i].size, .sh_addralign = 1};
		off += (s[i].size + 7) & ~(size_t)7;
		strcpy(strtab + strsz, s[i].name);
		strsz += strlen(s[i].name) + 1;
	}
	sh[n + 1] = (Elf64_Shdr){.sh_name = (uint32_t)strsz, .sh_type = SHT_STRTAB,
				 .sh_offset = off, .sh_addralign = 1};
	strcpy(strtab + strsz, ".shstrtab");
	strsz += sizeof(".shstrtab");
	sh[n + 1].sh_size = strsz;
	memcpy(buf + off, strtab, strsz);
	off = (off + strsz + 7) & ~(size_t)7;
	Elf64_Ehdr eh = {.e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			 .e_shoff = off, .e_ehsize = sizeof(Elf64_Ehdr),
			 .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = (uint16_t)(n + 2),
			 .e_shstrndx = (uint16_t)(n + 1)};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(buf, &eh, sizeof(eh));
	memcpy(buf + off, sh, (n + 2) * sizeof(Elf64_Shdr));
	off += (n + 2) * sizeof(Elf64_Shdr);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(buf, 1, off, f) == off);
	if (f)
		fclose(f);
}

static const uint8_t alt_id[20] = {0xc5, 0xc8, 0xab, 0xa7, 0xaf, 0xf1, 0x18, 0xe2, 0xe3, 0x6d,
				   0x51, 0x2a, 0xe5, 0x73, 0xf1, 0x3f, 0x1f, 0xbc, 0x20, 0x01};

/* A debug file whose .gnu_debugaltlink is link, NUL, then id[0..id_len). */
static void write_debug(const char *name, const char *link, const uint8_t *id, size_t id_len)
{
	unsigned char s[512];
	size_t n = strlen(link) + 1;
	memcpy(s, link, n);
	memcpy(s + n, id, id_len);
	section sec = {".gnu_debugaltlink", SHT_PROGBITS, s, n + id_len};
	write_elf(name, &sec, 1);
}

/* An alt file: a build-id note with id[0..20). */
static void write_alt(const char *name, const uint8_t *id)
{
	unsigned char note[12 + 4 + 20];
	uint32_t h[3] = {4, 20, NT_GNU_BUILD_ID};
	memcpy(note, h, sizeof(h));
	memcpy(note + 12, "GNU", 4);
	memcpy(note + 16, id, 20);
	section sec = {".note.gnu.build-id", SHT_NOTE, note, sizeof(note)};
	write_elf(name, &sec, 1);
}

static void path_of(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

static void test_recognised_and_found_relative(void)
{
	char dbg[PATH_MAX], alt[PATH_MAX];
	write_debug("prog.debug", "dwz/alt.debug", alt_id, sizeof(alt_id));
	path_of(alt, "dwz");
	CHECK_EQ_INT(mkdir(alt, 0700), 0);
	write_alt("dwz/alt.debug", alt_id);
	path_of(dbg, "prog.debug");
	path_of(alt, "dwz/alt.debug");
	uint8_t id[64];
	size_t n = ember__debugalt_id(dbg, "dwz/alt.debug", id, sizeof(id));
	CHECK_EQ_INT(n, sizeof(alt_id));
	CHECK(memcmp(id, alt_id, sizeof(alt_id)) == 0);
	/* the debuglink lookup of a file that has an alt link: not the alt */
	CHECK_EQ_INT(ember__debugalt_id(dbg, "prog.debug", id, sizeof(id)), 0);
	char *found = NULL;
	int fd = ember__debugalt_open(dbg, "dwz/alt.debug", id, n, &found);
	CHECK(fd >= 0);
	CHECK_EQ_STR(found, alt);
	if (fd >= 0)
		close(fd);
	free(found);
}

/* The debug file reached through a symbolic link elsewhere (a build-id
 * tree's): its relative alt path is resolved from where the file is. */
static void test_relative_through_symlink(void)
{
	char dbg[PATH_MAX], lnk[PATH_MAX], alt[PATH_MAX];
	path_of(dbg, "lib");
	CHECK_EQ_INT(mkdir(dbg, 0700), 0);
	path_of(dbg, "ids");
	CHECK_EQ_INT(mkdir(dbg, 0700), 0);
	path_of(alt, "lib/alt.debug");
	write_alt("lib/alt.debug", alt_id);
	write_debug("lib/foo.debug", "alt.debug", alt_id, sizeof(alt_id));
	path_of(dbg, "lib/foo.debug");
	path_of(lnk, "ids/ab.debug");
	CHECK_EQ_INT(symlink(dbg, lnk), 0);
	uint8_t id[64];
	size_t n = ember__debugalt_id(lnk, "alt.debug", id, sizeof(id));
	CHECK_EQ_INT(n, sizeof(alt_id));
	char *found = NULL;
	int fd = ember__debugalt_open(lnk, "alt.debug", id, n, &found);
	CHECK(fd >= 0);
	CHECK(found && strstr(found, "/lib/alt.debug"));
	if (fd >= 0)
		close(fd);
	free(found);
}

static void test_absolute_and_checked_by_build_id(void)
{
	char dbg[PATH_MAX], alt[PATH_MAX];
	path_of(alt, "abs-alt.debug");
	write_alt("abs-alt.debug", alt_id);
	write_debug("abs.debug", alt, alt_id, sizeof(alt_id));
	path_of(dbg, "abs.debug");
	uint8_t id[64];
	size_t n = ember__debugalt_id(dbg, alt, id, sizeof(id));
	CHECK_EQ_INT(n, sizeof(alt_id));
	char *found = NULL;
	int fd = ember__debugalt_open(dbg, alt, id, n, &found);
	CHECK(fd >= 0);
	CHECK_EQ_STR(found, alt);
	if (fd >= 0)
		close(fd);
	free(found);
	/* another build id at that path (a rebuilt common file): not it */
	uint8_t other[20];
	memcpy(other, alt_id, sizeof(other));
	other[19] ^= 0xff;
	write_alt("abs-alt.debug", other);
	found = NULL;
	CHECK_EQ_INT(ember__debugalt_open(dbg, alt, id, n, &found), -1);
	CHECK(found == NULL);
	/* a missing file, a relative name with nothing there */
	CHECK_EQ_INT(ember__debugalt_open(dbg, "nowhere.debug", id, n, &found), -1);
	CHECK_EQ_INT(ember__debugalt_open(dbg, "", id, n, &found), -1);
}

static void test_malformed_is_not_an_alt(void)
{
	char p[PATH_MAX];
	uint8_t id[64];
	/* the name runs to the section's end: no NUL, no id */
	section sec = {".gnu_debugaltlink", SHT_PROGBITS, "alt.debug", 9};
	write_elf("nonul.debug", &sec, 1);
	path_of(p, "nonul.debug");
	CHECK_EQ_INT(ember__debugalt_id(p, "alt.debug", id, sizeof(id)), 0);
	/* a NUL-ended name and no build id */
	write_debug("noid.debug", "alt.debug", alt_id, 0);
	path_of(p, "noid.debug");
	CHECK_EQ_INT(ember__debugalt_id(p, "alt.debug", id, sizeof(id)), 0);
	/* an id longer than the room given */
	write_debug("long.debug", "alt.debug", alt_id, sizeof(alt_id));
	path_of(p, "long.debug");
	CHECK_EQ_INT(ember__debugalt_id(p, "alt.debug", id, 8), 0);
	/* an empty section */
	section empty = {".gnu_debugaltlink", SHT_PROGBITS, "", 0};
	write_elf("empty.debug", &empty, 1);
	path_of(p, "empty.debug");
	CHECK_EQ_INT(ember__debugalt_id(p, "", id, sizeof(id)), 0);
	/* no such section: an alt file itself */
	path_of(p, "abs-alt.debug");
	CHECK_EQ_INT(ember__debugalt_id(p, "alt.debug", id, sizeof(id)), 0);
	/* not an ELF file; no file; no name */
	path_of(p, "text");
	FILE *f = fopen(p, "w");
	if (f) {
		fputs("not an ELF file\n", f);
		fclose(f);
	}
	CHECK_EQ_INT(ember__debugalt_id(p, "alt.debug", id, sizeof(id)), 0);
	path_of(p, "missing.debug");
	CHECK_EQ_INT(ember__debugalt_id(p, "alt.debug", id, sizeof(id)), 0);
	CHECK_EQ_INT(ember__debugalt_id(NULL, "alt.debug", id, sizeof(id)), 0);
	CHECK_EQ_INT(ember__debugalt_id(p, NULL, id, sizeof(id)), 0);
	char *found = NULL;
	CHECK_EQ_INT(ember__debugalt_open(p, "alt.debug", id, 0, &found), -1);
}

int main(void)
{
	if (ember__lazydep_load(&ember__libelf) < 0) {
		fprintf(stderr, "libelf.so.1 cannot be loaded\n");
		return 1;
	}
	elf_version(EV_CURRENT);
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/ember-debugalt-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_recognised_and_found_relative);
	RUN(test_relative_through_symlink);
	RUN(test_absolute_and_checked_by_build_id);
	RUN(test_malformed_is_not_an_alt);
	check_rm_rf(dir);
	return CHECK_DONE();
}
