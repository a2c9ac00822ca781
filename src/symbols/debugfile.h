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
 *
 * It exists so that the profiled process never calls
 * dwfl_standard_find_debuginfo: elfutils 0.188 ends that search by
 * dlopen'ing libdebuginfod (which pulls about thirty libraries such as
 * libcurl, gnutls and krb5 into the process even when DEBUGINFOD_URLS is
 * unset) and, when it is set, by downloading debug info over the network
 * from inside the profiled process.
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

#endif
