/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dep_elfutils.h - elfutils, as two libraries loaded on first use
 * (util/lazydep.h). Include this instead of <libelf.h>, <gelf.h>, <dwarf.h>
 * and the <elfutils/...> headers: after it, every function listed below is
 * called through a table, and the first call loads its library:
 *   - elf_* and gelf_* through ember__libelf_fn: libelf.so.1, which needs
 *     only zlib. Reading ELF headers, sections, symbol tables and
 *     .eh_frame (the unwind tables, the symbolizer's direct readers, and
 *     the names of every module without DWARF or MiniDebugInfo:
 *     symbols/symbolizer_elf.c) needs no more. Callers check
 *     ember__lazydep_load(&ember__libelf) first.
 *   - dwarf_*, dwfl_* and dwelf_* through ember__elfutils_fn: libdw.so.1,
 *     which brings liblzma and libbz2 (and libelf, the same instance when
 *     libelf.so.1 is loaded already, so Elf handles are shared). Callers
 *     check ember__lazydep_load(&ember__elfutils) first.
 * A process that only reads ELF (no DWARF, no MiniDebugInfo) so never maps
 * libdw, liblzma or libbz2: a profiled program whose agent names functions
 * maps them only once a sample lands in a module whose DWARF it wants
 * (file and line, inline frames) or that has only MiniDebugInfo.
 *
 * A function not listed here is an undefined symbol in libemberprof.so,
 * which is linked with --no-undefined: add it to both lists.
 *
 * Not async-signal-safe (nothing of elfutils is).
 */
#ifndef EMBER_UTIL_DEP_ELFUTILS_H
#define EMBER_UTIL_DEP_ELFUTILS_H

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>

#include "util/lazydep.h"

/* libdw's own functions (libdw.so.1: libdw, libdwfl, libdwelf). */
#define EMBER__ELFUTILS_FNS(X) \
	X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_child) X(dwarf_diecu) X(dwarf_dieoffset) X(dwarf_errno) \
	X(dwarf_filesrc) X(dwarf_formstring) X(dwarf_formudata) X(dwarf_get_units) \
	X(dwarf_getsrcfiles) X(dwarf_haspc) X(dwarf_new_oom_handler) X(dwarf_offdie) \
	X(dwarf_ranges) X(dwarf_siblingof) X(dwarf_tag) X(dwelf_elf_gnu_build_id) X(dwfl_begin) \
	X(dwfl_build_id_find_debuginfo) X(dwfl_end) X(dwfl_errmsg) X(dwfl_getmodules) \
	X(dwfl_lineinfo) X(dwfl_linux_proc_find_elf) X(dwfl_module_build_id) \
	X(dwfl_module_getdwarf) X(dwfl_module_getelf) X(dwfl_module_getsrc) \
	X(dwfl_module_getsym_info) X(dwfl_module_getsymtab) X(dwfl_module_info) \
	X(dwfl_report_begin) X(dwfl_report_end) X(dwfl_report_module) X(dwfl_version)

/* libelf's (libelf.so.1). */
#define EMBER__LIBELF_FNS(X) \
	X(elf_begin) X(elf_cntl) X(elf_compress) X(elf_end) X(elf_errmsg) X(elf_errno) X(elf_getdata) X(elf_getdata_rawchunk) X(elf_getphdrnum) \
	X(elf_getscn) X(elf_getshdrstrndx) X(elf_kind) X(elf_memory) X(elf_nextscn) \
	X(elf_rawfile) X(elf_strptr) X(elf_version) X(gelf_getehdr) X(gelf_getnote) \
	X(gelf_getphdr) X(gelf_getrel) X(gelf_getrela) X(gelf_getshdr) X(gelf_getsym)

struct ember__libelf_fns {
	EMBER__LIBELF_FNS(EMBER__LAZYDEP_SLOT)
};
extern struct ember__libelf_fns ember__libelf_fn;
extern struct ember__lazydep ember__libelf;

struct ember__elfutils_fns {
	EMBER__ELFUTILS_FNS(EMBER__LAZYDEP_SLOT)
};
extern struct ember__elfutils_fns ember__elfutils_fn;
extern struct ember__lazydep ember__elfutils;

/*
 * libelf and libdw keep their error codes in thread-local variables.
 * Loaded with dlopen, those live in glibc's dynamic TLS, allocated with malloc
 * on a thread's first access, and glibc ends the process when that malloc
 * fails ("cannot allocate memory for thread-local data: ABORT"). So every
 * thread makes that first access itself, in ember__libelf_thread_init
 * (libelf's, before its first elf_* call) and ember__elfutils_thread_init
 * (libelf's then libdw's, before its first libdw call), right after it has
 * reserved and released 64 KiB: the allocation is then served from memory
 * the thread's arena already holds. When even the reservation fails, the
 * thread is not marked ready and tries again at its next call. The marks
 * are in the library's static TLS (no allocation).
 */
extern __thread int ember__libelf_thread_ready;
extern __thread int ember__elfutils_thread_ready;
void ember__libelf_thread_init(void);
void ember__elfutils_thread_init(void);

#define EMBER__ELFUTILS_CALL(f)                                                                    \
	((ember__elfutils_thread_ready ? (void)0 : ember__elfutils_thread_init()),                 \
	 *ember__elfutils_fn.p_##f)
#define EMBER__LIBELF_CALL(f)                                                                      \
	((ember__libelf_thread_ready ? (void)0 : ember__libelf_thread_init()), *ember__libelf_fn.p_##f)
#define dwarf_attr                   EMBER__ELFUTILS_CALL(dwarf_attr)
#define dwarf_attr_integrate         EMBER__ELFUTILS_CALL(dwarf_attr_integrate)
#define dwarf_child                  EMBER__ELFUTILS_CALL(dwarf_child)
#define dwarf_diecu                  EMBER__ELFUTILS_CALL(dwarf_diecu)
#define dwarf_errno                  EMBER__ELFUTILS_CALL(dwarf_errno)
#define dwarf_dieoffset              EMBER__ELFUTILS_CALL(dwarf_dieoffset)
#define dwarf_filesrc                EMBER__ELFUTILS_CALL(dwarf_filesrc)
#define dwarf_formstring             EMBER__ELFUTILS_CALL(dwarf_formstring)
#define dwarf_formudata              EMBER__ELFUTILS_CALL(dwarf_formudata)
#define dwarf_get_units              EMBER__ELFUTILS_CALL(dwarf_get_units)
#define dwarf_getsrcfiles            EMBER__ELFUTILS_CALL(dwarf_getsrcfiles)
#define dwarf_haspc                  EMBER__ELFUTILS_CALL(dwarf_haspc)
#define dwarf_new_oom_handler        EMBER__ELFUTILS_CALL(dwarf_new_oom_handler)
#define dwarf_offdie                 EMBER__ELFUTILS_CALL(dwarf_offdie)
#define dwarf_ranges                 EMBER__ELFUTILS_CALL(dwarf_ranges)
#define dwarf_siblingof              EMBER__ELFUTILS_CALL(dwarf_siblingof)
#define dwarf_tag                    EMBER__ELFUTILS_CALL(dwarf_tag)
#define dwelf_elf_gnu_build_id       EMBER__ELFUTILS_CALL(dwelf_elf_gnu_build_id)
#define dwfl_begin                   EMBER__ELFUTILS_CALL(dwfl_begin)
#define dwfl_build_id_find_debuginfo EMBER__ELFUTILS_CALL(dwfl_build_id_find_debuginfo)
#define dwfl_end                     EMBER__ELFUTILS_CALL(dwfl_end)
#define dwfl_errmsg                  EMBER__ELFUTILS_CALL(dwfl_errmsg)
#define dwfl_getmodules              EMBER__ELFUTILS_CALL(dwfl_getmodules)
#define dwfl_lineinfo                EMBER__ELFUTILS_CALL(dwfl_lineinfo)
#define dwfl_linux_proc_find_elf     EMBER__ELFUTILS_CALL(dwfl_linux_proc_find_elf)
#define dwfl_module_build_id         EMBER__ELFUTILS_CALL(dwfl_module_build_id)
#define dwfl_module_getdwarf         EMBER__ELFUTILS_CALL(dwfl_module_getdwarf)
#define dwfl_module_getelf           EMBER__ELFUTILS_CALL(dwfl_module_getelf)
#define dwfl_module_getsrc           EMBER__ELFUTILS_CALL(dwfl_module_getsrc)
#define dwfl_module_getsym_info      EMBER__ELFUTILS_CALL(dwfl_module_getsym_info)
#define dwfl_module_getsymtab        EMBER__ELFUTILS_CALL(dwfl_module_getsymtab)
#define dwfl_module_info             EMBER__ELFUTILS_CALL(dwfl_module_info)
#define dwfl_report_begin            EMBER__ELFUTILS_CALL(dwfl_report_begin)
#define dwfl_report_end              EMBER__ELFUTILS_CALL(dwfl_report_end)
#define dwfl_report_module           EMBER__ELFUTILS_CALL(dwfl_report_module)
#define dwfl_version                 EMBER__ELFUTILS_CALL(dwfl_version)
#define elf_begin                    EMBER__LIBELF_CALL(elf_begin)
#define elf_cntl                     EMBER__LIBELF_CALL(elf_cntl)
#define elf_compress                 EMBER__LIBELF_CALL(elf_compress)
#define elf_end                      EMBER__LIBELF_CALL(elf_end)
#define elf_errno                    EMBER__LIBELF_CALL(elf_errno)
#define elf_errmsg                   EMBER__LIBELF_CALL(elf_errmsg)
#define elf_getdata                  EMBER__LIBELF_CALL(elf_getdata)
#define elf_getdata_rawchunk         EMBER__LIBELF_CALL(elf_getdata_rawchunk)
#define elf_getphdrnum               EMBER__LIBELF_CALL(elf_getphdrnum)
#define elf_getscn                   EMBER__LIBELF_CALL(elf_getscn)
#define elf_getshdrstrndx            EMBER__LIBELF_CALL(elf_getshdrstrndx)
#define elf_kind                     EMBER__LIBELF_CALL(elf_kind)
#define elf_memory                   EMBER__LIBELF_CALL(elf_memory)
#define elf_nextscn                  EMBER__LIBELF_CALL(elf_nextscn)
#define elf_rawfile                  EMBER__LIBELF_CALL(elf_rawfile)
#define elf_strptr                   EMBER__LIBELF_CALL(elf_strptr)
#define elf_version                  EMBER__LIBELF_CALL(elf_version)
#define gelf_getehdr                 EMBER__LIBELF_CALL(gelf_getehdr)
#define gelf_getnote                 EMBER__LIBELF_CALL(gelf_getnote)
#define gelf_getphdr                 EMBER__LIBELF_CALL(gelf_getphdr)
#define gelf_getrel                  EMBER__LIBELF_CALL(gelf_getrel)
#define gelf_getrela                 EMBER__LIBELF_CALL(gelf_getrela)
#define gelf_getshdr                 EMBER__LIBELF_CALL(gelf_getshdr)
#define gelf_getsym                  EMBER__LIBELF_CALL(gelf_getsym)

#endif
