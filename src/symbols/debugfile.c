/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debugfile.c - the local-disk search for a module's separate debug file:
 * by build id through libdwfl, then by the .gnu_debuglink name in the
 * usual places (util/elfdebug.h: the one search, shared with the unwind
 * tables and the symbolizer's libelf path), each candidate verified by
 * build id or CRC-32.
 */
#include "symbols/debugfile.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/debugalt.h"
#include "util/elfdebug.h"
#include "util/elfnote.h"
#include "util/ownfd.h"

/* mod's build id's bytes in id[64]: their number (0: none). */
static size_t module_build_id(Dwfl_Module *mod, uint8_t *id)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (n <= 0 || n > 64)
		return 0;
	memcpy(id, bits, (size_t)n);
	return (size_t)n;
}

static ember__debugfile_hooks hooks;
static int hooks_set;

void ember__debugfile_set_hooks(const ember__debugfile_hooks *h)
{
	hooks_set = h != NULL;
	hooks = h ? *h : (ember__debugfile_hooks){0};
}

const ember__debugfile_hooks *ember__debugfile_get_hooks(void)
{
	return hooks_set ? &hooks : NULL;
}

/* The debug file the tools' hook names for the file with build id
 * id[0..n) (the module's, or its dwz alt file's), if it has that build id:
 * an open descriptor (and *found, malloc'd), or -1. */
static int try_hook(const char *path_for_hook, const uint8_t *id, size_t n, char **found)
{
	if (!hooks_set || !hooks.find_debug)
		return -1;
	char hex[2 * 64 + 1];
	ember__build_id_hex(id, n, hex);
	char *path = hooks.find_debug(hooks.arg, path_for_hook, hex);
	if (!path)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && n > 0 && ember__elf_debug_matches(fd, id, n, 0)) {
		*found = path;
		return fd;
	}
	if (fd >= 0)
		close(fd);
	free(path);
	return -1;
}

/*
 * The build-id tree goes through dwfl_build_id_find_debuginfo; the
 * .gnu_debuglink places (next to the file, in its .debug subdirectory,
 * under /usr/lib/debug/<dir>) are tried here. Never
 * dwfl_standard_find_debuginfo: see debugfile.h.
 *
 * libdwfl asks for a module's dwz alt file through this callback too
 * (debugalt.h: debuglink_crc 0, debuglink_file the name file_name's
 * .gnu_debugaltlink records). That one is searched by the alt's own
 * build id, where libdw's own fallback would look, so that libdw never
 * opens it itself; never by the module's build id, which would hand
 * libdwfl the module's debug file as its alt.
 */
int ember__debugfile_find(Dwfl_Module *mod, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
					      debuglink_file, debuglink_crc,
					      debuginfo_file_name);
	uint8_t id[64];
	size_t n = 0, alt = 0;
	if (fd < 0 && debuglink_crc == 0 && debuglink_file)
		alt = ember__debugalt_id(file_name, debuglink_file, id, sizeof(id));
	if (fd < 0 && alt) {
		fd = ember__debugalt_open(file_name, debuglink_file, id, alt, debuginfo_file_name);
		n = alt;
	} else if (fd < 0) {
		n = module_build_id(mod, id);
		fd = ember__elf_debug_open_link(file_name, id, n, debuglink_file, debuglink_crc,
						debuginfo_file_name);
	}
	if (fd < 0) {
		const char *name = file_name ? file_name : modname;
		fd = try_hook(name, id, n, debuginfo_file_name);
	}
	/* libdwfl keeps it open as long as the module: out of the program's
	 * low numbers and not inherited by what it execs (util/ownfd.h) */
	return ember__ownfd_raise(fd);
}
