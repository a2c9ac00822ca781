/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debugfile.h - finding the separate debug file of a module on the local
 * disk, for libdwfl, without debuginfod.
 *
 * The search is the local part of what elfutils' standard search does:
 * first the build-id tree (/usr/lib/debug/.build-id/xx/yyyy.debug), then
 * the name that the file's .gnu_debuglink section records, looked for next
 * to the file, in its .debug subdirectory and under /usr/lib/debug/<dir>.
 * A candidate found by name is accepted only if it matches the module: by
 * build id when the module has one, else by the CRC-32 in .gnu_debuglink.
 * libdwfl's request for a module's dwz alt file (.gnu_debugaltlink) is
 * told apart and searched by the alt's own build id (symbols/debugalt.h).
 *
 * It exists so that the profiled process never calls
 * dwfl_standard_find_debuginfo: elfutils 0.188 ends that search by
 * dlopen'ing libdebuginfod (which pulls about thirty libraries such as
 * libcurl, gnutls and krb5 into the process even when DEBUGINFOD_URLS is
 * unset) and, when it is set, by downloading debug info over the network
 * from inside the profiled process. The tools add their own sources
 * (debuginfod among them) through the hooks below, in the CLI's process.
 */
#ifndef EMBER_DEBUGFILE_H
#define EMBER_DEBUGFILE_H

#include "util/dep_elfutils.h"

/*
 * A Dwfl_Callbacks.find_debuginfo callback (same signature and arguments
 * as dwfl_standard_find_debuginfo). On success returns an open, read-only
 * file descriptor of the debug file and sets
 * *debuginfo_file_name to a malloc'd copy of its path; both then belong to
 * the caller (libdwfl closes and frees them). Returns a negative value
 * when no matching debug file is found; there is then nothing to release.
 * Only reads the disk; no network access. Called by libdwfl on the agent
 * thread while modules load; not async-signal-safe.
 */
int ember__debugfile_find(Dwfl_Module *mod, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name);

/*
 * Where files come from beyond the local disk: the tools (the emberprof
 * CLI, tools/) set these to hand the symbolizer files they found
 * themselves (debuginfod's cache, --debug-dir trees, a sysroot), without
 * src/ knowing how. Never set in a profiled process: the library leaves
 * them NULL, and the search above stays local.
 *
 * find_debug: a debug file for the module whose file is `path` and whose
 * GNU build id is `build_id` (lowercase hex, "" if none), asked after the
 * local search found none. Returns a malloc'd path (the caller frees it;
 * the file is still checked against the module's build id), or NULL.
 *
 * find_elf: the file to read for a module the process mapped from `path`
 * (the profile's file name, which may not be on this machine, or be
 * another build there): a malloc'd path to read instead, "" (malloc'd) for
 * "no file at all" (the module then has no names), or NULL to read `path`
 * itself.
 *
 * Both are called by libdwfl's callbacks on the thread using a
 * symbolizer; arg is passed back. Not async-signal-safe.
 */
typedef struct ember__debugfile_hooks {
	char *(*find_debug)(void *arg, const char *path, const char *build_id);
	char *(*find_elf)(void *arg, const char *path);
	void *arg;
} ember__debugfile_hooks;

/* Sets the hooks (copied; NULL clears them). Set them before the
 * symbolizers that are to use them load modules, and never while another
 * thread symbolizes. */
void ember__debugfile_set_hooks(const ember__debugfile_hooks *h);

/* The hooks set, or NULL. */
const ember__debugfile_hooks *ember__debugfile_get_hooks(void);

#endif
