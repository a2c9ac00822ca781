/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfo_file.h - what `emberprof debuginfo upload` needs to know about
 * one ELF file before sending it to a Grafana Pyroscope server: its GNU
 * build ID (from the .note.gnu.build-id note), the FileMetadata.Type the
 * server's debuginfo.v1alpha1 proto asks for, and its bytes.
 *
 * The type (api/debuginfo/v1alpha1/debuginfo.proto, FileMetadata.Type):
 * TYPE_EXECUTABLE_FULL for a file that still holds its code (an unstripped
 * or stripped executable or library: some executable section has bytes),
 * TYPE_EXECUTABLE_NO_TEXT for a separate debug file (objcopy
 * --only-keep-debug, /usr/lib/debug/.build-id/xx/yyyy.debug: the
 * executable sections are SHT_NOBITS). The server refuses
 * TYPE_UNSPECIFIED.
 *
 * Offline code (the emberprof command only). Nothing here is
 * async-signal-safe.
 */
#ifndef EMBER_TOOLS_DEBUGINFO_FILE_H
#define EMBER_TOOLS_DEBUGINFO_FILE_H

#include <stddef.h>
#include <stdint.h>

/* FileMetadata.Type values of debuginfo.v1alpha1. */
#define EMBER__DBG_TYPE_EXECUTABLE_FULL 1
#define EMBER__DBG_TYPE_EXECUTABLE_NO_TEXT 2

/* The longest build ID the server takes: ^[a-fA-F0-9]{2,40}$ (store.go). */
#define EMBER__DBG_BUILD_ID_MAX 20

typedef struct ember__dbgfile {
	char build_id[2 * EMBER__DBG_BUILD_ID_MAX + 1]; /* lowercase hex */
	int type;                  /* EMBER__DBG_TYPE_* */
	int has_debug_info;        /* a .debug_info (or .zdebug_info) section with bytes */
	int has_symtab;            /* a .symtab with entries */
	const uint8_t *data;       /* the whole file, mapped read-only; owned */
	size_t size;
} ember__dbgfile;

/*
 * Maps the file at `path` and reads what is above into *f. Returns 0, or a
 * negative ember_err with a message naming the file: EMBER_ERR_IO (cannot
 * open or map), EMBER_ERR_FORMAT (not an ELF file; no GNU build ID; a
 * build ID longer than the server accepts), EMBER_ERR_UNSUPPORTED
 * (elfutils cannot be loaded). *f needs ember__dbgfile_close() only after
 * success.
 */
int ember__dbgfile_open(const char *path, ember__dbgfile *f);

/* Unmaps the file. A zeroed *f is fine. */
void ember__dbgfile_close(ember__dbgfile *f);

/* "executable-full" or "executable-no-text" (profilecli's --type names). */
const char *ember__dbg_type_name(int type);

#endif
