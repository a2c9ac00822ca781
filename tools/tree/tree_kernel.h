/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_kernel.h - the kernel's frames in the tree engine's profiles.
 *
 * With kernel samples permitted (root, CAP_PERFMON, or perf_event_paranoid
 * <= 1) each sample carries its kernel callchain (perf_tree.h,
 * kernel_frames). A window's aggregate cannot hold kernel addresses among
 * the user frames (the profile builder cuts a stack at a frame outside the
 * process's mappings), so the engine interns each distinct chain here and
 * tags the sample with its number (an internal label); once the window's
 * profile is built, ember__tkern_apply puts the chain's frames on the leaf
 * side of the stack and drops the label.
 *
 * Frames are named from /proc/kallsyms when it gives addresses
 * (kptr_restrict 0, or 1 with CAP_SYSLOG), in one mapping named
 * `[kernel.kallsyms]` as perf names it (with the kernel's build id from
 * /sys/kernel/notes when readable); where it gives zeros (kptr_restrict 2,
 * or 1 without CAP_SYSLOG) a chain is one `[kernel]` frame.
 *
 * Owned by the engine's one thread; nothing here is async-signal-safe.
 */
#ifndef EMBER_TREE_KERNEL_H
#define EMBER_TREE_KERNEL_H

#include <stdint.h>

#include "profile/profile.h"

/* The internal label key that carries a chain's number. */
#define EMBER_TKERN_LABEL "kernel_chain"

typedef struct ember__tkern ember__tkern;

/* 0 and *out (ember__tkern_free), or EMBER_ERR_NOMEM. /proc/kallsyms is
 * read the first time a profile with kernel frames is built (or named()
 * asked): an unreadable or zeroed kallsyms is no error, named() then says
 * 0. */
int ember__tkern_new(ember__tkern **out);
void ember__tkern_free(ember__tkern *k);

/* 1 when frames get names (kallsyms gave addresses), else 0. */
int ember__tkern_named(ember__tkern *k);
/* Why frames have no names ("" when they do): for the run's note. */
const char *ember__tkern_why(ember__tkern *k);

/* The number (>= 1) of the chain ips[0..n) (innermost first), interned;
 * 0 when out of memory (the sample then has no kernel frames). */
uint32_t ember__tkern_intern(ember__tkern *k, const uint64_t *ips, uint32_t n);

/* Puts the kernel frames of every sample of p that has the internal label
 * on the leaf side of its stack, and removes the label. 0 or
 * EMBER_ERR_NOMEM. */
int ember__tkern_apply(ember__tkern *k, ember__profile *p);

#endif
