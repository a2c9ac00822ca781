/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfnote.h - an ELF object's GNU build id read with libelf alone (no
 * libdw: util/dep_elfutils.h), from its SHT_NOTE sections, or from its
 * PT_NOTE segments when it has no section headers (a vDSO image or a
 * core-style image read from memory).
 *
 * Agent threads and tools; not async-signal-safe (libelf).
 */
#ifndef EMBER_UTIL_ELFNOTE_H
#define EMBER_UTIL_ELFNOTE_H

#include <stddef.h>
#include <stdint.h>

#include "util/dep_elfutils.h"

/* The NT_GNU_BUILD_ID note's bytes of e copied into out[max]; returns
 * their number, or 0 if there is no such note (or it is longer than max,
 * or empty). e stays the caller's. */
size_t ember__elf_build_id(Elf *e, uint8_t *out, size_t max);

/* The hex form of a build id's n bytes into out (2 * n + 1 bytes, NUL
 * ended; "" for n 0). Any thread; async-signal-safe (no libc call). */
void ember__build_id_hex(const uint8_t *id, size_t n, char *out);

#endif
