/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kallsyms.h - the kernel's function names from /proc/kallsyms, for the
 * kernel frames of CPU samples: the tree engine's (tools/tree/tree_kernel.c)
 * and the preloaded library's perf-event engine (profile/window.c names
 * them as a window's profile is built).
 *
 * /proc/kallsyms gives addresses with kptr_restrict 0, or 1 with
 * CAP_SYSLOG; elsewhere it gives zeros, and ember__kallsyms_named() says 0
 * with the reason in ember__kallsyms_why(). The kernel's GNU build id comes
 * from /sys/kernel/notes when readable. Frames are shown in one mapping
 * named EMBER_KALLSYMS_MAPPING, as perf names it.
 *
 * A reader is owned by one thread (the agent's, or the tree engine's);
 * nothing here is async-signal-safe. ember__kallsyms_is_kernel() is (a
 * comparison).
 */
#ifndef EMBER_KALLSYMS_H
#define EMBER_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_KALLSYMS_MAPPING "[kernel.kallsyms]"

/* Whether addr is a kernel address: the upper half of the address space,
 * which user space never maps on the 64-bit architectures Linux runs us
 * on. Async-signal-safe. */
static inline int ember__kallsyms_is_kernel(uint64_t addr)
{
	return (addr >> 63) != 0;
}

typedef struct ember__kallsyms ember__kallsyms;

/* 0 and *out (ember__kallsyms_free), or EMBER_ERR_NOMEM. The file is read
 * at the first question asked (about 0.1 s of CPU for ~100,000 lines); an
 * unreadable or zeroed kallsyms is no error: named() then says 0. */
int ember__kallsyms_new(ember__kallsyms **out);
void ember__kallsyms_free(ember__kallsyms *k);

/* 1 when frames get names (kallsyms gave addresses), else 0. */
int ember__kallsyms_named(ember__kallsyms *k);
/* Why frames have no names ("" when they do); owned by k. */
const char *ember__kallsyms_why(ember__kallsyms *k);
/* The function at addr (owned by k, valid until it is freed), or NULL. */
const char *ember__kallsyms_lookup(ember__kallsyms *k, uint64_t addr);
/* The kernel text's range [*lo, *hi) and its build id ("" if unknown,
 * owned by k), for the profile's mapping. */
const char *ember__kallsyms_range(ember__kallsyms *k, uint64_t *lo, uint64_t *hi);

#endif
