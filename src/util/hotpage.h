/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hotpage.h - where the code and data that every process of a profiled
 * tree runs are placed, so that they cost it as few page faults as
 * possible.
 *
 * With the library preloaded into a tree, every process runs a little of
 * it even when it never gets an agent: the constructor of each exec'd
 * image (a shell loop's /bin/true), the exec wrappers and the atfork
 * handlers in each fork child of a shell. A fork child has none of its
 * parent's file-backed pages mapped (fork copies only the page tables of
 * anonymous memory), and a page of .bss that its parent never touched is
 * not mapped either: each first touch of such a page is a page fault,
 * which on a virtual machine costs tens of microseconds, the order of a
 * /bin/true's whole life (docs/BENCHMARKS.md, "Where the loop's cost is").
 *
 *  - EMBER_HOT_TEXT puts a function among the others of that path, in
 *    the .text.hot input sections, which the linker's default scripts
 *    (GNU ld, gold and lld alike) keep together at the start of .text,
 *    next to the constructors (.text.startup): one fault maps them all
 *    (the kernel maps up to 64 KiB of a file around a read fault).
 *  - EMBER_HOT_DATA puts a variable in .data, whose pages the loader
 *    writes in every process anyway (they share a page with the GOT it
 *    relocates) and whose page tables a fork child therefore inherits:
 *    reading it costs a child nothing, and writing it at most the one
 *    copy of that page. For small variables only (scalars, pointers,
 *    a few hundred bytes in all): a big one would push .data onto pages
 *    of its own. A variable given it must be zero-initialized or have a
 *    constant initializer, as in .bss.
 *
 * Neither changes what the code does; both are hints a build may drop.
 */
#ifndef EMBER_UTIL_HOTPAGE_H
#define EMBER_UTIL_HOTPAGE_H

#if defined(__GNUC__) || defined(__clang__)
#define EMBER_HOT_TEXT __attribute__((section(".text.hot.ember")))
#define EMBER_HOT_DATA __attribute__((section(".data.ember_hot")))
#else
#define EMBER_HOT_TEXT
#define EMBER_HOT_DATA
#endif

#endif
