/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vdso.h - this process's vDSO image in memory. Every process of this
 * architecture on this kernel maps the same image, so the tree engine
 * reads another process's vDSO from ours (its unwind table, its symbols),
 * also once that process is gone.
 */
#ifndef EMBER_UTIL_VDSO_H
#define EMBER_UTIL_VDSO_H

#include <stddef.h>

/*
 * The image (its ELF header, as the kernel mapped it; borrowed, valid for
 * the life of the process) and in *size its length: up to the end of its
 * last loaded bytes or of its section headers, whichever is further.
 * NULL and *size 0 when there is none. Reads memory only; async-signal-safe
 * though no handler calls it.
 */
const void *ember__vdso_image(size_t *size);

#endif
